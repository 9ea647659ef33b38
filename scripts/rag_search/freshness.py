"""Fresh at search time: personal files changed since the published index are brought in before answering.

A stat walk of the personal roots is compared with the size and mtime the
catalog recorded for each file (Store.indexed_files, no vectors opened); a file
counts as changed only if it was also modified after the index was published,
so a file the index run skipped (empty, binary) is not retried by every search. A few
small changes are indexed at once, with the write lock taken without waiting;
anything more (or a busy lock) is reported as staleness, and the answer says how
to refresh. bench/bench_freshness.py measures the walk.
"""

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from . import dates
from .config import Settings
from .errors import IndexBusy
from .sources.files import walk_root
from .sources.personal import COLLECTION, SOURCE_ID, index_files
from .store import Store

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

    @property
    def count(self) -> int:
        return len(self.changed) + len(self.gone)

    @property
    def small(self) -> bool:
        return self.count <= MAX_FILES and self.size <= MAX_BYTES


def find_changes(settings: Settings) -> Changes | None:
    """What changed under the personal roots since the published index; None if there is no personal index."""
    indexed = Store.indexed_files(settings, COLLECTION, SOURCE_ID)
    if indexed is None:
        return None
    roots = [Path(root) for root in (indexed.state or {}).get("roots", [])] or list(settings.personal_roots)
    changes = Changes([], [], indexed.published, roots)
    published_ns = int((dates.normalize(indexed.published) or (indexed.published, 0.0))[1] * 1e9)
    prefix = f"{SOURCE_ID}:"
    for root in roots:
        if not root.is_dir():
            continue  # a missing root keeps its chunks (sources/personal.py)
        walk = walk_root(root, list(settings.ignore_patterns))
        seen = set()
        for entry in walk.files:
            key = f"{prefix}{entry.path}"
            seen.add(key)
            if entry.mtime_ns > published_ns and indexed.identities.get(key) != f"{entry.size}:{entry.mtime_ns}":
                changes.changed.append(entry.path)
                changes.size += entry.size
        under = f"{prefix}{root}{os.sep}"
        unreadable = {f"{prefix}{root / skip['file']}" for skip in walk.skipped}
        changes.gone += [Path(key[len(prefix):]) for key in indexed.identities
                         if key.startswith(under) and key not in seen and key not in unreadable]
    return changes


def bring_in(settings: Settings, changes: Changes) -> bool:
    """Index the changed files now if the write lock is free this instant; False if another run holds it."""
    from .runs import index_run

    try:
        with index_run(dataclasses.replace(settings, wait_seconds=0), COLLECTION) as run:
            index_files(run.store, run.pipeline, settings, [*changes.changed, *changes.gone], changes.roots)
    except IndexBusy:
        return False
    return True


def stale_report(changes: Changes) -> dict:
    return {"files": changes.count, "since": changes.since}


def stale_note(changes: Changes) -> str:
    """The line on stderr (or in the server's log) when changes were not brought in."""
    return (f"note: {changes.count} personal file(s) changed since the index was built ({changes.since}) and are not "
            "searched yet (hint: refresh with scripts/index_personal.py)")
