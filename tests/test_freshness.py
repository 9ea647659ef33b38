"""Fresh at search time: a note written a moment ago is found by the next search."""

import fcntl
import os

import pytest

from conftest import fill, run_script, store_contents

# In a process: a search's refresh writes the index, then the search reads it. Run in the test's process (call_script,
# no fork) such a search failed now and then with "'RustBindingsAPI' object has no attribute 'bindings'": ChromaDB's
# client cache is keyed by path, and readers open generations through /proc/self/fd/N paths (generations.held_path).
pytestmark = pytest.mark.processes


def search(env, query, *args):
    result = run_script("search.py", "--index", "personal", "--metadata-only", query, *args, env=env)
    assert result.code == 0, result
    return result


def index_env(state_dir, tmp_path):
    env = {"RAG_SEARCH_HOME": str(tmp_path / "data")}
    assert run_script("index_personal.py", "--quiet", state_dir, env=env).code == 0
    return env


def test_a_note_written_just_now_is_found_and_a_deleted_one_is_gone(state_dir, tmp_path):
    env = index_env(state_dir, tmp_path)
    (state_dir / "notes" / "fresh.md").write_text("# Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
    result = search(env, "zeppelin hangar lease")
    assert result.json["results"][0]["file"] == "notes/fresh.md"
    assert "stale" not in result.json and result.stderr == ""
    (state_dir / "notes" / "fresh.md").unlink()
    assert all(r["file"] != "notes/fresh.md" for r in search(env, "zeppelin hangar lease").json["results"])


def test_a_note_copied_in_with_its_old_time_is_found(state_dir, tmp_path):
    """cp -p, rsync -a and unpacked archives keep a file's old modification time: new to the index is what counts."""
    env = index_env(state_dir, tmp_path)
    copied = state_dir / "notes" / "copied.md"
    copied.write_text("# Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
    os.utime(copied, (1_600_000_000, 1_600_000_000))
    result = search(env, "zeppelin hangar lease")
    assert result.json["results"][0]["file"] == "notes/copied.md", result.json


def test_many_changes_are_reported_as_stale_with_how_to_refresh(state_dir, tmp_path):
    env = index_env(state_dir, tmp_path)
    for number in range(25):
        (state_dir / "notes" / f"bulk-{number}.md").write_text(f"# Bulk {number}\nbulk import number {number}\n")
    result = search(env, "bulk import")
    assert result.json["stale"]["files"] == 25 and result.json["stale"]["since"]
    assert "index_personal.py" in result.stderr
    assert all(not r["file"].startswith("notes/bulk-") for r in result.json["results"])
    assert run_script("index_personal.py", "--quiet", env=env).code == 0
    assert "stale" not in search(env, "bulk import").json


def test_a_busy_index_is_not_waited_for(state_dir, tmp_path):
    env = index_env(state_dir, tmp_path)
    (state_dir / "notes" / "fresh.md").write_text("# Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
    lock = os.open(tmp_path / "data" / "personal" / "write.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another index run holds the personal index (the default --wait is 30 s)
    try:
        result = run_script("search.py", "--index", "personal", "zeppelin hangar", env=env, timeout=25)
    finally:
        os.close(lock)
    assert result.code == 0, result
    assert result.json["stale"]["files"] == 1 and "index_personal.py" in result.stderr


def test_no_refresh_leaves_the_index_as_it_is(state_dir, tmp_path):
    env = index_env(state_dir, tmp_path)
    (state_dir / "notes" / "fresh.md").write_text("# Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
    result = search(env, "zeppelin hangar lease", "--no-refresh")
    assert all(r["file"] != "notes/fresh.md" for r in result.json["results"]) and "stale" not in result.json


def test_an_edit_to_an_included_file_is_found_at_search_time(state_dir, tmp_path):
    (state_dir / "notes" / "ports.md").write_text("The gateway listens on port 9443.\n")
    (state_dir / "notes" / "gateway.md").write_text("# Gateway\n\n{!notes/ports.md!}\n")
    env = index_env(state_dir, tmp_path)
    (state_dir / "notes" / "ports.md").write_text("The gateway listens on port 7443 since the migration.\n")
    os.utime(state_dir / "notes" / "gateway.md", (1_600_000_000, 1_600_000_000))  # the including note itself is old
    result = search(env, "which port does the gateway listen on since the migration", "--mode", "lexical")
    assert "stale" not in result.json, result.json
    gateway = [chunk["text"] for chunk in store_contents(tmp_path / "data").values() if chunk["metadata"]["file"] == "notes/gateway.md"]
    assert gateway and "7443" in " ".join(gateway), gateway


def test_a_folder_unreadable_for_a_moment_removes_nothing_at_search_time(state_dir, tmp_path, monkeypatch):
    """As root, no permission makes a folder unreadable, so the walk's failure is simulated."""
    from rag_search.core.config import load_settings
    from rag_search.serve.freshness import find_changes

    env = index_env(state_dir, tmp_path)
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(state_dir / "notes"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    changes = find_changes(load_settings(data_dir=env["RAG_SEARCH_HOME"]))
    assert changes is not None and changes.gone == [], changes.gone


def test_a_search_answers_when_the_freshness_write_fails(state_dir, small_disk):
    """A full disk once failed the search (exit 7) where --no-refresh answered."""
    env = {"RAG_SEARCH_HOME": str(small_disk / "data")}
    assert run_script("index_personal.py", "--quiet", state_dir, env=env).code == 0
    (state_dir / "notes" / "fresh.md").write_text("# Zeppelin hangar\nThe zeppelin hangar lease ends in March.\n")
    fill(small_disk)
    result = run_script("search.py", "--index", "personal", "why is ArgoCD self-heal off?", env=env)
    assert result.code == 0, result
    assert result.json["results"] and result.json["stale"]["files"] == 1


def test_a_note_that_cannot_be_indexed_is_reported_by_one_search_not_by_every_search(state_dir, tmp_path):
    env = index_env(state_dir, tmp_path)
    scan = state_dir / "notes" / "scan.md"
    scan.write_bytes(b"%PDF-1.7\x00\x01 a scan saved with the wrong name")
    first = search(env, "zeppelin hangar")
    assert "skipped" in first.stderr and "scan.md" in first.stderr
    second = search(env, "zeppelin hangar")
    assert second.stderr == "" and "stale" not in second.json, "skipped as it is: not retried until it changes"
    root = run_script("status.py", env=env).json["personal_roots"][0]
    assert {"file": "notes/scan.md", "reason": "binary file (contains NUL bytes)"} in root["skipped"]
    scan.write_text("# Scan\nThe zeppelin hangar scan, as text now.\n")
    assert search(env, "zeppelin hangar scan").json["results"][0]["file"] == "notes/scan.md"


def test_a_file_emptied_since_the_index_is_gone_from_the_next_search_and_not_reported(state_dir, tmp_path):
    """A JSON file edited to [] is an empty document: the search's freshness step takes its chunks out."""
    env = index_env(state_dir, tmp_path)
    query = "Longhorn for persistent volumes"
    assert search(env, query, "--mode", "lexical").json["results"][0]["file"] == "memory/decisions.json"
    (state_dir / "memory" / "decisions.json").write_text("[]\n")
    first = search(env, query, "--mode", "lexical")
    assert all(r["file"] != "memory/decisions.json" for r in first.json["results"]), first.json
    assert "stale" not in first.json and first.stderr == "", first
    assert run_script("status.py", env=env).json["personal_roots"][0]["skipped"] == []
