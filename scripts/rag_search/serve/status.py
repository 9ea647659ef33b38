"""What is indexed and how fresh it is (status.py, the MCP status tool): data, never a verdict.

Per collection: documents, chunks, the published generation, its age and size,
and the files holding more than a quarter of its chunks (a transcript, a log).
Per personal root: the last attempt, its error, the last success, the files its
runs skipped and why, the files indexed with no text (an emptied memory file:
searches find nothing in them), and the files that changed on disk since (by
size and mtime, as an index run sees them; a file skipped as it is now is no
change). Per
doc source: the same from the registry, with the commit or version and the
page counts. And the daily timer. Stale is not an error: status always exits 0
when it can read what there is; a registry that cannot be read is reported in
`doc_sources` (its error and the sources the index holds), beside the rest.
"""

import time
from pathlib import Path

from ..core import dates
from ..core.config import Settings
from ..core.errors import ConfigError
from ..index.reconcile import plan
from ..sources import registry
from ..sources.files import folder_listing, walk_root
from ..sources.personal import MAX_SKIPPED, SOURCE_ID, recorded_runs, skipped_identities
from ..sources.specs import GitSource
from ..store.generations import INDEX_COMMANDS
from ..store.store import COLLECTIONS, Store
from . import resident
from .timer import timer_state

EXAMPLES = 5  # changed files named per root
LARGE_SHARE = 0.25  # a file holding more than this share of a collection's chunks is named: it may crowd searches
LARGE_MIN_CHUNKS = 50  # and more chunks than this (in a small index every file holds a large share)


def collect(settings: Settings, stores: dict[str, Store], with_timer: bool = True) -> dict:
    """The status document; `stores` holds the collections that are built, open for reading."""
    report: dict[str, object] = {
        "data_dir": str(settings.data_dir),
        "collections": {name: _collection(stores[name]) if name in stores else
                        {"built": False, "hint": f"run {INDEX_COMMANDS[name]}"} for name in COLLECTIONS},
        "personal_roots": _roots(settings, stores.get("personal")),
        "doc_sources": _doc_sources(settings, stores.get("docs")),
    }
    if with_timer:
        report["timer"] = timer_state(settings.unit_dir)
    report["resident"] = resident.about(settings)
    return report


def _collection(store: Store) -> dict:
    generation = store.generation()
    published = generation.get("published")
    age = round(time.time() - dates.parse_bound(published)) if published else None
    chunks = store.chunk_count()
    threshold = max(int(chunks * LARGE_SHARE), LARGE_MIN_CHUNKS)
    large = sorted(store.documents(min_chunks=threshold).values(), key=lambda doc: -doc.chunk_count)
    return {"built": True, "documents": store.document_count(), "chunks": chunks, **generation, "age_seconds": age,
            "large_files": [{"file": doc.file, "chunks": doc.chunk_count, "share": round(doc.chunk_count / chunks, 2)}
                            for doc in large]}


def _roots(settings: Settings, store: Store | None) -> list[dict]:
    """The roots index runs were given (else the configured ones), each with its runs and what changed on disk since."""
    runs = recorded_runs(settings.data_dir)
    roots = list(runs) or [str(root) for root in settings.personal_roots]
    report = []
    for root in roots:
        known = store.documents(SOURCE_ID, key_prefix=f"{SOURCE_ID}:{root}/") if store is not None else {}
        run = runs.get(root, {})
        entry = {"root": root, "documents": len(known), **{key: run.get(key) for key in ("last_indexed", "last_attempt", "last_error")},
                 "skipped": [{"file": skip["file"], "reason": skip["reason"]} for skip in run.get("skipped", [])],
                 "skipped_count": run.get("skipped_count", 0), **_empty(known)}
        entry["changed_since_index"] = _changes(Path(root), known, settings, skipped_identities(runs, root)[0])
        report.append(entry)
    return report


def _empty(known: dict) -> dict:
    """The root's documents indexed with no text to index (the first MAX_SKIPPED, by name), and how many."""
    empty = sorted(record.file for record in known.values() if not record.chunk_count)
    return {"empty": empty[:MAX_SKIPPED], "empty_count": len(empty)}


def _changes(root: Path, known: dict, settings: Settings, skipped: dict[str, str]) -> dict | str:
    """Files not in the index, changed since it, or gone from disk, planned as an index run would (reconcile.plan), less
    those skipped as they are now (`skipped`: path -> identity); or why the root cannot be read."""
    if not root.is_dir():
        return "the folder does not exist"
    walk = walk_root(root, list(settings.ignore_patterns))
    work = plan(known, folder_listing(walk, SOURCE_ID, settings.max_file_bytes, quiet=True))
    rel = {f"{SOURCE_ID}:{entry.path}": entry.rel for entry in walk.files}
    load = [item for item in work.load if skipped.get(rel[item.key]) != item.identity]
    new = [rel[item.key] for item in load if item.key not in known]
    changed = [rel[item.key] for item in load if item.key in known]
    gone = [known[key].file for key in work.gone]
    return {"not_indexed": len(new), "changed": len(changed), "gone": len(gone), "examples": (changed + new + gone)[:EXAMPLES]}


def _doc_sources(settings: Settings, store: Store | None) -> list[dict] | dict:
    """Each registered source (and any source still in the index but no longer registered). A registry that cannot be
    read is reported here, with the sources the index holds, and the rest of the report still comes."""
    try:
        reg = registry.load(settings.registry)
    except ConfigError as exc:
        return {"registry": str(settings.registry), "error": exc.message, "hint": exc.hint,
                "indexed": [_indexed(store, source_id) for source_id in sorted(store.source_ids())] if store is not None else []}
    report = []
    for spec in reg.sources:
        entry = reg.describe(spec.id)
        state = (store.source_state(spec.id) or {}) if store is not None else {}
        report.append({
            "id": spec.id, "type": spec.type, "name": spec.name,
            "documents": store.document_count(spec.id) if store is not None else 0,
            "chunks": store.chunk_count(spec.id) if store is not None else 0,
            **({"version": spec.version, "commit": state.get("commit")} if isinstance(spec, GitSource) else {}),
            **({"partial": store.in_parts[spec.id]} if store is not None and spec.id in store.in_parts else {}),
            **{key: entry.get(key) for key in ("last_indexed", "last_attempt", "last_status", "last_error")},
        })
    if store is not None:
        report += [{**_indexed(store, source_id), "registered": False, "hint": "index_docs.py --all removes it"}
                   for source_id in sorted(store.source_ids() - {spec.id for spec in reg.sources})]
    return report


def _indexed(store: Store, source_id: str) -> dict:
    return {"id": source_id, "documents": store.document_count(source_id), "chunks": store.chunk_count(source_id)}
