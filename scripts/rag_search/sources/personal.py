"""The personal index: notes, state, memory and decision files under the user's roots.

Each root is reconciled on its own (reconcile.py): a root that lists nothing,
or less than half of what it had, fails without losing anything. Documents of
roots not named in this run are left as they are.
"""

import logging
import os
import time
from pathlib import Path

from ..config import Settings
from ..errors import ConfigError, SourceFailed
from ..indexer import IndexWriter, Pipeline
from ..reconcile import reconcile
from ..store import Store
from .files import folder_listing, walk_root

log = logging.getLogger("rag_search")

COLLECTION = "personal"
SOURCE_ID = "personal"
COUNTS = ("added", "updated", "unchanged", "moved", "deleted")


def check_roots(roots: tuple[Path, ...], origin: str) -> list[Path]:
    """Every root must be an existing folder; a root inside another is dropped."""
    for root in roots:
        if not root.is_dir():
            raise ConfigError(
                f"personal root {root} ({origin}) does not exist or is not a folder",
                hint="create it, or pass roots on the command line / set RAG_SEARCH_PERSONAL_DIRS",
            )
    kept: list[Path] = []
    for root in sorted(roots, key=lambda p: len(p.parts)):
        if any(root.is_relative_to(outer) for outer in kept):
            log.warning("root %s is inside another root: indexed once, as part of that root", root)
        else:
            kept.append(root)
    return kept


def index_personal(store: Store, pipeline: Pipeline, roots: list[Path], settings: Settings,
                   full: bool = False, allow_shrink: bool = False, quiet: bool = False) -> dict:
    """Bring each root's documents in the personal collection in line with the root; returns the run summary."""
    started = time.monotonic()
    writer = IndexWriter(store, pipeline)
    totals: dict = {"files_seen": 0, **dict.fromkeys(COUNTS, 0), "ignored": 0, "secret_files": 0, "skipped": [], "failed_roots": []}
    for root in roots:
        listing = folder_listing(walk_root(root, list(settings.ignore_patterns)), SOURCE_ID, settings.max_file_bytes)
        known = store.documents(SOURCE_ID, key_prefix=f"{SOURCE_ID}:{root}{os.sep}")
        try:
            report = reconcile(writer, known, listing, str(root), full=full, allow_shrink=allow_shrink, quiet=quiet)
        except SourceFailed as exc:
            log.error("%s", exc.message)
            totals["failed_roots"].append({"root": str(root), "error": exc.message})
            continue
        totals["files_seen"] += report.listed
        totals["skipped"] += report.skipped
        for name in COUNTS:
            totals[name] += report.counts[name]
        totals["ignored"] += listing.details["ignored"]
        totals["secret_files"] += listing.details["secret_files"]
    return {
        "index": COLLECTION,
        "roots": [str(root) for root in roots],
        **totals,
        "chunks": store.chunk_count(),
        "chunks_added": writer.stats.chunks_added,
        "chunks_removed": writer.stats.chunks_removed,
        "embedded": writer.stats.embedded,
        "reused_vectors": writer.stats.reused,
        "redacted": writer.stats.redacted,
        "rebuilt": writer.rebuilt,
        "seconds": round(time.monotonic() - started, 2),
    }
