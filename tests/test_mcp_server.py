"""The MCP server, driven as Claude Code drives it: a real MCP client session over stdio (the SDK's client)."""

import asyncio
import json
import os
import re
import shutil
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import DEEP_PASSAGE, EXAMPLES, SCRIPTS, SEARCH_CASES, SEARCH_COLD_CASES, run_script, store_contents

pytestmark = pytest.mark.processes  # the MCP server over stdio

QUESTION = "why is ArgoCD self-heal disabled?"


def server(data, home, **env):
    return StdioServerParameters(command=sys.executable, args=[str(SCRIPTS / "mcp_server.py"), "--data-dir", str(data)],
                                 env={"HOME": str(home), "RAG_SEARCH_SOURCES": os.environ["RAG_SEARCH_SOURCES"], **env})


async def call(client, tool: str, **arguments):
    """(is_error, the JSON the tool returned)."""
    result = await client.call_tool(tool, arguments)
    return result.is_error, json.loads(result.content[0].text)


def session(data, home, steps, **env):
    """Run `steps(client)` in one client session (initialize handshake, as Claude Code does), with an anti-hang bound."""
    async def main():
        async with asyncio.timeout(240), Client(server(data, home, **env), mode="legacy", read_timeout_seconds=120) as client:
            return await steps(client)

    return asyncio.run(main())


def generations_of(data, collection="personal"):
    return sorted(path.name for path in (data / collection / "generations").iterdir() if not path.name.startswith("."))


