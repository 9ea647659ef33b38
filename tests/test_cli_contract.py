"""The contract every script keeps with an agent, tested through the scripts; and get.py and status.py."""

import argparse
import importlib
import json
import os
import re

import pytest

from conftest import DEEP_PASSAGE, SCRIPTS, add_source, call_script, index_docs, run_script, store_contents
from webserver import DocsSite, Page, html_page

SEARCH_ERRORS = [
    (("--bogus", "q"), "unrecognized arguments: --bogus"),
    (("--top-k", "0", "q"), "--top-k: must be between 1 and 100"),
    (("--since", "someday", "q"), "--since: not a date"),
    (("   ",), "the query is empty"),
    (("",), "the query is empty"),
    (("--since", "99999999d", "q"), "--since: 99999999d is too far back"),
    (("--until", "9999999999y", "q"), "--until: 9999999999y is too far back"),
    (("--type", "", "q"), "--type: empty value"),
    (("--tag", " ", "q"), "--tag: empty value"),
    (("--source", "", "q"), "--source: empty value"),
]


@pytest.mark.parametrize("arguments, message", SEARCH_ERRORS)
def test_usage_errors_exit_2_with_the_json_error_and_one_line_on_stderr(example_index, arguments, message):
    result = call_script("search.py", "--data-dir", example_index, *arguments)
    assert result.code == 2, result
    error = result.json["error"]
    assert (error["code"], error["type"]) == (2, "UsageError") and message in error["message"] and error["hint"]
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: "), result.stderr


@pytest.mark.processes
@pytest.mark.parametrize("script", ["index_personal.py", "index_docs.py", "add_doc_source.py", "get.py", "status.py", "install_timer.py"])
def test_every_script_reports_a_bad_flag_the_same_way(script):
    result = run_script(script, "--no-such-flag", timeout=60)
    assert result.code == 2 and result.json["error"]["code"] == 2, result
    assert len(result.stderr.splitlines()) == 1


def parsers_of(parser, words=()):
    """(the words that reach it, the parser) for `parser` and each of its subcommands' parsers, however deep."""
    yield list(words), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers_of(sub, [*words, name])


def required_arguments(parser) -> list[str]:
    """What `parser` needs to parse: a value for each positional (its first choice), each required option and one of
    each required group of options; the first subcommand with what it needs."""
    needed = []
    chosen = [group._group_actions[0] for group in parser._mutually_exclusive_groups if group.required]
    for action in parser._actions:
        value = str(next(iter(action.choices))) if action.choices else "1"
        if isinstance(action, argparse._SubParsersAction):
            needed += [value, *required_arguments(action.choices[value])]
        elif not action.option_strings:
            needed += [] if action.nargs in ("?", "*") else [value]
        elif action.required or action in chosen:
            needed += [action.option_strings[0]] + ([] if action.nargs == 0 else [value])
    return needed


def unambiguous_prefix(option: str, options: list[str]) -> str | None:
    """The longest proper prefix of `option` that no other option of its parser starts with (None if every one does)."""
    for end in range(len(option) - 1, 2, -1):
        if [other for other in options if other.startswith(option[:end])] == [option]:
            return option[:end]
    return None


def script_parsers():
    """(script, words before its options, parser) for every (sub)parser of every script (each has build_parser)."""
    for path in sorted(SCRIPTS.glob("*.py")):
        for words, parser in parsers_of(importlib.import_module(path.stem).build_parser()):
            yield path.name, words, parser


def parse_exit(parser, argv: list[str], capsys) -> tuple[int | None, str]:
    """(the exit code, None when `argv` parsed; what went to stdout)."""
    try:
        parser.parse_args(argv)
    except SystemExit as exit:
        return exit.code, capsys.readouterr().out
    return None, capsys.readouterr().out


