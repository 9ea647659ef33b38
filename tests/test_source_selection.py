"""Which files a doc source indexes: default globs that fit real trees, --glob and --exclude for every kind, narrowing
taken as the change it is (not an outage), and a source that matches nothing said to be "empty".

What once went wrong: a Sphinx tree registered with README's command indexed no file and said "ok" (the only default
glob was **/*.md); a git source took one glob and no exclusion, so release history could not be left out.
"""

import json

import pytest

from conftest import add_source, call_script, files_in_store, index_docs
from gitrepo import GitRepo
from rag_search.sources import registry
from rag_search.sources.specs import DEFAULT_GLOBS, Selection
from webserver import DocsSite

SPHINX = {
    "docs/conf.py": "project = 'Bluefinch'\nextensions = ['sphinx.ext.autodoc']\n",
    "docs/index.rst": "Bluefinch\n=========\n\nBluefinch keeps a product catalog in sync.\n\n.. toctree::\n\n   usage\n   changelog\n",
    "docs/usage.rst": "Usage\n=====\n\nRun the bluefinch catalog sync every weekday at 6:45 with a cron entry.\n",
    "docs/changelog.rst": "Changelog\n=========\n\nVersion 2.1\n-----------\n\nThe catalog sync learned to retry.\n",
    "docs/history/2010.rst": "History 2010\n============\n\nThe first catalog release.\n",
    "docs/_static/theme.css": "body { color: black }\n",
    "README.md": "# Bluefinch\n\nOutside the docs folder.\n",
}
SELECTED = {"usage.rst", "index.rst"}  # what --exclude changelog* --exclude history/ leaves of the .rst pages


def registered(home, source_id: str) -> dict:
    return next(entry for entry in json.loads((home / "sources.json").read_text())["sources"] if entry["id"] == source_id)


def sphinx_repo(tmp_path) -> GitRepo:
    origin = GitRepo(tmp_path / "origin")
    origin.write(SPHINX)
    origin.commit("docs")
    return origin


def sphinx_folder(tmp_path):
    folder = tmp_path / "tree"
    for name, text in SPHINX.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder / "docs"


def test_a_sphinx_tree_registered_with_the_readme_command_indexes_its_rst_pages(tmp_path):
    origin = sphinx_repo(tmp_path)
    result = call_script("add_doc_source.py", "--data-dir", tmp_path / "data", "--id", "bluefinch", "--name", "Bluefinch",
                         "--type", "git", "--url", origin.url, "--path", "docs/", "--index")
    assert result.code == 0, result
    assert result.json["index"]["status"] == "ok" and result.json["index"]["files"] == 4
    assert set(files_in_store(tmp_path / "data", "docs")) == {
        "bluefinch/docs/index.rst", "bluefinch/docs/usage.rst", "bluefinch/docs/changelog.rst", "bluefinch/docs/history/2010.rst"}


def test_the_default_globs_cover_markdown_mdx_and_restructuredtext():
    selection = Selection()
    assert selection.globs == DEFAULT_GLOBS
    assert all(selection.selects(path) for path in ("a.md", "b/c.mdx", "d.markdown", "e/f/g.rst", "h.rest"))
    assert not any(selection.selects(path) for path in ("conf.py", "notes.txt", "page.html"))


@pytest.mark.parametrize("kind", ["git", "local"])
def test_globs_and_excludes_choose_the_files_of_git_and_local_sources(kind, tmp_path, isolated_home):
    data = tmp_path / "data"
    where = ["--url", sphinx_repo(tmp_path).url, "--path", "docs"] if kind == "git" else ["--path", sphinx_folder(tmp_path)]
    add_source("--id", "bf", "--name", "Bluefinch", "--type", kind, *where, "--glob", "**/*.rst", "--glob", "**/*.md",
               "--exclude", "changelog*", "--exclude", "history/")
    assert registered(isolated_home, "bf")["globs"] == ["**/*.rst", "**/*.md"]
    assert registered(isolated_home, "bf")["exclude"] == ["changelog*", "history/"]
    result = index_docs(data, "--all")
    assert result.code == 0, result
    assert {file.rsplit("/", 1)[-1] for file in files_in_store(data, "docs")} == SELECTED


@pytest.mark.parametrize("kind", ["git", "local"])
def test_narrowing_the_selection_removes_those_files_without_taking_it_for_an_outage(kind, tmp_path, isolated_home):
    data = tmp_path / "data"
    where = ["--url", sphinx_repo(tmp_path).url, "--path", "docs"] if kind == "git" else ["--path", sphinx_folder(tmp_path)]
    add_source("--id", "bf", "--name", "Bluefinch", "--type", kind, *where)
    assert index_docs(data, "--all").code == 0
    assert len(files_in_store(data, "docs")) == 4

    add_source("--update", "--id", "bf", "--exclude", "changelog.rst", "--exclude", "history/", "--exclude", "index.rst")
    narrowed = index_docs(data, "--all")  # 4 -> 1 is "less than half", but the user asked for it
    assert narrowed.code == 0, narrowed
    assert narrowed.json["sources"][0]["deleted"] == 3
    assert {file.rsplit("/", 1)[-1] for file in files_in_store(data, "docs")} == {"usage.rst"}


def test_a_narrowed_git_source_whose_remaining_files_vanish_is_still_an_outage(tmp_path):
    """The deliberate part of a shrink does not excuse the rest: what the selection still takes must be there."""
    data = tmp_path / "data"
    origin = sphinx_repo(tmp_path)
    add_source("--id", "bf", "--name", "Bluefinch", "--type", "git", "--url", origin.url, "--path", "docs")
    assert index_docs(data, "--all").code == 0
    before = files_in_store(data, "docs")

    add_source("--update", "--id", "bf", "--exclude", "changelog.rst", "--exclude", "history/")
    origin.git("mv", "docs", "documentation")  # upstream moved its docs: the path the source reads is empty now
    origin.commit("move docs")
    moved = index_docs(data, "--all")
    assert moved.code == 9, moved
    assert moved.json["sources"][0]["status"] == "failed" and "--allow-shrink" in moved.json["sources"][0]["error"]
    assert files_in_store(data, "docs") == before, "nothing is removed"


