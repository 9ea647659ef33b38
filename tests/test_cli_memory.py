"""memory.py end to end: list, query, add and clear over a real memory file and the real personal index."""

import json

import pytest

from conftest import call_script


@pytest.fixture
def env(state_dir, tmp_path):
    """The example state as the only personal root: its memory/memory.json is the memory file."""
    return {"RAG_SEARCH_PERSONAL_DIRS": str(state_dir), "RAG_SEARCH_HOME": str(tmp_path / "data")}


def memory(env, *args):
    return call_script("memory.py", *args, env=env)


def test_add_writes_a_well_formed_entry_and_a_search_finds_it_at_once(state_dir, env):
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    added = memory(env, "add", "--type", "lesson_learned", "--lesson", "buildx needs QEMU binfmt handlers for arm64 images",
                   "--context", "ci/docker.yml", "--tags", "Docker, arm64", "--confidence", "0.8", "--loop-id", "l-9")
    assert added.code == 0, added
    entry = added.json["added"]
    assert entry["id"].startswith("mem_") and entry["createdAt"].endswith("Z") and entry["tags"] == ["docker", "arm64"]
    stored = json.loads((state_dir / "memory" / "memory.json").read_text())
    assert stored[-1] == entry and len(stored) == 3
    found = call_script("search.py", "--index", "personal", "--type", "lesson_learned", "arm64 image builds", env=env)
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
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
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


# Blank input, retry-safe add, remove and update by id, clear reaching every listed entry.


def stored_entries(state_dir):
    return json.loads((state_dir / "memory" / "memory.json").read_text())


@pytest.mark.parametrize("flag, value, message", [
    ("--lesson", "   ", "lesson is blank"),
    ("--lesson", "", "lesson is blank"),
    ("--type", "", "type is blank"),
    ("--type", " \t", "type is blank"),
])
def test_add_refuses_a_blank_lesson_or_type_and_writes_nothing(state_dir, env, flag, value, message):
    before = (state_dir / "memory" / "memory.json").read_text()
    arguments = {"--type": "lesson_learned", "--lesson": "pin the runner image", flag: value}
    result = memory(env, "add", *[item for pair in arguments.items() for item in pair])
    assert result.code == 2, result
    assert result.json["error"]["type"] == "UsageError" and message in result.json["error"]["message"], result.json
    assert result.json["error"]["hint"]
    assert (state_dir / "memory" / "memory.json").read_text() == before


def test_add_and_update_take_tag_repeatable_and_tags_comma_separated_together(state_dir, env):
    """--tag as list, query and search.py take it (repeatable), and --tags a,b as before; both at once: all of them."""
    added = memory(env, "add", "--type", "lesson_learned", "--lesson", "celery needs a redis broker",
                   "--tag", "celery", "--tag", "#Redis", "--tags", "redis,docker")
    assert added.code == 0, added
    assert added.json["added"]["tags"] == ["celery", "redis", "docker"], "normalised, each once"
    entry_id = added.json["added"]["id"]
    retagged = memory(env, "update", entry_id, "--tag", "broker", "--tag", "queue", "--yes")
    assert retagged.code == 0 and retagged.json["entries"][0]["after"]["tags"] == ["broker", "queue"], retagged
    cleared = memory(env, "update", entry_id, "--tags", "", "--yes")
    assert cleared.code == 0 and cleared.json["entries"][0]["after"]["tags"] == [], cleared
    assert next(entry for entry in stored_entries(state_dir) if entry["id"] == entry_id)["tags"] == []


@pytest.mark.parametrize("arguments, message", [
    (("list", "--type", ""), "--type: empty value"),
    (("list", "--tag", " "), "--tag: empty value"),
    (("query", "caching", "--type", " "), "--type: empty value"),
    (("query", "caching", "--tag", ""), "--tag: empty value"),
    (("add", "--type", "lesson_learned", "--lesson", "pin the runner image", "--tag", ""), "--tag: empty value"),
])
def test_an_empty_filter_or_tag_is_a_usage_error_as_in_search_py(state_dir, env, arguments, message):
    """An empty --type or --tag would match nothing, an answer that looks like "no such entry"."""
    before = (state_dir / "memory" / "memory.json").read_text()
    result = memory(env, *arguments)
    assert result.code == 2 and message in result.json["error"]["message"], result
    assert (state_dir / "memory" / "memory.json").read_text() == before


