"""Fresh at search time: personal files changed since the published index are brought in before answering.

A stat walk of the personal roots is planned against the catalog by the same
rules as an index run (reconcile.plan: identities with the files each note
includes; an incomplete walk, such as a folder unreadable for a moment, removes
nothing). A changed file is not one that a run skipped as it is now (empty, binary:
sources/personal.py records each skipped file's identity), so such a file is
tried by one search, not by every search. Files new to the index count whatever
their modification time (cp -p, rsync -a and archives keep old ones); only under
a root with more skipped files than roots.json keeps must a file, or a file it
includes, also be modified after the index was published. A few small changes are indexed at once,
with the write lock taken without waiting; anything more, a busy lock or a write
that fails (a read-only data dir, a full disk, an index to rebuild first) is
reported as staleness, and the answer says how to refresh.
bench/bench_freshness.py measures the walk.
"""

import dataclasses
import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..core import dates
from ..core.config import Settings
from ..core.errors import IndexBusy, RagSearchError
from ..index.reconcile import Listing, depends_of, plan
from ..sources.files import FileEntry, folder_listing, walk_root
from ..sources.personal import COLLECTION, SOURCE_ID, index_files, recorded_runs, skipped_identities
from ..store.store import Store

log = logging.getLogger("rag_search")

MAX_FILES = 20  # changes indexed before answering; more are reported as stale
MAX_BYTES = 512 * 1024  # and their total size: together about two seconds of parsing and embedding


@dataclass
class Changes:
    """Personal files that differ from the published index."""

    changed: list[Path]  # new or modified
    gone: list[Path]  # indexed, no longer there
    since: str  # when the published index was built
    roots: list[Path]
    size: int = 0  # bytes of the changed files
    # What the answer depends on: every folder walked and every name in it, each root, the personal collection's
    # folder (a run that publishes or records a skip renames a file in it). Unchanged stamps (stamps()): the same answer.
    watched: list[str] = dataclasses.field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.changed) + len(self.gone)

    @property
    def small(self) -> bool:
        return self.count <= MAX_FILES and self.size <= MAX_BYTES


def find_changes(settings: Settings) -> Changes | None:
    """What changed under the personal roots since the published index; None if there is no personal index (or it
    lives on a Chroma server, which other machines write too)."""
    if not Store.fresh_at_search_time(settings):
        return None
    indexed = Store.indexed_files(settings, COLLECTION, SOURCE_ID)
    if indexed is None:
        return None
    roots = [Path(root) for root in (indexed.state or {}).get("roots", [])] or list(settings.personal_roots)
    changes = Changes([], [], indexed.published, roots, watched=[str(settings.data_dir / COLLECTION), *map(str, roots)])
    published_ns = int((dates.normalize(indexed.published) or (indexed.published, 0.0))[1] * 1e9)
    runs = recorded_runs(settings.data_dir)
    for root in roots:
        if not root.is_dir():
            continue  # a missing root keeps its chunks (sources/personal.py)
        walk = walk_root(root, list(settings.ignore_patterns))
        changes.watched += walk.looked_at
        listing = folder_listing(walk, SOURCE_ID, settings.max_file_bytes, quiet=True)
        under = f"{SOURCE_ID}:{root}{os.sep}"
        known = {key: record for key, record in indexed.documents.items() if key.startswith(under)}
        work = plan(known, listing)
        entries = {f"{SOURCE_ID}:{entry.path}": entry for entry in walk.files}
        skipped, every_skip_kept = skipped_identities(runs, root)
        for item in work.load:
            entry = entries[item.key]
            if skipped.get(entry.rel) == item.identity:
                continue  # skipped as it is now: tried again when it changes
            if every_skip_kept or _modified_since(entry, depends_of(known.get(item.key)), listing, published_ns):
                changes.changed.append(entry.path)
                changes.size += entry.size
        changes.gone += [Path(key.removeprefix(f"{SOURCE_ID}:")) for key in work.gone]
    return changes


def stamps(paths: list[str]) -> list[tuple[int, int, int] | None]:
    """Each path's inode, size and modification time (None if it is gone): equal stamps, no change to look for.
    A few thousand stats, where the walk they stand for parses names and ignore rules too (about ten times longer)."""
    found: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            found.append(None)
            continue
        found.append((info.st_ino, info.st_size, info.st_mtime_ns))
    return found


def _modified_since(entry: FileEntry, depends: list[str], listing: Listing, published_ns: int) -> bool:
    """Whether the file or a file it includes was modified after `published_ns` (an included file that is gone counts)."""
    stamps = [entry.mtime_ns]
    for identity in map(listing.dependency, depends):
        stamps.append(int(identity.rsplit(":", 1)[1]) if identity else published_ns + 1)
    return max(stamps) > published_ns


def bring_in(settings: Settings, changes: Changes) -> bool:
    """Index the changed files now if the write lock is free this instant; False if they could not be: another run holds
    the lock, the index needs a rebuild first, the data dir cannot be written (read-only, full). The search then answers
    from the published index and reports it stale; it never fails for this."""
    from ..index.runs import index_run

    try:
        with index_run(settings._replace(wait_seconds=0), COLLECTION) as run:
            report = index_files(run.store, run.pipeline, settings, [*changes.changed, *changes.gone], changes.roots)
    except IndexBusy:
        return False
    except (RagSearchError, OSError, sqlite3.Error) as exc:
        log.warning("could not bring the changed files in: %s", exc)
        return False
    for skip in report["skipped"]:  # news here: a file skipped as it is is not tried again until it changes
        log.warning("skipped %s: %s (not searched until it changes)", skip["file"], skip["reason"])
    return True


def stale_report(changes: Changes) -> dict:
    return {"files": changes.count, "since": changes.since}


def stale_note(changes: Changes) -> str:
    """The line on stderr (or in the server's log) when changes were not brought in."""
    return (f"note: {changes.count} personal file(s) changed since the index was built ({changes.since}) and are not "
            "searched yet (hint: refresh with scripts/index_personal.py)")
