"""Sources that fail to list their documents never lose what was indexed, and user data never becomes a git option.

What once went wrong: a sitemap or robots.txt outage deleted a whole web
source; an emptied folder or repository path did the same for folder and git sources;
a git source's `version` reached `git fetch` as an option; a git lock left by a killed
run failed that source for good.
"""

import json

import pytest

from conftest import add_source, call_script, files_in_store, index_docs
from gitrepo import GitRepo
from webserver import DocsSite, Page


def registry_entry(home, source_id):
    return next(s for s in json.loads((home / "sources.json").read_text())["sources"] if s["id"] == source_id)


@pytest.mark.parametrize("outage", ["/docs/sitemap.xml", "/robots.txt"])
def test_a_sitemap_or_robots_outage_keeps_every_page(outage, tmp_path, isolated_home):
    data = tmp_path / "data"
    with DocsSite() as site:
        add_source("--id", "argocd", "--name", "Argo CD", "--type", "web", "--base-url", site.url, "--sitemap", "sitemap.xml")
        first = index_docs(data, "--all")
        assert first.code == 0, first
        before = files_in_store(data, "docs")
        assert set(before) == {"argocd/sync-options/", "argocd/install/"}
        indexed_at = registry_entry(isolated_home, "argocd")["last_indexed"]

        site.pages[outage] = Page("Service Unavailable", "text/plain", status=503)
        second = index_docs(data, "--all")
        assert second.code == 9, second
        summary = second.json["sources"][0]
        assert summary["status"] in ("failed", "partial") and summary.get("deleted", 0) == 0, summary
        assert second.json["failed"] == ["argocd"]
        assert files_in_store(data, "docs") == before, "an outage removes nothing"
        assert registry_entry(isolated_home, "argocd")["last_indexed"] == indexed_at, "state moves only when a source completes"


def make_runbooks(folder, count):
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (folder / f"runbook-{number}.md").write_text(f"# Runbook {number}\n\nRestart service number {number} with care.\n")


def test_an_emptied_folder_fails_the_source_unless_the_shrink_is_allowed(tmp_path):
    data = tmp_path / "data"
    runbooks = tmp_path / "runbooks"
    make_runbooks(runbooks, 4)
    add_source("--id", "runbooks", "--name", "Runbooks", "--type", "local", "--path", runbooks)
    assert index_docs(data, "--all").code == 0
    before = files_in_store(data, "docs")
    assert len(before) == 4

    for path in runbooks.iterdir():  # an unmounted disk looks like this
        path.unlink()
    emptied = index_docs(data, "--all")
    assert emptied.code == 9, emptied
    summary = emptied.json["sources"][0]
    assert summary["status"] == "failed" and "--allow-shrink" in summary["error"], summary
    assert files_in_store(data, "docs") == before

    make_runbooks(runbooks, 1)  # 4 -> 1: shrinks by more than half
    shrunk = index_docs(data, "--all")
    assert shrunk.code == 9 and shrunk.json["sources"][0]["status"] == "failed", shrunk
    assert files_in_store(data, "docs") == before

    allowed = index_docs(data, "--all", "--allow-shrink")
    assert allowed.code == 0, allowed
    assert allowed.json["sources"][0]["deleted"] == 3
    assert files_in_store(data, "docs") == {"runbooks/runbook-0.md": 1}


def test_a_git_path_that_lists_nothing_keeps_the_source(tmp_path):
    data = tmp_path / "data"
    origin = GitRepo(tmp_path / "origin")
    origin.write({"docs/a.md": "# A\n\nAlpha page.", "docs/b.md": "# B\n\nBeta page.", "README.md": "# Readme"})
    origin.commit("docs")
    add_source("--id", "proj", "--name", "Project", "--type", "git", "--url", origin.url, "--path", "docs")
    assert index_docs(data, "--all").code == 0
    before = files_in_store(data, "docs")
    assert set(before) == {"proj/docs/a.md", "proj/docs/b.md"}

    origin.git("mv", "docs", "documentation")  # the docs moved: the configured path is empty now
    origin.commit("move docs")
    moved = index_docs(data, "--all")
    assert moved.code == 9, moved
    assert moved.json["sources"][0]["status"] == "failed"
    assert files_in_store(data, "docs") == before
    rebuild = index_docs(data, "--all", "--full")
    assert rebuild.code == 9 and "--allow-shrink" in rebuild.stderr, "a rebuild is not published without the emptied path"
    assert files_in_store(data, "docs") == before
    allowed = index_docs(data, "--all", "--full", "--allow-shrink")
    assert allowed.code == 10 and allowed.json["empty"] == ["proj"], "--allow-shrink publishes it; the source is empty"
    assert files_in_store(data, "docs") == {}


