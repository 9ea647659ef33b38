"""Which files the personal index sees, and how unreadable ones are reported."""

import os

import pytest

from rag_search.sources.files import SkipFile, read_text, walk_root


def make(root, files):
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def walk(root, ignore_patterns=()):
    result = walk_root(root, list(ignore_patterns))
    return sorted(entry.rel for entry in result.files), {s["file"]: s["reason"] for s in result.skipped}


def test_default_ignores_and_supported_kinds(tmp_path):
    make(tmp_path, {
        "notes/a.md": "a",
        "kb.json": "{}",
        "log.jsonl": "{}",
        "plain.txt": "t",
        "conf.yaml": "k: v",
        "debug.log": "x",
        "image.png": "x",
        ".git/config.md": "x",
        "node_modules/pkg/readme.md": "x",
        ".hidden/secret.md": "x",
        "_build/out.md": "x",
        "deep/node_modules/x.md": "x",
    })
    files, skipped = walk(tmp_path)
    assert files == ["conf.yaml", "kb.json", "log.jsonl", "notes/a.md", "plain.txt"]
    assert skipped == {}


def test_ragignore_uses_gitignore_syntax_with_negation(tmp_path):
    make(tmp_path, {
        ".ragignore": "drafts/**\n!drafts/INDEX.md\n*.bak.md\narchive/\n",
        "drafts/INDEX.md": "i",
        "drafts/wip.md": "w",
        "notes/x.bak.md": "b",
        "notes/keep.md": "k",
        "archive/old.md": "o",
        "sub/archive/older.md": "o",
    })
    files, _ = walk(tmp_path)
    assert files == ["drafts/INDEX.md", "notes/keep.md"]


def test_config_ignore_patterns_apply_to_every_root(tmp_path):
    make(tmp_path, {"a.md": "a", "scratch/b.md": "b"})
    files, _ = walk(tmp_path, ignore_patterns=["scratch/"])
    assert files == ["a.md"]


def test_symlinks_dangling_outside_and_inside(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    make(root, {"real.md": "r"})
    (root / "inside-link.md").symlink_to(root / "real.md")
    (root / "outside-link.md").symlink_to(outside)
    (root / "dangling.md").symlink_to(root / "missing.md")
    (root / "loop").symlink_to(root)  # a directory symlink is never followed
    files, skipped = walk(root)
    assert files == ["inside-link.md", "real.md"]
    assert skipped == {"dangling.md": "dangling symlink", "outside-link.md": "symlink points outside the root"}


def test_fifo_is_skipped_without_being_opened(tmp_path):
    make(tmp_path, {"a.md": "a"})
    os.mkfifo(tmp_path / "pipe.md")
    files, skipped = walk(tmp_path)
    assert files == ["a.md"]
    assert skipped == {"pipe.md": "not a regular file"}


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00binary", "binary file"),
        (bytes(range(128, 256)) * 3, "not valid UTF-8"),  # no encoding reads it as text
        (b"x" * 2000, "larger than"),
    ],
)
def test_unreadable_content_is_skipped_with_a_reason(tmp_path, content, reason):
    path = tmp_path / "f.md"
    path.write_bytes(content)
    with pytest.raises(SkipFile, match=reason):
        read_text(path, max_bytes=1000)


@pytest.mark.parametrize("content", [b"", b"  \n\t\n"])
def test_an_empty_file_is_read_not_skipped(tmp_path, content):
    """A file with no text is an empty document (its earlier chunks go), not a file that cannot be read."""
    path = tmp_path / "f.md"
    path.write_bytes(content)
    assert read_text(path, max_bytes=1000) == (content.decode(), None)


def test_utf8_with_bom_is_read(tmp_path):
    path = tmp_path / "bom.md"
    path.write_bytes("\ufeff# Title\nbody".encode("utf-8"))
    assert read_text(path, 1000) == ("# Title\nbody", None)


@pytest.mark.parametrize(
    "text, written_as, read_as",
    [
        ("# Café\nLe café est prêt, naïve résumé du jour à Zürich.\n", "latin-1", "cp1252"),  # latin-1 text is cp1252 text
        ("# Pricing\nThe “premium” plan costs 20 € a month — it’s cheaper yearly.\n", "cp1252", "cp1252"),
        ("# Кластер\nЭто заметка о кластере и его настройке. Всё работает хорошо.\n", "cp1251", "cp1251"),
        ("# Notes\nSaved by Windows PowerShell, which writes UTF-16.\n", "utf-16", "utf-16"),
    ],
    ids=["latin-1", "cp1252", "cp1251", "utf-16"],
)
def test_text_in_another_encoding_is_decoded_and_says_which(tmp_path, text, written_as, read_as):
    path = tmp_path / "note.md"
    path.write_bytes(text.encode(written_as))
    assert read_text(path, 10_000) == (text, read_as)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_is_skipped(tmp_path):
    path = tmp_path / "locked.md"
    path.write_text("x")
    path.chmod(0)
    with pytest.raises(SkipFile, match="unreadable"):
        read_text(path, 1000)
