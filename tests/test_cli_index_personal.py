"""index_personal.py end to end: real model, real ChromaDB on disk, run as a subprocess."""

import json
import os
import re

from conftest import call_script, files_in_store, store_contents

EXAMPLE_FILES = {
    "notes/argocd-setup.md", "notes/k0s-cluster.md", "notes/prometheus-alerting.md", "memory/decisions.json",
    "memory/memory.json", "preferences.json", "journal.jsonl", "drafts/INDEX.md",
}


def index(data, *roots, env=None):
    return call_script("index_personal.py", "--data-dir", data, *roots, env=env)


def test_indexes_the_examples_and_prints_one_json_summary(state_dir, tmp_path):
    data = tmp_path / "data"
    result = index(data, state_dir)
    assert result.code == 0, result
    summary = result.json
    assert summary["index"] == "personal"
    assert summary["added"] == len(EXAMPLE_FILES)
    assert summary["files_seen"] == len(EXAMPLE_FILES)
    assert summary["skipped"] == []
    assert summary["chunks"] == summary["chunks_added"] == summary["embedded"] > len(EXAMPLE_FILES)
    assert summary["roots_from"] == "command line"
    assert {"updated", "deleted", "unchanged", "ignored", "seconds"} <= set(summary)
    assert "using roots from command line" in result.stderr
    assert set(files_in_store(data)) == EXAMPLE_FILES
    assert oct(data.stat().st_mode & 0o777) == "0o700"


def test_chunk_metadata(state_dir, tmp_path):
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    chunks = list(store_contents(data).values())
    for chunk in chunks:
        metadata = chunk["metadata"]
        assert metadata["source"] == "personal"
        assert metadata["root"] == str(state_dir)
        assert {"file", "heading", "date", "content_hash", "indexed_at"} <= set(metadata)
    decision = next(c for c in chunks if "Longhorn for persistent volumes" in c["text"])
    assert decision["metadata"]["date"] == "2025-02-01"
    assert decision["metadata"]["context"] == "k8s storage"
    assert decision["metadata"]["heading"] == "decisions.json > decisions[1]"
    note = next(c for c in chunks if c["metadata"]["file"] == "notes/argocd-setup.md")
    assert note["metadata"]["title"] == "ArgoCD setup for the homelab"
    assert note["metadata"]["tags"] == ["argocd", "gitops", "k8s"]
    assert "title:" not in note["text"], "front matter must not be embedded"


def test_incremental_runs_touch_only_what_changed(state_dir, tmp_path):
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0

    again = index(data, state_dir).json
    assert again["unchanged"] == len(EXAMPLE_FILES)
    assert again["embedded"] == again["chunks_added"] == again["chunks_removed"] == 0

    os.utime(state_dir / "journal.jsonl")  # newer mtime, same content
    touched = index(data, state_dir).json
    assert touched["unchanged"] == len(EXAMPLE_FILES) and touched["embedded"] == 0

    note = state_dir / "notes" / "k0s-cluster.md"
    note.write_text(note.read_text() + "\n## Certificates\n\nk0s rotates kubelet certificates on its own.\n")
    edited = index(data, state_dir).json
    assert (edited["added"], edited["updated"], edited["deleted"]) == (0, 1, 0)
    assert edited["embedded"] == 1, "only the new section should be embedded; unchanged chunks reuse their vectors"
    assert any("rotates kubelet certificates" in c["text"] for c in store_contents(data).values())

    (state_dir / "preferences.json").unlink()
    deleted = index(data, state_dir).json
    assert deleted["deleted"] == 1 and deleted["embedded"] == 0
    deleted_chunks = deleted["chunks_removed"]
    assert "preferences.json" not in files_in_store(data)

    full = index(data, state_dir, "--full").json
    assert full["rebuilt"] is True and full["chunks"] == edited["chunks"] - deleted_chunks
    assert full["embedded"] == 0, "a rebuild takes the vectors of texts the index it replaces has"