def test_an_entry_with_one_glob_string_still_loads_and_an_update_replaces_it(tmp_path, isolated_home):
    folder = sphinx_folder(tmp_path)
    old = {"id": "bf", "name": "Bluefinch", "type": "local", "path": str(folder), "glob": "**/*.rst", "last_indexed": None}
    (isolated_home / "sources.json").write_text(json.dumps({"sources": [old]}))
    spec = registry.load(isolated_home / "sources.json").get("bf")
    assert spec.selection == Selection(("**/*.rst",)), "an entry written before globs"
    result = index_docs(tmp_path / "data", "--all")
    assert result.code == 0 and len(files_in_store(tmp_path / "data", "docs")) == 4, result

    add_source("--update", "--id", "bf", "--glob", "usage.rst")
    entry = registered(isolated_home, "bf")
    assert entry["globs"] == ["usage.rst"] and "glob" not in entry


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--type", "web", "--base-url", "https://docs.example.org/", "--pages", "a/", "--glob", "**/*.md"], "--glob"),
        (["--type", "local", "--path", "/srv/docs", "--exclude", ""], '"exclude"'),
        (["--type", "local", "--path", "/srv/docs", "--glob", ""], '"globs"'),
    ],
)
def test_a_selection_flag_a_source_cannot_have_is_a_usage_error(flags, message, isolated_home):
    result = call_script("add_doc_source.py", "--id", "bf", "--name", "Bluefinch", *flags)
    assert result.code == 2 and message in result.stderr, result
    assert not (isolated_home / "sources.json").exists(), "the registry is not touched"


def test_a_source_that_matches_no_file_is_empty_says_what_it_saw_and_exits_10(tmp_path, isolated_home):
    data = tmp_path / "data"
    folder = tmp_path / "site"
    folder.mkdir()
    for number in range(3):
        (folder / f"page{number}.txt").write_text(f"Page {number} of the catalog guide.\n")
    for name in ("index.html", "api.html"):
        (folder / name).write_text("<h1>Catalog</h1>\n")
    common = ["--id", "site", "--name", "Site", "--type", "local", "--path", folder, "--index"]
    result = call_script("add_doc_source.py", "--data-dir", data, *common)
    assert result.code == 10, result
    assert result.json["index"]["status"] == "empty" and result.json["action"] == "not added"
    warning = "site: no file matches **/*.md, **/*.mdx, **/*.markdown, **/*.rst, **/*.rest; seen: .txt 3, .html 2"
    assert [line for line in result.stderr.splitlines() if "no file matches" in line] == [f"warning: {warning}"], result.stderr
    assert result.json["index"]["warning"] == warning

    kept = call_script("add_doc_source.py", "--data-dir", data, *common, "--keep-on-failure")
    assert kept.code == 10, kept
    assert registered(isolated_home, "site")["last_status"] == "empty"
    again = index_docs(data, "--all")
    assert again.code == 10 and again.json["empty"] == ["site"] and again.json["failed"] == [], again
    status = call_script("status.py", "--data-dir", data)
    assert [source["last_status"] for source in status.json["doc_sources"]] == ["empty"], status

    add_source("--update", "--id", "site", "--glob", "**/*.txt")
    fixed = index_docs(data, "--all")
    assert fixed.code == 0 and fixed.json["empty"] == [], fixed
    assert registered(isolated_home, "site")["last_status"] == "ok"


def test_a_git_path_with_no_matching_file_names_the_path_in_its_warning(tmp_path):
    origin = GitRepo(tmp_path / "origin")
    origin.write({"docs/guide.adoc": "= Guide\n", "docs/api.adoc": "= API\n", "README.md": "# Readme\n"})
    origin.commit("asciidoc docs")
    add_source("--id", "ad", "--name", "AsciiDoc", "--type", "git", "--url", origin.url, "--path", "docs")
    result = index_docs(tmp_path / "data", "--all")
    assert result.code == 10, result
    assert result.json["sources"][0]["warning"].startswith("ad: no file under docs/ matches **/*.md")
    assert result.json["sources"][0]["seen"] == {".adoc": 2}


def test_a_web_source_excludes_pages_by_their_path_and_narrowing_it_is_no_outage(tmp_path, isolated_home):
    data = tmp_path / "data"
    with DocsSite() as site:
        add_source("--id", "argocd", "--name", "Argo CD", "--type", "web", "--base-url", site.url,
                   "--pages", "sync-options/", "install/", "notes.md")
        assert index_docs(data, "--all").code == 0
        assert set(files_in_store(data, "docs")) == {"argocd/sync-options/", "argocd/install/", "argocd/notes.md"}

        add_source("--update", "--id", "argocd", "--exclude", "install/", "--exclude", "*.md")
        assert registered(isolated_home, "argocd")["exclude"] == ["install/", "*.md"]
        narrowed = index_docs(data, "--all")  # 3 -> 1: less than half, as asked
        assert narrowed.code == 0, narrowed
        assert narrowed.json["sources"][0]["excluded"] == 2 and narrowed.json["sources"][0]["pages"] == 1
        assert set(files_in_store(data, "docs")) == {"argocd/sync-options/"}
        assert not site.requests("/docs/install/")[1:], "an excluded page is not fetched again"
