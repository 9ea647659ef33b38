"""The data dir is ours alone: a run refuses a folder it did not make, and deletes only what it made (issue 23, finding 3)."""

import json
import shutil

from conftest import add_source, index_docs, run_script
from gitrepo import GitRepo


def test_a_folder_with_other_content_is_refused_and_left_as_it_was(state_dir, tmp_path):
    data = tmp_path / "projects"
    for name in ("index/important.txt", "generations/keep.txt", "sources/draft/text.md", "CURRENT", "notes.txt"):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text("the user's own file\n")
    before = sorted(str(path.relative_to(data)) for path in data.rglob("*"))

    result = run_script("index_personal.py", "--data-dir", data, state_dir)
    assert result.code == 6, result
    assert str(data) in result.stderr and "not a rag-search data folder" in result.stderr
    assert result.json["error"]["hint"]
    assert sorted(str(path.relative_to(data)) for path in data.rglob("*")) == before
    assert index_docs(data, "--all").code == 6


def test_a_data_dir_of_an_earlier_version_is_adopted(example_data, state_dir):
    marker = example_data / ".rag-search"
    assert marker.is_file(), "a new data dir is marked as ours"
    marker.unlink()
    (example_data / "generations" / "g000001").mkdir(parents=True)  # the single-generation layout of early versions
    (example_data / "generations" / "g000001" / "generation.json").write_text("{}\n")
    (example_data / "CURRENT").write_text("g000001\n")

    result = run_script("index_personal.py", "--data-dir", example_data, state_dir)
    assert result.code == 0, result
    assert marker.is_file()
    assert not (example_data / "generations").exists() and not (example_data / "CURRENT").exists()


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
    registry = isolated_home / "sources.json"
    registry.write_text(json.dumps({"sources": []}))  # alpha unregistered by hand: --all prunes it

    pruned = index_docs(data, "--all")
    assert pruned.code == 0, pruned
    assert pruned.json["removed_sources"] == ["alpha"]
    assert not ours.exists()
    assert (theirs / "keep.txt").read_text() == "not made by rag-search\n"


def test_a_data_dir_whose_path_holds_uri_characters_can_be_read(state_dir, tmp_path):
    data = tmp_path / "odd #1? 100%"
    assert run_script("index_personal.py", "--data-dir", data, state_dir).code == 0
    result = run_script("search.py", "--data-dir", data, "--no-refresh", "why is self-heal off in ArgoCD?")
    assert result.code == 0, result
    assert result.json["results"]
    status = run_script("status.py", "--data-dir", data)
    assert status.code == 0, status
    assert status.json["collections"]["personal"]["built"] is True
    shutil.rmtree(data)
