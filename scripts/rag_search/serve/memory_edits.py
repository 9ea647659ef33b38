"""Removing and correcting memory entries wherever memory.py list finds them: the memory file, and the other files of
the personal index that hold memory records (another agent's memory file, JSON Lines, a file that is one entry).

The files are read, not the index, so an entry is judged by what its file says now, with the fields list reads. A
file keeps its shape: an array loses or changes an element, JSON Lines a line, and a file that is one entry and
nothing else is deleted with it. Nothing is written unless asked (--yes, confirm: true); then every file to change is
first copied beside itself (<name>.<time>.bak), then replaced atomically, all under the memory file's lock, and the
files are reindexed at once, as an add is.
"""

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import dates
from ..core.atomic import write_atomically
from ..core.config import Settings
from ..core.errors import UsageError
from ..store.records import Filters
from ..text.parsing import JSONL_SUFFIXES, is_record
from . import memory
from .memory import Entry

UNKNOWN_ID_HINT = "memory.py list (memory_list over MCP) shows the entries and their ids"


@dataclass
class Found:
    """A memory entry in a file: the object as stored, where it sits in the document (a key path, a line's index for
    JSON Lines, () when the file is the entry), and the entry as list shows it (what the filters look at)."""

    record: dict
    where: tuple
    entry: Entry


@dataclass
class Document:
    """A file holding memory entries, as read: its JSON (or its lines) and the entries found in it."""

    path: Path
    data: Any  # the JSON as parsed (an array or an object), or a JSONL file's lines
    found: list[Found]

    @property
    def lines(self) -> bool:
        return self.path.suffix.lower() in JSONL_SUFFIXES


@dataclass
class Change:
    """What an edit does to one file: entries taken out, entries replaced (where -> the new object)."""

    document: Document
    removed: list[Found] = field(default_factory=list)
    replaced: dict[tuple, dict] = field(default_factory=dict)
    backup: Path | None = None

    @property
    def deletes_file(self) -> bool:
        return any(found.where == () for found in self.removed)

    def report(self) -> dict:
        return {"file": str(self.document.path), "entries": len(self.removed) + len(self.replaced),
                "action": "delete" if self.deletes_file else "rewrite", "backup": str(self.backup) if self.backup else None}


def clear(settings: Settings, loop_id: str | None, before: float | None, apply: bool) -> dict:
    """Delete the entries of `loop_id` and/or created before `before`, else all, in every file list reads."""
    with memory.memory_lock(settings):
        documents = read_documents(settings)
        changes = [Change(document, removed=[found for found in document.found if _doomed(found.entry, loop_id, before)])
                   for document in documents]
        changes = [change for change in changes if change.removed]
        if apply:
            _apply(changes)
    deleted = [found for change in changes for found in change.removed]
    mine = [change for change in changes if change.document.path == settings.memory_file]
    remaining = sum(len(document.found) for document in documents if document.path == settings.memory_file)
    remaining -= sum(len(change.removed) for change in mine)
    return {**_answer(settings, changes, apply, "deleted" if apply else "would_delete", _shown(deleted)), "remaining": remaining}


def remove(settings: Settings, ids: list[str], apply: bool) -> dict:
    """Delete the entries of these ids (every copy, in every file list reads); a UsageError, changing nothing, if one
    of the ids names no entry."""
    with memory.memory_lock(settings):
        documents = read_documents(settings)
        _check_known(documents, ids)
        changes = [Change(document, removed=[found for found in document.found if _id(found.record) in ids])
                   for document in documents]
        changes = [change for change in changes if change.removed]
        if apply:
            _apply(changes)
    removed = [found for change in changes for found in change.removed]
    return _answer(settings, changes, apply, "removed" if apply else "would_remove", _shown(removed))


def update(settings: Settings, entry_id: str, kind: str | None = None, lesson: str | None = None, context: str | None = None,
           tags: list[str] | None = None, confidence: float | None = None, apply: bool = False) -> dict:
    """Change fields of the entry `entry_id` (every copy) where it is stored; its id and createdAt stay, updatedAt is
    set. A blank `context` removes it, empty `tags` clear them; a blank lesson or type is refused."""
    values = checked_fields(kind, lesson, context, tags, confidence)
    with memory.memory_lock(settings):
        documents = read_documents(settings)
        _check_known(documents, [entry_id])
        changes, shown = [], []
        for document in documents:
            change = Change(document)
            for found in document.found:
                after = _updated(found.record, values) if _id(found.record) == entry_id else found.record
                if after != found.record:
                    change.replaced[found.where] = after
                    shown.append({"file": str(document.path), "before": found.record, "after": after})
            changes += [change] if change.replaced else []
        if apply:
            _apply(changes)
    return _answer(settings, changes, apply, "updated" if apply else "would_update", shown)


def checked_fields(kind: str | None, lesson: str | None, context: str | None, tags: list[str] | None,
                   confidence: float | None) -> dict:
    """The fields an update sets, checked as add checks them ({"context": None} removes the context)."""
    values: dict = {}
    if kind is not None:
        values["type"] = memory.check_text("type", kind)
    if lesson is not None:
        values["lesson"] = memory.check_text("lesson", lesson)
    if context is not None:
        values["context"] = context.strip() or None
    if tags is not None:
        values["tags"] = memory.normalized_tags(tags)
    if confidence is not None:
        memory.check_confidence(confidence)
        values["confidence"] = confidence
    if not values:
        raise UsageError("nothing to change", hint="give a new lesson, type, context, tags or confidence")
    return values


