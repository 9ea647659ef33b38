"""What kind of page a documentation page is: guide, reference, changelog or blog.

Release history (changelogs, release notes, announcements, upgrade notes between
versions) is often half of a documentation set's chunks, and it matches almost any
question in passing; search can put it behind the guides (ranking.py) or leave it
out (--kind) once it knows which pages are history. A page says so by its path
(CHANGES.rst, release-notes/, whatsnew/, announce/release-2.0.rst) or, where the
path says nothing, by its shape: a run of section headings that are versions or
dates ("3.1.0 (2024-05-01)", "Version 1.2", "## [1.4.0]"). Reference pages and
blog posts are known by their path alone; every other page is a guide.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:  # search.py imports KINDS for --kind: its warm path does not pay for dataclasses
    from .sections import ParsedFile

PageKind = Literal["guide", "reference", "changelog", "blog"]
KINDS: tuple[str, ...] = get_args(PageKind)

# Folders and page names (lower case, without suffix) that hold release history.
_HISTORY_NAMES = re.compile(
    r"^(?:change[-_ ]?logs?|changes|history|news|releases|release[-_ ]?notes|what'?s?[-_ ]?new(?:[-_ ].*)?|"
    r"announce(?:ments?)?|upgrading|upgrades|release[-_]v?\d.*|(?:upgrad(?:e|ing)|migrat(?:e|ion|ing))[-_](?:to[-_]|from[-_])?v?\d.*)$")
# A page named for a version ("v1.22.md", "2.0-to-3.0.md"); not a folder: a versioned docs tree keeps guides in "v3.5/".
_VERSION_PAGE = re.compile(r"^v?\d+(?:[._]\d+)+(?:[-_]to[-_]v?\d+(?:[._]\d+)*)?$")
# A blog post named for a release or its announcement is release history too; an announcement of something else
# ("announcing-cncf-graduation") is a blog post, which may well answer a question.
_ANNOUNCING = re.compile(
    r"(?:^|[-_ ])(?:released?|release[-_ ]notes|changelog)(?:$|[-_ ])|(?:^|[-_ ])announcing[-_ ](?:.*[-_ ])?v?\d+[._]\d+")
_BLOG_FOLDERS = frozenset({"blog", "blogs", "posts", "_posts", "news-and-blog"})
_REFERENCE_FOLDERS = frozenset({"reference", "references", "api", "apis", "api-reference", "cli", "cli-reference"})
_REFERENCE_PAGES = frozenset({"api", "reference", "api-reference", "cli-reference", "apidocs", "glossary"})

# A heading that is a version or a date: "3.1.0 (2024-05-01)", "v2.0", "Version 1.2", "pytest 9.1.1 (2026-06-19)",
# "2.3 - 2021-01-01", "[1.4.0] - 2020-01-01", "2021-01-01". Up to two words may come first (a name, "Version").
_VERSION = r"\[?v?\d+\.\d+(?:\.\d+)*(?:[-.]?(?:rc|a|b|alpha|beta|dev|post)\.?\d*)?\]?"
_DATE = r"\d{4}-\d{2}-\d{2}"
_VERSION_HEADING = re.compile(
    rf"^(?:[A-Za-z][\w.-]*\s+){{0,2}}(?:{_VERSION}|{_DATE})(?:\s*(?:[-–—:,(]|released\b|\[).{{0,60}})?$", re.IGNORECASE)
MIN_RUN = 3  # version headings at one level that make a page release history
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_ADORNMENT = re.compile(r"^([=\-~^*#+\"'`:.])\1{2,}[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def page_kind(path: str, parsed: ParsedFile | None = None, text: str = "") -> PageKind:
    """The kind of the documentation page at `path` (within its source: the source id is no folder of the page), given
    its parsed sections and raw text: release history by its path or its shape, else a blog post or a reference page by
    its path, else a guide."""
    parts = [part.lower() for part in PurePosixPath(path).parts]
    if not parts:
        return "guide"
    folders, stem = parts[:-1], PurePosixPath(parts[-1]).stem
    names = [*folders, stem] if stem not in ("index", "_index", "readme") else folders
    in_blog = any(folder in _BLOG_FOLDERS for folder in folders)
    if (any(_HISTORY_NAMES.match(name) for name in names) or _VERSION_PAGE.match(stem)
            or (in_blog and _ANNOUNCING.search(names[-1] if names else ""))):
        return "changelog"
    if has_version_run(parsed, text):
        return "changelog"
    if in_blog:
        return "blog"
    if any(folder in _REFERENCE_FOLDERS for folder in folders) or stem in _REFERENCE_PAGES:
        return "reference"
    return "guide"


def is_version_heading(title: str) -> bool:
    """Whether a section title names a release: a version or a date, perhaps after a name and before a date."""
    return bool(_VERSION_HEADING.match(title.replace("`", "").replace("*", "").strip().strip("#").strip()))


def has_version_run(parsed: ParsedFile | None, text: str = "") -> bool:
    """Whether at least MIN_RUN headings of one level are versions or dates, and they are most of that level's: in the
    parsed sections (heading paths), or in the raw text's heading lines (reStructuredText and setext underlines, ATX
    #s), for a page whose headings the parser did not split."""
    levels: dict[object, list[str]] = {}
    for section in parsed.sections if parsed else ():
        for depth, title in enumerate(section.path[1:], start=1):  # the first element titles the file
            level = levels.setdefault(depth, [])
            if not level or level[-1] != title:
                level.append(title)
    if _mostly_versions(levels):
        return True
    return _mostly_versions(_raw_headings(text))


def _mostly_versions(levels: dict[object, list[str]]) -> bool:
    for titles in levels.values():
        versions = sum(1 for title in titles if is_version_heading(title))
        if versions >= MIN_RUN and versions * 2 >= len(titles):
            return True
    return False


def _raw_headings(text: str) -> dict[object, list[str]]:
    """Heading titles by level as the raw text marks them: `#`s (their count), or a line underlined (and perhaps
    overlined) by a row of one punctuation character (the character, and whether it is overlined); not in a fenced
    code block, whose `# comment` lines are no headings."""
    levels: dict[object, list[str]] = {}
    lines = text.splitlines()
    fence = ""
    for number, line in enumerate(lines):
        if opened := _FENCE.match(line):
            fence = "" if fence and opened.group(1).startswith(fence) else fence or opened.group(1)
        elif fence:
            continue
        elif atx := _ATX.match(line):
            levels.setdefault(len(atx.group(1)), []).append(atx.group(2))
        elif (line.strip() and not _ADORNMENT.match(line) and number + 1 < len(lines)
              and (under := _ADORNMENT.match(lines[number + 1])) and len(lines[number + 1].rstrip()) >= len(line.strip())):
            overlined = number > 0 and lines[number - 1].rstrip() == lines[number + 1].rstrip()
            levels.setdefault((under.group(1), overlined), []).append(line.strip())
    return levels
