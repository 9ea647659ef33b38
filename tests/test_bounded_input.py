"""Hostile input cannot hang or bloat a run: caps on records and chunks, bounded memory, kept work."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SCRIPTS, files_in_store, run_script

pytestmark = pytest.mark.processes  # each run's peak memory is measured in its own process

HERE = Path(__file__).parent


def index_measured(tmp_path, data, root, *args) -> tuple[dict, int]:
    """index_personal.py's summary and its peak RSS in MB, measured in the indexing process itself."""
    out = tmp_path / "peak-mb"
    completed = subprocess.run([sys.executable, str(HERE / "peakrss.py"), str(out), "index_personal.py", "--data-dir", str(data),
                                *map(str, args), str(root)], capture_output=True, text=True, timeout=600, cwd=SCRIPTS)
    assert completed.returncode in (0, 9), completed.stderr
    return json.loads(completed.stdout), int(out.read_text())


@pytest.fixture(scope="module")
def baseline_mb(tmp_path_factory):
    """The peak RSS of an ordinary small run: the model, ChromaDB and Python."""
    base = tmp_path_factory.mktemp("baseline")
    (base / "notes").mkdir()
    (base / "notes" / "a.md").write_text("# A\n\nAn ordinary note.")
    return index_measured(base, base / "data", base / "notes")[1]


def skipped_reason(summary, name):
    return next(skip["reason"] for skip in summary["skipped"] if skip["file"].endswith(name))


def test_a_json_object_with_100000_keys_is_skipped_in_bounded_memory(tmp_path, baseline_mb):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "huge.json").write_text(json.dumps({f"key{i}": f"value number {i}" for i in range(100_000)}))
    (root / "fine.md").write_text("# Fine\n\nA note that still gets indexed.")
    summary, peak = index_measured(tmp_path, tmp_path / "data", root)
    assert "max_records_per_file" in skipped_reason(summary, "huge.json")
    assert set(files_in_store(tmp_path / "data")) == {"fine.md"}
    assert peak < baseline_mb + 300, (peak, baseline_mb)


def test_a_one_line_file_of_megabytes_ends_in_bounded_memory(tmp_path, baseline_mb):
    root = tmp_path / "notes"
    root.mkdir()
    rng = random.Random(0)
    words = [f"w{rng.randint(0, 99999)}" for _ in range(400_000)]  # about 3 MB on one line: more chunks than a document may have
    (root / "one-line.txt").write_text(" ".join(words))
    summary, peak = index_measured(tmp_path, tmp_path / "data", root)
    assert "max_chunks_per_document" in skipped_reason(summary, "one-line.txt")
    assert peak < baseline_mb + 500, (peak, baseline_mb)


def test_many_tiny_files_index_in_bounded_memory(tmp_path, baseline_mb):
    root = tmp_path / "notes"
    for folder in range(20):
        (root / f"f{folder}").mkdir(parents=True)
        for number in range(500):
            (root / f"f{folder}" / f"n{number}.md").write_text("# Tiny\n\nThe same tiny note.\n")
    summary, peak = index_measured(tmp_path, tmp_path / "data", root)
    assert summary["added"] == 10_000 and summary["embedded"] == 1, "equal text is embedded once"
    assert peak < baseline_mb + 400, (peak, baseline_mb)


def test_an_interrupted_run_keeps_the_work_of_completed_batches(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    for number in range(700):  # two batches of chunks (512 and 188)
        (root / f"note-{number}.md").write_text(f"# Note {number}\n\nMaintenance window {number} moves to slot {number * 7}.\n")
    killed = subprocess.run([sys.executable, str(HERE / "faultrun.py"), "kill@rag_search.store.catalog.Catalog.write#2",
                             "index_personal.py", "--data-dir", str(tmp_path / "data"), str(root)],
                            capture_output=True, text=True, timeout=600, cwd=SCRIPTS)
    assert killed.returncode == -9, killed.stderr
    again = run_script("index_personal.py", "--data-dir", tmp_path / "data", root)
    assert again.code == 0, again
    assert again.json["added"] == 700
    assert again.json["reused_vectors"] >= 512 and again.json["embedded"] <= 188, "the killed run's first batch was not embedded again"
    assert not list((tmp_path / "data" / "personal").glob("unpublished-vectors-*")), "a published run leaves no cache behind"


def test_a_note_that_is_only_a_heading_is_never_dropped_silently(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "heading-only.md").write_text("# Just a title\n")
    (root / "empty-json.json").write_text("{}")
    result = run_script("index_personal.py", "--data-dir", tmp_path / "data", root)
    assert result.code == 0, result
    # No text to index: empty documents, counted, named on stderr and by status.py.
    assert result.json["empty"] == 2 and files_in_store(tmp_path / "data") == {}, result.json
    for name in ("heading-only.md", "empty-json.json"):
        assert f"{name}: no text to index" in result.stderr, name
    root_status = run_script("status.py", "--data-dir", tmp_path / "data").json["personal_roots"][0]
    assert root_status["empty"] == ["empty-json.json", "heading-only.md"], root_status
