import json

import pytest

from rag_search.parsing import ParseError, kind_of, parse


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


def test_malformed_front_matter_loses_its_metadata_but_never_the_body():
    parsed = parse("markdown", "---\ntitle: [unclosed\ndate: 2025-01-15\n---\n# Proposal\nThe body.\n", "bad.md")
    assert [(s.path, s.text) for s in parsed.sections] == [(["Proposal"], "The body.")]
    assert parsed.metadata == {"title": "Proposal"}
    assert len(parsed.warnings) == 1 and "malformed front matter" in parsed.warnings[0]


@pytest.mark.parametrize("text", [
    "---\n\nA note that opens with a rule.\n\n---\n\nAnd goes on.\n",
    "---\nNo closing rule follows, so this is prose.\n",
    "---\n\n- a list\n- of items\n\n---\nafter\n",
    "---\n\n## A heading between rules\nand a paragraph\n\n---\n\nmore text\n",
    "---\n",
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
    assert "lesson: Auth mocks must be initialized inside beforeEach" in sections[0].text
    assert "tags: auth, mocks, jest" in sections[0].text and "confidence: 0.9" in sections[0].text
    assert _without_ts(sections[0].metadata) == ENTRY_METADATA
    assert sections[0].metadata["date_ts"] == 1775040120.0


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


def test_entries_under_a_key_of_a_memory_file_are_one_record_each():
    data = {"version": 2, "updated": "2026-04-02", "entries": [ENTRY]}
    sections = parse("json", json.dumps(data), "memory.json").sections
    assert [s.path for s in sections] == [["memory.json", "version"], ["memory.json", "updated"], ["memory.json", "entries[0]"]]
    assert _without_ts(sections[2].metadata) == ENTRY_METADATA


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
        ["kb.json", "decisions[0]"],
        ["kb.json", "decisions[1]"],
        ["kb.json", "shell"],
        ["kb.json", "editor"],
        ["kb.json", "kubernetes.cluster"],
        ["kb.json", "kubernetes.ingress"],
    ]
    assert sections[2].text == "zsh"
    first = sections[0]
    assert "decision: A" in first.text and "tags: X, #y" in first.text
    assert _without_ts(first.metadata) == {"date": "2025-01-15", "type": "decision", "record_id": "d1", "confidence": 0.9,
                                           "tags": ["x", "y"]}
    assert _without_ts(sections[1].metadata) == {"date": "2025-02-01T10:00:00Z", "record_id": "d2", "context": "k8s setup",
                                                 "status": "accepted"}
    assert sections[3].text == "name: neovim\nplugins: lazy, telescope"


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
