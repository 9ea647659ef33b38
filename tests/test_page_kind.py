"""A documentation page's kind (text/page_kind.py), from its path and its shape: real paths and pages of the bench's
Sphinx trees and docs-faq sets, read where they lie, and pages made like them."""

from pathlib import Path

import pytest

from rag_search.text import parsing
from rag_search.text.page_kind import has_version_run, is_version_heading, page_kind

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"


def parsed(path: str, text: str):
    return parsing.parse(parsing.kind_of(path), text, Path(path).name)


@pytest.mark.parametrize(("path", "kind"), [
    ("doc/en/changelog.rst", "changelog"),  # pytest
    ("docs/changes.rst", "changelog"),  # flask
    ("doc/en/announce/release-2.0.1.rst", "changelog"),
    ("HISTORY.md", "changelog"),
    ("NEWS.rst", "changelog"),
    ("content/docs/releases/release-notes/release-notes-1.12.md", "changelog"),  # cert-manager
    ("docs/src/release_notes/old/v1.15.md", "changelog"),  # cloudnative-pg
    ("release_notes/whats_new_210.md", "changelog"),  # nats
    ("docs/whatsnew/3.12.rst", "changelog"),
    ("content/en/docs/v3.6/upgrades/upgrade_3_5.md", "changelog"),  # etcd: upgrade notes between versions
    ("docs/upgrading.md", "changelog"),
    ("content/en/blog/2023-08-28-announcing-flux-v2.1.0/index.md", "changelog"),  # an announcement, in a blog
    ("linkerd.io/content/blog/2021/0728-announcing-cncf-graduation/index.md", "blog"),  # an announcement of no release
    ("linkerd.io/content/blog/2024/0805-edge-release-roundup/index.md", "changelog"),
    ("linkerd.io/content/blog/2024/0101-linkerd-hero/index.md", "blog"),
    ("content/en/blog/2024-01-22-january-update/index.md", "blog"),
    ("docs/tutorial/blog.rst", "guide"),  # flask's tutorial builds a blog: the name of a page is no folder
    ("docs/api.rst", "reference"),  # flask, requests
    ("doc/en/reference/fixtures.rst", "reference"),  # pytest
    ("linkerd.io/content/docs/reference/cli/upgrade.md", "reference"),
    ("docs/cli.rst", "guide"),  # flask's command line guide
    ("content/en/docs/v3.6/op-guide/clustering.md", "guide"),  # a versioned docs tree: its folder is no release
    ("docs/community/release-process.rst", "guide"),  # requests: how releases are made
    ("docs/quickstart.rst", "guide"),
])
def test_the_path_says_the_kind(path, kind):
    assert page_kind(path) == kind


@pytest.mark.parametrize("title", ["3.1.0 (2024-05-01)", "v2.0", "Version 1.2", "2.3 - 2021-01-01", "[1.4.0]",
                                   "[1.4.0] - 2020-01-01", "pytest 9.1.1 (2026-06-19)", "`v1.12.17`", "2024-05-01",
                                   "1.0.0rc1", "2.0", "Flask 2.0.1 — released 2021-05-21"])
def test_a_version_or_a_date_is_a_release_heading(title):
    assert is_version_heading(title)


@pytest.mark.parametrize("title", ["Installation", "Python 3.8 support is dropped in this guide", "Step 1.2 Setup",
                                   "Using pytest 8", "2", "Version"])
def test_other_headings_are_not(title):
    assert not is_version_heading(title)


KEEP_A_CHANGELOG = """# Changelog

## [Unreleased]

## [1.4.0] - 2020-01-01
### Added
- a flag

## [1.3.1] - 2019-12-02
### Fixed
- a crash

## [1.3.0] - 2019-11-11
### Changed
- the default
"""

RST_VERSIONS = """Project notes
=============

Version 2.1.0
-------------

Released 2024-01-01

- fixed a thing

Version 2.0.0
-------------

- changed a thing

Version 1.9
-----------

- added a thing
"""


def test_a_run_of_version_headings_makes_a_changelog_whatever_the_path_says():
    assert page_kind("docs/notes.md", parsed("notes.md", KEEP_A_CHANGELOG), KEEP_A_CHANGELOG) == "changelog"
    assert page_kind("docs/notes.rst", parsed("notes.rst", RST_VERSIONS), RST_VERSIONS) == "changelog"  # raw underlines
    assert has_version_run(parsed("notes.md", KEEP_A_CHANGELOG))  # the parsed sections alone say it too
    assert has_version_run(parsed("notes.rst", RST_VERSIONS))  # docutils gives the titles as sections
    as_plain_text = parsing.parse("text", RST_VERSIONS, "notes.rst")  # the parser's fallback: one section
    assert not has_version_run(as_plain_text)
    assert page_kind("docs/notes.rst", as_plain_text, RST_VERSIONS) == "changelog"  # the raw underlines say it


def test_two_version_headings_or_version_lines_in_code_make_no_changelog():
    guide = "# Install\n\n## v2.0\n\ntext\n\n## v3.0\n\ntext\n\n## Configure\n\ntext\n"
    assert page_kind("docs/install.md", parsed("install.md", guide), guide) == "guide"
    code = "# Run\n\n```sh\n# v3.2.5\nrun\n# v3.3.0\nrun\n# v3.4.0\nrun\n```\n\n## Docker\n\ntext\n"
    assert page_kind("docs/run.md", parsed("run.md", code), code) == "guide"
    mostly_other = "\n\n".join(f"## {title}\n\ntext" for title in
                               ["1.0 - 2020-01-01", "1.1 - 2020-02-01", "1.2 - 2020-03-01", "A", "B", "C", "D"])
    assert page_kind("docs/page.md", parsed("page.md", mostly_other), mostly_other) == "guide"  # versions are few of that level


needs_bench = pytest.mark.skipif(not (BENCH / "docs-rst").is_dir(), reason="the bench data is not beside the project")


@needs_bench
def test_pytests_changelog_is_a_changelog_by_its_shape_alone_and_its_guides_are_guides():
    pytest_docs = BENCH / "docs-rst" / "pytest" / "doc" / "en"
    text = (pytest_docs / "changelog.rst").read_text(encoding="utf-8")
    assert page_kind("doc/en/some-page.rst", parsed("some-page.rst", text), text) == "changelog"
    for name in ("getting-started.rst", "how-to/fixtures.rst", "how-to/parametrize.rst", "explanation/goodpractices.rst"):
        page = (pytest_docs / name).read_text(encoding="utf-8")
        assert page_kind(f"doc/en/{name}", parsed(name, page), page) == "guide", name


@needs_bench
def test_release_notes_of_markdown_sets_are_changelogs_by_their_sections_and_no_docs_faq_guide_is():
    notes = BENCH / "docs-faq" / "cloudnative-pg" / "docs" / "src" / "release_notes" / "v1.29.md"
    text = notes.read_text(encoding="utf-8")
    assert has_version_run(parsed("v1.29.md", text))
    wrongly = []
    for corpus in ("helm", "poetry", "ingress-nginx", "argo-rollouts"):
        for page in sorted((BENCH / "docs-faq" / corpus).rglob("*.md")):
            text = page.read_text(encoding="utf-8", errors="replace")
            rel = page.relative_to(BENCH / "docs-faq" / corpus).as_posix()
            if page_kind(rel, parsed(rel, text), text) == "changelog":
                wrongly.append(rel)
    assert wrongly == []