def test_format_goes_before_or_after_the_subcommand(env):
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    for command in (["list"], ["query", "auth mocks", "--top-k", "1"]):
        before = memory(env, "--format", "text", *command)
        after = memory(env, *command, "--format", "text")
        assert before.code == after.code == 0 and before.stdout == after.stdout and "mem_a1b2" in after.stdout, (before, after)
        assert not after.stdout.startswith("{")
        assert memory(env, "--format", "text", *command, "--format", "json").json["entries"], "the later one counts"
    refused = memory(env, "list", "--format", "text", "--bogus")
    assert refused.code == 2 and refused.stdout == "" and "--bogus" in refused.stderr, "text asked for: no JSON, after it too"


def test_the_same_add_twice_records_one_entry_with_an_id_derived_from_what_it_says(state_dir, env):
    call = ("add", "--type", "failure_pattern", "--lesson", "pin the runner image", "--loop-id", "l-7", "--iteration", "3")
    first, again = memory(env, *call), memory(env, *call)
    assert first.code == again.code == 0, (first, again)
    assert first.json["created"] is True and again.json["created"] is False
    assert again.json["added"] == first.json["added"]
    assert [entry["id"] for entry in stored_entries(state_dir)].count(first.json["added"]["id"]) == 1
    next_iteration = memory(env, *call[:-1], "4")
    assert next_iteration.json["created"] is True and next_iteration.json["added"]["id"] != first.json["added"]["id"]
    assert len(stored_entries(state_dir)) == 4


def test_add_with_an_id_is_idempotent_and_refuses_that_id_for_another_lesson(state_dir, env):
    first = memory(env, "add", "--id", "ralph-42", "--type", "lesson_learned", "--lesson", "cache the pnpm store")
    again = memory(env, "add", "--id", "ralph-42", "--type", "lesson_learned", "--lesson", "cache the pnpm store")
    assert first.code == again.code == 0 and first.json["added"]["id"] == "ralph-42" and again.json["created"] is False
    other = memory(env, "add", "--id", "ralph-42", "--type", "lesson_learned", "--lesson", "something else")
    assert other.code == 2 and "ralph-42" in other.json["error"]["message"], other
    assert [entry["id"] for entry in stored_entries(state_dir)].count("ralph-42") == 1


