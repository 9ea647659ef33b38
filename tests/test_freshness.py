"""Fresh at search time: a note written a moment ago is found by the next search."""

import fcntl
import os

from conftest import run_script


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
