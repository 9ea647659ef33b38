"""The data dir is ours alone: a run refuses a folder it did not make, and deletes only what it made."""

import json
import os
import shutil
import signal
import stat
import tempfile
from pathlib import Path

import pytest

from conftest import add_source, call_script, index_docs, resident_searchers
from gitrepo import GitRepo


def test_a_folder_with_other_content_is_refused_and_left_as_it_was(state_dir, tmp_path):
    data = tmp_path / "projects"
    for name in ("index/important.txt", "generations/keep.txt", "sources/draft/text.md", "CURRENT", "notes.txt"):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text("the user's own file\n")
    before = sorted(str(path.relative_to(data)) for path in data.rglob("*"))

    result = call_script("index_personal.py", "--data-dir", data, state_dir)
    assert result.code == 6, result
    assert str(data) in result.stderr and "not a rag-search data folder" in result.stderr
    assert result.json["error"]["hint"]
    assert sorted(str(path.relative_to(data)) for path in data.rglob("*")) == before
    assert index_docs(data, "--all").code == 6


def contents(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` with its bytes (None for a folder), to see that nothing in it changed."""
    return {str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes() for path in folder.rglob("*")}


# Another tool's files that carry the names rag-search used before its marker: names prove nothing.
FOREIGN_LAYOUTS = {
    "chroma index": {"index/chroma.sqlite3": b"SQLite format 3\x00 another tool's vectors"},
    "generations": {"generations/g000001/chroma/chroma.sqlite3": b"SQLite format 3\x00", "generations/g000001/notes.md": b"mine\n"},
    "CURRENT and write.lock": {"CURRENT": b"g000001\n", "write.lock": b""},
    "a collection's names": {"personal/CURRENT": b"g000001\n", "personal/generations/g000001/catalog.sqlite": b"SQLite format 3\x00"},
}


@pytest.mark.parametrize("layout", FOREIGN_LAYOUTS.values(), ids=FOREIGN_LAYOUTS.keys())
def test_a_folder_with_names_rag_search_once_used_is_refused_and_left_as_it_was(layout, state_dir, tmp_path):
    data = tmp_path / "theirs"
    for name, content in layout.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_bytes(content)
    before = contents(data)

    for result in (call_script("index_personal.py", "--data-dir", data, state_dir), index_docs(data, "--all")):
        assert result.code == 6, result
        assert str(data) in result.stderr and "not a rag-search data folder" in result.stderr
    assert contents(data) == before


def test_a_data_dir_of_a_version_before_the_marker_is_known_by_its_index_and_adopted_without_removing_anything(
        example_data, state_dir):
    """A data dir made before the marker (2026-11-26) holds an index whose catalog records our fingerprint: content
    only rag-search writes. It is marked and used, with a warning first; nothing in it is removed."""
    (example_data / ".rag-search").unlink()
    before = contents(example_data)

    result = call_script("index_personal.py", "--data-dir", example_data, state_dir)
    assert result.code == 0, result
    assert "earlier rag-search version" in result.stderr and str(example_data) in result.stderr
    assert (example_data / ".rag-search").is_file()
    kept = {path for path in before if not path.startswith("personal/generations/")}  # replaced, as by every run
    assert kept <= set(contents(example_data))
    assert call_script("search.py", "--data-dir", example_data, "ArgoCD self-heal").json["results"]


LOOSENED = {
    "writable by others": (lambda data: os.chmod(data, 0o777), "can be written by other users", "chmod 700"),
    "another owner": (lambda data: os.chown(data, 65534, 65534), "belongs to another user (uid 65534)", "a folder of your own"),
}


@pytest.mark.parametrize("loosen, message, hint", LOOSENED.values(), ids=LOOSENED.keys())
def test_a_data_dir_others_can_write_is_refused_by_readers_and_writers(loosen, message, hint, example_data, state_dir):
    """Another uid that can write the data dir could plant a link at resident/log or files where a run deletes."""
    if loosen is LOOSENED["another owner"][0] and os.geteuid() != 0:
        pytest.skip("needs root to give the folder to another uid")
    loosen(example_data)
    before = contents(example_data)

    for result in (call_script("search.py", "--data-dir", example_data, "caching decision"),
                   call_script("status.py", "--data-dir", example_data),
                   call_script("index_personal.py", "--data-dir", example_data, state_dir)):
        assert result.code == 6, result
        assert f"the data folder {example_data} {message}" in result.stderr
        assert hint in result.json["error"]["hint"]
    assert contents(example_data) == before


def outside(tmp_path: Path, name: str) -> Path:
    """A file of the user's outside the data dir, which a link planted in it points at (not made yet)."""
    (tmp_path / "outside").mkdir(exist_ok=True)
    return tmp_path / "outside" / name


def test_links_planted_where_a_search_writes_are_not_followed(example_data, tmp_path):
    """resident/log is appended to and chmodded by the search that starts a resident searcher; .notes-said remembers
    the note that the docs index is not built."""
    targets = {"resident/log": outside(tmp_path, "log-target"), ".notes-said": outside(tmp_path, "said-target")}
    (example_data / "resident").mkdir(mode=0o700, exist_ok=True)
    for name, target in targets.items():
        target.write_text("the user's own file\n")
        target.chmod(0o644)
        (example_data / name).unlink(missing_ok=True)  # the example index's searches may have said their note already
        (example_data / name).symlink_to(target)
    runtime = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))  # short: a socket path has at most 107 bytes
    env = {"RAG_SEARCH_RESIDENT": "1", "XDG_RUNTIME_DIR": str(runtime)}
    try:
        result = call_script("search.py", "--data-dir", example_data, "caching decision", env=env)
        assert result.code == 0, result
        assert "docs index has not been built yet" in result.stderr
    finally:
        call_script("resident.py", "--data-dir", example_data, "stop", env=env)
        for pid in resident_searchers(example_data.parent):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(runtime, ignore_errors=True)
    for target in targets.values():
        assert (target.read_text(), stat.S_IMODE(target.stat().st_mode)) == ("the user's own file\n", 0o644)


def test_links_planted_where_an_index_run_locks_are_not_followed(example_data, state_dir, tmp_path):
    """Dangling links: following one would make the file it names."""
    targets = {name: outside(tmp_path, name) for name in ("write.lock", ".roots.json.lock")}
    for name, target in targets.items():
        (example_data / "personal" / name).unlink(missing_ok=True)
        (example_data / "personal" / name).symlink_to(target)

    result = call_script("index_personal.py", "--data-dir", example_data, state_dir)
    assert result.code == 7, result
    assert f"{example_data / 'personal' / 'write.lock'} is a symbolic link: not followed" in result.stderr
    assert not any(target.exists() for target in targets.values())


def test_only_source_folders_we_made_are_pruned(tmp_path, isolated_home):
    data = tmp_path / "data"
    repo = GitRepo(tmp_path / "origin")
    repo.write({"docs/a.md": "# A\n\nThe alpha page.\n"})
    repo.commit("docs")
    add_source("--id", "alpha", "--name", "Alpha", "--type", "git", "--url", repo.url, "--path", "docs/")
    assert index_docs(data, "--all").code == 0
    ours = data / "sources" / "alpha"
    assert (ours / "repo" / ".git").is_dir()
    theirs = data / "sources" / "someone-elses"
    theirs.mkdir(parents=True)
    (theirs / "keep.txt").write_text("not made by rag-search\n")
    for name in ("a-clone/repo/.git/HEAD", "some-pages/pages/0123-4567.md"):  # the names earlier versions used, no marker
        (data / "sources" / name).parent.mkdir(parents=True)
        (data / "sources" / name).write_text("not made by rag-search\n")
    before = contents(data / "sources")
    registry = isolated_home / "sources.json"
    registry.write_text(json.dumps({"sources": []}))  # alpha unregistered by hand: --all prunes it

    pruned = index_docs(data, "--all")
    assert pruned.code == 0, pruned
    assert pruned.json["removed_sources"] == ["alpha"]
    assert not ours.exists()
    assert contents(data / "sources") == {name: content for name, content in before.items() if not name.startswith("alpha")}


def test_a_folder_we_did_not_make_where_a_source_would_keep_its_clone_fails_that_source_untouched(example_data, tmp_path):
    repo = GitRepo(tmp_path / "origin")
    repo.write({"docs/a.md": "# A\n\nThe alpha page.\n"})
    repo.commit("docs")
    add_source("--id", "mine", "--name", "Mine", "--type", "git", "--url", repo.url, "--path", "docs/")
    theirs = example_data / "sources" / "mine"
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("the user's own file\n")

    result = index_docs(example_data, "--source", "mine")
    assert result.code == 9, result
    assert f"{theirs} was not made by rag-search" in result.json["sources"][0]["error"]
    assert contents(theirs) == {"notes.txt": b"the user's own file\n"}


def test_a_data_dir_whose_path_holds_uri_characters_can_be_read(state_dir, tmp_path):
    data = tmp_path / "odd #1? 100%"
    assert call_script("index_personal.py", "--data-dir", data, state_dir).code == 0
    result = call_script("search.py", "--data-dir", data, "--no-refresh", "why is self-heal off in ArgoCD?")
    assert result.code == 0, result
    assert result.json["results"]
    status = call_script("status.py", "--data-dir", data)
    assert status.code == 0, status
    assert status.json["collections"]["personal"]["built"] is True
    shutil.rmtree(data)
