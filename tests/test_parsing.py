import json
import time

import pytest

from rag_search.text.parsing import kind_of, parse
from rag_search.text.sections import ParseError


def test_markdown_front_matter_becomes_metadata_and_leaves_the_text():
    text = "---\ntitle: Sync notes\ndate: 2025-01-15\ntags: [argocd, gitops]\ndescription: Why.\nauthor: me\n---\nIntro line.\n"
    parsed = parse("markdown", text, "sync.md")
    assert parsed.metadata["title"] == "Sync notes"
    assert parsed.metadata["date"] == "2025-01-15"
    assert parsed.metadata["tags"] == ["argocd", "gitops"]
    assert parsed.metadata["description"] == "Why."
    assert "author" not in parsed.metadata
    assert [s.text for s in parsed.sections] == ["Why.", "Intro line."]  # the description, then the body
    assert not any("title:" in s.text for s in parsed.sections)


def test_markdown_splits_on_headings_with_heading_paths():
    text = "# Guide\nintro\n## Install\nsteps\n### Linux\napt\n## Usage\nrun it\n"
    sections = parse("markdown", text, "guide.md").sections
    assert [(s.path, s.text) for s in sections] == [
        (["Guide"], "intro"),
        (["Guide", "Install"], "steps"),
        (["Guide", "Install", "Linux"], "apt"),
        (["Guide", "Usage"], "run it"),
    ]


def test_markdown_title_falls_back_to_first_h1_then_file_stem():
    assert parse("markdown", "# Real title\nbody", "x.md").metadata["title"] == "Real title"
    parsed = parse("markdown", "just text\n## Part\nmore", "my-notes.md")
    assert parsed.metadata["title"] == "my-notes"
    assert parsed.sections[1].path == ["my-notes", "Part"]


def test_hash_lines_inside_code_fences_are_not_headings():
    text = "# Doc\n```bash\n# a comment, not a heading\necho hi\n```\nafter\n"
    sections = parse("markdown", text, "doc.md").sections
    assert len(sections) == 1
    assert "# a comment" in sections[0].text and "after" in sections[0].text


def test_setext_headings():
    sections = parse("markdown", "Title\n=====\n\nbody\n\nPart\n----\nmore\n", "s.md").sections
    assert [s.path for s in sections] == [["Title"], ["Title", "Part"]]


@pytest.mark.parametrize("line", ["- item", "* item", "+ item", "1. item", "12) item", "  - nested item", "> a quote",
                                  "| a | b |", "    indented code"])
@pytest.mark.parametrize("underline", ["---", "==="])
def test_an_underline_after_a_list_item_quote_table_row_or_code_is_not_a_heading(line, underline):
    """CommonMark: only a paragraph takes a setext underline; `- item` then `---` is a list, then a thematic break."""
    sections = parse("markdown", f"intro\n\n{line}\n{underline}\nafter\n", "n.md").sections
    assert [s.path for s in sections] == [["n"]]
    assert f"{line}\n{underline}\nafter" in sections[0].text


@pytest.mark.parametrize(("text", "heading"), [("Title\n---\nbody", "Title"), ("  Title\n===\nbody", "Title"),
                                               ("1.5 million requests\n---\nbody", "1.5 million requests"),
                                               ("-item\n---\nbody", "-item"), ("intro\n\nPart\n---\nbody", "Part")])
def test_a_paragraph_line_over_an_underline_is_still_a_heading(text, heading):
    assert parse("markdown", text, "n.md").sections[-1].path[-1] == heading


def test_a_lazy_continuation_of_a_list_item_is_not_a_heading():
    sections = parse("markdown", "- item\nlazy continuation\n---\nafter\n", "n.md").sections
    assert [s.path for s in sections] == [["n"]]


# The head of an API gateway's pages: its licence in a comment, each line a `#` line.
LICENCE = ("<!--\n#\n# Licensed to the Apache Software Foundation (ASF) under one or more\n# contributor license agreements.\n"
           "#\n-->\n\n")


