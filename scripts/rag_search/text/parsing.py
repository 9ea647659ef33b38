"""From a file's text to sections: the logical units a reader would cite.

Markdown splits on headings (front matter becomes metadata; markdown.py), reStructuredText
on titles (rst.py); JSON splits into
records recognised by shape (a memory entry is one record, never one section per
field; see _records), whose fields (type, tags, date…) become metadata; JSONL
is one record per line; anything else is one section of plain text. A record's
bookkeeping (id, dates, loop, iteration, confidence) is metadata only: in the text
it would be a third of a memory entry, diluting its vector and costing the reader
tokens. Sizing the sections to the model's window is chunking.py's job.
"""

import json
from pathlib import PurePosixPath

from ..core import dates
from .markdown import parse_markdown
from .sections import MAX_FIELD_CHARS, MAX_RENDER_DEPTH, ParsedFile, ParseError, Section, tags_of

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}
JSON_SUFFIXES = {".json"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
RST_SUFFIXES = {".rst", ".rest"}
TEXT_SUFFIXES = {".txt", ".text", ".yaml", ".yml", ".org"}
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | RST_SUFFIXES | JSON_SUFFIXES | JSONL_SUFFIXES | TEXT_SUFFIXES

# Record fields whose value is a date, in order of preference: when it was made, then when it last changed.
UPDATE_KEYS = ("updatedAt", "updated_at", "updated", "modifiedAt", "modified_at", "modified", "lastmod")
DATE_KEYS = ("date", "createdAt", "created_at", "created", "ts", "timestamp", "time", "datetime", *UPDATE_KEYS)
# Record fields kept as chunk metadata, under our names, and in the text: they say what the record is about.
RECORD_FIELDS = {"type": "type", "context": "context", "status": "status", "category": "category"}
# A record's bookkeeping, kept as metadata under our names and out of its text (so are its dates: date and updated).
BOOKKEEPING_FIELDS = {"id": "record_id", "loopId": "loop_id", "loop_id": "loop_id", "iteration": "iteration",
                      "confidence": "confidence"}
# Fields that say how a record or a file of records is kept, not what it says: neither text nor metadata. A record's
# `version` is text (a tool's version, in a preferences file); a file's, beside its records, is left out.
SCHEMA_KEYS = frozenset({"schema", "$schema", "schema_version", "schemaversion"})
# A file named for one kind of record (decisions.json, todos.jsonl) gives that kind as the type of its records that carry
# none, so --type decision finds them. Not memory.json: a memory file holds entries of several types.
RECORD_KINDS = ("decision", "lesson", "preference", "todo", "task", "pattern", "failure", "idea", "incident")
FILE_KINDS = {kind + plural: kind for kind in RECORD_KINDS for plural in ("", "s")}
# Keys that mark an object as a record (a memory entry, a decision, a log line), not a tree of knowledge.
RECORD_KEYS = frozenset({"id", "type", "kind", "lesson", "decision", "context", "tags", "title", "summary", "status", "pattern",
                         "rationale", "reason", "description", "note", "notes", "content", "text", "message", "body",
                         "confidence", "loopid", "loop_id", "iteration", "outcome", "question", "answer", "name", "value"}
                        | {key.lower() for key in DATE_KEYS})
# A file of records' own fields that date it or say how it is kept, not what it says: no chunk.
FILE_KEYS = SCHEMA_KEYS | {"version"} | {key.lower() for key in DATE_KEYS}
SHORT_LIST = 20  # a list of at most this many scalars is a record's field (tags), not a collection
SMALL_RECORD = 50  # an object of at most this many scalar fields is one record even without a record-like key


def kind_of(path: str) -> str | None:
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in RST_SUFFIXES:
        return "rst"
    if suffix in JSON_SUFFIXES:
        return "json"
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in TEXT_SUFFIXES:
        return "text"
    return None


def parse(kind: str, text: str, name: str) -> ParsedFile:
    """Parse `text` of the given kind; `name` (the file name) titles files without one. Blank text is a file with no
    sections, whatever its kind (an emptied memory file is no malformed JSON)."""
    if not text.strip():
        return ParsedFile([], {"title": name})
    if kind == "markdown":
        return parse_markdown(text, name)
    if kind == "rst":
        from .rst import parse_rst  # docutils takes 40 ms to import: only an index run that meets a page pays it

        return parse_rst(text, name)
    if kind == "json":
        return parse_json(text, name)
    if kind == "jsonl":
        return parse_jsonl(text, name)
    return ParsedFile([Section([name], text)], {"title": name})


# --- JSON -----------------------------------------------------------------


def parse_json(text: str, name: str) -> ParsedFile:
    try:
        data = json.loads(text)
    except RecursionError:
        raise ParseError("JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"malformed JSON: {exc}") from None
    records, fields = _records(data)
    sections = _record_sections(records, name, record_type_of(name))
    own = {key: value for key, value in fields.items() if key.lower() not in FILE_KEYS}
    if own:  # the file's other fields, together: one record, of no kind
        sections = _record_sections([("", own)], name) + sections
    return ParsedFile(sections, {"title": name, **_date_of(fields)})


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
    return ParsedFile(_record_sections(records, name, record_type_of(name)), {"title": name}, warnings)


def record_type_of(name: str) -> str | None:
    """The type a file's name gives its records (FILE_KINDS: decisions.json, decision), or None."""
    return FILE_KINDS.get(PurePosixPath(name).stem.lower())


def _records(data) -> tuple[list[tuple[str, object]], dict]:
    """The logical records of a JSON document, each with its key path ("" for the document itself), and the document's
    own fields: the scalars beside its records (`{"updated": …, "entries": [...]}`), which are no record each.

    A record (is_record) is one unit, never split into its fields; an array is one unit per
    element, an object of records one unit per record. Any other object (a tree of knowledge
    such as kb.json) is one unit per key, with lists and objects of objects opened one level.
    """
    if is_record(data) or not isinstance(data, (dict, list)):
        return [("", data)], {}
    if isinstance(data, list):
        return [(f"[{i}]", item) for i, item in enumerate(data)], {}
    records: list[tuple[str, object]] = []
    fields: dict = {}
    beside_records = any(_holds_objects(value) for value in data.values())
    for key, value in data.items():
        if _holds_objects(value) and isinstance(value, list):
            records.extend((f"{key}[{i}]", item) for i, item in enumerate(value))
        elif _holds_objects(value):
            records.extend((f"{key}.{sub}", item) for sub, item in value.items())
        elif beside_records and _is_field(value):
            fields[str(key)] = value
        else:
            records.append((str(key), value))
    return records, fields


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


def _record_sections(records: list[tuple[str, object]], name: str, kind: str | None = None) -> list[Section]:
    """A section per record with text left once its bookkeeping is metadata; `kind`: the type of untyped records."""
    sections = []
    for key_path, value in records:
        metadata, rest = read_record(value, kind)
        text = "\n".join(render(rest)).strip()
        if text:
            sections.append(Section([name, key_path] if key_path else [name], text, metadata))
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


def read_record(value, kind: str | None = None) -> tuple[dict, object]:
    """A record's metadata (date, type, tags, context, and its bookkeeping: id, loop, iteration, confidence…), and what
    is left to read: the record without its top-level bookkeeping and schema fields. A bookkeeping value metadata cannot
    hold whole (a date that does not parse, a confidence of "high") stays text. `kind` types a record that has no type."""
    if not isinstance(value, dict):
        return ({"type": kind} if kind else {}), value
    metadata, carried = _bookkeeping(value)
    for key, target in RECORD_FIELDS.items():
        item = value.get(key)
        if isinstance(item, (str, int, float)) and not isinstance(item, bool) and str(item).strip():
            metadata[target] = str(item).strip()[:MAX_FIELD_CHARS]
    if kind and "type" not in metadata:
        metadata["type"] = kind
    tags = tags_of(value.get("tags"))
    if tags:
        metadata["tags"] = tags
    rest = {key: item for key, item in value.items() if key not in carried and str(key).lower() not in SCHEMA_KEYS}
    return metadata, rest


def _bookkeeping(record: dict) -> tuple[dict, set]:
    """The metadata of a record's bookkeeping fields, and the keys whose values it holds: the first date (date,
    date_ts), the first other date of a change (updated), the id, loop, iteration and confidence."""
    metadata: dict = {}
    carried: set = set()
    made = _first_date(record, DATE_KEYS)
    if made:
        carried.add(made[0])
        metadata["date"], metadata["date_ts"] = made[1], made[2]
    changed = _first_date(record, [key for key in UPDATE_KEYS if key not in carried])
    if changed:
        carried.add(changed[0])
        metadata["updated"] = changed[1]
    for key, target in BOOKKEEPING_FIELDS.items():
        item = _whole(target, record.get(key))
        if item is not None and target not in metadata:
            metadata[target] = item
            carried.add(key)
    return metadata, carried


def _whole(target: str, item):
    """`item` as metadata holds the bookkeeping field `target`, or None if it cannot hold it whole."""
    if isinstance(item, bool) or not isinstance(item, (str, int, float)):
        return None
    if target == "confidence":
        return None if isinstance(item, str) else float(item)
    if target == "iteration" and isinstance(item, int):
        return item
    text = str(item).strip()
    return text if text and len(text) <= MAX_FIELD_CHARS else None


def _date_of(record: dict) -> dict:
    """{"date", "date_ts"} from the first of DATE_KEYS that holds a date, or {}."""
    found = _first_date(record, DATE_KEYS)
    return {"date": found[1], "date_ts": found[2]} if found else {}


def _first_date(record: dict, keys) -> tuple[str, str, float] | None:
    """(key, date, epoch seconds) of the first of `keys` whose value in `record` is a date."""
    for key in keys:
        parsed = dates.normalize(record.get(key))
        if parsed:
            return key, parsed[0], parsed[1]
    return None


def _scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _ranges(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:10])
    return shown + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")