def test_a_session_lists_tools_searches_reads_and_follows_an_index_run(example_data, state_dir, isolated_home):
    first_generation = generations_of(example_data)

    async def steps(client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        failed, before = await call(client, "search", query=QUESTION, top_k=3)
        assert not failed, before
        failed, document = await call(client, "get_document", reference=before["results"][0]["file"])
        assert not failed, document
        failed, chunk = await call(client, "get_document", reference=before["results"][0]["id"], context=1)
        assert not failed, chunk
        failed, section = await call(client, "get_document", reference="notes/argocd-setup.md", section="notifications",
                                     max_chars=500)
        assert not failed, section
        failed, report = await call(client, "status")
        assert not failed, report
        # An index run publishes a new generation while the server keeps running.
        (state_dir / "notes" / "zebra-migration.md").write_text("# Zebra migration\n\nThe zebracorn cluster moved to rack 7 in March.\n")
        indexed = await asyncio.to_thread(run_script, "index_personal.py", "--data-dir", example_data, state_dir)
        assert indexed.code == 0 and indexed.json["published"], indexed
        # By keyword: only the new note has the word, so a store that was not reopened finds nothing.
        failed, after = await call(client, "search", query="zebracorn", top_k=1, mode="lexical")
        assert not failed, after
        # The old generation was released: the next run can delete it.
        again = await asyncio.to_thread(run_script, "index_personal.py", "--data-dir", example_data, state_dir, "--full",
                                        "--allow-shrink")  # the rebuild drops the example's own root
        assert again.code == 0, again
        return tools, before, document, chunk, section, report, after

    tools, before, document, chunk, section, report, after = session(example_data, isolated_home, steps)

    assert set(tools) == {"search", "get_document", "status", "memory_list", "memory_query", "memory_add", "memory_remove",
                          "memory_update"}
    assert {"query", "top_k", "source", "since", "verbose"} <= set(tools["search"].input_schema["properties"])
    cli = run_script("search.py", "--data-dir", example_data, "--top-k", "3", QUESTION)
    assert cli.code == 0, cli
    # The same shape as search.py's (this data dir was searched once already, by the server, before the index run).
    assert list(before) == list(cli.json) and [list(item) for item in before["results"]] == [list(item) for item in cli.json["results"]]
    assert before["results"][0]["file"] == "notes/argocd-setup.md"
    assert "selfHeal: false" in document["text"] and document["from"] == "file"
    position = next(item["index"] for item in chunk["shown"] if item["id"] == before["results"][0]["id"])
    assert [item["index"] for item in chunk["shown"]] == list(range(max(0, position - 1), min(document["chunks"], position + 2)))
    assert chunk["id"] == before["results"][0]["id"]
    assert section["section"].endswith("> Notifications") and section["truncated"] is True
    assert len(json.dumps(section, ensure_ascii=False)) <= 500 and section["text"].startswith("## ArgoCD")
    assert len(section["outline"]) + section["outline_omitted"]["before"] + section["outline_omitted"]["after"] == 3
    assert report["collections"]["personal"]["built"] and report["collections"]["personal"]["chunks"] > 10
    assert after["results"][0]["file"] == "notes/zebra-migration.md", after
    assert first_generation[0] not in generations_of(example_data)


def test_a_data_dir_deleted_and_built_again_is_answered_from_the_new_index(example_data, state_dir, isolated_home):
    """The new index's generation has the same name (g000001) as the deleted one's: the session follows the index
    itself, not its name. While nothing is built, it answers as a cold call would."""
    (state_dir / "notes" / "argocd-setup.md").unlink()
    (state_dir / "notes" / "zebra-migration.md").write_text("# Zebra migration\n\nThe zebracorn cluster moved to rack 7.\n")

    async def steps(client):
        seen = {"before": await call(client, "search", query=QUESTION, top_k=3)}
        await asyncio.to_thread(shutil.rmtree, example_data)
        seen["deleted"] = await call(client, "search", query=QUESTION, top_k=3)
        seen["deleted status"] = await call(client, "status")
        indexed = await asyncio.to_thread(run_script, "index_personal.py", "--data-dir", example_data, state_dir)
        assert indexed.code == 0 and indexed.json["published"], indexed
        assert generations_of(example_data) == ["g000001"]
        seen["search"] = await call(client, "search", query=QUESTION, top_k=3)
        seen["new note"] = await call(client, "search", query="zebracorn", top_k=1, mode="lexical")
        seen["get"] = await call(client, "get_document", reference="notes/argocd-setup.md")
        seen["status"] = await call(client, "status")
        return seen

    seen = session(example_data, isolated_home, steps)
    assert seen["before"][1]["results"][0]["file"] == "notes/argocd-setup.md"
    failed, deleted = seen["deleted"]
    assert failed and deleted["error"]["code"] == 3, deleted
    failed, deleted_status = seen["deleted status"]  # as status.py: what there is, exit 0
    assert not failed and deleted_status["collections"]["personal"] == {"built": False, "hint": "run scripts/index_personal.py"}
    for name in ("search", "new note", "status"):
        assert not seen[name][0], (name, seen[name])
    assert "notes/argocd-setup.md" not in [result["file"] for result in seen["search"][1]["results"]], seen["search"]
    assert seen["new note"][1]["results"][0]["file"] == "notes/zebra-migration.md", seen["new note"]
    failed, got = seen["get"]
    assert failed and got["error"]["code"] == 2 and "neither an indexed file" in got["error"]["message"], got
    cold = run_script("status.py", "--data-dir", example_data)
    assert cold.code == 0, cold
    assert seen["status"][1]["collections"]["personal"]["chunks"] == cold.json["collections"]["personal"]["chunks"]


def test_get_document_of_a_chunk_id_with_max_chars_reads_the_page_around_that_chunk_as_get_py(long_pages_index, isolated_home):
    chunk_id = next(chunk_id for chunk_id, chunk in store_contents(long_pages_index).items() if DEEP_PASSAGE in chunk["text"])

    async def steps(client):
        return await call(client, "get_document", reference=chunk_id, max_chars=3000)

    failed, answer = session(long_pages_index, isolated_home, steps)
    assert not failed, answer
    assert DEEP_PASSAGE in answer["text"] and answer["text_start"] > 0 and len(json.dumps(answer, ensure_ascii=False)) <= 3600
    assert answer == run_script("get.py", "--data-dir", long_pages_index, chunk_id, "--max-chars", "3000").json



# search.py's options that the search tool has no argument for, and why: each case of the table runs without them.
NOT_TOOL_ARGUMENTS = {
    "--format": "a tool answers JSON only (the case's JSON is compared)",
    "--no-resident": "the server is itself the warm searcher",
    "--data-dir": "the server's, given when it starts: the data dir of the whole session",
    "--chroma-url": "the server's, given when it starts",
}
LIST_ARGUMENTS = {"source", "type", "tag", "kind"}  # search.py's repeatable options
NUMBER_ARGUMENTS = {"top_k": int, "per_file": int, "max_tokens": int, "min_score": float, "recency_half_life": float}


def tool_call(case: list[str], flags: set[str]) -> tuple[dict, list[str]]:
    """A case of search.py's option table as the search tool's arguments, and as the search.py command line that
    answers the same (the case without the options the tool has no argument for)."""
    arguments, command, rest = {"query": case[0]}, [case[0]], case[1:]
    while rest:
        option = rest.pop(0)
        value = True if option in flags else rest.pop(0)
        if option in NOT_TOOL_ARGUMENTS:
            continue
        command += [option] if option in flags else [option, value]
        name = option.removeprefix("--").replace("-", "_")
        if name in LIST_ARGUMENTS:
            arguments.setdefault(name, []).append(value)
        else:
            arguments[name] = NUMBER_ARGUMENTS.get(name, lambda given: given)(value)
    return arguments, command


def same_json(answer: tuple[bool, dict], script, case, normal=lambda payload: payload) -> None:
    """The tool's answer is the script's JSON (as `normal` leaves them), key order included; a tool error where the
    script fails."""
    failed, payload = answer
    assert (failed, json.dumps(normal(payload))) == (script.code != 0, json.dumps(normal(script.json))), (case, payload, script)


def without_age(status: dict) -> dict:
    """A status without the index's age in seconds (it grows between two calls)."""
    for collection in status["collections"].values():
        collection.pop("age_seconds", None)
    return status


def test_every_search_option_and_the_other_tools_answer_as_the_scripts(example_data, isolated_home):
    """The option table of the warm and cold searches (conftest.SEARCH_CASES), through the search tool: each answer is
    search.py's JSON; and get_document, status, memory_list and memory_query answer as get.py, status.py and memory.py."""
    from search import build_parser

    actions = [action for action in build_parser()._actions if action.option_strings != ["-h", "--help"]]
    flags = {option for action in actions if action.nargs == 0 for option in action.option_strings}
    calls = [tool_call(case, flags) for case in SEARCH_CASES + SEARCH_COLD_CASES]
    options = {option for action in actions for option in action.option_strings}
    assert set(NOT_TOOL_ARGUMENTS) <= options
    assert options - set(NOT_TOOL_ARGUMENTS) <= {option for _, command in calls for option in command if option.startswith("--")}
    memory_file = {"RAG_SEARCH_MEMORY_FILE": str(EXAMPLES / "memory" / "memory.json")}

    async def steps(client):
        schema = next(tool for tool in (await client.list_tools()).tools if tool.name == "search").input_schema
        assert set(schema["properties"]) == {name for arguments, _ in calls for name in arguments}, "a search argument without a case"
        searched = [await call(client, "search", **arguments) for arguments, _ in calls]
        first = searched[0][1]["results"][0]
        others = {"get": await call(client, "get_document", reference=first["id"], context=2),
                  "get file": await call(client, "get_document", reference=first["file"], max_chars=300),
                  "status": await call(client, "status"),
                  "list": await call(client, "memory_list", type="lesson_learned", tag=["ci"]),
                  "query": await call(client, "memory_query", text="retry the flaky test", top_k=2, since="2020-01-01")}
        return searched, first, others

    searched, first, others = session(example_data, isolated_home, steps, **memory_file)
    for answer, (_, command) in zip(searched, calls, strict=True):
        same_json(answer, run_script("search.py", "--data-dir", example_data, *command), command)
    scripts = {"get": ["get.py", first["id"], "--context", "2"], "get file": ["get.py", first["file"], "--max-chars", "300"],
               "status": ["status.py"], "list": ["memory.py", "list", "--type", "lesson_learned", "--tag", "ci"],
               "query": ["memory.py", "query", "retry the flaky test", "--top-k", "2", "--since", "2020-01-01"]}
    for name, (script, *arguments) in scripts.items():
        answer = run_script(script, "--data-dir", example_data, *arguments, env=memory_file)
        same_json(others[name], answer, name, without_age if name == "status" else lambda payload: payload)

@pytest.mark.parametrize(
    "arguments, code, message",
    [
        ({"query": "   "}, 2, "the query is empty"),
        ({"query": "k0s", "source": ["no-such-source"]}, 2, "known: personal"),
        ({"query": "k0s", "since": "someday"}, 2, "not a date"),
        ({"query": "k0s", "index": "docs"}, 3, "docs index has not been built"),
    ],
)
def test_errors_come_back_as_tool_errors_with_our_message_and_hint(example_index, isolated_home, arguments, code, message):
    async def steps(client):
        return await call(client, "search", **arguments)

    failed, payload = session(example_index, isolated_home, steps)
    assert failed
    assert payload["error"]["code"] == code and message in payload["error"]["message"], payload
    assert payload["error"]["hint"]


def test_arguments_outside_the_schema_are_refused(example_index, isolated_home):
    async def steps(client):
        result = await client.call_tool("search", {"query": "k0s", "top_k": 0})
        return result.is_error, result.content[0].text

    failed, text = session(example_index, isolated_home, steps)
    assert failed and "top_k" in text


def test_before_any_index_the_server_starts_and_says_so(tmp_path, isolated_home):
    async def steps(client):
        return await call(client, "search", query="anything")

    failed, payload = session(tmp_path / "empty", isolated_home, steps)
    assert failed and payload["error"]["code"] == 3 and "index_personal.py" in payload["error"]["hint"]


def test_memory_tools_record_an_entry_that_the_next_query_recalls(example_data, state_dir, isolated_home):
    memory_file = state_dir / "memory" / "agent.json"

    async def steps(client):
        failed, added = await call(client, "memory_add", type="lesson_learned", tags=["helm"], confidence=0.9,
                                   lesson="Upgrades of the kestrel chart need --atomic so that a failed release rolls back")
        assert not failed, added
        failed, recalled = await call(client, "memory_query", text="kestrel chart upgrade rolled back", tag=["helm"])
        assert not failed, recalled
        failed, listed = await call(client, "memory_list", type=["lesson_learned"])
        assert not failed, listed
        refused = await client.call_tool("memory_add", {"type": "lesson_learned", "lesson": "x", "confidence": 1.5})
        return added, recalled, listed, refused.is_error

    added, recalled, listed, refused = session(
        example_data, isolated_home, steps, RAG_SEARCH_PERSONAL_DIRS=str(state_dir), RAG_SEARCH_MEMORY_FILE=str(memory_file))
    assert json.loads(memory_file.read_text()) == [added["added"]] and added["indexed"]
    assert recalled["entries"][0]["id"] == added["added"]["id"], recalled
    assert listed["entries"][0]["id"] == added["added"]["id"], "newest first"
    assert refused, "a confidence over 1 is refused"


def test_memory_tools_refuse_blank_input_add_once_and_remove_or_update_only_when_confirmed(example_data, state_dir, isolated_home):
    """What memory.py add, remove and update do, over MCP: `confirm: true` stands for --yes (the server cannot prompt)."""
    memory_file = state_dir / "memory" / "agent.json"
    lesson = "The quokka runner needs the cache volume mounted read-write"

    async def steps(client):
        seen = {"blank lesson": await call(client, "memory_add", type="lesson_learned", lesson="   "),
                "blank type": await call(client, "memory_add", type="", lesson=lesson)}
        seen["first"] = await call(client, "memory_add", type="failure_pattern", lesson=lesson, loop_id="l-3", iteration=2)
        seen["again"] = await call(client, "memory_add", type="failure_pattern", lesson=lesson, loop_id="l-3", iteration=2)
        seen["given id"] = await call(client, "memory_add", id="ralph-7", type="lesson_learned", lesson="pin the quokka image")
        entry_id = seen["first"][1]["added"]["id"]
        seen["update preview"] = await call(client, "memory_update", id=entry_id, lesson="The quokka runner mounts its cache rw")
        seen["after preview"] = json.loads(memory_file.read_text())
        seen["update blank"] = await call(client, "memory_update", id=entry_id, lesson=" ", confirm=True)
        seen["update"] = await call(client, "memory_update", id=entry_id, lesson="The quokka runner mounts its cache rw", confirm=True)
        seen["recalled"] = await call(client, "memory_query", text="quokka cache mount")
        seen["remove preview"] = await call(client, "memory_remove", ids=["ralph-7"])
        seen["remove unknown"] = await call(client, "memory_remove", ids=["nope"], confirm=True)
        seen["remove"] = await call(client, "memory_remove", ids=["ralph-7"], confirm=True)
        seen["listed"] = await call(client, "memory_list")
        return seen

    seen = session(example_data, isolated_home, steps, RAG_SEARCH_PERSONAL_DIRS=str(state_dir), RAG_SEARCH_MEMORY_FILE=str(memory_file))
    for name, message in (("blank lesson", "lesson is blank"), ("blank type", "type is blank"), ("update blank", "lesson is blank"),
                          ("remove unknown", "nope")):
        failed, payload = seen[name]
        assert failed and payload["error"]["code"] == 2 and message in payload["error"]["message"], (name, payload)
    for name in ("first", "again", "given id", "update preview", "update", "recalled", "remove preview", "remove", "listed"):
        assert not seen[name][0], (name, seen[name])
    first, again = seen["first"][1], seen["again"][1]
    assert first["added"]["iteration"] == 2 and first["created"] and not again["created"] and again["added"] == first["added"]
    assert seen["given id"][1]["added"]["id"] == "ralph-7"
    assert seen["update preview"][1]["would_update"] == 1 and "confirm" in seen["update preview"][1]["hint"]
    assert seen["after preview"][0]["lesson"] == lesson, "a preview changes nothing"
    assert seen["update"][1]["updated"] == 1 and seen["update"][1]["indexed"]
    assert seen["recalled"][1]["entries"][0]["lesson"] == "The quokka runner mounts its cache rw"
    assert seen["remove preview"][1]["would_remove"] == 1 and "confirm" in seen["remove preview"][1]["hint"]
    assert seen["remove"][1]["removed"] == 1 and seen["remove"][1]["backup"]
    assert [entry["id"] for entry in json.loads(memory_file.read_text())] == [first["added"]["id"]]
    assert "ralph-7" not in [entry["id"] for entry in seen["listed"][1]["entries"]]


def test_the_only_memory_entry_removed_answers_no_more_query_nor_search(example_data, state_dir, isolated_home):
    """memory_remove of the only entry empties the memory file, and the next calls no longer find it."""
    memory_file = state_dir / "memory" / "agent.json"
    lesson = "Upgrades of the kestrel chart need --atomic so that a failed release rolls back"

    async def steps(client):
        seen = {"add": await call(client, "memory_add", type="lesson_learned", lesson=lesson)}
        entry_id = seen["add"][1]["added"]["id"]
        seen["recalled before"] = await call(client, "memory_query", text="kestrel chart upgrade rolled back")
        seen["remove"] = await call(client, "memory_remove", ids=[entry_id], confirm=True)
        seen["recalled"] = await call(client, "memory_query", text="kestrel chart upgrade rolled back")
        seen["found"] = await call(client, "search", query="kestrel chart upgrade rolled back", index="personal")
        return entry_id, seen

    entry_id, seen = session(example_data, isolated_home, steps, RAG_SEARCH_PERSONAL_DIRS=str(state_dir),
                             RAG_SEARCH_MEMORY_FILE=str(memory_file))
    for name, (failed, answer) in seen.items():
        assert not failed, (name, answer)
    assert seen["recalled before"][1]["entries"][0]["id"] == entry_id
    assert seen["remove"][1]["removed"] == 1 and seen["remove"][1]["indexed"] and json.loads(memory_file.read_text()) == []
    assert [entry["id"] for entry in json.loads(open(seen["remove"][1]["backup"]).read())] == [entry_id]
    assert entry_id not in [entry["id"] for entry in seen["recalled"][1]["entries"]], seen["recalled"]
    assert entry_id not in [item["metadata"].get("record_id") for item in seen["found"][1]["results"]], seen["found"]


def test_search_brings_in_a_note_written_since_the_index_like_search_py_unless_no_refresh(state_dir, tmp_path, isolated_home):
    data = tmp_path / "data"
    assert run_script("index_personal.py", "--data-dir", data, state_dir).code == 0

    async def steps(client):
        failed, before = await call(client, "search", query="zebracorn", top_k=1, mode="lexical")
        assert not failed and before["results"] == [], before
        (state_dir / "notes" / "zebra-migration.md").write_text("# Zebra migration\n\nThe zebracorn cluster moved to rack 7.\n")
        await asyncio.sleep(1.5)  # past the pause between two looks at the personal roots
        as_indexed = await call(client, "search", query="zebracorn", top_k=1, mode="lexical", no_refresh=True)
        return as_indexed, await call(client, "search", query="zebracorn", top_k=1, mode="lexical")

    as_indexed, (failed, after) = session(data, isolated_home, steps)
    failed, answer = as_indexed
    assert not failed and answer["results"] == [] and "stale" not in answer, "no_refresh: the index as it is (search.py --no-refresh)"
    assert not failed, after
    assert after["results"][0]["file"] == "notes/zebra-migration.md" and "stale" not in after


def test_a_list_argument_takes_one_string_and_a_bad_argument_is_our_json_usage_error(example_index, isolated_home):
    async def steps(client):
        one = await call(client, "search", query=QUESTION, source="personal", type="decision", top_k=3)
        many = await call(client, "search", query=QUESTION, source=["personal"], type=["decision"], top_k=3)
        too_many = await call(client, "search", query=QUESTION, top_k=1000)
        unknown_mode = await call(client, "search", query=QUESTION, mode="fuzzy")
        return one, many, too_many, unknown_mode

    one, many, too_many, unknown_mode = session(example_index, isolated_home, steps)
    assert not one[0] and one[1]["results"] and one[1]["results"] == many[1]["results"]
    for failed, answer in (too_many, unknown_mode):
        assert failed and answer["error"]["code"] == 2 and answer["error"]["type"] == "UsageError", answer
    assert "top_k" in too_many[1]["error"]["message"] and "mode" in unknown_mode[1]["error"]["message"]
    assert "fuzzy" not in unknown_mode[1]["error"]["message"], "the caller's values stay out of messages and logs"


def test_unknown_arguments_and_tools_and_empty_filters_are_our_json_usage_error(example_index, isolated_home):
    """No silent guess: an argument a tool does not take (topk for top_k) is not ignored, an unknown tool answers as the
    tools do, and an empty filter (it would match nothing) is refused where search.py and memory.py refuse it."""
    async def steps(client):
        schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        seen = {"topk": await call(client, "search", query=QUESTION, topk="zebra-value"),
                "serch": await call(client, "serch", query=QUESTION),
                "memory_list loop": await call(client, "memory_list", loopid="l-1")}
        for tool, arguments in EMPTY_FILTERS:
            seen[f"{tool} {arguments}"] = await call(client, tool, **REQUIRED.get(tool, {}), **arguments)
        return schemas, seen

    schemas, seen = session(example_index, isolated_home, steps)
    assert all(schema["additionalProperties"] is False for schema in schemas.values()), schemas
    for name, (failed, payload) in seen.items():
        assert failed and payload["error"]["code"] == 2 and payload["error"]["type"] == "UsageError", (name, payload)
        assert payload["error"]["hint"], (name, payload)
    (_, topk), (_, serch), (_, loop) = seen["topk"], seen["serch"], seen["memory_list loop"]
    assert "topk" in topk["error"]["message"] and "zebra-value" not in json.dumps(topk), topk
    assert "top_k" in topk["error"]["hint"], "what the tool takes"
    assert "loopid" in loop["error"]["message"] and "loop_id" in loop["error"]["hint"], loop
    assert {"search", "get_document", "memory_add"} <= set(re.findall(r"\w+", serch["error"]["message"])), serch
    for tool, arguments in EMPTY_FILTERS:
        (field,) = arguments
        assert field in seen[f"{tool} {arguments}"][1]["error"]["message"], (tool, arguments)


REQUIRED = {"search": {"query": QUESTION}, "memory_query": {"text": "caching"}}
EMPTY_FILTERS = [
    ("search", {"type": ""}),
    ("search", {"type": [""]}),
    ("search", {"tag": ["ci", " "]}),
    ("search", {"source": ""}),
    ("search", {"source": [" "]}),
    ("memory_list", {"type": " "}),
    ("memory_list", {"tag": [""]}),
    ("memory_query", {"type": [""]}),
    ("memory_query", {"tag": ""}),
]
