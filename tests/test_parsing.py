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
    assert [s.text for s in parsed.sections] == ["Intro line."]
    assert "title:" not in parsed.sections[0].text


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


def test_malformed_front_matter_is_a_parse_error():
    with pytest.raises(ParseError, match="front matter"):
        parse("markdown", "---\ntitle: [unclosed\n---\nbody", "bad.md")


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
