"""The personal index: notes, state, memory and decision files under the user's roots.

Each root is reconciled on its own (reconcile.py): a root that lists nothing,
or less than half of what it had, fails without losing anything. Documents of
roots not named in this run are left as they are.

The index remembers its roots (in the personal source's state): a run without
roots on its command line refreshes every remembered root and the configured
ones, so a root named once is never dropped by the daily timer. A root that is
missing (an unplugged disk) is skipped with a warning and keeps its chunks; only
`--forget ROOT` removes a root and its chunks.
"""

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from ..core import dates
from ..core.atomic import write_atomically
from ..core.config import Settings, is_ours
from ..core.errors import ConfigError, RagSearchError, SourceFailed
from ..core.locking import exclusive_lock
from ..index.indexer import IndexWriter, Pipeline
from ..index.reconcile import COUNTS, reconcile
from ..store.records import IndexedFiles
from ..store.store import Store
from ..store.store_writer import StoreWriter
from .files import FileEntry, WalkResult, folder_listing, relative_name, walk_root

log = logging.getLogger("rag_search")

COLLECTION = "personal"
SOURCE_ID = "personal"
RUNS_FILE = "roots.json"  # in <data dir>/personal/: each root's last attempt, success, error and skipped files, for status
MAX_SKIPPED = 50  # skipped files kept per root (with their count)


def recorded_roots(settings: Settings) -> list[Path]:
    """The roots the published personal index remembers (none before the first run, or when it cannot be read:
    the run that rebuilds a damaged index must not fail on it)."""
    try:
        indexed = Store.indexed_files(settings, COLLECTION, SOURCE_ID)
    except RagSearchError as exc:
        log.warning("the roots the personal index remembers cannot be read (%s): using the configured roots", exc.message)
        return []
    return [Path(root) for root in ((indexed.state or {}).get("roots", []) if indexed else [])]


def choose_roots(settings: Settings, recorded: list[Path], full: bool = False) -> tuple[list[Path], list[Path], str]:
    """(roots to index, missing roots, where they came from).

    Roots on the command line are indexed alone; otherwise the remembered roots and the
    configured ones (the default root only when nothing is remembered). A missing root is
    skipped with a warning; none existing at all is an error.
    """
    origin = settings.roots_origin
    wanted = list(settings.personal_roots)
    if origin != "command line" and recorded:
        wanted = recorded if origin == "default" else [*recorded, *wanted]
        origin = "the index" if origin == "default" else f"the index and {origin}"
    wanted = list(dict.fromkeys(wanted))
    missing = [root for root in wanted if not root.is_dir()]
    existing = [root for root in wanted if root.is_dir()]
    if not existing:
        raise ConfigError(f"personal root {missing[0]} ({origin}) does not exist or is not a folder",
                          hint="create it, or pass roots on the command line / set RAG_SEARCH_PERSONAL_DIRS")
    for root in missing:
        if root in recorded:
            held = "a rebuild (--full) would lose its chunks" if full else "its chunks are kept"
            remedy = f"`index_personal.py --forget {root}` removes it for good"
        else:
            held, remedy = "the index holds nothing of it", f"it comes from {settings.roots_origin}: remove it there if it is gone"
        log.warning("personal root %s is missing or not a folder (an unplugged disk?): skipped, %s; %s", root, held, remedy)
    return _outermost(existing), missing, origin


def _outermost(roots: list[Path]) -> list[Path]:
    """The roots, less any inside another (indexed once, as part of the outer one), in path order."""
    kept: list[Path] = []
    for root in sorted(roots, key=lambda p: len(p.parts)):
        if any(root.is_relative_to(outer) for outer in kept):
            log.warning("root %s is inside another root: indexed once, as part of that root", root)
        else:
            kept.append(root)
    return sorted(kept)


