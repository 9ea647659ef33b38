"""Searches never fail while index runs are killed at random; the result equals a full rebuild.

A short run of bench/soak.py (run it longer by hand).
"""

import json
import subprocess
import sys

import pytest

from conftest import PROJECT

pytestmark = pytest.mark.processes  # killed index runs and many searchers


def test_searches_survive_killed_index_runs_and_the_index_ends_equal_to_a_rebuild(tmp_path):
    report_file = tmp_path / "soak.json"
    completed = subprocess.run(
        [sys.executable, str(PROJECT / "bench" / "soak.py"), "--seconds", "12", "--searchers", "2", "--cold-searchers", "1",
         "--resident-searchers", "1", "--json", str(report_file)],
        capture_output=True, text=True, timeout=180,
    )
    report = json.loads(report_file.read_text())
    assert completed.returncode == 0, (report, completed.stderr[-2000:])
    assert report["searches"] >= 10 and report["search_failures"] == 0, report  # a count, not a speed: the machine may be busy
    assert report["index_runs"]["killed"] >= 2 and report["index_runs"]["failed"] == 0, report
    assert report["final_equals_full_rebuild"] is True
    assert report["resident_answers"] >= 1 and report["generations_left_with_resident"] <= 3, report["resident_log"]