def test_add_under_a_busy_index_writes_the_entry_once_and_says_it_is_not_indexed(state_dir, env, tmp_path):
    import fcntl
    import os

    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    call = ("add", "--type", "lesson_learned", "--lesson", "the zebracorn runner needs 8 GB", "--wait", "0.5")
    lock = os.open(tmp_path / "data" / "personal" / "write.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = memory(env, *call)
    finally:
        os.close(lock)
    assert busy.code == 0, busy
    assert busy.json["indexed"] is False and "another index run" in busy.json["reindex"], busy.json
    retry = memory(env, *call)
    assert retry.code == 0 and retry.json["created"] is False and retry.json["indexed"] is True, retry
    assert [entry["lesson"] for entry in stored_entries(state_dir)].count("the zebracorn runner needs 8 GB") == 1
    found = call_script("search.py", "--index", "personal", "--mode", "lexical", "zebracorn", env=env).json["results"]
    assert found[0]["metadata"]["record_id"] == busy.json["added"]["id"]


def test_remove_by_id_needs_yes_keeps_a_backup_and_takes_the_entry_out_of_the_index(state_dir, env):
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    path = state_dir / "memory" / "memory.json"
    before = path.read_text()
    dry = memory(env, "remove", "mem_a1b2")
    assert dry.code == 6 and dry.json["would_remove"] == 1 and "--yes" in dry.stderr, dry
    assert [entry["id"] for entry in dry.json["entries"]] == ["mem_a1b2"]
    assert path.read_text() == before
    done = memory(env, "remove", "mem_a1b2", "--yes")
    assert done.code == 0 and done.json["removed"] == 1 and done.json["indexed"] is True, done
    assert [entry["id"] for entry in stored_entries(state_dir)] == ["mem_e5f6"]
    assert json.loads(open(done.json["backup"]).read()) == json.loads(before)
    assert done.json["files"] == [{"file": str(path), "entries": 1, "action": "rewrite", "backup": done.json["backup"]}]
    found = call_script("search.py", "--index", "personal", "--mode", "lexical", "beforeEach auth mocks", env=env).json["results"]
    assert "mem_a1b2" not in [item["metadata"].get("record_id") for item in found]


@pytest.mark.parametrize("arguments, message", [
    (("remove", "mem_nope"), "mem_nope"),
    (("remove", "mem_a1b2", "mem_nope", "--yes"), "mem_nope"),
    (("update", "mem_nope", "--lesson", "x", "--yes"), "mem_nope"),
    (("update", "mem_a1b2", "--yes"), "nothing to change"),
    (("update", "mem_a1b2", "--lesson", "  ", "--yes"), "lesson is blank"),
    (("update", "mem_a1b2", "--type", "", "--yes"), "type is blank"),
])
def test_remove_and_update_refuse_unknown_ids_and_blank_input_changing_nothing(state_dir, env, arguments, message):
    before = (state_dir / "memory" / "memory.json").read_text()
    result = memory(env, *arguments)
    assert result.code == 2 and message in result.json["error"]["message"], result
    assert (state_dir / "memory" / "memory.json").read_text() == before


def test_update_by_id_needs_yes_keeps_id_and_date_and_is_searchable_at_once(state_dir, env):
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    path = state_dir / "memory" / "memory.json"
    before = path.read_text()
    change = ("update", "mem_a1b2", "--lesson", "Auth mocks belong in beforeEach; the quokka harness resets them", "--tags", "auth,Jest")
    dry = memory(env, *change)
    assert dry.code == 6 and dry.json["would_update"] == 1 and path.read_text() == before, dry
    (shown,) = dry.json["entries"]
    assert shown["before"]["lesson"].startswith("Auth mocks must") and shown["after"]["lesson"].startswith("Auth mocks belong")
    done = memory(env, *change, "--yes")
    assert done.code == 0 and done.json["updated"] == 1 and done.json["indexed"] is True, done
    entry = stored_entries(state_dir)[0]
    assert (entry["id"], entry["createdAt"], entry["loopId"]) == ("mem_a1b2", "2026-04-01T10:42:00Z", "abc123")
    assert entry["lesson"].startswith("Auth mocks belong") and entry["tags"] == ["auth", "jest"] and entry["updatedAt"]
    assert json.loads(open(done.json["backup"]).read()) == json.loads(before)
    found = call_script("search.py", "--index", "personal", "--mode", "lexical", "quokka", env=env).json["results"]
    assert found[0]["metadata"]["record_id"] == "mem_a1b2"
    old_words = call_script("search.py", "--index", "personal", "--mode", "lexical", "initialized module scope", env=env)
    assert not [item for item in old_words.json["results"] if "module scope" in item["chunk"]], "the old lesson no longer answers"


# A memory file left with no entries is an empty document, whose chunks go at once.


@pytest.mark.parametrize("edit", [("remove", "mem_a1b2", "--yes"), ("clear", "--before", "2026-04-02", "--yes")],
                         ids=["remove the only entry", "clear the last entries"])
def test_the_last_entries_removed_answer_no_search_nor_query_and_their_backup_keeps_them(state_dir, env, edit):
    path = state_dir / "memory" / "memory.json"
    if edit[0] == "remove":
        path.write_text(json.dumps(stored_entries(state_dir)[:1]))
    before = stored_entries(state_dir)
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    done = memory(env, *edit)
    assert done.code == 0 and done.json["indexed"] is True, done
    assert stored_entries(state_dir) == [] and json.loads(open(done.json["backup"]).read()) == before
    found = call_script("search.py", "--index", "personal", "auth mocks initialized inside beforeEach", env=env)
    assert "memory/memory.json" not in [item["file"] for item in found.json["results"]], found.json
    recalled = memory(env, "query", "auth mocks initialized inside beforeEach").json["entries"]
    assert not {entry["id"] for entry in before} & {entry["id"] for entry in recalled}, recalled
    root = call_script("status.py", env=env).json["personal_roots"][0]
    assert root["skipped"] == [] and root["empty"] == ["memory/memory.json"], root


def one_entry_files(state_dir, count, loop_id="abc123"):
    """Memory entries kept one per file under the personal root, as some agents write them."""
    folder = state_dir / "agents" / "loop"
    folder.mkdir(parents=True)
    for number in range(count):
        (folder / f"entry-{number}.json").write_text(json.dumps({
            "id": f"one_{number}", "loopId": loop_id, "createdAt": f"2026-04-0{number + 2}T09:00:00Z", "type": "lesson_learned",
            "lesson": f"one-file lesson number {number}", "tags": ["single"]}))
    return folder


def test_clear_reaches_every_entry_list_shows_including_one_entry_files(state_dir, env):
    folder = one_entry_files(state_dir, 3)
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    listed = memory(env, "list", "--loop-id", "abc123").json
    assert listed["count"] == 4, listed
    dry = memory(env, "clear", "--loop-id", "abc123")
    assert dry.code == 6 and dry.json["would_delete"] == listed["count"], dry.json
    assert sorted(entry["id"] for entry in dry.json["entries"]) == sorted(entry["id"] for entry in listed["entries"])
    assert len(list(folder.iterdir())) == 3
    done = memory(env, "clear", "--loop-id", "abc123", "--yes")
    assert done.code == 0 and done.json["deleted"] == 4, done
    changed = {item["file"]: item for item in done.json["files"]}
    assert changed[str(state_dir / "memory" / "memory.json")]["action"] == "rewrite"
    for number in range(3):
        item = changed[str(folder / f"entry-{number}.json")]
        assert item["action"] == "delete" and json.loads(open(item["backup"]).read())["id"] == f"one_{number}"
    assert not list(folder.glob("*.json"))
    assert memory(env, "list", "--loop-id", "abc123").json["count"] == 0
    assert [entry["id"] for entry in memory(env, "list").json["entries"]] == ["mem_e5f6"]


def test_remove_and_update_reach_entries_in_other_files_under_the_roots(state_dir, env):
    folder = one_entry_files(state_dir, 2)
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    updated = memory(env, "update", "one_0", "--context", "ci/runners.yml", "--yes")
    assert updated.code == 0 and updated.json["files"][0]["file"] == str(folder / "entry-0.json"), updated
    assert json.loads((folder / "entry-0.json").read_text())["context"] == "ci/runners.yml"
    removed = memory(env, "remove", "one_1", "--yes")
    assert removed.code == 0 and removed.json["files"][0]["action"] == "delete", removed
    assert not (folder / "entry-1.json").exists()
    listed = {entry["id"]: entry for entry in memory(env, "list").json["entries"]}
    assert "one_1" not in listed and listed["one_0"]["context"] == "ci/runners.yml"


def test_clear_keeps_each_files_shape_json_lines_and_an_object_holding_entries(state_dir, env):
    agents = state_dir / "agents"
    agents.mkdir()
    kept_line = json.dumps({"id": "j2", "loopId": "zzz", "createdAt": "2026-04-03", "type": "success_pattern", "lesson": "kept"})
    (agents / "log.jsonl").write_text(
        json.dumps({"id": "j1", "loopId": "abc123", "createdAt": "2026-04-02", "type": "failure_pattern", "lesson": "gone"})
        + f"\n{kept_line}\n")
    kept = {"id": "t2", "loopId": "zzz", "createdAt": "2026-04-03", "type": "lesson_learned", "lesson": "kept too"}
    (agents / "team.json").write_text(json.dumps({"version": 2, "entries": [
        {"id": "t1", "loopId": "abc123", "createdAt": "2026-04-02", "type": "lesson_learned", "lesson": "gone too"}, kept]}))
    assert call_script("index_personal.py", "--quiet", env=env).code == 0
    done = memory(env, "clear", "--loop-id", "abc123", "--yes")
    assert done.code == 0 and done.json["deleted"] == 3, done
    assert (agents / "log.jsonl").read_text() == f"{kept_line}\n"
    assert json.loads((agents / "team.json").read_text()) == {"version": 2, "entries": [kept]}
    assert {entry["id"] for entry in memory(env, "list").json["entries"]} == {"mem_e5f6", "j2", "t2"}


@pytest.mark.parametrize("confidence", ["7", "-0.1", "high"])
def test_a_confidence_outside_0_to_1_is_a_usage_error_and_nothing_is_written(state_dir, env, confidence):
    before = (state_dir / "memory" / "memory.json").read_text()
    result = memory(env, "add", "--type", "lesson_learned", "--lesson", "x", "--confidence", confidence)
    assert result.code == 2, result
    error = result.json["error"]
    assert error["type"] == "UsageError" and "--confidence" in error["message"] and error["hint"]
    assert (state_dir / "memory" / "memory.json").read_text() == before
