"""Page kinds in a real docs index: stored on each documentation chunk (none on the user's own), filtered by
search.py --kind in every mode, shown as each result's `kind`, and weighed by history_penalty unless the question asks
about a version, a release or a change."""

import pytest

from conftest import add_source, call_script, index_docs, store_contents
from rag_search.core.config import load_settings
from rag_search.search.retrieval import Searcher, SearchOptions

PAGES = {
    "server.md": "# Development server\n\n## Reloader\n\nThe development server reloads the application when a Python "
                 "file changes. Pass --debug to flask run to turn the reloader on.\n\n## Templates\n\n"
                 "Templates are reloaded too when the reloader runs in debug mode.\n",
    "CHANGES.md": "# Changes\n\n## Version 2.0.1\n\n- The reloader watches template files and reloads the development "
                  "server when a template file changes.\n\n## Version 2.0.0\n\n- Drop Python 3.6.\n\n"
                  "## Version 1.1.4\n\n- Fix a crash.\n",
    "notes.md": "# Project notes\n\n## 3.0 (2024-05-01)\n\n- A new reloader.\n\n## 2.9 (2024-01-02)\n\n- Fixes.\n\n"
                "## 2.8 (2023-10-01)\n\n- More fixes.\n",
    "api/app.md": "# Application object\n\nThe run method starts the development server; its reloader option.\n",
    "blog/hello.md": "# Hello\n\nWe wrote a reloader for the development server this year.\n",
}
KINDS = {"site/server.md": "guide", "site/CHANGES.md": "changelog", "site/notes.md": "changelog",
         "site/api/app.md": "reference", "site/blog/hello.md": "blog"}


@pytest.fixture
def kinds_index(tmp_path, isolated_home):
    docs, notes = tmp_path / "site", tmp_path / "notes"
    for name, text in PAGES.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    notes.mkdir()
    (notes / "reloader.md").write_text("# Reloader\n\nOur reloader broke when the development server ran in Docker.\n")
    data = tmp_path / "data"
    add_source("--id", "site", "--name", "Site", "--type", "local", "--path", docs)
    assert index_docs(data, "--all").code == 0
    assert call_script("index_personal.py", "--data-dir", data, notes).code == 0
    return data


def search(data, *args):
    result = call_script("search.py", "--data-dir", data, "--top-k", "20", "--per-file", "0", "--no-refresh", *args)
    assert result.code == 0, result
    return result.json["results"]


def test_each_documentation_chunk_carries_its_pages_kind_and_the_users_own_none(kinds_index):
    stored = {chunk["metadata"]["file"]: chunk["metadata"].get("page_kind") for chunk in store_contents(kinds_index, "docs").values()}
    assert stored == KINDS
    assert all("page_kind" not in chunk["metadata"] for chunk in store_contents(kinds_index, "personal").values())


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_kind_keeps_only_pages_of_those_kinds_and_each_result_shows_its_kind(kinds_index, mode):
    question = "reloader development server template"
    everything = search(kinds_index, question, "--mode", mode)
    assert {result.get("kind") for result in everything} == {*KINDS.values(), None}  # None: the user's note
    assert all(result["kind"] == KINDS[result["file"]] for result in everything if result["source"] == "docs")
    history = search(kinds_index, question, "--mode", mode, "--kind", "changelog")
    assert {result["file"] for result in history} == {"site/CHANGES.md", "site/notes.md"}
    others = search(kinds_index, question, "--mode", mode, "--kind", "guide", "--kind", "reference")
    assert {result["file"] for result in others} == {"site/server.md", "site/api/app.md"}


def test_history_penalty_puts_the_guide_first_unless_the_question_asks_about_a_change(kinds_index):
    searcher = Searcher(load_settings(data_dir=str(kinds_index)), "docs")
    try:
        def first(question, penalty):
            hits = searcher.search(question, SearchOptions(top_k=5, per_file=1, history_penalty=penalty)).hits
            return hits[0].metadata["file"], [hit.explain.get("history") for hit in hits]

        plain = "does the reloader watch template files of the development server"
        assert first(plain, 0.0) == ("site/CHANGES.md", [None] * 5)  # the premise: the changelog matches best
        file, weights = first(plain, 0.9)
        assert file == "site/server.md" and 0.1 in weights
        about_a_change = "what changed in 2.0.1: does the reloader watch template files of the development server"
        assert first(about_a_change, 0.9) == first(about_a_change, 0.0)
    finally:
        searcher.close()