def left_out(indexed: IndexedFiles, roots: list[Path], settings: Settings) -> list[str]:
    """What of the personal index a run over `roots` would not rebuild: the folders of documents under none of them.
    (The memory file is rebuilt with the roots wherever it is.)"""
    prefix = f"{SOURCE_ID}:"
    paths = [Path(key[len(prefix):]) for key in indexed.documents if key.startswith(prefix)]
    return sorted({str(path.parent) for path in paths
                   if path != settings.memory_file and not any(path.is_relative_to(root) for root in roots)})


REBUILD_HINT = "make them available and rerun, --forget the roots you no longer want, or pass --allow-shrink"


def roots_left_out(recorded: list[Path], roots: list[Path], missing: list[Path]) -> list[str]:
    """The remembered roots a run over `roots` does not index: missing, or not given on its command line."""
    return sorted({str(root) for root in [*recorded, *missing] if not any(root.is_relative_to(given) for given in roots)})


def remember_roots(store: StoreWriter, roots: list[Path]) -> None:
    """Record the roots the index holds, so a plain run refreshes them all."""
    store.set_source_state(SOURCE_ID, {"roots": sorted({str(root) for root in roots})})


def forget_root(store: StoreWriter, root: Path, recorded: list[Path], reported: bool) -> int:
    """Remove a root from the index: its chunks and its place among the remembered roots (`reported`: status.py lists
    it, from an earlier run). Returns chunks removed."""
    keys = list(store.documents(SOURCE_ID, key_prefix=f"{SOURCE_ID}:{root}{os.sep}"))
    if root not in recorded and not keys and not reported:
        known = ", ".join(str(path) for path in recorded) or "none"
        raise ConfigError(f"{root} is not a root of the personal index", hint=f"its roots: {known}")
    remember_roots(store, [path for path in recorded if path != root])
    return store.remove(keys)


