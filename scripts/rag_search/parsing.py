"""From a file's text to sections: the logical units a reader would cite.

Markdown splits on headings (front matter becomes metadata); JSON splits into
records recognised by shape (a memory entry is one record, never one section per
field; see _records), whose fields (type, tags, date…) become metadata; JSONL
is one record per line; anything else is one section of plain text. Sizing the
sections to the model's window is chunking.py's job.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from . import dates
from .errors import one_line

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}
JSON_SUFFIXES = {".json"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
TEXT_SUFFIXES = {".txt", ".text", ".yaml", ".yml", ".rst", ".org"}
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | JSON_SUFFIXES | JSONL_SUFFIXES | TEXT_SUFFIXES

# Record fields whose value is a date, in order of preference.
DATE_KEYS = ("date", "createdAt", "created_at", "created", "ts", "timestamp", "time", "datetime", "updatedAt", "updated_at",
             "updated", "modifiedAt", "modified_at", "modified", "lastmod")
# Record fields kept as chunk metadata, under our names.
RECORD_FIELDS = {"type": "type", "context": "context", "status": "status", "category": "category", "id": "record_id",
                 "loopId": "loop_id", "loop_id": "loop_id", "iteration": "iteration"}
# Keys that mark an object as a record (a memory entry, a decision, a log line), not a tree of knowledge.
RECORD_KEYS = frozenset({"id", "type", "kind", "lesson", "decision", "context", "tags", "title", "summary", "status", "pattern",
                         "rationale", "reason", "description", "note", "notes", "content", "text", "message", "body",
                         "confidence", "loopid", "loop_id", "iteration", "outcome", "question", "answer", "name", "value"}
                        | {key.lower() for key in DATE_KEYS})
SHORT_LIST = 20  # a list of at most this many scalars is a record's field (tags), not a collection
SMALL_RECORD = 50  # an object of at most this many scalar fields is one record even without a record-like key
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


def kind_of(path: str) -> str | None:
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in JSON_SUFFIXES:
        return "json"
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in TEXT_SUFFIXES:
        return "text"
    return None


def parse(kind: str, text: str, name: str) -> ParsedFile:
    """Parse `text` of the given kind; `name` (the file name) titles files without one."""
    if kind == "markdown":
        return parse_markdown(text, name)
    if kind == "json":
        return parse_json(text, name)
    if kind == "jsonl":
        return parse_jsonl(text, name)
    return ParsedFile([Section([name], text)], {"title": name})


# --- markdown -------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-{2,})[ \t]*$")


def parse_markdown(text: str, name: str) -> ParsedFile:
    front, body, warnings = split_front_matter(text)
    metadata = _front_matter_metadata(front)
    sections, first_h1 = markdown_sections(body)
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
        section.path = _with_title(title, section.path)
    return ParsedFile(sections, metadata, warnings)


def split_front_matter(text: str) -> tuple[dict, str, list[str]]:
    """(front matter, body, warnings). YAML between `---` lines, or TOML between `+++` lines, opening the file.

    A note that opens with a `---` horizontal rule has no front matter unless a closing
    line follows and what lies between is a YAML mapping. Front matter that looks like
    one but does not parse loses its metadata, never the body: a warning says so.
    """
    match = _YAML_FRONT.match(text) or _TOML_FRONT.match(text)
    if not match:
        return {}, text, []
    block, body = match.group(1) or "", text[match.end() :]
    toml = match.re is _TOML_FRONT
    try:
        front = _load_toml(block) if toml else _load_yaml(block)
    except ValueError as exc:
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
_YAML_KEY_LINE = re.compile(r"^[\w\"'-][^:\n]*:(?:[ \t]|$)")


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
    """Split markdown on ATX and setext headings, ignoring '#' lines inside code fences.

    Also returns the text of the first level-1 heading, the title of last resort.
    """
    sections: list[Section] = []
    first_h1: list[str] = []
    stack: list[tuple[int, str]] = []
    lines: list[str] = []
    fence: str | None = None

    def flush() -> None:
        content = "\n".join(lines).strip()
        if content:
            sections.append(Section([heading for _, heading in stack], content))
        lines.clear()

    def open_heading(level: int, heading: str) -> None:
        flush()
        if level == 1 and not first_h1 and heading.strip():
            first_h1.append(heading.strip())
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading.strip()))

    for line in body.splitlines():
        if fence:
            lines.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            lines.append(line)
            continue
        atx = _ATX.match(line)
        if atx:
            open_heading(len(atx.group(1)), atx.group(2) or "")
            continue
        setext = _SETEXT.match(line)
        if setext and lines and lines[-1].strip() and (len(lines) == 1 or not lines[-2].strip()):
            heading = lines.pop()
            open_heading(1 if setext.group(1)[0] == "=" else 2, heading)
            continue
        lines.append(line)
    flush()
    return sections, (first_h1[0] if first_h1 else None)


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
    tags = _tags(front.get("tags"))
    if tags:
        metadata["tags"] = tags
    return metadata


def _with_title(title: str, path: list[str]) -> list[str]:
    """Prefix the title unless the path already starts with it (an H1 equal to the title)."""
    path = [part for part in path if part]
    if path and path[0].casefold() == title.casefold():
        return path
    return [title, *path]


# --- JSON -----------------------------------------------------------------


def parse_json(text: str, name: str) -> ParsedFile:
    try:
        data = json.loads(text)
    except RecursionError:
        raise ParseError("JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"malformed JSON: {exc}") from None
    return ParsedFile(_record_sections(_records(data), name), {"title": name})


def parse_jsonl(text: str, name: str) -> ParsedFile:
    records, bad_lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((f"line {number}", json.loads(line)))
        except (json.JSONDecodeError, RecursionError):
            bad_lines.append(number)
    if bad_lines and not records:
        raise ParseError("malformed JSON Lines: no line parses")
    warnings = [f"malformed JSON on line(s) {_ranges(bad_lines)} skipped"] if bad_lines else []
    return ParsedFile(_record_sections(records, name), {"title": name}, warnings)


def _records(data) -> list[tuple[str, object]]:
    """The logical records of a JSON document, each with its key path ("" for the document itself).

    A record (is_record) is one unit, never split into its fields; an array is one unit per
    element, an object of records one unit per record. Any other object (a tree of knowledge
    such as kb.json) is one unit per key, with lists and objects of objects opened one level.
    """
    if is_record(data) or not isinstance(data, (dict, list)):
        return [("", data)]
    if isinstance(data, list):
        return [(f"[{i}]", item) for i, item in enumerate(data)]
    records: list[tuple[str, object]] = []
    for key, value in data.items():
        if _holds_objects(value) and isinstance(value, list):
            records.extend((f"{key}[{i}]", item) for i, item in enumerate(value))
        elif _holds_objects(value):
            records.extend((f"{key}.{sub}", item) for sub, item in value.items())
        else:
            records.append((str(key), value))
    return records


def is_record(value) -> bool:
    """An object that reads as one record: a record-like key (id, type, lesson, a date…) and mostly scalar or short-list
    values, or a small object of nothing but such values (a preferences file)."""
    if not isinstance(value, dict) or not value or any(_holds_objects(item) for item in value.values()):
        return False  # not an object, or a container of records (`{"version": 2, "entries": [...]}`)
    fields = sum(1 for item in value.values() if _is_field(item))
    if 1 < len(value) <= SMALL_RECORD and fields == len(value):
        return True
    return any(str(key).lower() in RECORD_KEYS for key in value) and fields * 3 >= len(value) * 2


def _holds_objects(value) -> bool:
    """A non-empty list of objects, or an object of objects: a collection of records."""
    items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
    return bool(items) and all(isinstance(item, dict) for item in items)


def _is_field(value) -> bool:
    """A scalar, or a short list of scalars (tags)."""
    if isinstance(value, list):
        return len(value) <= SHORT_LIST and all(not isinstance(item, (dict, list)) for item in value)
    return not isinstance(value, dict)


def _record_sections(records: list[tuple[str, object]], name: str) -> list[Section]:
    sections = []
    for key_path, value in records:
        text = "\n".join(render(value)).strip()
        if text:
            sections.append(Section([name, key_path] if key_path else [name], text, record_metadata(value)))
    return sections


def render(value, prefix: str = "", depth: int = 0) -> list[str]:
    """Readable `key: value` lines; nested keys joined with dots, lists of scalars with commas."""
    if depth > MAX_RENDER_DEPTH:
        return [f"{prefix}: {json.dumps(value, ensure_ascii=False)[:2000]}" if prefix else json.dumps(value)[:2000]]
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            lines.extend(render(item, f"{prefix}.{key}" if prefix else str(key), depth + 1))
        return lines
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            joined = ", ".join(_scalar(item) for item in value)
            return [f"{prefix}: {joined}" if prefix else joined] if value else []
        lines = []
        for i, item in enumerate(value):
            lines.extend(render(item, f"{prefix}[{i}]", depth + 1))
        return lines
    return [f"{prefix}: {_scalar(value)}" if prefix else _scalar(value)]


def record_metadata(value) -> dict:
    """Fields of a record worth filtering or citing by: date, type, tags, context, confidence, loop and iteration…"""
    if not isinstance(value, dict):
        return {}
    metadata: dict = {}
    for key in DATE_KEYS:
        parsed = dates.normalize(value.get(key))
        if parsed:
            metadata["date"], metadata["date_ts"] = parsed
            break
    for key, target in RECORD_FIELDS.items():
        item = value.get(key)
        if isinstance(item, int) and not isinstance(item, bool) and target == "iteration":
            metadata[target] = item
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool) and str(item).strip():
            metadata[target] = str(item).strip()[:MAX_FIELD_CHARS]
    confidence = value.get("confidence")
    if isinstance(confidence, (int, float)) and not isinstance(confidence, bool):
        metadata["confidence"] = float(confidence)
    tags = _tags(value.get("tags"))
    if tags:
        metadata["tags"] = tags
    return metadata


def _tags(value) -> list[str]:
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


def _scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _ranges(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:10])
    return shown + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")
