"""Markdown to sections: front matter as metadata, a section per heading, HTML comments and bare markup left out.

Front matter is YAML between `---` lines or TOML between `+++` lines; when YAML
does not parse, flat `key: value` lines are read one by one, so a note keeps its
title, date and tags. Headings and code blocks are found by markdown-it's
CommonMark block parser (ATX `#` and setext headings; lines inside code are never
headings); site generators' syntax goes first (site_syntax.py), and a section's
text is its source lines, never re-rendered.
"""

import functools
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..core import dates
from ..core.errors import one_line
from . import site_syntax
from .sections import MAX_FIELD_CHARS, MAX_RENDER_DEPTH, ParsedFile, Section, tags_of, with_title

_NEWLINE = re.compile(r"\r\n?")  # markdown-it's own line ends: its line numbers count these
# A list item, a block quote or a table row over a `---` or `===` line: no setext heading (the underline is a rule).
_NOT_A_TITLE = re.compile(r"^ {0,3}(?:(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)|[>|])")
# Markup a reader does not search by: HTML tags, images (alt text and target), link targets.
_MARKUP = re.compile(r"<[^<>]*>|!\[[^\[\]\n]*\](?:\([^()\[\]\n]*\))?|\]\([^()\[\]\n]*\)")
_WORD = re.compile(r"\w")
# What code spans and HTML comments are made of: backtick runs, `<!--` (`<!-->` and `<!--->` are whole comments), `-->`.
_INLINE_MARKS = re.compile(r"`+|<!--(?:-?>)?|-->")


def parse_markdown(text: str, name: str) -> ParsedFile:
    front, body, warnings = split_front_matter(text)
    metadata = _front_matter_metadata(front)
    sections, first_h1 = markdown_sections(site_syntax.plain(body))
    if "title" not in metadata:
        metadata["title"] = first_h1 or PurePosixPath(name).stem
    title = metadata["title"]
    if not sections:
        # A page whose content lives in its front matter (Hugo landing pages, cards, link lists).
        front_text = front_matter_text(front)
        sections = [Section([title], front_text)] if front_text else []
    description = front.get("description")
    if isinstance(description, str) and description.strip() and not (sections and sections[0].text.startswith(description.strip())):
        sections.insert(0, Section([title], description.strip()))  # the page's own summary: a strong, short signal
    for section in sections:
        section.path = with_title(title, section.path)
    return ParsedFile(sections, metadata, warnings)


def split_front_matter(text: str) -> tuple[dict, str, list[str]]:
    """(front matter, body, warnings). YAML between `---` lines, or TOML between `+++` lines, opening the file.

    A note that opens with a `---` horizontal rule has no front matter unless a closing
    line follows and what lies between is a YAML mapping. YAML front matter that does not
    parse (`title: Postmortem: outage`) is read line by line as flat `key: value` lines;
    if that finds nothing either, it loses its metadata, never the body. A warning says which.
    """
    match = _YAML_FRONT.match(text) or _TOML_FRONT.match(text)
    if not match:
        return {}, text, []
    block, body = match.group(1) or "", text[match.end() :]
    toml = match.re is _TOML_FRONT
    try:
        front = _load_toml(block) if toml else _load_yaml(block)
    except ValueError as exc:
        flat = {} if toml else _flat_front_matter(block)
        if flat:
            return flat, body, [f"malformed front matter read line by line as key: value, the text is indexed: {one_line(exc)}"]
        if toml or _looks_like_yaml_mapping(block):
            return {}, body, [f"malformed front matter ignored, the text is indexed: {one_line(exc)}"]
        return {}, text, []  # a horizontal rule and prose, not front matter
    if isinstance(front, dict):
        return front, body, []
    if front is None:  # an empty block
        return {}, body, []
    return {}, text, []  # a rule, a line of prose, a rule: the note's own text