def test_html_comments_are_never_text_or_headings():
    text = (LICENCE + "# Rate limiting\n\nThe gateway <!-- TODO: numbers --> limits each consumer.\n<!-- a\n## draft\n-->\n"
            "Its window slides.\n\n## Headers<!-- -->\n\nIt answers 429.<!--\nmore\n--> Then it resets.\n")
    parsed = parse("markdown", text, "limits.md")
    assert parsed.metadata == {"title": "Rate limiting"}
    assert [(s.path, s.text) for s in parsed.sections] == [
        (["Rate limiting"], "The gateway  limits each consumer.\n\nIts window slides."),
        (["Rate limiting", "Headers"], "It answers 429.\n Then it resets."),
    ]


def test_html_comments_in_code_are_code_and_one_never_closed_is_text():
    text = ("# Templates\n\nWrite `<!-- more -->` to cut the summary.\n\n```html\n<!-- header -->\n<p>\n```\n\n"
            "An arrow <!-- that never closes stays.\n")
    parsed = parse("markdown", text, "t.md")
    assert [s.text for s in parsed.sections] == [text.split("\n", 2)[2].strip()]


@pytest.mark.parametrize("line", ["<!--" * 250_000, "` `` <!--" * 100_000, "`` ` <!-- x --> `" * 60_000, "](" * 500_000,
                                  "![" * 500_000, "<" * 1_000_000, "# x" + " {#a" * 250_000 + "}",
                                  "{{< a " * 200_000, "<Tab a=" * 150_000, "!!! a " * 200_000, ":::a [" * 200_000])
def test_a_hostile_line_of_markup_parses_in_linear_time(line):
    started = time.monotonic()
    parse("markdown", line + "\n-->\n", "hostile.md")
    assert time.monotonic() - started < 5, "a regex looking ahead from each mark took minutes"


@pytest.mark.parametrize("markup", ["---", "* * *", '<div align="center">', "</div>\n<br/>", "![Architecture](img/arch.png)",
                                    "[![Build](https://ci.example/badge.svg)](https://ci.example)", "<!--", "-->", "| | |\n|---|---|"])
def test_a_section_of_nothing_but_markup_makes_no_section(markup):
    parsed = parse("markdown", f"# Guide\n\n{markup}\n\n## Install\n\nRun the installer.\n\n## Usage\n\n{markup}\n", "g.md")
    assert [(s.path, s.text) for s in parsed.sections] == [(["Guide", "Install"], "Run the installer.")]


@pytest.mark.parametrize("text", ["<details><summary>Why</summary>", "![](a.png) Figure 1", "[Docs](https://x.example)", "42"])
def test_markup_with_a_word_in_it_is_a_section(text):
    assert [s.text for s in parse("markdown", f"# Guide\n\n{text}\n", "g.md").sections] == [text]


def test_malformed_front_matter_loses_its_metadata_but_never_the_body():
    parsed = parse("markdown", "---\ntitle:\n  draft: [unclosed\n---\n# Proposal\nThe body.\n", "bad.md")
    assert [(s.path, s.text) for s in parsed.sections] == [(["Proposal"], "The body.")]
    assert parsed.metadata == {"title": "Proposal"}
    assert len(parsed.warnings) == 1 and "malformed front matter ignored" in parsed.warnings[0]


@pytest.mark.parametrize("tags", ["[incident, 'billing']", "\n  - incident\n  - billing", "\n- incident\n- \"billing\"",
                                  "incident, billing"])
def test_flat_front_matter_that_is_not_yaml_is_read_line_by_line(tags):
    text = f"---\ntitle: Postmortem: billing-api outage\ndate: 2025-02-05\ntags: {tags}\n---\nThe body: it survives.\n"
    parsed = parse("markdown", text, "pm.md")
    assert _without_ts(parsed.metadata) == {"title": "Postmortem: billing-api outage", "date": "2025-02-05",
                                            "tags": ["incident", "billing"]}
    assert [(s.path, s.text) for s in parsed.sections] == [(["Postmortem: billing-api outage"], "The body: it survives.")]
    assert len(parsed.warnings) == 1 and "read line by line" in parsed.warnings[0]


def test_front_matter_read_line_by_line_keeps_a_value_as_written_and_leaves_nested_keys_out():
    text = "---\ntitle: [WIP] Rollout plan\ndescription: 'Phase 1: canary'\nowner:\n  team: sre\n---\nbody\n"
    parsed = parse("markdown", text, "plan.md")
    assert parsed.metadata == {"title": "[WIP] Rollout plan", "description": "Phase 1: canary"}


