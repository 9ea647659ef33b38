"""bench/golden_queries.py: a user's own questions with known answers, scored on their index."""

import json
import subprocess
import sys

import pytest

from conftest import PROJECT

pytestmark = pytest.mark.processes  # the benchmark script as a user runs it

GOLDEN = [
    {"query": "which text editor do I like to use?", "expected": "preferences.json"},
    {"query": "how do I take one machine out of the cluster safely before repairs?", "expected": "notes/k0s-cluster.md"},
    {"query": "what did we learn about mocking in unit tests?", "expected": ["memory/memory.json"]},
    {"query": "how is the weather in Paris", "expected": "no-such-note.md"},
]


def test_reports_hit_rates_mrr_and_misses(example_index, tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(item) for item in GOLDEN) + "\n")
    completed = subprocess.run(
        [sys.executable, str(PROJECT / "bench" / "golden_queries.py"), golden, "--data-dir", example_index, "--k", "5"],
        capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report["queries"] == 4
    assert report["hit@5"] == 0.75 and report["hit@1"] == 0.75
    assert report["mrr@5"] == 0.75
    assert [miss["query"] for miss in report["misses"]] == ["how is the weather in Paris"]
    right, wrong = report["first_result_scores"]["right"], report["first_result_scores"]["wrong"]
    assert right["count"] == 3 and wrong["count"] == 1
    assert 0 < right["min"] <= right["median"] <= right["max"] <= 1 and wrong["min"] == wrong["max"]
