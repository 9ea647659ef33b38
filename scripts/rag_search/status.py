"""What is indexed and how fresh it is (status.py, the MCP status tool): data, never a verdict.

Per collection: documents, chunks, the published generation, its age and size.
Per personal root: the last attempt, its error, the last success, and the files
that changed on disk since (by size and mtime, as an index run sees them). Per
doc source: the same from the registry, with the commit or version and the
page counts. And the daily timer. Stale is not an error: status always exits 0
when it can read what there is.
"""

import time
from pathlib import Path

from . import dates, registry
from .config import Settings
from .generations import INDEX_COMMANDS
from .sources.files import walk_root
from .sources.personal import SOURCE_ID, recorded_runs
from .store import COLLECTIONS, Store
from .timer import timer_state

EXAMPLES = 5  # changed files named per root


def collect(settings: Settings, stores: dict[str, Store], with_timer: bool = True) -> dict:
    """The status document; `stores` holds the collections that are built, open for reading."""
    report = {
        "data_dir": str(settings.data_dir),
        "collections": {name: _collection(stores[name]) if name in stores else
                        {"built": False, "hint": f"run {INDEX_COMMANDS[name]}"} for name in COLLECTIONS},
        "personal_roots": _roots(settings, stores.get("personal")),
        "doc_sources": _doc_sources(settings, stores.get("docs")),
    }
    if with_timer:
        report["timer"] = timer_state(settings.unit_dir)
    return report


def _collection(store: Store) -> dict:
    generation = store.generation()
    published = generation.get("published")
    age = round(time.time() - dates.parse_bound(published)) if published else None
    return {"built": True, "documents": store.document_count(), "chunks": store.chunk_count(), **generation, "age_seconds": age}


def _roots(settings: Settings, store: Store | None) -> list[dict]:
    """The roots index runs were given (else the configured ones), each with its runs and what changed on disk since."""
    runs = recorded_runs(settings.data_dir)
    roots = list(runs) or [str(root) for root in settings.personal_roots]
    report = []
    for root in roots:
        known = store.documents(SOURCE_ID, key_prefix=f"{SOURCE_ID}:{root}/") if store is not None else {}
        entry = {"root": root, "documents": len(known), **{key: runs.get(root, {}).get(key) for key in
                                                             ("last_indexed", "last_attempt", "last_error")}}
        entry["changed_since_index"] = _changes(Path(root), known, settings)
        report.append(entry)
    return report


def _changes(root: Path, known: dict, settings: Settings) -> dict | str:
    """Files not in the index, changed since it (size or mtime), or gone from disk; or why the root cannot be read."""
    if not root.is_dir():
        return "the folder does not exist"
    # Keyed and identified as folder_listing() does for an index run: the absolute path, size and mtime.
    listed = {f"{SOURCE_ID}:{entry.path}": entry for entry in walk_root(root, list(settings.ignore_patterns)).files}
    new = [entry.rel for key, entry in listed.items() if key not in known]
    changed = [entry.rel for key, entry in listed.items() if key in known and known[key].identity != f"{entry.size}:{entry.mtime_ns}"]
    gone = [record.file for key, record in known.items() if key not in listed]
    return {"not_indexed": len(new), "changed": len(changed), "gone": len(gone), "examples": (changed + new + gone)[:EXAMPLES]}


def _doc_sources(settings: Settings, store: Store | None) -> list[dict]:
    """Each registered source (and any source still in the index but no longer registered)."""
    reg = registry.load(settings.registry)
    indexed = store.source_ids() if store is not None else set()
    report = []
    for spec in reg.sources:
        entry = reg.describe(spec.id)
        state = (store.source_state(spec.id) or {}) if store is not None else {}
        report.append({
            "id": spec.id, "type": spec.type, "name": spec.name,
            "documents": store.document_count(spec.id) if store is not None else 0,
            "chunks": store.chunk_count(spec.id) if store is not None else 0,
            **({"version": spec.version, "commit": state.get("commit")} if spec.type == "git" else {}),
            **{key: entry.get(key) for key in ("last_indexed", "last_attempt", "last_error")},
        })
    for source_id in sorted(indexed - {spec.id for spec in reg.sources}):
        report.append({"id": source_id, "documents": store.document_count(source_id), "chunks": store.chunk_count(source_id),
                       "registered": False, "hint": "index_docs.py --all removes it"})
    return report