@pytest.mark.parametrize("text", [
    "---\n\nA note that opens with a rule.\n\n---\n\nAnd goes on.\n",
    "---\nNo closing rule follows, so this is prose.\n",
    "---\n\n- a list\n- of items\n\n---\nafter\n",
    "---\n\n## A heading between rules\nand a paragraph\n\n---\n\nmore text\n",
])
def test_a_note_opening_with_a_horizontal_rule_keeps_all_its_text(text):
    parsed = parse("markdown", text, "note.md")
    assert parsed.warnings == []
    assert parsed.metadata == {"title": "note"}
    body = "\n".join(" > ".join(s.path) + "\n" + s.text for s in parsed.sections)  # headings are kept as paths
    for line in filter(None, (line.strip().lstrip("# ") for line in text.splitlines())):
        assert line in body


def test_toml_front_matter_and_an_empty_yaml_block():
    assert parse("markdown", "+++\ntitle = 'Hugo page'\n+++\nbody\n", "p.md").metadata["title"] == "Hugo page"
    assert [s.text for s in parse("markdown", "---\n---\nbody\n", "p.md").sections] == ["body"]


def test_a_page_whose_text_is_only_in_its_front_matter_is_indexed_from_it():
    text = ("---\ntitle: Enterprise support\ndescription: Production support for Linkerd.\nweight: 3\nlayout: cards\n"
            "cards:\n  - heading: Buoyant Enterprise\n    text: Long-term support releases\n    href: https://example.com/x\n"
            "    image: /images/logo.png\n---\n")
    parsed = parse("markdown", text, "_index.md")
    # The description's own section, then the front matter's text (layout keys, links and image paths left out).
    assert [s.path for s in parsed.sections] == [["Enterprise support"], ["Enterprise support"]]
    assert parsed.sections[0].text == "Production support for Linkerd."
    lines = parsed.sections[1].text.splitlines()
    assert lines == ["Enterprise support", "Production support for Linkerd.", "Buoyant Enterprise", "Long-term support releases"]


def test_the_description_becomes_the_first_section_unless_the_page_opens_with_it():
    parsed = parse("markdown", "---\ntitle: Upgrade\ndescription: How to upgrade safely.\n---\n## Steps\nRun it.\n", "u.md")
    assert [(s.path, s.text) for s in parsed.sections] == [(["Upgrade"], "How to upgrade safely."), (["Upgrade", "Steps"], "Run it.")]
    same = parse("markdown", "---\ntitle: Upgrade\ndescription: How to upgrade safely.\n---\nHow to upgrade safely. More.\n", "u.md")
    assert [s.text for s in same.sections] == ["How to upgrade safely. More."]


# A memory entry as ralph-memory writes them (../shared/prior-art/002_a05f426456dc6cfa.txt).
ENTRY = {"id": "mem_a1b2c3", "loopId": "abc123", "iteration": 2, "createdAt": "2026-04-01T10:42:00Z", "type": "failure_pattern",
         "lesson": "Auth mocks must be initialized inside beforeEach, not at module scope",
         "context": "src/auth/auth.test.ts iteration 2 failure", "tags": ["auth", "mocks", "jest"], "confidence": 0.9}
ENTRY_METADATA = {"record_id": "mem_a1b2c3", "loop_id": "abc123", "iteration": 2, "date": "2026-04-01T10:42:00Z", "type": "failure_pattern",
                  "context": "src/auth/auth.test.ts iteration 2 failure", "tags": ["auth", "mocks", "jest"], "confidence": 0.9}


def _without_ts(metadata: dict) -> dict:
    return {key: value for key, value in metadata.items() if key != "date_ts"}


def test_a_file_holding_one_memory_entry_is_one_record_with_its_fields_as_metadata():
    sections = parse("json", json.dumps(ENTRY), "m-011.json").sections
    assert len(sections) == 1
    assert sections[0].path == ["m-011.json"]
    assert sections[0].text == ("type: failure_pattern\nlesson: Auth mocks must be initialized inside beforeEach, not at module scope\n"
                                "context: src/auth/auth.test.ts iteration 2 failure\ntags: auth, mocks, jest")
    assert _without_ts(sections[0].metadata) == ENTRY_METADATA
    assert sections[0].metadata["date_ts"] == 1775040120.0


