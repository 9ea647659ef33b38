"""The agent's memory entries: lessons, failure and success patterns, kept in one JSON file and in the personal index.

The file is a JSON array of entries in ralph-memory's schema (id, loopId,
iteration, createdAt, type, lesson, context, tags, confidence); an object
holding such an array under "entries" or "memories" is read too. Entries are
added atomically under a lock, so two agents recording at once lose nothing, and
an added entry is indexed at once (index_files: one document, no walk), so a
search a minute later finds it. An entry's id is derived from what it says, so
a retried add finds the entry it wrote instead of adding it twice. Removing and
correcting entries, in this file and in the other memory files the index holds,
is memory_edits.py's job.
"""

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..core import dates
from ..core.atomic import write_atomically
from ..core.config import Settings
from ..core.errors import ConfigError, RagSearchError, UsageError
from ..core.locking import exclusive_lock
from ..store.records import Filters, Hit

# ralph-memory's entry types; entries of other types are memory too when they are in the memory file.
MEMORY_TYPES = ("lesson_learned", "failure_pattern", "success_pattern")
LIST_KEYS = ("entries", "memories")
# What an entry says: a derived id is the hash of these, and an --id already taken must say the same.
IDENTITY = ("type", "lesson", "context", "loopId", "iteration")
BLANK_HINTS = {"type": "a word such as lesson_learned, failure_pattern or success_pattern",
               "lesson": "say what was learned, in one sentence",
               "id": "leave the id out: one is derived from the type, lesson, context, loop and iteration"}


class MemoryFileError(ConfigError):
    """The memory file is missing or is not a memory file."""


@dataclass
class Entry:
    """One memory entry, with the file it was found in."""

    fields: dict
    file: str

    @property
    def created(self) -> float:
        parsed = dates.normalize(self.fields.get("createdAt"))
        return parsed[1] if parsed else 0.0

    def matches(self, filters: Filters) -> bool:
        tags = {str(tag).lower() for tag in self.fields.get("tags") or []}
        return ((filters.since is None or self.created >= filters.since)
                and (filters.until is None or self.created <= filters.until)
                and (not filters.types or self.fields.get("type") in filters.types)
                and all(tag in tags for tag in filters.tags))


def read_entries(path: Path) -> list[dict]:
    """The entries of the memory file; MemoryFileError if it is missing or not a list of entries."""
    return entry_list(load(path))


def load(path: Path):
    """The memory file's JSON: a list of entries, or an object holding one (entry_list); MemoryFileError if it is
    missing or not that."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MemoryFileError(f"no memory file at {path}", hint="record a first entry: memory.py add --type lesson_learned "
                                                                 "--lesson '…' (or set --memory-file / RAG_SEARCH_MEMORY_FILE)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise MemoryFileError(f"the memory file {path} is not valid JSON: {exc}",
                              hint=f"inspect and repair it, or move it aside (mv {path} {path}.broken) to start afresh") from None
    if entries_at(data) is None:
        raise MemoryFileError(f"the memory file {path} does not hold a list of memory entries",
                              hint="it must be a JSON array of entries, or an object with an \"entries\" array")
    return data


def entries_at(data) -> tuple[str, ...] | None:
    """Where a memory file's JSON keeps its entries: () for the document itself (an array), (key,) for the array under
    "entries" or "memories"; None when it holds no list of entries."""
    where: tuple[str, ...] | None
    entries: list | None
    if isinstance(data, list):
        where, entries = (), data
    elif isinstance(data, dict):
        where = next(((key,) for key in LIST_KEYS if isinstance(data.get(key), list)), None)
        entries = data[where[0]] if where else None
    else:
        return None
    return where if entries is not None and all(isinstance(item, dict) for item in entries) else None


def entry_list(data) -> list[dict]:
    """The list of entries of a memory file's JSON (as `load` returns it): the list itself, so changing it changes the
    document."""
    where = entries_at(data)
    return data[where[0]] if where else data


def check_text(name: str, value: str) -> str:
    """`value` without surrounding blanks; a UsageError if nothing is left (an entry without a lesson is noise)."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise UsageError(f"{name} is blank", hint=BLANK_HINTS[name])
    return text


def check_confidence(confidence: float | None) -> None:
    if confidence is not None and not 0 <= confidence <= 1:
        raise MemoryFileError("--confidence must be between 0 and 1")


def derived_id(kind: str, lesson: str, context: str | None, loop_id: str | None, iteration: int | None) -> str:
    """mem_ and 12 hex digits of the hash of what the entry says: the same call twice names the same entry."""
    said = json.dumps([kind, lesson, context, loop_id, iteration], ensure_ascii=False)
    return f"mem_{hashlib.sha256(said.encode()).hexdigest()[:12]}"