def test_no_script_takes_an_abbreviated_option(capsys):
    """argparse's prefix matching guesses (memory.py add --tag a --tag b once stored ["b"] as --tags): every long option
    of every (sub)parser of every script refuses its unambiguous prefix, with the usage error (exit 2, JSON)."""
    taken, checked = [], 0
    for script, words, parser in script_parsers():
        hint = f"see {script} --help"
        options = [option for action in parser._actions for option in action.option_strings if option.startswith("--")]
        for option in options:
            if (prefix := unambiguous_prefix(option, options)) is None:
                continue
            argv = [*words, *required_arguments(parser), prefix] if words else [prefix, *required_arguments(parser)]
            code, stdout = parse_exit(importlib.import_module(script.removesuffix(".py")).build_parser(), argv, capsys)
            refused = code == 2 and json.loads(stdout)["error"] == {
                "code": 2, "type": "UsageError", "message": f"unrecognized arguments: {prefix}", "hint": hint}
            if not refused:
                taken.append((script, argv, code, stdout[:100]))
            checked += 1
    assert not taken, taken
    assert checked > 100, checked


def test_a_query_starting_with_a_dash_goes_after_double_dash(example_index):
    result = call_script("search.py", "--data-dir", example_index, "--top-k", "1", "--", "-selfHeal false")
    assert result.code == 0, result
    assert result.json["query"] == "-selfHeal false" and result.json["results"]


def test_answers_are_one_line_of_json_with_cited_metadata_unless_verbose(example_index):
    compact = call_script("search.py", "--data-dir", example_index, "why is ArgoCD self-heal disabled?")
    verbose = call_script("search.py", "--data-dir", example_index, "--verbose", "why is ArgoCD self-heal disabled?")
    assert compact.stdout.count("\n") == 1, "unindented when stdout is not a terminal"
    assert [item["id"] for item in compact.json["results"]] == [item["id"] for item in verbose.json["results"]]
    for short, full in zip(compact.json["results"], verbose.json["results"], strict=True):
        assert {"indexed_at", "kind", "chunk_index", "source_id", "root"} <= set(full["metadata"])
        assert set(short["metadata"]) < set(full["metadata"])
        assert all(short["metadata"][key] == full["metadata"][key] for key in short["metadata"])
    record = next(item for item in compact.json["results"] if item["file"] == "memory/decisions.json")
    assert "context" not in record["metadata"] and "context: k8s setup" in record["chunk"], "a field the chunk shows is not repeated"
    assert len(compact.stdout) <= 0.6 * len(json.dumps(verbose.json, indent=2))
    first_of: dict[str, dict] = {}
    later = [item for item in compact.json["results"] if first_of.setdefault(item["file"], item) is not item]
    assert later, "two passages of one file"
    for item in later:  # what the file's first result said is not repeated (a record's own date is); the passage's heading is
        said = first_of[item["file"]]["metadata"]
        assert not [key for key in ("path", "date", "tags") if key in item["metadata"] and item["metadata"][key] == said.get(key)], item
        assert item["metadata"]["heading"], item


def test_unknown_source_ids_are_errors_that_list_the_known_ones(example_index):
    result = call_script("search.py", "--data-dir", example_index, "--source", "nope", "--source", "personal", "anything")
    assert result.code == 2, result
    assert "unknown source id(s) nope; known: personal" in result.json["error"]["message"]


def test_docs_not_built_is_said_once_per_data_dir(example_data):
    first = call_script("search.py", "--data-dir", example_data, "self-heal")
    second = call_script("search.py", "--data-dir", example_data, "self-heal")
    assert first.code == second.code == 0
    assert "docs index has not been built" in first.stderr
    assert second.stderr == ""


