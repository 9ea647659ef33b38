"""The agent's memory entries: lessons, failure and success patterns, kept in one JSON file and in the personal index.

The file is a JSON array of entries in ralph-memory's schema (id, loopId,
iteration, createdAt, type, lesson, context, tags, confidence); an object
holding such an array under "entries" or "memories" is read too. Entries are
added and cleared atomically under a lock, so two agents recording at once lose
nothing, and an added entry is indexed at once (index_files: one document, no
walk), so a search a minute later finds it.
"""

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from . import dates
from .atomic import write_atomically
from .config import Settings
from .errors import ConfigError
from .locking import exclusive_lock
from .records import Filters, Hit

# ralph-memory's entry types; entries of other types are memory too when they are in the memory file.
MEMORY_TYPES = ("lesson_learned", "failure_pattern", "success_pattern")
LIST_KEYS = ("entries", "memories")


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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MemoryFileError(f"no memory file at {path}", hint="record a first entry: memory.py add --type lesson_learned "
                                                                 "--lesson '…' (or set --memory-file / RAG_SEARCH_MEMORY_FILE)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise MemoryFileError(f"the memory file {path} is not valid JSON: {exc}",
                              hint=f"inspect and repair it, or move it aside (mv {path} {path}.broken) to start afresh") from None
    entries = _entry_list(data)
    if entries is None:
        raise MemoryFileError(f"the memory file {path} does not hold a list of memory entries",
                              hint="it must be a JSON array of entries, or an object with an \"entries\" array")
    return entries


def _entry_list(data) -> list[dict] | None:
    if isinstance(data, dict):
        data = next((data[key] for key in LIST_KEYS if isinstance(data.get(key), list)), None)
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        return None
    return data


def new_entry(kind: str, lesson: str, context: str | None = None, tags: list[str] | None = None, confidence: float | None = None,
              loop_id: str | None = None, iteration: int | None = None) -> dict:
    """A well-formed entry with a fresh id and the time now."""
    entry = {"id": f"mem_{uuid.uuid4().hex[:12]}", "loopId": loop_id, "iteration": iteration, "createdAt": dates.now_iso(),
             "type": kind, "lesson": lesson, "context": context, "tags": tags or [], "confidence": confidence}
    return {key: value for key, value in entry.items() if value is not None}


def append_entry(path: Path, entry: dict) -> None:
    """Add `entry` to the memory file (created if missing), atomically and under the file's lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(_lock_path(path)):
        entries = read_entries(path) if path.exists() else []
        _write(path, [*entries, entry])


def clear_entries(path: Path, loop_id: str | None, before: float | None, apply: bool) -> tuple[list[dict], list[dict], Path | None]:
    """(entries to delete, entries kept, backup written): those of `loop_id` and/or created before `before`, else all.

    Only with `apply` is anything written: first a backup beside the file, then the file without them.
    """
    with exclusive_lock(_lock_path(path)):
        entries = read_entries(path)
        doomed = [entry for entry in entries if _doomed(entry, loop_id, before)]
        kept = [entry for entry in entries if not _doomed(entry, loop_id, before)]
        backup = None
        if apply and doomed:
            backup = path.with_name(f"{path.name}.{dates.now_iso().replace(':', '')}.bak")
            write_atomically(backup, path.read_bytes())
            _write(path, kept)
    return doomed, kept, backup


def _doomed(entry: dict, loop_id: str | None, before: float | None) -> bool:
    created = dates.normalize(entry.get("createdAt"))
    return ((loop_id is None or entry.get("loopId") == loop_id)
            and (before is None or (created is not None and created[1] < before)))


def _write(path: Path, entries: list[dict]) -> None:
    write_atomically(path, json.dumps(entries, ensure_ascii=False, indent=2) + "\n", mode=0o600)


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def entry_from_hit(hit: Hit) -> Entry:
    """A memory entry as the index holds it: its fields from the chunk's metadata, the lesson from its text."""
    metadata = hit.metadata
    fields = {"id": metadata.get("record_id"), "loopId": metadata.get("loop_id"), "iteration": metadata.get("iteration"),
              "createdAt": metadata.get("date"), "type": metadata.get("type"), "lesson": _field_line(hit.text, "lesson"),
              "context": metadata.get("context"), "tags": metadata.get("tags"), "confidence": metadata.get("confidence")}
    return Entry({key: value for key, value in fields.items() if value is not None}, metadata.get("path") or metadata.get("file", ""))


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


def _indexed_entries(settings: Settings, filters: Filters) -> list[Entry]:
    """Memory records of the personal index (other memory files); none when it was never built."""
    from .store import Store

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
           confidence: float | None = None, loop_id: str | None = None, iteration: int | None = None) -> tuple[dict, bool]:
    """Append a new entry to the memory file and index that file at once; (the entry, whether an index was published)."""
    from .parsing import normalize_tag

    if confidence is not None and not 0 <= confidence <= 1:
        raise MemoryFileError("--confidence must be between 0 and 1")
    entry = new_entry(kind, lesson, context, [tag for tag in map(normalize_tag, tags or ()) if tag], confidence, loop_id, iteration)
    append_entry(settings.memory_file, entry)
    return entry, reindex(settings)


def reindex(settings: Settings) -> bool:
    """Bring the memory file's chunks in line with it (one document, no walk); True if an index was published."""
    from .runs import index_run
    from .sources.personal import COLLECTION, index_files, recorded_roots

    with index_run(settings, COLLECTION) as run:
        index_files(run.store, run.pipeline, settings, [settings.memory_file], [*settings.personal_roots, *recorded_roots(settings)])
    return run.published


def query_options(settings: Settings, filters: Filters, top_k: int, loop_id: str | None):
    """The SearchOptions of a memory query: memory records only, every record on its own (no per-file cap)."""
    from .retrieval import SearchOptions

    filters = memory_filters(settings, filters)
    return SearchOptions(top_k=top_k * 4 if loop_id else top_k, per_file=0, since=filters.since, until=filters.until,
                         types=list(filters.types), tags=list(filters.tags))


def query_entries(hits: list[Hit], top_k: int, loop_id: str | None) -> list[dict]:
    """The entries of a memory query's hits, best first, with their scores."""
    entries = [(hit, entry_from_hit(hit)) for hit in hits]
    return [{**entry.fields, "file": entry.file, "score": round(hit.score, 4)} for hit, entry in entries if in_loop(entry, loop_id)][:top_k]


def entry_filters(since: float | None, types: list[str] | None, tags: list[str] | None) -> Filters:
    """The filters of list and query: created since, any of the types, all of the tags (normalised as indexed)."""
    from .parsing import normalize_tag

    return Filters(since=since, types=tuple(types or ()), tags=tuple(normalize_tag(tag) for tag in tags or ()))
