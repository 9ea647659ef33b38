"""memory.py end to end: list, query, add and clear over a real memory file and the real personal index."""

import json

import pytest

from conftest import run_script


@pytest.fixture
def env(state_dir, tmp_path):
    """The example state as the only personal root: its memory/memory.json is the memory file."""
    return {"RAG_SEARCH_PERSONAL_DIRS": str(state_dir), "RAG_SEARCH_HOME": str(tmp_path / "data")}


def memory(env, *args):
    return run_script("memory.py", *args, env=env)


def test_add_writes_a_well_formed_entry_and_a_search_finds_it_at_once(state_dir, env):
    assert run_script("index_personal.py", "--quiet", env=env).code == 0
    added = memory(env, "add", "--type", "lesson_learned", "--lesson", "buildx needs QEMU binfmt handlers for arm64 images",
                   "--context", "ci/docker.yml", "--tags", "Docker, arm64", "--confidence", "0.8", "--loop-id", "l-9")
    assert added.code == 0, added
    entry = added.json["added"]
    assert entry["id"].startswith("mem_") and entry["createdAt"].endswith("Z") and entry["tags"] == ["docker", "arm64"]
    stored = json.loads((state_dir / "memory" / "memory.json").read_text())
    assert stored[-1] == entry and len(stored) == 3
    found = run_script("search.py", "--index", "personal", "--type", "lesson_learned", "arm64 image builds", env=env)
    assert found.json["results"][0]["metadata"]["record_id"] == entry["id"]
    recalled = memory(env, "query", "how do I build arm64 images?", "--tag", "docker")
    assert [item["id"] for item in recalled.json["entries"]] == [entry["id"]]
    assert recalled.json["entries"][0]["lesson"] == entry["lesson"]


def test_list_is_newest_first_and_filters(env):
    listed = memory(env, "list")
    assert listed.code == 0, listed
    assert [entry["id"] for entry in listed.json["entries"]] == ["mem_a1b2", "mem_e5f6"]
    assert [e["id"] for e in memory(env, "list", "--type", "success_pattern").json["entries"]] == ["mem_e5f6"]
    assert [e["id"] for e in memory(env, "list", "--loop-id", "abc123").json["entries"]] == ["mem_a1b2"]
    assert [e["id"] for e in memory(env, "list", "--tag", "ESM").json["entries"]] == ["mem_e5f6"]
    assert memory(env, "list", "--since", "2026-03-30").json["entries"][0]["id"] == "mem_a1b2"
    assert len(memory(env, "list", "--since", "2026-03-30").json["entries"]) == 1
    table = memory(env, "--format", "text", "list").stdout
    assert "mem_a1b2" in table and "failure_pattern" in table and table.index("mem_a1b2") < table.index("mem_e5f6")


def test_list_also_reads_other_indexed_memory_files(state_dir, env, tmp_path):
    assert run_script("index_personal.py", "--quiet", env=env).code == 0
    elsewhere = {**env, "RAG_SEARCH_MEMORY_FILE": str(tmp_path / "agent" / "memory.json")}
    assert memory(elsewhere, "add", "--type", "failure_pattern", "--lesson", "pin the runner image").code == 0
    entries = memory(elsewhere, "list").json["entries"]
    assert [entry["lesson"] for entry in entries][0] == "pin the runner image"
    assert {"mem_a1b2", "mem_e5f6"} <= {entry["id"] for entry in entries}
    assert next(e for e in entries if e["id"] == "mem_a1b2")["file"] == str(state_dir / "memory" / "memory.json")


def test_clear_without_yes_changes_nothing_and_with_yes_keeps_a_backup(state_dir, env):
    path = state_dir / "memory" / "memory.json"
    before = path.read_text()
    dry = memory(env, "clear", "--loop-id", "abc123")
    assert dry.code == 6 and dry.json["would_delete"] == 1 and "--yes" in dry.stderr
    assert path.read_text() == before
    done = memory(env, "clear", "--loop-id", "abc123", "--yes")
    assert done.code == 0, done
    assert (done.json["deleted"], done.json["remaining"]) == (1, 1)
    assert [entry["id"] for entry in json.loads(path.read_text())] == ["mem_e5f6"]
    assert json.loads(open(done.json["backup"]).read()) == json.loads(before)
    assert memory(env, "clear", "--before", "2026-03-29", "--yes").json["remaining"] == 0


@pytest.mark.parametrize("content, message", [
    (None, "no memory file at"),
    ("{not json", "is not valid JSON"),
    ('{"a": 1}', "does not hold a list of memory entries"),
])
def test_a_missing_or_corrupt_memory_file_is_a_clear_error(state_dir, env, content, message):
    path = state_dir / "memory" / "memory.json"
    path.unlink()
    if content is not None:
        path.write_text(content)
    result = memory(env, "list")
    assert result.code == 6, result
    assert message in result.stderr and "hint:" in result.stderr
    assert result.json["error"]["hint"]