def test_searched_collections_lists_only_what_was_searched(example_data, tmp_path):
    docs = tmp_path / "runbooks"
    docs.mkdir()
    (docs / "drain.md").write_text("# Draining\n\nCordon the node, then drain it with kubectl drain --ignore-daemonsets.\n")
    add_source("--id", "runbooks", "--name", "Runbooks", "--type", "local", "--path", docs)
    assert index_docs(example_data, "--all").code == 0
    both = call_script("search.py", "--data-dir", example_data, "drain a node").json
    personal = call_script("search.py", "--data-dir", example_data, "--source", "personal", "drain a node").json
    runbooks = call_script("search.py", "--data-dir", example_data, "--source", "runbooks", "drain a node").json
    assert both["searched_collections"] == ["personal", "docs"]
    assert personal["searched_collections"] == ["personal"] and {item["source"] for item in personal["results"]} == {"personal"}
    assert runbooks["searched_collections"] == ["docs"] and runbooks["results"][0]["file"] == "runbooks/drain.md"
    unknown = call_script("search.py", "--data-dir", example_data, "--source", "k0s", "drain")
    assert unknown.code == 2 and "known: personal, runbooks" in unknown.json["error"]["message"]


@pytest.mark.processes
@pytest.mark.parametrize("script, own, foreign", [
    ("search.py", {"0", "2", "3", "4", "7"}, {"8", "9"}),
    ("index_personal.py", {"0", "4", "8", "9"}, {"3", "10"}),
    ("index_docs.py", {"0", "4", "8", "9", "10"}, {"3"}),
    ("add_doc_source.py", {"0", "2", "4", "9", "10"}, {"3"}),
    ("status.py", {"0", "7"}, {"3", "8", "9"}),
    ("get.py", {"0", "2", "3"}, {"8", "9"}),
    ("mcp_server.py", {"0", "5"}, {"8", "9"}),
    ("memory.py", {"0", "2", "6"}, {"8", "9"}),  # a busy index leaves a memory change unindexed ("indexed": false), not exit 8
    ("install_timer.py", {"0", "6"}, {"8", "9"}),
])
def test_each_script_help_shows_its_own_exit_codes(script, own, foreign):
    listed = set(re.findall(r"^  (\d+)  ", run_script(script, "--help", timeout=30).stdout.split("exit codes:")[1], re.MULTILINE))
    assert own | {"130", "143"} <= listed and not foreign & listed, listed


# get.py ------------------------------------------------------------------


def test_get_reads_a_whole_file_as_indexed_or_a_chunk_with_its_neighbours(example_data):
    top = call_script("search.py", "--data-dir", example_data, "--top-k", "1", "why is ArgoCD self-heal disabled?").json["results"][0]
    whole = call_script("get.py", "--data-dir", example_data, top["file"])
    assert whole.code == 0, whole
    assert whole.json["from"] == "file" and whole.json["path"] == top["metadata"]["path"]
    assert whole.json["text"].startswith("---\ntitle: ArgoCD setup") and whole.json["chunks"] == 4
    by_path = call_script("get.py", "--data-dir", example_data, top["metadata"]["path"]).json
    assert by_path["text"] == whole.json["text"]
    chunk = call_script("get.py", "--data-dir", example_data, top["id"], "--context", "1").json
    position = next(item["index"] for item in chunk["shown"] if item["id"] == top["id"])
    assert [item["index"] for item in chunk["shown"]] == list(range(max(0, position - 1), min(whole.json["chunks"], position + 2)))
    assert next(item["text"] for item in chunk["shown"] if item["id"] == top["id"]) == top["chunk"]
    alone = call_script("get.py", "--data-dir", example_data, top["id"], "--context", "0").json
    assert [item["id"] for item in alone["shown"]] == [top["id"]]