def test_bad_files_are_skipped_with_reasons_and_the_rest_indexed(state_dir, tmp_path, isolated_home):
    config = isolated_home / ".config" / "rag-search" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"max_file_bytes": 50_000}))
    bad = {
        "bad.json": b"{ not json",
        "binary.md": b"PK\x03\x04\x00\x00 zip bytes",
        "undecodable.txt": bytes(range(128, 256)) * 3,  # text in no encoding
        "huge.md": b"word " * 20_000,
        "deep.json": b"[" * 10_000 + b"]" * 10_000,
    }
    for name, content in bad.items():
        (state_dir / name).write_bytes(content)
    (state_dir / "dangling.md").symlink_to(state_dir / "nowhere.md")
    (state_dir / "bad-front-matter.md").write_text("---\ntitle: [unclosed\n---\nthe body survives\n")
    (state_dir / "empty.md").write_bytes(b"")  # no text: an empty document, not a file that cannot be read

    result = index(tmp_path / "data", state_dir)
    assert result.code == 0, result
    summary = result.json
    reasons = {os.path.basename(s["file"]): s["reason"] for s in summary["skipped"]}
    assert reasons.keys() == set(bad) | {"dangling.md"}
    assert "malformed JSON" in reasons["bad.json"]
    assert "binary" in reasons["binary.md"]
    assert "not valid UTF-8" in reasons["undecodable.txt"]
    assert "limit" in reasons["huge.md"]
    assert "nested too deeply" in reasons["deep.json"]
    assert reasons["dangling.md"] == "dangling symlink"
    assert summary["added"] == len(EXAMPLE_FILES) + 1 and summary["empty"] == 1
    for name in bad:
        assert name in result.stderr, f"{name} should be reported on stderr"
    # Malformed front matter costs the metadata, never the text: indexed, with a warning.
    assert re.search(r"bad-front-matter\.md: malformed front matter", result.stderr)
    texts = [chunk["text"] for chunk in store_contents(tmp_path / "data").values() if chunk["metadata"]["file"] == "bad-front-matter.md"]
    assert texts == ["the body survives"]


def test_a_file_that_turns_bad_keeps_its_previous_chunks(state_dir, tmp_path):
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    before = files_in_store(data)["memory/decisions.json"]
    (state_dir / "memory" / "decisions.json").write_text('{"decisions": [')
    summary = index(data, state_dir).json
    assert "previously indexed version is kept" in summary["skipped"][0]["reason"]
    assert files_in_store(data)["memory/decisions.json"] == before


def test_files_emptied_by_hand_lose_their_chunks_and_an_unchanged_empty_file_is_not_reported_again(state_dir, tmp_path):
    """A JSON file edited to [], a note emptied or left with front matter only is an empty
    document: its chunks go, and the next run finds it unchanged instead of skipping it again."""
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    emptied = {"memory/decisions.json": "[]\n", "notes/k0s-cluster.md": "", "notes/prometheus-alerting.md": "---\ndraft: true\n---\n"}
    for name, text in emptied.items():
        (state_dir / name).write_text(text)
    (state_dir / "notes" / "newsletter.md").write_text("---\ndraft: true\n---\n")  # empty from the start
    first = index(data, state_dir)
    assert first.code == 0, first
    assert first.json["skipped"] == [] and first.json["empty"] == 4 and first.json["chunks_removed"] > 0, first.json
    assert (first.json["added"], first.json["updated"], first.json["deleted"]) == (0, 0, 0)
    assert not set(emptied) & set(files_in_store(data))
    found = call_script("search.py", "--data-dir", data, "--index", "personal", "--mode", "lexical", "Longhorn persistent volumes")
    assert "memory/decisions.json" not in [item["file"] for item in found.json["results"]], found.json
    second = index(data, state_dir)
    assert second.json["skipped"] == [] and second.json["empty"] == 0, second.json
    assert second.json["unchanged"] == len(EXAMPLE_FILES) + 1 and not second.json["published"]
    assert not [name for name in [*emptied, "newsletter.md"] if name in second.stderr], second.stderr
    document = call_script("get.py", "--data-dir", data, "memory/decisions.json")
    assert document.code == 0 and (document.json["chunks"], document.json["text"]) == (0, ""), document


def test_missing_root_is_a_clear_error(tmp_path):
    result = index(tmp_path / "data", tmp_path / "no-such-folder")
    assert result.code == 6, result
    assert "does not exist" in result.stderr
    assert result.json["error"]["code"] == 6


