"""The section model every parser produces (parsing.py for JSON and plain text, markdown.py, rst.py): a file as sections
(heading path, text, metadata of their own) and file-level metadata, with the limits values are rendered within."""

from dataclasses import dataclass, field

MAX_FIELD_CHARS = 200
MAX_RENDER_DEPTH = 24


class ParseError(ValueError):
    """The file is not what its name says (bad JSON, bad front matter)."""


@dataclass
class Section:
    """A heading path and the text under it, with metadata of its own (JSON records)."""

    path: list[str]
    text: str
    metadata: dict = field(default_factory=dict)


@dataclass
class ParsedFile:
    sections: list[Section]
    metadata: dict  # file-level: title, date/date_ts, tags, description
    warnings: list[str] = field(default_factory=list)


def tags_of(value) -> list[str]:
    """Tags as filters match them: trimmed, lower case, without a leading '#', each once."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    tags = (normalize_tag(str(tag)) for tag in value if isinstance(tag, (str, int)) and not isinstance(tag, bool))
    return list(dict.fromkeys(tag for tag in tags if tag))


def normalize_tag(tag: str) -> str:
    """A tag as stored and as --tag matches it: `#Docker ` is `docker` (commas separate tags, so none is kept inside one)."""
    return tag.replace(",", " ").strip().lstrip("#").strip().lower()[:MAX_FIELD_CHARS]


def with_title(title: str, path: list[str]) -> list[str]:
    """A heading path under the page's title: the title prefixed unless the path starts with it (a first heading that
    is the title), as a page's sections are named whatever its markup."""
    path = [part for part in path if part]
    if path and path[0].casefold() == title.casefold():
        return path
    return [title, *path]