def test_get_gives_the_indexed_text_when_the_file_changed_and_redacts_secrets(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    note = notes / "deploy.md"
    note.write_text(f"# Deploy\n\nThe CI token is {token}.\n\n## Rollback\n\nRevert the tag and redeploy.\n")
    data = tmp_path / "data"
    assert call_script("index_personal.py", "--data-dir", data, notes).code == 0
    fresh = call_script("get.py", "--data-dir", data, "deploy.md").json
    assert fresh["from"] == "file" and token not in fresh["text"] and "[REDACTED:github-pat]" in fresh["text"]
    note.write_text("# Deploy\n\nRewritten since the index run.\n")
    stale = call_script("get.py", "--data-dir", data, "deploy.md").json
    assert stale["from"] == "index" and "Rewritten" not in stale["text"]
    assert "## Deploy > Rollback" in stale["text"] and "Revert the tag" in stale["text"]


def test_get_joins_a_long_section_from_the_index_with_each_sentence_once(tmp_path):
    """Continuations are shown from their sentence's start, which the chunk before holds too: said once when joined."""
    notes = tmp_path / "notes"
    notes.mkdir()
    sentences = [f"Step {i} drains node {i} before the kubelet on it is upgraded to the next minor release." for i in range(80)]
    note = notes / "upgrade.md"
    note.write_text("# Upgrade\n\n" + " ".join(sentences) + "\n")
    data = tmp_path / "data"
    assert call_script("index_personal.py", "--data-dir", data, notes).code == 0
    note.unlink()
    joined = call_script("get.py", "--data-dir", data, "upgrade.md").json
    assert joined["from"] == "index" and joined["chunks"] > 2
    assert joined["text"].split() == ["##", "Upgrade", *" ".join(sentences).split()], "chunks are joined at a paragraph break"


def test_get_reads_a_web_page_from_its_saved_markdown_redacted_as_indexed(tmp_path):
    data = tmp_path / "data"
    token = "AKIA" + "Q7ZK3M9TR2XW4NBV"
    deploy = "<article><h1>Deploy</h1><p>Our pipeline pushes with the token {} from the vault.</p></article>"
    with DocsSite() as site:
        site.pages["/docs/deploy/"] = Page(html_page("Deploy", deploy.format(token)))
        add_source("--id", "argocd", "--name", "Argo CD", "--type", "web", "--base-url", site.url, "--pages", "sync-options/", "deploy/")
        assert index_docs(data, "--source", "argocd").code == 0
        page = call_script("get.py", "--data-dir", data, site.url + "sync-options/")
        secret = call_script("get.py", "--data-dir", data, site.url + "deploy/").json
        site.pages["/docs/deploy/"] = Page(html_page("Deploy", deploy.format("a token from the vault")))
        assert index_docs(data, "--source", "argocd").code == 0
    assert page.code == 0, page
    assert page.json["from"] == "saved page" and page.json["url"] == site.url + "sync-options/"
    assert page.json["file"] == "argocd/sync-options/" and page.json["text"]
    assert secret["from"] == "saved page" and "[REDACTED:aws-access-token]" in secret["text"] and token not in secret["text"]
    saved = list((data / "sources" / "argocd" / "pages").glob("*.md"))
    assert len(saved) == 2 and not any(token in path.read_text() for path in saved)  # one version of each page is kept
    changed = call_script("get.py", "--data-dir", data, site.url + "deploy/").json
    assert changed["from"] == "saved page" and "a token from the vault" in changed["text"]


SECTIONED = """<article><h1 id="backups">Backups</h1><p>Nightly snapshots of every volume.</p>
<section id="restore-a-volume"><h2>Restore a volume<a class="headerlink" href="#restore-a-volume">¶</a></h2>
<p>To restore a Longhorn volume, scale the workload to zero, then revert the volume to the snapshot.</p></section>
<h2>Retention <a href="#keep-days" class="headerlink">¶</a></h2><p>Snapshots are kept for fourteen days.</p>
<h2>Costs</h2><p>Storage costs grow with the number of snapshots kept.</p></article>"""


@pytest.mark.parametrize("question, anchor", [
    ("how do I restore a Longhorn volume from a snapshot?", "#restore-a-volume"),
    ("how long are snapshots kept?", "#keep-days"),
    ("what do snapshots cost in storage?", ""),
])
def test_web_results_link_to_their_section_where_the_page_has_an_anchor(tmp_path, question, anchor):
    data = tmp_path / "data"
    with DocsSite() as site:
        site.pages["/docs/backups/"] = Page(html_page("Backups", SECTIONED))
        add_source("--id", "ops", "--name", "Ops", "--type", "web", "--base-url", site.url, "--pages", "backups/")
        assert index_docs(data, "--source", "ops").code == 0
    top = call_script("search.py", "--data-dir", data, "--index", "docs", "--top-k", "1", question).json["results"][0]
    assert top["metadata"]["url"] == site.url + "backups/" + anchor, top


def test_get_reads_one_section_or_at_most_n_characters_with_the_pages_outline(example_index):
    outline = ["k0s cluster maintenance", "k0s cluster maintenance > Draining a node before maintenance",
               "k0s cluster maintenance > Upgrading k0s"]
    section = call_script("get.py", "--data-dir", example_index, "notes/k0s-cluster.md", "--section", "upgrading K0S")
    assert section.code == 0, section
    assert section.json["section"] == outline[2] and section.json["outline"] == outline
    assert "k0sctl apply" in section.json["text"] and "kubectl drain" not in section.json["text"]
    whole_page = call_script("get.py", "--data-dir", example_index, "notes/k0s-cluster.md", "--section", "k0s cluster maintenance")
    assert "kubectl drain" in whole_page.json["text"] and "k0sctl apply" in whole_page.json["text"], "a heading takes its subsections"

    whole = call_script("get.py", "--data-dir", example_index, "notes/k0s-cluster.md").json
    assert "outline" not in whole and "truncated" not in whole
    cut_run = call_script("get.py", "--data-dir", example_index, "notes/k0s-cluster.md", "--max-chars", "800")
    cut = cut_run.json
    assert len(cut_run.stdout.strip()) <= 800 and cut["truncated"] is True and cut["total_chars"] == len(whole["text"])
    assert cut["text"] and whole["text"].startswith(cut["text"]) and cut["text_end"] == len(cut["text"])
    omitted = cut.get("outline_omitted", {"before": 0, "after": 0})
    assert cut["outline"] == outline[:len(cut["outline"])] and omitted == {"before": 0, "after": 3 - len(cut["outline"])}

    missing = call_script("get.py", "--data-dir", example_index, "notes/k0s-cluster.md", "--section", "Backups")
    assert missing.code == 2 and "Upgrading k0s" in missing.json["error"]["message"]
    chunk_id = call_script("search.py", "--data-dir", example_index, "--top-k", "1", "k0sctl apply").json["results"][0]["id"]
    with_id = call_script("get.py", "--data-dir", example_index, chunk_id, "--section", "Upgrading k0s")
    assert with_id.code == 2 and "--section" in with_id.json["error"]["message"]


MANUAL_OUTLINE = [f"Controller options > Option {number:03}" for number in range(400)]  # the title has no text of its own


def chunk_id_where(data, found) -> str:
    return next(chunk_id for chunk_id, chunk in store_contents(data).items() if found(chunk))


def test_get_max_chars_bounds_the_whole_answer_keeping_the_headings_around_the_text_shown(long_pages_index):
    """--max-chars 3000 once cut the text but not the outline of every heading (17,296 characters on 400 headings)."""
    whole = call_script("get.py", "--data-dir", long_pages_index, "notes/manual.md").json
    start = call_script("get.py", "--data-dir", long_pages_index, "notes/manual.md", "--max-chars", "3000")
    assert start.code == 0, start
    cut = start.json
    assert len(start.stdout.strip()) <= 3600 and len(cut["text"]) >= 1500, start
    assert cut["truncated"] is True and cut["total_chars"] == len(whole["text"]) and whole["text"].startswith(cut["text"])
    assert (cut["text_start"], cut["text_end"]) == (0, len(cut["text"]))
    kept = cut["outline"]
    assert kept == MANUAL_OUTLINE[:len(kept)] and cut["outline_omitted"] == {"before": 0, "after": 400 - len(kept)}
    shown = re.findall(r"^## (Option \d+)$", cut["text"], re.MULTILINE)
    assert shown and {f"Controller options > {heading}" for heading in shown} <= set(kept)

    section = call_script("get.py", "--data-dir", long_pages_index, "notes/manual.md", "--section", "Option 200", "--max-chars", "3000")
    assert section.code == 0, section
    answer = section.json
    assert len(section.stdout.strip()) <= 3600 and "option-200" in answer["text"] and answer["section"] == MANUAL_OUTLINE[200]
    first = MANUAL_OUTLINE.index(answer["outline"][0])
    assert answer["outline"] == MANUAL_OUTLINE[first:first + len(answer["outline"])]
    assert first + 5 < 200 < first + len(answer["outline"]) - 5, "the headings either side of the section shown"
    assert answer["outline_omitted"] == {"before": first, "after": 400 - first - len(answer["outline"])}

    chunk_id = chunk_id_where(long_pages_index, lambda chunk: chunk["metadata"].get("heading") == MANUAL_OUTLINE[300])
    around = call_script("get.py", "--data-dir", long_pages_index, chunk_id, "--max-chars", "3000")
    assert around.code == 0, around
    answer = around.json
    assert len(around.stdout.strip()) <= 3600 and "option-300 sets" in answer["text"] and answer["id"] == chunk_id
    assert 0 < answer["text_start"] and answer["text"] == whole["text"][answer["text_start"]:answer["text_end"]]
    assert MANUAL_OUTLINE[300] in answer["outline"] and MANUAL_OUTLINE[0] not in answer["outline"]


def test_get_of_a_chunk_id_with_max_chars_reads_the_page_around_that_chunk(long_pages_index):
    """A page without headings was once cut at its start whatever passage matched; its chunk id was refused."""
    whole = call_script("get.py", "--data-dir", long_pages_index, "notes/transcript.txt").json
    chunk_id = chunk_id_where(long_pages_index, lambda chunk: DEEP_PASSAGE in chunk["text"])
    result = call_script("get.py", "--data-dir", long_pages_index, chunk_id, "--max-chars", "3000")
    assert result.code == 0, result
    answer = result.json
    assert DEEP_PASSAGE in answer["text"] and len(result.stdout.strip()) <= 3600 and len(answer["text"]) >= 1500, result
    assert answer["id"] == chunk_id and answer["truncated"] is True and answer["total_chars"] == len(whole["text"])
    assert 0 < answer["text_start"] < whole["text"].index(DEEP_PASSAGE) < answer["text_end"]
    assert answer["text"] == whole["text"][answer["text_start"]:answer["text_end"]]

    chunk = call_script("get.py", "--data-dir", long_pages_index, chunk_id, "--context", "0").json
    assert [item["id"] for item in chunk["shown"]] == [chunk_id], "without --max-chars an id reads the chunk"
    both = call_script("get.py", "--data-dir", long_pages_index, chunk_id, "--context", "2", "--max-chars", "3000")
    assert both.code == 2 and "--context" in both.json["error"]["message"], both


def test_get_of_something_not_indexed_is_a_usage_error(example_index):
    result = call_script("get.py", "--data-dir", example_index, "notes/nowhere.md")
    assert result.code == 2 and "neither an indexed file nor a chunk id" in result.json["error"]["message"]


# status.py ---------------------------------------------------------------


def test_status_reports_what_is_indexed_how_fresh_and_what_changed(tmp_path, state_dir):
    data = tmp_path / "data"
    turns = "\n\n".join(f"## Turn {n}\n\nSpeaker {n % 3} talks about item {n} of the weekly call." for n in range(80))
    (state_dir / "notes" / "call-transcript.md").write_text(f"# Weekly call\n\n{turns}\n")
    assert call_script("index_personal.py", "--data-dir", data, state_dir).code == 0
    (state_dir / "notes" / "argocd-setup.md").write_text("# ArgoCD\n\nChanged after the index run.\n")
    (state_dir / "notes" / "new-note.md").write_text("# New\n\nNot indexed yet.\n")
    os.remove(state_dir / "preferences.json")
    result = call_script("status.py", "--data-dir", data)
    assert result.code == 0, result
    report = result.json
    personal = report["collections"]["personal"]
    assert personal["built"] and personal["documents"] >= 7 and personal["chunks"] > 10
    assert personal["generation"] == "g000001" and personal["size_bytes"] > 0 and 0 <= personal["age_seconds"] < 600
    [large] = personal["large_files"]  # a file that may crowd searches is named
    assert large["file"] == "notes/call-transcript.md" and large["chunks"] >= 80 and large["share"] > 0.25, large
    assert report["collections"]["docs"] == {"built": False, "hint": "run scripts/index_docs.py --all"}
    root = report["personal_roots"][0]
    assert root["root"] == str(state_dir) and root["last_indexed"] and root["last_error"] is None
    changes = root["changed_since_index"]
    assert (changes["not_indexed"], changes["changed"], changes["gone"]) == (1, 1, 1)
    assert report["timer"]["installed"] is False
    text = call_script("status.py", "--data-dir", data, "--format", "text")
    assert text.code == 0 and "personal: " in text.stdout and "1 changed" in text.stdout


def test_status_says_why_files_were_left_out_the_first_50_and_how_many(tmp_path, state_dir):
    data = tmp_path / "data"
    (state_dir / "notes" / "scan.md").write_bytes(b"%PDF-1.7\x00\x01 a scan saved with the wrong name")
    for number in range(51):
        (state_dir / "notes" / f"todo-{number:02}.md").write_bytes(b"\x00")
    assert call_script("index_personal.py", "--data-dir", data, state_dir).code == 0
    root = call_script("status.py", "--data-dir", data).json["personal_roots"][0]
    assert root["skipped_count"] == 52 and len(root["skipped"]) == 50
    assert root["skipped"][0] == {"file": "notes/scan.md", "reason": "binary file (contains NUL bytes)"}
    assert root["skipped"][1] == {"file": "notes/todo-00.md", "reason": "binary file (contains NUL bytes)"}
    # A file skipped as it is now is no change since the index; only the first 50 are remembered (the last two are not).
    assert root["changed_since_index"]["not_indexed"] == 2
    text = call_script("status.py", "--data-dir", data, "--format", "text").stdout
    assert "52 skipped (e.g. notes/scan.md: binary file (contains NUL bytes))" in text


def test_status_before_anything_is_indexed_is_success(tmp_path):
    result = call_script("status.py", "--data-dir", tmp_path / "nothing")
    assert result.code == 0, result
    assert not result.json["collections"]["personal"]["built"] and result.json["doc_sources"] == []


@pytest.mark.parametrize("registry, message", [
    ('{"sources": [', "is not valid JSON"),
    ('{"sources": [{"id": "k0s"}]}', '"name" is missing'),
])
def test_status_reports_a_broken_registry_beside_everything_else_it_can_read(example_data, isolated_home, registry, message):
    runbooks = isolated_home / "runbooks"
    runbooks.mkdir()
    (runbooks / "drain.md").write_text("# Draining\n\nCordon the node, then drain it.\n")
    add_source("--id", "runbooks", "--name", "Runbooks", "--type", "local", "--path", runbooks)
    assert index_docs(example_data, "--all").code == 0
    (isolated_home / "sources.json").write_text(registry)
    result = call_script("status.py", "--data-dir", example_data)
    assert result.code == 0, result
    report = result.json
    assert report["collections"]["personal"]["built"] and report["personal_roots"][0]["documents"] >= 7
    sources = report["doc_sources"]
    assert sources["registry"] == str(isolated_home / "sources.json") and message in sources["error"], sources
    assert sources["hint"] and "git" not in sources["hint"], "the registry is the user's: git ignores it"
    assert sources["indexed"] == [{"id": "runbooks", "documents": 1, "chunks": 1}]
    text = call_script("status.py", "--data-dir", example_data, "--format", "text")
    assert text.code == 0 and message in text.stdout, text


def test_status_records_a_failed_root_run(tmp_path, state_dir):
    data = tmp_path / "data"
    assert call_script("index_personal.py", "--data-dir", data, state_dir).code == 0
    for path in sorted(state_dir.rglob("*"), reverse=True):
        if path.is_file():
            path.unlink()
    assert call_script("index_personal.py", "--data-dir", data, state_dir).code == 9
    root = call_script("status.py", "--data-dir", data).json["personal_roots"][0]
    assert "--allow-shrink" in root["last_error"] and root["last_indexed"], "the earlier success is kept"