def test_a_records_bookkeeping_is_metadata_and_none_of_its_text():
    record = {**ENTRY, "updatedAt": "2026-04-03T08:00:00Z", "schemaVersion": 3, "$schema": "https://example.com/entry.json"}
    section = parse("jsonl", json.dumps(record), "memory.jsonl").sections[0]
    for key in ("id", "loopId", "iteration", "createdAt", "updatedAt", "confidence", "schemaVersion", "$schema"):
        assert not any(line.startswith(f"{key}: ") for line in section.text.splitlines()), key
    assert _without_ts(section.metadata) == {**ENTRY_METADATA, "updated": "2026-04-03T08:00:00Z"}


def test_only_a_records_own_bookkeeping_leaves_its_text_and_only_what_metadata_carries():
    record = {"id": "r1", "lesson": "Retry the upload", "loop_id": "l-2", "iteration": "3", "confidence": "high",
              "createdAt": "last tuesday", "version": "1.29", "source": {"id": "gh-12", "createdAt": "2025-01-01"}}
    section = parse("json", json.dumps(record), "r.json").sections[0]
    assert section.text == ("lesson: Retry the upload\nconfidence: high\ncreatedAt: last tuesday\nversion: 1.29\n"
                            "source.id: gh-12\nsource.createdAt: 2025-01-01")
    assert section.metadata == {"record_id": "r1", "loop_id": "l-2", "iteration": "3"}


def test_a_record_of_nothing_but_bookkeeping_makes_no_section():
    records = [{"id": 1, "createdAt": "2026-04-01T10:42:00Z", "confidence": 0.5}, {"id": 2, "lesson": "Keep this one"}]
    assert [(s.path, s.text) for s in parse("json", json.dumps(records), "memory.json").sections] == [
        (["memory.json", "[1]"], "lesson: Keep this one")]


@pytest.mark.parametrize("name, kind", [("decisions.json", "decision"), ("decision.json", "decision"),
                                        ("Lessons.jsonl", "lesson"), ("todos.json", "todo"), ("preferences.json", "preference")])
def test_a_file_named_for_a_kind_types_its_records_that_carry_no_type(name, kind):
    records = [{"id": "d1", "decision": "Use Longhorn"}, {"id": "d2", "type": "Postmortem", "decision": "Page on 5xx"}, "Pin k0s"]
    text = "\n".join(map(json.dumps, records)) if name.endswith(".jsonl") else json.dumps(records)
    sections = parse("jsonl" if name.endswith(".jsonl") else "json", text, name).sections
    assert [s.metadata.get("type") for s in sections] == [kind, "Postmortem", kind]


def test_a_file_not_named_for_a_kind_leaves_records_untyped_and_a_files_own_fields_are_never_typed():
    assert "type" not in parse("json", json.dumps({"id": "m1", "lesson": "x"}), "memory.json").sections[0].metadata
    data = {"owner": "platform team", "decisions": [{"id": "d1", "decision": "Use Longhorn"}]}
    sections = parse("json", json.dumps(data), "decisions.json").sections
    assert [(s.text, s.metadata.get("type")) for s in sections] == [("owner: platform team", None),
                                                                   ("decision: Use Longhorn", "decision")]


def test_an_array_of_memory_entries_is_one_record_each():
    second = {**ENTRY, "id": "mem_c3d4", "type": "lesson_learned", "lesson": "Use jest.resetAllMocks() in afterEach"}
    sections = parse("json", json.dumps([ENTRY, second]), "memory.json").sections
    assert [s.path for s in sections] == [["memory.json", "[0]"], ["memory.json", "[1]"]]
    assert [s.metadata["record_id"] for s in sections] == ["mem_a1b2c3", "mem_c3d4"]
    assert sections[1].metadata["type"] == "lesson_learned"