def new_entry(kind: str, lesson: str, context: str | None = None, tags: list[str] | None = None, confidence: float | None = None,
              loop_id: str | None = None, iteration: int | None = None, entry_id: str | None = None) -> dict:
    """A well-formed entry dated now; its id is `entry_id`, else derived from what it says (derived_id)."""
    kind, lesson, context = check_text("type", kind), check_text("lesson", lesson), (context or "").strip() or None
    entry_id = check_text("id", entry_id) if entry_id is not None else derived_id(kind, lesson, context, loop_id, iteration)
    entry = {"id": entry_id, "loopId": loop_id, "iteration": iteration, "createdAt": dates.now_iso(),
             "type": kind, "lesson": lesson, "context": context, "tags": tags or [], "confidence": confidence}
    return {key: value for key, value in entry.items() if value is not None}


def append_entry(path: Path, entry: dict, given_id: bool = False) -> tuple[dict, bool]:
    """Add `entry` to the memory file (created if missing), atomically and under the file's lock, unless an entry of
    its id is there already: (the entry in the file, whether it was added). A `given_id` taken by an entry that says
    something else is a UsageError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(_lock_path(path)):
        data = load(path) if path.exists() else []
        entries = entry_list(data)
        existing = next((item for item in entries if item.get("id") == entry["id"]), None)
        if existing is None:
            entries.append(entry)
            _write(path, data)
            return entry, True
    if given_id and any(existing.get(key) != entry.get(key) for key in IDENTITY):
        raise UsageError(f"the id {entry['id']} is taken by an entry with another type, lesson, context, loop or iteration; "
                         "nothing was added", hint=f"leave the id out to derive one, or change that entry: memory.py update {entry['id']}")
    return existing, False


def _write(path: Path, data) -> None:
    write_atomically(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n", mode=0o600)


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def memory_lock(settings: Settings):
    """The memory file's lock, which add, remove, update and clear hold while they read and write entries (none when
    the memory file's folder does not exist yet: then there is no memory file to race on)."""
    path = settings.memory_file
    return exclusive_lock(_lock_path(path)) if path.parent.is_dir() else contextlib.nullcontext()


def entry_from_hit(hit: Hit) -> Entry:
    """A memory entry as the index holds it: its fields from the chunk's metadata, the lesson from its text."""
    metadata = hit.metadata
    return Entry(_indexed_fields(metadata, _field_line(hit.text, "lesson")), metadata.get("path") or metadata.get("file", ""))


def entry_from_record(record: dict, file: str) -> Entry:
    """A memory entry of another file as the index shows it (its fields read as index_personal reads them), so that
    clear, remove and update select what list shows."""
    from ..text.parsing import read_record, record_type_of

    lesson = record.get("lesson")
    metadata, _ = read_record(record, record_type_of(Path(file).name))
    return Entry(_indexed_fields(metadata, lesson if isinstance(lesson, str) else None), file)


def _indexed_fields(metadata: dict, lesson: str | None) -> dict:
    fields = {"id": metadata.get("record_id"), "loopId": metadata.get("loop_id"), "iteration": metadata.get("iteration"),
              "createdAt": metadata.get("date"), "updatedAt": metadata.get("updated"), "type": metadata.get("type"), "lesson": lesson,
              "context": metadata.get("context"), "tags": metadata.get("tags"), "confidence": metadata.get("confidence")}
    return {key: value for key, value in fields.items() if value is not None}


def _field_line(text: str, key: str) -> str | None:
    """The value of a `key: value` line of a rendered record (parsing.render)."""
    return next((line[len(key) + 2:] for line in text.splitlines() if line.startswith(f"{key}: ")), None)


def memory_filters(settings: Settings, filters: Filters) -> Filters:
    """`filters` restricted to memory records: the types asked for, else ralph's types and those of the memory file."""
    if filters.types:
        return filters
    known = set(MEMORY_TYPES)
    try:
        known.update(str(entry["type"]) for entry in read_entries(settings.memory_file) if entry.get("type"))
    except MemoryFileError:
        pass
    return Filters(filters.sources, filters.since, filters.until, tuple(sorted(known)), filters.tags)


def merged(file_entries: list[Entry], indexed: list[Entry]) -> list[Entry]:
    """Entries of the memory file and of other indexed memory files, each id once, newest first."""
    seen = {entry.fields.get("id") for entry in file_entries}
    extra = [entry for entry in indexed if entry.fields.get("id") not in seen or entry.fields.get("id") is None]
    return sorted([*file_entries, *extra], key=lambda entry: entry.created, reverse=True)


