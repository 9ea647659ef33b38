"""The warm core's look at the personal roots: skipped while nothing changed, never missing a change.

A real index of the example state, a real WarmIndex in this process, real files changed between searches.
"""

import os

import pytest

from conftest import run_script
from rag_search.core.config import load_settings
from rag_search.search.retrieval import SearchOptions
from rag_search.serve import warm as warm_module
from rag_search.serve.warm import WarmIndex

pytestmark = pytest.mark.processes  # the warm core of a resident searcher


@pytest.fixture
def warm(state_dir, tmp_path, monkeypatch):
    data = tmp_path / "data"
    assert run_script("index_personal.py", "--quiet", "--data-dir", data, state_dir).code == 0
    walks = []
    real = warm_module.find_changes
    monkeypatch.setattr(warm_module, "find_changes", lambda settings: walks.append(1) or real(settings))  # counted, not replaced
    index = WarmIndex(load_settings(data_dir=str(data)))
    index.walks = walks
    yield index
    index.close()


def first_file(warm: WarmIndex, query: str) -> str:
    result, stale = warm.search(query, SearchOptions(top_k=1), "personal")
    assert stale is None
    return result.hits[0].metadata["file"]


def test_unchanged_roots_are_not_walked_again(warm):
    for _ in range(5):
        assert warm.freshen() is None
    assert len(warm.walks) == 2  # the second walk confirms the paths the first found; then stamps stand in for walks


@pytest.mark.parametrize("change", ["edit", "new folder", "empty folder", "delete", "same size"])
def test_every_kind_of_change_is_seen_after_quiet_looks(warm, state_dir, change):
    for _ in range(3):
        warm.freshen()
    notes = state_dir / "notes"
    if change == "edit":
        path = next(notes.glob("*.md"))
        path.write_text(path.read_text() + "\n## Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
    elif change == "new folder":
        (notes / "hangars").mkdir()
        (notes / "hangars" / "lease.md").write_text("# Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
    elif change == "empty folder":  # a folder that held nothing when it was walked
        (notes / "later").mkdir()
        for _ in range(3):
            warm.freshen()
        (notes / "later" / "lease.md").write_text("# Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
    elif change == "delete":
        (notes / "gone.md").write_text("# Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
        assert first_file(warm, "zeppelin hangar lease") == "notes/gone.md"
        for _ in range(3):
            warm.freshen()
        (notes / "gone.md").unlink()
        assert first_file(warm, "zeppelin hangar lease") != "notes/gone.md"
        return
    else:  # rewritten in place with text of the same length: the modification time tells
        path = next(notes.glob("*.md"))
        text = path.read_text()
        stat = path.stat()
        path.write_text(text.replace(text[:40], "Zeppelin hangar lease ends in March. "[:40].ljust(40)))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert "zeppelin" in warm.search("zeppelin hangar lease", SearchOptions(top_k=1), "personal")[0].hits[0].text.lower()


def test_a_stale_report_stays_until_an_index_run(warm, state_dir):
    warm.freshen()
    for number in range(25):
        (state_dir / "notes" / f"bulk-{number}.md").write_text(f"# Bulk {number}\nbulk import number {number}\n")
    first = warm.freshen()
    assert first["files"] == 25
    assert warm.freshen() == first and warm.freshen() == first
    assert run_script("index_personal.py", "--quiet", "--data-dir", warm.settings.data_dir).code == 0
    assert warm.freshen() is None


def test_a_file_emptied_is_gone_from_the_next_warm_answer(warm, state_dir):
    """A JSON file edited to [] (its records all gone) answers no more, warm as cold."""
    options = SearchOptions(top_k=3, mode="lexical")
    assert warm.search("Longhorn persistent volumes", options, "personal")[0].hits[0].metadata["file"] == "memory/decisions.json"
    for _ in range(3):
        warm.freshen()
    (state_dir / "memory" / "decisions.json").write_text("[]\n")
    result, stale = warm.search("Longhorn persistent volumes", options, "personal")
    assert stale is None and "memory/decisions.json" not in [hit.metadata["file"] for hit in result.hits]
