"""The personal index: notes, state, memory and decision files under the user's roots.

The collection mirrors the roots of the run (see files.sync_folders): files of a
root that is no longer indexed are removed too.
"""

import logging
import time
from pathlib import Path

from ..config import Config
from ..errors import ConfigError
from ..indexer import IndexWriter, Pipeline
from ..store import Store
from .files import sync_folders, walk_root

log = logging.getLogger("rag_search")

COLLECTION = "personal"


def check_roots(roots: list[Path], origin: str) -> list[Path]:
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


def index_personal(
    store: Store,
    pipeline: Pipeline,
    roots: list[Path],
    config: Config,
    full: bool = False,
    quiet: bool = False,
) -> dict:
    """Bring the personal collection in line with `roots`; returns the run summary."""
    started = time.monotonic()
    walks = [walk_root(root, config.ignore_patterns) for root in roots]
    with IndexWriter(store, COLLECTION, pipeline, full=full) as writer:
        counts = sync_folders(writer, walks, COLLECTION, config.max_file_bytes, quiet=quiet)
    return {
        "index": COLLECTION,
        "roots": [str(root) for root in roots],
        **counts,
        "chunks": store.catalog.chunk_count(COLLECTION),
        "chunks_added": writer.stats.chunks_added,
        "chunks_removed": writer.stats.chunks_removed,
        "embedded": writer.stats.embedded,
        "reused_vectors": writer.stats.reused,
        "redacted": writer.stats.redacted,
        "rebuilt": writer.rebuilt,
        "seconds": round(time.monotonic() - started, 2),
    }