PWN_VERSIONS = [
    "--upload-pack=touch {pwned}; git-upload-pack",
    "-c core.sshCommand=touch {pwned}",
    "main..other",
    "v1.0\nmain",
    "refs/heads/a b",
    "tag~1",
]


@pytest.mark.parametrize("version", PWN_VERSIONS)
def test_a_git_version_is_a_ref_never_an_option(version, tmp_path, isolated_home):
    pwned = tmp_path / "PWNED"
    origin = GitRepo(tmp_path / "origin")
    origin.write({"docs/a.md": "# A\n\nAlpha page."})
    origin.commit("docs")
    version = version.format(pwned=pwned)
    refused = call_script("add_doc_source.py", "--id", "proj", "--name", "P", "--type", "git", "--url", origin.url, "--version", version)
    assert refused.code == 2, refused  # the command line's fault
    assert '"version"' in refused.stderr

    # A hand-edited registry is refused when it is loaded, before any git command runs.
    entry = {"id": "proj", "name": "P", "type": "git", "url": origin.url, "version": version}
    (isolated_home / "sources.json").write_text(json.dumps({"sources": [entry]}))
    result = index_docs(tmp_path / "data", "--all")
    assert result.code == 6 and '"version"' in result.stderr, result
    assert not pwned.exists()


def test_git_user_data_that_looks_like_options_is_data(tmp_path):
    """A repository folder named like an option is a folder (every git call ends options first)."""
    data = tmp_path / "data"
    origin = GitRepo(tmp_path / "origin")
    origin.write({"--output=x/guide.md": "# Guide\n\nThe frobnicator needs a warm-up of ten seconds.", "other.md": "# Other"})
    origin.commit("odd folder")
    add_source("--id", "odd", "--name", "Odd", "--type", "git", "--url", origin.url, "--path=--output=x")
    result = index_docs(data, "--all")
    assert result.code == 0, result
    assert files_in_store(data, "docs") == {"odd/--output=x/guide.md": 1}
    assert not (data / "x").exists()


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("version", "v1.30.0", None),
        ("version", "release/1.2", None),
        ("version", "3f2c1a9d", None),
        ("version", "-v1", '"version"'),
        ("version", "v1.lock", '"version"'),
        ("path", "../outside", '"path"'),
        ("glob", "", '"globs"'),
        ("url", "--upload-pack=evil", '"url"'),
        ("url", "ext::sh -c touch% /tmp/pwned", '"url"'),
    ],
)
def test_git_source_fields_are_checked_when_added(field, value, message, tmp_path):
    args = {"url": "https://github.com/k0sproject/k0s.git", field: value}
    flags = [f"--{name}={given}" for name, given in args.items()]
    result = call_script("add_doc_source.py", "--id", "k0s", "--name", "k0s", "--type", "git", *flags)
    if message is None:
        assert result.code == 0, result
    else:
        assert result.code == 2 and message in result.stderr, result  # a bad flag: a usage error


def test_git_locks_left_by_a_killed_run_are_removed_with_a_warning(tmp_path):
    data = tmp_path / "data"
    origin = GitRepo(tmp_path / "origin")
    origin.write({"docs/a.md": "# A\n\nAlpha page."})
    origin.commit("docs")
    add_source("--id", "proj", "--name", "Project", "--type", "git", "--url", origin.url, "--path", "docs")
    assert index_docs(data, "--all").code == 0
    git_dir = data / "sources" / "proj" / "repo" / ".git"
    for name in ("index.lock", "shallow.lock"):
        (git_dir / name).write_text("")  # what a SIGKILL during checkout or fetch leaves

    origin.write({"docs/b.md": "# B\n\nBeta page about the gamma ray."})
    origin.commit("more docs")
    result = index_docs(data, "--all")
    assert result.code == 0, result
    assert str(git_dir / "index.lock") in result.stderr and str(git_dir / "shallow.lock") in result.stderr
    assert set(files_in_store(data, "docs")) == {"proj/docs/a.md", "proj/docs/b.md"}