def listing(settings: Settings, filters: Filters, loop_id: str | None) -> tuple[list[Entry], MemoryFileError | None]:
    """(entries of the memory file and of other indexed memory files that pass the filters, newest first; the error
    reading the memory file, if any). MemoryFileError when there is nothing to list and the file cannot be read."""
    try:
        file_entries, problem = [Entry(fields, str(settings.memory_file)) for fields in read_entries(settings.memory_file)], None
    except MemoryFileError as exc:
        file_entries, problem = [], exc
    indexed = [entry for entry in _indexed_entries(settings, filters) if entry.file != str(settings.memory_file)]
    if problem is not None and not indexed:
        raise problem
    entries = [entry for entry in merged(file_entries, indexed) if entry.matches(filters) and in_loop(entry, loop_id)]
    return entries, problem


def other_memory_files(settings: Settings) -> list[Path]:
    """The files other than the memory file that the personal index holds memory records of (list shows them)."""
    files = {Path(entry.file) for entry in _indexed_entries(settings, Filters()) if entry.file}
    return sorted(file for file in files if file.resolve() != settings.memory_file.resolve())


def _indexed_entries(settings: Settings, filters: Filters) -> list[Entry]:
    """Memory records of the personal index (other memory files); none when it was never built."""
    from ..store.store import Store

    if not Store.is_built(settings, "personal"):
        return []
    store = Store.open_for_reading(settings, "personal")
    try:
        chunks = store.matching(memory_filters(settings, filters))
    finally:
        store.close()
    return [entry_from_hit(Hit(chunk.id, "personal", 0.0, chunk.text, chunk.metadata)) for chunk in chunks]


def in_loop(entry: Entry, loop_id: str | None) -> bool:
    return loop_id is None or entry.fields.get("loopId") == loop_id


def record(settings: Settings, kind: str, lesson: str, context: str | None = None, tags: list[str] | None = None,
           confidence: float | None = None, loop_id: str | None = None, iteration: int | None = None,
           entry_id: str | None = None) -> dict:
    """Append a new entry to the memory file, unless it is there already (a retry), and index that file at once.

    The answer of memory.py add and memory_add: {"added": the entry in the file, "created": whether this call wrote
    it, "memory_file", "indexed", and "reindex": why not, when the index could not follow}."""
    check_confidence(confidence)
    entry = new_entry(kind, lesson, context, normalized_tags(tags), confidence, loop_id, iteration, entry_id)
    entry, created = append_entry(settings.memory_file, entry, given_id=entry_id is not None)
    indexed, why = index_now(settings)
    return {"added": entry, "created": created, "memory_file": str(settings.memory_file), "indexed": indexed,
            **({"reindex": why} if why else {})}


def normalized_tags(tags: list[str] | None) -> list[str]:
    """The tags as stored: normalised as --tag matches them, without blanks, each once (in the order given)."""
    from ..text.sections import normalize_tag

    return list(dict.fromkeys(tag for tag in map(normalize_tag, tags or ()) if tag))


def index_now(settings: Settings, paths: list[Path] | None = None) -> tuple[bool, str | None]:
    """(whether the index now holds the memory file and `paths` as they are; why not). The files are written whatever
    happens here: a busy index (past the wait), one to rebuild first, a missing model or a full disk leave them for
    the next run, and a retried add (which finds its entry) indexes them."""
    try:
        reindex(settings, paths)
    except RagSearchError as exc:
        return False, str(exc)
    return True, None


def reindex(settings: Settings, paths: list[Path] | None = None) -> bool:
    """Bring the chunks of the memory file and of `paths` (changed or deleted) in line with them (no walk); True if an
    index was published."""
    from ..index.runs import index_run
    from ..sources.personal import COLLECTION, index_files, recorded_roots

    files = list(dict.fromkeys([settings.memory_file, *(paths or ())]))
    with index_run(settings, COLLECTION) as run:
        index_files(run.store, run.pipeline, settings, files, [*settings.personal_roots, *recorded_roots(settings)])
    return run.published


def query_options(settings: Settings, filters: Filters, top_k: int, loop_id: str | None):
    """The SearchOptions of a memory query: memory records only, every record on its own (no per-file cap)."""
    from ..search.retrieval import SearchOptions

    filters = memory_filters(settings, filters)
    return SearchOptions(top_k=top_k * 4 if loop_id else top_k, per_file=0, since=filters.since, until=filters.until,
                         types=list(filters.types), tags=list(filters.tags))


def query_entries(hits: list[Hit], top_k: int, loop_id: str | None) -> list[dict]:
    """The entries of a memory query's hits, best first, with their scores."""
    entries = [(hit, entry_from_hit(hit)) for hit in hits]
    return [{**entry.fields, "file": entry.file, "score": round(hit.score, 4)} for hit, entry in entries if in_loop(entry, loop_id)][:top_k]


def entry_filters(since: float | None, types: list[str] | None, tags: list[str] | None) -> Filters:
    """The filters of list and query: created since, any of the types, all of the tags (normalised as indexed)."""
    from ..text.sections import normalize_tag

    return Filters(since=since, types=tuple(types or ()), tags=tuple(normalize_tag(tag) for tag in tags or ()))
