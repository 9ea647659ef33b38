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
])
def test_a_note_opening_with_a_horizontal_rule_keeps_all_its_text(text):
    parsed = parse("markdown", text, "note.md")
    assert parsed.warnings == []
    assert parsed.metadata == {"title": "note"}
    body = "\n".join(s.text for s in parsed.sections)
    for line in filter(None, (line.strip() for line in text.splitlines())):
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


def test_json_object_gives_one_record_per_key_and_one_per_array_element():
    data = {
        "decisions": [
            {"id": "d1", "date": "2025-01-15", "type": "decision", "decision": "A", "tags": ["x", "y"], "confidence": 0.9},
            {"id": "d2", "createdAt": "2025-02-01T10:00:00Z", "decision": "B", "context": "k8s setup"},
        ],
        "shell": "zsh",
        "editor": {"name": "neovim", "plugins": ["lazy", "telescope"]},
    }
    sections = parse("json", json.dumps(data), "kb.json").sections
    assert [s.path for s in sections] == [
        ["kb.json", "decisions[0]"],
        ["kb.json", "decisions[1]"],
        ["kb.json", "shell"],
        ["kb.json", "editor"],
    ]
    first = sections[0]
    assert "decision: A" in first.text and "tags: x, y" in first.text
    assert first.metadata == {
        "date": "2025-01-15",
        "date_ts": first.metadata["date_ts"],
        "type": "decision",
        "record_id": "d1",
        "confidence": 0.9,
        "tags": ["x", "y"],
    }
    assert sections[1].metadata["date"] == "2025-02-01T10:00:00Z"
    assert sections[1].metadata["context"] == "k8s setup"
    assert sections[2].text == "zsh"
    assert sections[3].text == "name: neovim\nplugins: lazy, telescope"


def test_json_array_of_memory_entries_and_mapping_of_records():
    entries = [{"id": "mem_1", "lesson": "L1", "type": "failure_pattern"}, {"id": "mem_2", "lesson": "L2"}]
    sections = parse("json", json.dumps(entries), "memory.json").sections
    assert [s.path[-1] for s in sections] == ["[0]", "[1]"]
    assert sections[0].metadata["type"] == "failure_pattern"
    keyed = {"prefs": {"editor": {"name": "vim"}, "shell": {"name": "zsh"}}}
    assert [s.path[-1] for s in parse("json", json.dumps(keyed), "p.json").sections] == ["prefs.editor", "prefs.shell"]


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