def test_unwritable_data_dir_is_a_clear_error(state_dir, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = index(blocker / "data", state_dir)
    assert result.code == 7, result
    assert "cannot write to the data folder" in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [result.stderr.splitlines()[-1]]


def test_roots_from_the_environment_and_the_default_root(state_dir, isolated_home):
    result = call_script("index_personal.py", "--data-dir", isolated_home / "d1", env={"RAG_SEARCH_PERSONAL_DIRS": str(state_dir)})
    assert result.code == 0, result
    assert "using roots from RAG_SEARCH_PERSONAL_DIRS" in result.stderr
    assert result.json["roots"] == [str(state_dir)]

    default_root = isolated_home / ".claude" / "state"
    default_root.mkdir(parents=True)
    (default_root / "note.md").write_text("# Note\nthe default root is ~/.claude/state")
    result = call_script("index_personal.py", "--quiet")
    assert result.code == 0, result
    assert result.json["roots"] == [str(default_root)] and result.json["roots_from"] == "default"
    assert result.stderr == ""
    assert (isolated_home / ".claude" / "data" / "rag-search").is_dir()


def test_files_of_a_root_not_named_in_a_run_are_kept(state_dir, tmp_path):
    """A run over some roots never deletes what other roots indexed (they may be unplugged, or simply not named)."""
    data = tmp_path / "data"
    other = tmp_path / "other"
    other.mkdir()
    (other / "extra.md").write_text("# Extra\nanother root")
    assert index(data, state_dir, other).code == 0
    assert "extra.md" in files_in_store(data)
    summary = index(data, state_dir).json
    assert summary["deleted"] == 0
    assert "extra.md" in files_in_store(data)


def test_roots_named_once_are_refreshed_by_a_plain_run(state_dir, tmp_path):
    """`index_personal.py ~/.claude/state ~/notes` then `index_personal.py` (the timer) keeps and refreshes both."""
    data = tmp_path / "data"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "extra.md").write_text("# Extra\nanother root")
    assert index(data, state_dir, notes).code == 0
    (notes / "later.md").write_text("# Later\nwritten after the first run")
    plain = call_script("index_personal.py", "--data-dir", data)
    assert plain.code == 0, plain
    assert plain.json["roots"] == [str(notes), str(state_dir)]
    assert plain.json["deleted"] == 0 and plain.json["added"] == 1
    assert {"extra.md", "later.md", "notes/argocd-setup.md"} <= set(files_in_store(data))


def index_then_unplug(data, state_dir, disk):
    """Index `state_dir` and a second root on a disk, then unplug the disk."""
    disk.mkdir()
    (disk / "on-disk.md").write_text("# On the disk\nunplugged at night")
    assert index(data, state_dir, disk).code == 0
    disk.rename(disk.with_name("unplugged"))


def test_a_missing_root_is_skipped_with_a_warning_and_keeps_its_chunks(state_dir, tmp_path):
    data, disk = tmp_path / "data", tmp_path / "disk"
    index_then_unplug(data, state_dir, disk)
    (state_dir / "new.md").write_text("# New\nthe other root is still refreshed")
    plain = call_script("index_personal.py", "--data-dir", data)
    assert plain.code == 0, plain
    assert plain.json["missing_roots"] == [str(disk)] and plain.json["roots"] == [str(state_dir)]
    assert f"personal root {disk} is missing" in plain.stderr and "--forget" in plain.stderr
    assert {"on-disk.md", "new.md"} <= set(files_in_store(data))


def test_forget_removes_a_root_and_its_chunks(state_dir, tmp_path):
    data = tmp_path / "data"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "extra.md").write_text("# Extra\nanother root")
    assert index(data, state_dir, notes).code == 0
    forgotten = call_script("index_personal.py", "--data-dir", data, "--forget", notes)
    assert forgotten.code == 0, forgotten
    assert forgotten.json["forgotten"] == [str(notes)] and forgotten.json["chunks_removed"] == 1
    assert forgotten.json["roots"] == [str(state_dir)]
    assert "extra.md" not in files_in_store(data)
    assert call_script("index_personal.py", "--data-dir", data).json["roots"] == [str(state_dir)]
    unknown = call_script("index_personal.py", "--data-dir", data, "--forget", tmp_path / "never-indexed")
    assert unknown.code == 6 and "is not a root of the personal index" in unknown.stderr


def test_a_forgotten_root_leaves_status_too(state_dir, tmp_path):
    """--forget once left the root in status.py forever."""
    data = tmp_path / "data"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "extra.md").write_text("# Extra\nanother root")
    assert index(data, state_dir, notes).code == 0
    assert call_script("index_personal.py", "--data-dir", data, "--forget", notes).code == 0
    status = call_script("status.py", "--data-dir", data)
    assert status.code == 0, status
    assert [root["root"] for root in status.json["personal_roots"]] == [str(state_dir)]