def index_personal(store: StoreWriter, pipeline: Pipeline, roots: list[Path], settings: Settings,
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
        totals["skipped"] += report.shown_skips()
        record_skipped(settings.data_dir, root, report.skipped)
        for name in COUNTS:
            totals[name] += report.counts[name]
        totals["ignored"] += listing.details["ignored"]
        totals["secret_files"] += listing.details["secret_files"]
    memory = settings.memory_file
    if store.rebuilt and memory.is_file() and not any(memory.is_relative_to(root) for root in roots):
        counts = index_files(store, pipeline, settings, [memory], roots)
        for name in COUNTS:
            totals[name] += counts[name]
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


def index_files(store: StoreWriter, pipeline: Pipeline, settings: Settings, paths: list[Path], roots: list[Path]) -> dict:
    """Bring these files (new, changed or deleted) in line in the personal collection without walking their roots:
    what memory.py add and a search's freshness check need, in milliseconds plus the embedding of what changed.
    The counts include the files skipped (with why), which these callers report as news."""
    writer = IndexWriter(store, pipeline)
    counts: dict = {**dict.fromkeys(COUNTS, 0), "skipped": []}
    by_root: dict[Path, list[Path]] = {}
    for path in paths:
        by_root.setdefault(next((root for root in roots if path.is_relative_to(root)), path.parent), []).append(path)
    for root, files in by_root.items():
        keys = {f"{SOURCE_ID}:{path}" for path in files}
        known = {key: record for key, record in store.documents(SOURCE_ID, key_prefix=f"{SOURCE_ID}:{root}{os.sep}").items()
                 if key in keys}
        entries = [entry for entry in (_file_entry(root, path) for path in files) if entry is not None]
        report = reconcile(writer, known, folder_listing(WalkResult(root, files=entries), SOURCE_ID, settings.max_file_bytes),
                           str(root), allow_shrink=True, quiet=True)
        if root in roots:
            record_skipped(settings.data_dir, root, report.skipped, looked_at=files)
        for name in COUNTS:
            counts[name] += report.counts[name]
        counts["skipped"] += report.shown_skips()
    return {**counts, "chunks_added": writer.stats.chunks_added, "chunks_removed": writer.stats.chunks_removed}


def _file_entry(root: Path, path: Path) -> FileEntry | None:
    """The file as a walk would list it; None if it is gone (or no longer a regular file)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return FileEntry(root, path.relative_to(root).as_posix(), path, info.st_size, info.st_mtime_ns) if path.is_file() else None
def record_runs(data_dir: Path, roots: list[Path], failed: dict[str, str], error: str | None = None) -> None:
    """Note each root's attempt: indexed now unless it failed (`failed`: root -> why) or the whole run did (`error`).

    Kept beside the generations, not in them: a run that changes nothing publishes nothing, yet was attempted.
    """
    now = dates.now_iso()

    def change(runs: dict) -> None:
        for root in map(str, roots):
            why = failed.get(root) or error
            runs.setdefault(root, {}).update(last_attempt=now, last_error=why, **({} if why else {"last_indexed": now}))

    _update_runs(data_dir, change, "indexed, but could not record the run")


def record_skipped(data_dir: Path, root: Path, skipped: list[dict], looked_at: list[Path] | None = None) -> None:
    """Keep why files under `root` were skipped, the first MAX_SKIPPED with the identity they had, and how many: status.py
    says why, and a search does not retry a file skipped as it is now (freshness.py).

    `looked_at`: the files a run over part of a root indexed (a search's freshness step, memory.py add), whose entries
    this replaces, kept only for a root an index run was given; None: a run over the whole root, which replaces them all.
    """
    entries = [{"file": relative_name(root, skip["file"]), "reason": skip["reason"],
                **({"identity": skip["identity"]} if skip.get("identity") else {})} for skip in skipped]

    def change(runs: dict) -> None:
        if looked_at is None:
            runs.setdefault(str(root), {}).update(skipped=entries[:MAX_SKIPPED], skipped_count=len(entries))
        elif str(root) in runs:
            entry = runs[str(root)]
            names = {relative_name(root, path) for path in looked_at}
            earlier = entry.get("skipped", [])
            kept = [skip for skip in earlier if skip["file"] not in names]
            count = entry.get("skipped_count", 0) - (len(earlier) - len(kept)) + len(entries)
            entry.update(skipped=(kept + entries)[:MAX_SKIPPED], skipped_count=count)

    _update_runs(data_dir, change, "indexed, but could not note the files skipped")


def skipped_identities(runs: dict, root) -> tuple[dict[str, str], bool]:
    """{path in the root: identity} of the files its runs skipped, as they were then (recorded_runs), and whether
    that is every skipped file (at most MAX_SKIPPED are kept)."""
    entry = runs.get(str(root), {})
    kept = entry.get("skipped", [])
    identities = {skip["file"]: skip["identity"] for skip in kept if skip.get("identity")}
    return identities, entry.get("skipped_count", 0) <= len(identities)


def forget_runs(data_dir: Path, roots: list[Path]) -> None:
    """Drop forgotten roots from the runs status.py reports."""

    def change(runs: dict) -> None:
        for root in [root for root in runs if Path(root) in roots]:
            del runs[root]

    _update_runs(data_dir, change, "forgotten, but could not update the runs")


def _update_runs(data_dir: Path, change: Callable[[dict], None], failure: str) -> None:
    """Apply `change` to the recorded runs under their lock, and write them if it changed them; failing is a warning."""
    path = data_dir / COLLECTION / RUNS_FILE
    if not is_ours(data_dir):
        return  # a run refused the folder, or has not marked it yet: nothing is written there
    try:
        with exclusive_lock(path.with_name(f".{RUNS_FILE}.lock")):
            runs = recorded_runs(data_dir)
            before = json.dumps(runs, sort_keys=True)
            change(runs)
            if json.dumps(runs, sort_keys=True) != before:
                write_atomically(path, json.dumps(runs, indent=2, ensure_ascii=False) + "\n", mode=0o600)
    except OSError as exc:
        log.warning("%s in %s: %s", failure, path, exc)


def recorded_runs(data_dir: Path) -> dict[str, dict]:
    """root -> {"last_attempt", "last_indexed", "last_error", "skipped", "skipped_count"} of every root an index run was
    given; {} before any."""
    try:
        runs = json.loads((data_dir / COLLECTION / RUNS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return runs if isinstance(runs, dict) else {}
