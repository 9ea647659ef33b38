"""The personal index: notes, state, memory and decision files under the user's roots.

Each root is reconciled on its own (reconcile.py): a root that lists nothing,
or less than half of what it had, fails without losing anything. Documents of
roots not named in this run are left as they are.
"""

import json
import logging
import os
import time
from pathlib import Path

from .. import dates
from ..atomic import write_atomically
from ..config import Settings
from ..errors import ConfigError, SourceFailed
from ..indexer import IndexWriter, Pipeline
from ..locking import exclusive_lock
from ..reconcile import reconcile
from ..store import Store
from .files import folder_listing, walk_root

log = logging.getLogger("rag_search")

COLLECTION = "personal"
SOURCE_ID = "personal"
COUNTS = ("added", "updated", "unchanged", "moved", "deleted")
RUNS_FILE = "roots.json"  # in <data dir>/personal/: each root's last attempt, last success and last error, for status


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


def record_runs(data_dir: Path, roots: list[Path], failed: dict[str, str], error: str | None = None) -> None:
    """Note each root's attempt: indexed now unless it failed (`failed`: root -> why) or the whole run did (`error`).

    Kept beside the generations, not in them: a run that changes nothing publishes nothing, yet was attempted.
    A failure to write it is only a warning.
    """
    now = dates.now_iso()
    path = data_dir / COLLECTION / RUNS_FILE
    try:
        with exclusive_lock(path.with_name(f".{RUNS_FILE}.lock")):
            runs = recorded_runs(data_dir)
            for root in map(str, roots):
                why = failed.get(root) or error
                entry = runs.setdefault(root, {})
                entry.update(last_attempt=now, last_error=why, **({} if why else {"last_indexed": now}))
            write_atomically(path, json.dumps(runs, indent=2, ensure_ascii=False) + "\n", mode=0o600)
    except OSError as exc:
        log.warning("indexed, but could not record the run in %s: %s", path, exc)


def recorded_runs(data_dir: Path) -> dict[str, dict]:
    """root -> {"last_attempt", "last_indexed", "last_error"} of every root an index run was given; {} before any."""
    try:
        runs = json.loads((data_dir / COLLECTION / RUNS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return runs if isinstance(runs, dict) else {}