def read_documents(settings: Settings) -> list[Document]:
    """The memory file (when it exists) and the other files the personal index holds memory records of (when they
    still parse): every entry list shows. MemoryFileError for a memory file that is not one, or when there is none."""
    path, documents = settings.memory_file, []
    if path.exists():
        data = memory.load(path)
        at = memory.entries_at(data) or ()  # load() refused a file that holds no list of entries
        documents.append(Document(path, data, [Found(item, (*at, number), Entry(item, str(path)))
                                                for number, item in enumerate(memory.entry_list(data))]))
    types = set(memory.memory_filters(settings, Filters()).types)
    others = (_other_document(other, types) for other in memory.other_memory_files(settings))
    documents += [document for document in others if document is not None]
    if not documents:
        memory.load(path)  # raises: there is no memory file, and no other memory file is indexed
    return documents


def _other_document(path: Path, types: set[str]) -> Document | None:
    """A memory file other than ours with the memory records it holds; None if it is gone or no longer parses (the
    next index run that sees it drops or keeps its chunks)."""
    lines = path.suffix.lower() in JSONL_SUFFIXES
    try:
        text = path.read_text(encoding="utf-8")
        data = text.splitlines() if lines else json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    places = _line_records(data) if lines else _records(data)
    found = [Found(record, where, memory.entry_from_record(record, str(path))) for where, record in places]
    return Document(path, data, [item for item in found if item.entry.fields.get("type") in types])


def _records(data) -> list[tuple[tuple, dict]]:
    """The records of a JSON document and where they sit, as parsing._records splits it for the index: the document
    itself, the elements of an array, of an object's arrays or objects of objects, or an object's own objects."""
    if is_record(data):
        return [((), data)]
    if isinstance(data, list):
        return [((number,), item) for number, item in enumerate(data) if isinstance(item, dict)]
    places: list[tuple[tuple, dict]] = []
    for key, value in data.items() if isinstance(data, dict) else ():
        items = list(enumerate(value)) if isinstance(value, list) else list(value.items()) if isinstance(value, dict) else []
        if items and all(isinstance(item, dict) for _, item in items):
            places += [((key, sub), item) for sub, item in items]
        elif isinstance(value, dict):
            places.append(((key,), value))
    return places


def _line_records(lines: list[str]) -> list[tuple[tuple, dict]]:
    places = []
    for number, line in enumerate(lines):
        try:
            record = json.loads(line) if line.strip() else None
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(record, dict):
            places.append(((number,), record))
    return places


def _doomed(entry: Entry, loop_id: str | None, before: float | None) -> bool:
    created = dates.normalize(entry.fields.get("createdAt"))
    return memory.in_loop(entry, loop_id) and (before is None or (created is not None and created[1] < before))


def _id(record: dict) -> str | None:
    return None if record.get("id") is None else str(record["id"])


def _check_known(documents: list[Document], ids: list[str]) -> None:
    known = {_id(found.record) for document in documents for found in document.found}
    unknown = [entry_id for entry_id in ids if entry_id not in known]
    if unknown:
        raise UsageError(f"no memory entry has the id {', '.join(unknown)}; nothing was changed", hint=UNKNOWN_ID_HINT)


def _updated(record: dict, values: dict) -> dict:
    after = {key: value for key, value in record.items() if not (key in values and values[key] is None)}
    after.update({key: value for key, value in values.items() if value is not None})
    return {**after, "updatedAt": dates.now_iso()} if after != record else record


def _shown(found: list[Found]) -> list[dict]:
    return [{**item.record, "file": item.entry.file} for item in found]


def _answer(settings: Settings, changes: list[Change], applied: bool, count_key: str, entries: list[dict]) -> dict:
    """The answer of clear, remove and update: what changed (or would), file by file; once applied, the memory file's
    backup and whether the index follows (reindexed at once, as an add is)."""
    answer = {count_key: len(entries), "entries": entries, "files": [change.report() for change in changes],
              "memory_file": str(settings.memory_file)}
    if not applied:
        return answer
    backup = next((change.backup for change in changes if change.document.path == settings.memory_file), None)
    indexed, why = memory.index_now(settings, [change.document.path for change in changes]) if changes else (True, None)
    return {**answer, "backup": str(backup) if backup else None, "indexed": indexed, **({"reindex": why} if why else {})}


def _apply(changes: list[Change]) -> None:
    """Back up every file to change, then change each (deleted, or replaced atomically): a failure part way leaves
    every file whole, and its backup beside it."""
    stamp = dates.now_iso().replace(":", "")
    for change in changes:
        change.backup = _backup_path(change.document.path, stamp)
        write_atomically(change.backup, change.document.path.read_bytes())
    for change in changes:
        if change.deletes_file:
            change.document.path.unlink()
        else:
            write_atomically(change.document.path, _text(change))


def _backup_path(path: Path, stamp: str) -> Path:
    """<name>.<time>.bak beside the file; two edits within a second keep both backups."""
    backup, number = path.with_name(f"{path.name}.{stamp}.bak"), 1
    while backup.exists():
        backup, number = path.with_name(f"{path.name}.{stamp}-{number}.bak"), number + 1
    return backup


def _text(change: Change) -> str:
    """The file's new text: its document with the replacements made and the removed entries taken out."""
    document = change.document
    data = copy.deepcopy(document.data)
    for where, record in change.replaced.items():
        value = json.dumps(record, ensure_ascii=False) if document.lines else record
        if where == ():
            data = value
        else:
            _parent(data, where)[where[-1]] = value
    for where in sorted((found.where for found in change.removed), key=lambda at: (repr(at[:-1]), at[-1]), reverse=True):
        del _parent(data, where)[where[-1]]
    return "".join(f"{line}\n" for line in data) if document.lines else json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _parent(data, where: tuple):
    for key in where[:-1]:
        data = data[key]
    return data