def test_a_rebuild_that_cannot_reach_a_source_publishes_nothing(tmp_path):
    """--all --full starts from an empty index: a source failing then would lose its documents."""
    data = tmp_path / "data"
    runbooks = tmp_path / "runbooks"
    make_runbooks(runbooks, 2)
    add_source("--id", "runbooks", "--name", "Runbooks", "--type", "local", "--path", runbooks)
    with DocsSite() as site:
        add_source("--id", "argocd", "--name", "Argo CD", "--type", "web", "--base-url", site.url, "--pages", "install/")
        assert index_docs(data, "--all").code == 0
        before = files_in_store(data, "docs")
        site.pages["/robots.txt"] = Page("Service Unavailable", "text/plain", status=503)
        rebuild = index_docs(data, "--all", "--full")
        assert rebuild.code == 9, rebuild
        assert "argocd" in rebuild.stderr and "--allow-shrink" in rebuild.stderr
        assert files_in_store(data, "docs") == before
        forced = index_docs(data, "--all", "--full", "--allow-shrink")
        assert forced.code == 9, "the source still failed"
        assert set(files_in_store(data, "docs")) == {"runbooks/runbook-0.md", "runbooks/runbook-1.md"}


def test_git_files_over_the_size_cap_are_never_checked_out(tmp_path, isolated_home):
    data = tmp_path / "data"
    config = isolated_home / ".config" / "rag-search" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"max_file_bytes": 100_000}))
    origin = GitRepo(tmp_path / "origin")
    origin.git("config", "uploadpack.allowFilter", "true")  # what GitHub and GitLab allow
    huge = "# Huge\n\n" + "\n".join(f"Line {n} of a generated reference page that nobody should index." for n in range(20_000))
    origin.write({"docs/a.md": "# A\n\nAlpha page.", "docs/huge.md": huge})
    origin.commit("docs")
    add_source("--id", "proj", "--name", "Project", "--type", "git", "--url", origin.url, "--path", "docs")
    result = index_docs(data, "--all")
    assert result.code == 0, result
    summary = result.json["sources"][0]
    assert [skip["file"] for skip in summary["skipped"]] == ["proj/docs/huge.md"]
    assert "never checked out" in summary["skipped"][0]["reason"]
    clone = data / "sources" / "proj" / "repo"
    assert (clone / "docs" / "a.md").is_file() and not (clone / "docs" / "huge.md").exists()
    assert files_in_store(data, "docs") == {"proj/docs/a.md": 1}


def test_a_missing_repository_is_reported_with_gits_own_reason(tmp_path):
    """Once read "git fetch of HEAD failed: and the repository exists." (the last line of git's message)."""
    data = tmp_path / "data"
    add_source("--id", "gone", "--name", "Gone", "--type", "git", "--url", (tmp_path / "no-such-repo").as_uri())
    result = index_docs(data, "--all")
    assert result.code == 9, result
    error = result.json["sources"][0]["error"]
    assert "does not appear to be a git repository" in error or "not found" in error, error
    assert "and the repository exists" not in error, error


def test_a_site_answering_404_to_every_page_keeps_the_source(tmp_path, isolated_home):
    """Every page answering 404 once emptied the source with status "ok"."""
    data = tmp_path / "data"
    with DocsSite() as site:
        add_source("--id", "argocd", "--name", "Argo CD", "--type", "web", "--base-url", site.url,
                   "--pages", "sync-options/", "install/")
        assert index_docs(data, "--all").code == 0
        before = files_in_store(data, "docs")
        for path in ("/docs/sync-options/", "/docs/install/"):
            site.pages[path] = Page("Not Found", "text/plain", status=404)
        outage = index_docs(data, "--all")
        assert outage.code == 9, outage
        assert outage.json["sources"][0]["status"] == "failed" and "--allow-shrink" in outage.json["sources"][0]["error"]
        assert files_in_store(data, "docs") == before, "pages answering 404 all at once are an outage"
        removed = index_docs(data, "--all", "--allow-shrink")
        assert removed.code == 0, removed
        assert files_in_store(data, "docs") == {}