def test_an_object_of_memory_entries_is_one_record_each():
    data = {"mem_a1": ENTRY, "mem_b2": {**ENTRY, "id": "mem_b2", "lesson": "Pin buildx to 0.12"}}
    sections = parse("json", json.dumps(data), "memory.json").sections
    assert [s.path for s in sections] == [["memory.json", "mem_a1"], ["memory.json", "mem_b2"]]
    assert "lesson: Pin buildx to 0.12" in sections[1].text
    assert _without_ts(sections[0].metadata) == ENTRY_METADATA


def test_entries_under_a_key_of_a_memory_file_are_one_record_each_and_the_file_is_dated_by_its_own_date():
    data = {"version": 2, "updated": "2026-04-02", "entries": [ENTRY]}
    parsed = parse("json", json.dumps(data), "memory.json")
    assert [s.path for s in parsed.sections] == [["memory.json", "entries[0]"]], "no chunk is a bare version or date"
    assert _without_ts(parsed.sections[0].metadata) == ENTRY_METADATA
    assert _without_ts(parsed.metadata) == {"title": "memory.json", "date": "2026-04-02"}


def test_the_own_fields_of_a_file_of_records_are_one_record_not_one_chunk_each():
    data = {"updated": "2026-11-22", "owner": "platform team", "entries": {"a1": ENTRY}, "region": "eu-west-1"}
    parsed = parse("json", json.dumps(data), "kb.json")
    assert [(s.path, s.text) for s in parsed.sections][0] == (["kb.json"], "owner: platform team\nregion: eu-west-1")
    assert [s.path for s in parsed.sections][1:] == [["kb.json", "entries.a1"]]
    assert parsed.metadata["date"] == "2026-11-22"


def test_a_nested_knowledge_object_keeps_one_record_per_key_and_opens_lists_of_records():
    data = {
        "decisions": [
            {"id": "d1", "date": "2025-01-15", "type": "decision", "decision": "A", "tags": ["X", "#y"], "confidence": 0.9},
            {"id": "d2", "createdAt": "2025-02-01T10:00:00Z", "decision": "B", "context": "k8s setup", "status": "accepted"},
        ],
        "shell": "zsh",
        "editor": {"name": "neovim", "plugins": ["lazy", "telescope"]},
        "kubernetes": {"cluster": {"name": "homelab", "nodes": 3}, "ingress": {"controller": "traefik"}},
    }
    sections = parse("json", json.dumps(data), "kb.json").sections
    assert [s.path for s in sections] == [
        ["kb.json"],
        ["kb.json", "decisions[0]"],
        ["kb.json", "decisions[1]"],
        ["kb.json", "editor"],
        ["kb.json", "kubernetes.cluster"],
        ["kb.json", "kubernetes.ingress"],
    ]
    assert sections.pop(0).text == "shell: zsh", "a scalar beside records is a field of the file, not a chunk of its own"
    first = sections[0]
    assert "decision: A" in first.text and "tags: X, #y" in first.text
    assert _without_ts(first.metadata) == {"date": "2025-01-15", "type": "decision", "record_id": "d1", "confidence": 0.9,
                                           "tags": ["x", "y"]}
    assert _without_ts(sections[1].metadata) == {"date": "2025-02-01T10:00:00Z", "record_id": "d2", "context": "k8s setup",
                                                 "status": "accepted"}
    assert sections[2].text == "name: neovim\nplugins: lazy, telescope"


def test_a_small_flat_object_is_one_record_and_a_huge_one_is_not():
    prefs = {"editor": "neovim", "shell": "zsh", "theme": "dark"}
    sections = parse("json", json.dumps(prefs), "preferences.json").sections
    assert [(s.path, s.text) for s in sections] == [(["preferences.json"], "editor: neovim\nshell: zsh\ntheme: dark")]
    huge = {f"key{i}": i for i in range(100)}
    assert len(parse("json", json.dumps(huge), "huge.json").sections) == 100


@pytest.mark.parametrize("key", ["date", "createdAt", "created_at", "created", "ts", "timestamp", "time", "datetime",
                                 "updatedAt", "updated_at", "updated", "modified"])