_YAML_FRONT = re.compile(r"\A---[ \t]*\r?\n(?:(.*?)\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_TOML_FRONT = re.compile(r"\A\+\+\+[ \t]*\r?\n(?:(.*?)\r?\n)?\+\+\+[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_YAML_KEY_LINE = re.compile(r"^([\w\"'-][^:\n]*):(?:[ \t]|$)")
_LIST_ITEM = re.compile(r"^[ \t]*-[ \t]+(.*)$")


def _load_yaml(block: str):
    """python-frontmatter's YAML handler (safe loading); the block is found by our own rules above."""
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    try:
        return YAMLHandler().load(block)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _load_toml(block: str) -> dict:
    import tomllib

    try:
        return tomllib.loads(block)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None


def _flat_front_matter(block: str) -> dict:
    """Front matter that is not YAML read as flat `key: value` lines, the value all after the first `: `; `[a, b]` and
    `- a` lines below a bare `key:` are lists. Nested keys are left out. {} unless it opens with a `key:` line."""
    if not _looks_like_yaml_mapping(block):
        return {}
    front: dict = {}
    key = None
    for line in block.splitlines():
        item = _LIST_ITEM.match(line)
        if item and isinstance(front.get(key), list):
            front[key].append(_unquoted(item.group(1)))
            continue
        match = _YAML_KEY_LINE.match(line)
        key = _unquoted(match.group(1)) if match else None
        value = _unquoted(line[match.end() :]) if match else ""
        if key and value.startswith("[") and value.endswith("]"):
            front[key] = [_unquoted(part) for part in value[1:-1].split(",") if part.strip()]
        elif key:
            front[key] = value or []  # a bare `key:`: a list may follow
    return {key: value for key, value in front.items() if value != []}


def _unquoted(value: str) -> str:
    value = value.strip()
    return value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in "\"'" else value


def _looks_like_yaml_mapping(block: str) -> bool:
    """Whether a block that failed to parse was meant as front matter: its first line is a `key:`."""
    first = next((line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    return bool(_YAML_KEY_LINE.match(first))


# Front matter keys that say how a page is laid out or linked, not what it says.
LAYOUT_KEYS = frozenset("""image images href url link layout weight aliases date draft type slug icon background menu lastmod
    publishdate expirydate thumbnail feature cascade outputs sitemap build""".split())


def front_matter_text(front: dict) -> str:
    """The text of a page's front matter: its string values, one a line, less layout keys, links and image paths."""
    lines: list[str] = []

    def walk(value, key: str, depth: int) -> None:
        if key.lower() in LAYOUT_KEYS or depth > MAX_RENDER_DEPTH:
            return
        if isinstance(value, dict):
            for sub, item in value.items():
                walk(item, str(sub), depth + 1)
        elif isinstance(value, list):
            for item in value:
                walk(item, key, depth + 1)
        elif isinstance(value, str) and value.strip() and not value.startswith(("http://", "https://", "/", "images/")):
            lines.append(value.strip())

    walk(front, "", 0)
    return "\n".join(lines)


def markdown_sections(body: str) -> tuple[list[Section], str | None]:
    """Split markdown into a section per heading, as markdown-it's block parser finds them (never in code or HTML).

    Each section's text is its source lines, less HTML comments. Also returns the text of the first level-1 heading,
    the title of last resort. A heading's MkDocs anchor (`## Lifespan { #lifespan }`) leaves its text for the
    sections' metadata.
    """
    lines = _NEWLINE.sub("\n", body).split("\n")
    last_close = max((number for number, line in enumerate(lines) if "-->" in line), default=-1)
    # A `<!--` that nothing closes is text: markdown-it would read the rest of the page as its comment.
    parsed = lines[: last_close + 1] + [line.replace("<!--", "<!- -") for line in lines[last_close + 1 :]]
    layout = _layout("\n".join(parsed), lines)
    sections: list[Section] = []
    first_h1: list[str] = []
    stack: list[tuple[int, str, str | None]] = []
    kept: list[str] = []

    def flush() -> None:
        content = "\n".join(kept).strip()
        if _has_words(content):
            anchor = stack[-1][2] if stack else None
            sections.append(Section([heading for _, heading, _ in stack], content, {"anchor": anchor} if anchor else {}))
        kept.clear()

    for number, line, in_code in _uncommented_lines(lines, layout.code, last_close):
        heading = None if in_code or number is None else layout.headings.get(number)
        if heading is None:
            if number not in layout.underlines:
                kept.append(line)
            continue
        flush()
        level, text = heading
        text, anchor = site_syntax.heading_anchor(_without_comments(text, may_open=False)[0].strip())
        if level == 1 and not first_h1 and text:
            first_h1.append(text)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text, anchor))
    flush()
    return sections, (first_h1[0] if first_h1 else None)


@dataclass
class _Layout:
    """Where a page's headings and code lie, by line number (from 0)."""

    headings: dict[int, tuple[int, str]] = field(default_factory=dict)  # a heading's first line: (level, its text)
    underlines: set[int] = field(default_factory=set)  # a setext heading's underline: no text
    code: set[int] = field(default_factory=set)  # lines of fenced or indented code, at any depth


def code_lines(text: str) -> set[int]:
    """The numbers (from 0) of the lines of fenced or indented code in a markdown text."""
    lines = _NEWLINE.sub("\n", text).split("\n")
    return _layout("\n".join(lines), lines).code


@functools.cache
def _block_parser():
    """CommonMark's block rules that place headings and code: inline markup is never rendered (a section's text is its
    source lines), and lists and quotes, a third of the parse, place neither (_NOT_A_TITLE does their part)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline", "text_join", "list", "blockquote"])


def _layout(text: str, lines: list[str]) -> _Layout:
    """The page's headings and code blocks. A setext heading is one line over its underline, and never a table row
    (`| a | b |` then `---`): Python-Markdown, which MkDocs uses, reads both as text and a rule."""
    layout = _Layout()
    tokens = _block_parser().parse(text)
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        start, end = token.map
        if token.type in ("fence", "code_block"):
            layout.code.update(range(start, end))
        elif token.type == "heading_open":
            setext = token.markup in ("=", "-")
            if setext and (end - start != 2 or _NOT_A_TITLE.match(lines[start])):
                continue
            layout.headings[start] = (int(token.tag[1]), tokens[index + 1].content)
            if setext:
                layout.underlines.add(start + 1)
    return layout


def _has_words(text: str) -> bool:
    """Whether the text says something beside markup: a section of only rules, HTML tags or images (a bare `<!--`, a
    `---`, a lone image, a row of badges) makes no chunk."""
    return bool(_WORD.search(_MARKUP.sub("", text)))


def _uncommented_lines(lines: list[str], code: set[int], last_close: int) -> Iterator[tuple[int | None, str, bool]]:
    """The page's lines, each with its number (None for a paragraph break put in) and whether it is code; outside code,
    less their HTML comments.

    A comment is never text nor a heading (a licence header of `#` lines). Lines that held only comments are a paragraph
    break between the lines around them (one blank line, none if one is there). Comments in code spans stay; a `<!--`
    that no later `-->` (none after line `last_close`) closes is text. Comments are found here, not by the block parser:
    one may open inside a line.
    """
    in_comment, gap, previous = False, False, ""
    for number, line in enumerate(lines):
        in_code = number in code and not in_comment
        if in_comment:
            end = line.find("-->")
            line, in_comment = ("", True) if end < 0 else (line[end + 3 :], False)
            if not line.strip():
                continue
        if not in_code:
            kept, in_comment = _without_comments(line, may_open=number < last_close)
            if kept != line and not kept.strip():
                gap = True
                continue
            line = kept
        if gap and line.strip() and previous.strip():
            yield None, "", False
        gap, previous = False, line
        yield number, line, in_code


def _without_comments(line: str, may_open: bool) -> tuple[str, bool]:
    """The line less its HTML comments outside code spans, and whether it opens one that a later line closes.

    One pass over its backtick runs and comment marks (a regex that looked ahead from each would take quadratic
    time on a hostile line): a run opens a code span up to the next run as long, a `<!--` a comment to the next `-->`.
    """
    if "<!--" not in line:
        return line, False
    tokens = list(_INLINE_MARKS.finditer(line))
    runs: dict[int, deque[int]] = {}
    closers: deque[int] = deque()
    for i, token in enumerate(tokens):
        if token.group()[0] == "`":
            runs.setdefault(len(token.group()), deque()).append(i)
        elif token.group() == "-->":
            closers.append(i)
    kept, start, i = [], 0, 0
    while i < len(tokens):
        mark = tokens[i].group()
        ahead = runs[len(mark)] if mark[0] == "`" else closers
        while ahead and ahead[0] <= i:
            ahead.popleft()
        if mark[0] == "`" or mark == "-->":  # a code span, as written; or a stray `-->`
            i = ahead.popleft() + 1 if mark[0] == "`" and ahead else i + 1
            continue
        end = i if mark.endswith(">") else ahead.popleft() if ahead else None  # `<!-->` and `<!--->` close at once
        if end is None and not may_open:
            i += 1  # a `<!--` never closed is text
            continue
        kept.append(line[start : tokens[i].start()])
        if end is None:
            return "".join(kept), True
        start, i = tokens[end].end(), end + 1
    return "".join(kept) + line[start:], False


def _front_matter_metadata(front: dict) -> dict:
    metadata: dict = {}
    title = front.get("title")
    if isinstance(title, (str, int, float)) and str(title).strip():
        metadata["title"] = str(title).strip()
    description = front.get("description")
    if isinstance(description, str) and description.strip():
        metadata["description"] = description.strip()[:MAX_FIELD_CHARS]
    parsed = dates.normalize(front.get("date"))
    if parsed:
        metadata["date"], metadata["date_ts"] = parsed
    tags = tags_of(front.get("tags"))
    if tags:
        metadata["tags"] = tags
    return metadata