def test_a_configured_root_that_never_existed_is_not_sent_to_forget(state_dir, tmp_path):
    """Its warning used to say `--forget ROOT`, which then exited 6: the index never had it."""
    data = tmp_path / "data"
    missing = tmp_path / "never-there"
    result = call_script("index_personal.py", "--data-dir", data, env={"RAG_SEARCH_PERSONAL_DIRS": f"{state_dir},{missing}"})
    assert result.code == 0, result
    warning = next(line for line in result.stderr.splitlines() if str(missing) in line)
    assert "--forget" not in warning and "RAG_SEARCH_PERSONAL_DIRS" in warning, warning


def test_a_full_rebuild_with_a_root_missing_is_not_published(state_dir, tmp_path):
    """--full once said a missing root's chunks were kept, then dropped them."""
    data, disk = tmp_path / "data", tmp_path / "disk"
    index_then_unplug(data, state_dir, disk)
    rebuilt = call_script("index_personal.py", "--data-dir", data, "--full")
    assert rebuilt.code == 9, rebuilt
    assert str(disk) in rebuilt.stderr and "--allow-shrink" in rebuilt.stderr
    assert "its chunks are kept" not in rebuilt.stderr
    assert "on-disk.md" in files_in_store(data)
    allowed = call_script("index_personal.py", "--data-dir", data, "--full", "--allow-shrink")
    assert allowed.code == 0, allowed
    assert "on-disk.md" not in files_in_store(data)


def test_same_named_files_of_two_roots_are_two_pages(state_dir, tmp_path):
    """Two roots' notes/todo.md were once one page, so --per-file hid one."""
    data = tmp_path / "data"
    work, home = tmp_path / "work", tmp_path / "home-notes"
    for root, what in ((work, "rotate the staging certificates"), (home, "rotate the router certificates")):
        (root / "notes").mkdir(parents=True)
        (root / "notes" / "todo.md").write_text(f"# Todo\n\nThis week: {what} before they expire.\n")
    assert index(data, work, home).code == 0
    found = call_script("search.py", "--data-dir", data, "--per-file", "1", "--top-k", "5", "rotate certificates before they expire")
    assert found.code == 0, found
    todo = [result for result in found.json["results"] if result["file"] == "notes/todo.md"]
    assert len(todo) == 2, found.json["results"]


def test_notes_in_latin_1_or_cp1252_or_with_a_colon_in_their_title_are_found_with_their_dates_and_tags(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "latin1.md").write_bytes("---\ndate: 2025-02-03\ntags: [cuisine]\n---\n# Réunion\n\n"
                                     "Le gâteau aux myrtilles sera prêt à midi.\n".encode("latin-1"))
    (root / "cp1252.md").write_bytes("---\ndate: 2025-02-04\ntags: [pricing]\n---\n# Pricing\n\n"
                                     "The “zeppelin” tier costs 20 € a month.\n".encode("cp1252"))
    (root / "postmortem.md").write_text("---\ntitle: Postmortem: billing-api outage\ndate: 2025-02-05\ntags:\n  - incident\n"
                                        "  - billing\n---\nThe billing-api ran out of database connections at noon.\n")
    data = tmp_path / "data"
    result = index(data, root)
    assert result.code == 0 and result.json["skipped"] == [], result
    expected = [("myrtilles", "latin1.md", "2025-02-03", ["cuisine"], "cp1252", "Le gâteau aux myrtilles sera prêt à midi."),
                ("zeppelin", "cp1252.md", "2025-02-04", ["pricing"], "cp1252", "The “zeppelin” tier costs 20 € a month."),
                ("connections", "postmortem.md", "2025-02-05", ["incident", "billing"], None,
                 "The billing-api ran out of database connections at noon.")]
    for word, file, date, tags, encoding, text in expected:
        found = call_script("search.py", "--data-dir", data, "--index", "personal", "--verbose", word).json["results"][0]
        assert (found["file"], found["chunk"]) == (file, text)
        metadata = found["metadata"]
        assert (metadata["date"], metadata["tags"], metadata.get("encoding")) == (date, tags, encoding)
    assert found["metadata"]["title"] == "Postmortem: billing-api outage"