def test_each_date_key_dates_the_record(key):
    sections = parse("json", json.dumps({"id": "r1", "lesson": "x", key: "2025-03-04T05:06:07Z"}), "r.json").sections
    assert sections[0].metadata["date"] == "2025-03-04T05:06:07Z"


def test_the_first_date_key_in_order_of_preference_wins():
    record = {"updated_at": "2025-06-01", "id": "r1", "createdAt": "2025-01-01", "lesson": "x"}
    assert parse("json", json.dumps(record), "r.json").sections[0].metadata["date"] == "2025-01-01"


@pytest.mark.parametrize("value, expected", [
    (20250115, "2025-01-15"),  # YYYYMMDD
    ("20250115", "2025-01-15"),
    (1736899200, "2025-01-15T00:00:00Z"),  # epoch seconds
    (1736899200000, "2025-01-15T00:00:00Z"),  # epoch milliseconds
    (1736899200.5, "2025-01-15T00:00:00.500000Z"),
])
def test_numbers_are_read_as_dates_by_magnitude(value, expected):
    metadata = parse("json", json.dumps({"id": "r1", "lesson": "x", "date": value}), "r.json").sections[0].metadata
    assert metadata["date"] == expected
    assert metadata["date_ts"] == pytest.approx(1736899200.0, abs=1)


@pytest.mark.parametrize("value", [12, 20251399, "20251399", 3.5, True])
def test_numbers_that_are_not_dates_leave_the_record_undated(value):
    metadata = parse("json", json.dumps({"id": "r1", "lesson": "x", "time": value}), "r.json").sections[0].metadata
    assert "date" not in metadata


@pytest.mark.parametrize(
    "text, message",
    [("{not json", "malformed JSON"), ("[" * 10_000 + "]" * 10_000, "nested too deeply")],
)
def test_bad_json_is_a_parse_error(text, message):
    with pytest.raises(ParseError, match=message):
        parse("json", text, "bad.json")


def test_jsonl_keeps_good_lines_and_warns_about_bad_ones():
    text = '{"date": "2025-03-02", "entry": "one"}\nnot json\n{"entry": "three"}\n'
    parsed = parse("jsonl", text, "journal.jsonl")
    assert [s.path[-1] for s in parsed.sections] == ["line 1", "line 3"]
    assert parsed.sections[0].metadata["date"] == "2025-03-02"
    assert parsed.warnings == ["malformed JSON on line(s) 2 skipped"]
    with pytest.raises(ParseError):
        parse("jsonl", "nope\nnever\n", "bad.jsonl")


def test_kinds_by_suffix():
    assert kind_of("a/b.md") == "markdown"
    assert kind_of("x.JSON") == "json"
    assert kind_of("x.jsonl") == "jsonl"
    assert kind_of("config.yaml") == "text"
    assert kind_of("photo.png") is None


def test_a_table_row_or_a_second_paragraph_line_over_dashes_is_text_and_a_rule_not_a_heading():
    """CommonMark reads both as setext headings; Python-Markdown (MkDocs) as text and a rule, and so do we."""
    text = "# Limits\n\n| Limit | Value |\n---\nWrapped paragraph\nsecond line\n---\nafter\n"
    assert [(s.path, s.text) for s in parse("markdown", text, "l.md").sections] == [
        (["Limits"], "| Limit | Value |\n---\nWrapped paragraph\nsecond line\n---\nafter")]


def test_details_and_summary_keep_their_text():
    text = "# FAQ\n\n<details><summary>Why does it restart?</summary>\n\nThe probe fails.\n\n</details>\n"
    assert [s.text for s in parse("markdown", text, "faq.md").sections] == [
        "<details><summary>Why does it restart?</summary>\n\nThe probe fails.\n\n</details>"]


def test_hash_lines_in_indented_code_and_in_a_list_items_fence_are_not_headings_and_crlf_lines_are_lines():
    text = "# Setup\r\n\r\n    # indented code\r\n\r\n- step\r\n\r\n  ```sh\r\n  # a shell comment\r\n  ```\r\n\r\n## Next\r\nend\r\n"
    sections = parse("markdown", text, "s.md").sections
    assert [s.path for s in sections] == [["Setup"], ["Setup", "Next"]]
    assert "# indented code" in sections[0].text and "# a shell comment" in sections[0].text
