"""One reconcile step for every source: what a source lists against what is indexed.

A source lists its documents (key, a cheap identity, a loader) and says whether
the listing is complete; it never writes the index. `reconcile` puts new and
changed documents, keeps unchanged ones, notices moves, removes what is no
longer listed, and counts it all. Two rules protect what was indexed:

- nothing is removed on the word of an incomplete listing (a sitemap that did
  not load, a folder that could not be read);
- a listing that is empty, or less than half of what the last run indexed, is
  taken for an outage (an unmounted disk, a moved docs folder): the source
  fails and keeps everything, unless the run says the shrink is intended
  (--allow-shrink or --full).
"""

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import SourceFailed
from .indexer import IndexWriter, SourceDocument
from .parsing import ParseError
from .progress import Progress
from .records import DocumentRecord

log = logging.getLogger("rag_search")


@dataclass
class Unchanged:
    """The loader found the document as indexed (an HTTP 304); it may bring a new identity or state."""

    identity: str | None = None
    state: dict | None = None


@dataclass
class Gone:
    """The document no longer exists (an HTTP 404 or 410): remove it."""

    reason: str


class Skip(Exception):
    """This document cannot be indexed this time; what was indexed from it stays.

    `failed` marks a failure to fetch (the source is then incomplete), as
    opposed to a document that is not indexable (binary, too large, malformed).
    """

    def __init__(self, reason: str, failed: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.failed = failed


Loaded = SourceDocument | Unchanged | Gone


@dataclass
class Listed:
    key: str
    file: str  # for reports
    identity: str | None  # equal to the indexed one: unchanged, nothing is read; None: unknown until loaded
    load: Callable[[DocumentRecord | None], Loaded]  # given what is indexed (None with --full); may raise Skip


@dataclass
class Listing:
    documents: list[Listed]
    complete: bool = True  # False: some documents may be missing from the list, so none is removed
    problem: str | None = None  # why the listing is incomplete
    skipped: list[dict] = field(default_factory=list)  # found but not listable ({"file", "reason", "key"?}): kept
    state: dict | None = None  # the source's state once this listing is indexed (a git commit)
    details: dict = field(default_factory=dict)  # for the run summary


@dataclass
class Report:
    listed: int = 0
    counts: Counter = field(default_factory=Counter)  # added, updated, unchanged, moved, deleted
    skipped: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        counts = {name: self.counts[name] for name in ("added", "updated", "unchanged", "moved", "deleted")}
        return {**counts, "skipped": self.skipped, **({"failed_documents": self.failed} if self.failed else {})}


def reconcile(writer: IndexWriter, known: dict[str, DocumentRecord], listing: Listing, label: str,
              full: bool = False, allow_shrink: bool = False, quiet: bool = False) -> Report:
    """Bring the documents `known` for a source in line with its `listing`; the writer is flushed at the end."""
    check_shrink(label, len(known), listing, allowed=full or allow_shrink)
    report = Report(listed=len(listing.documents) + len(listing.skipped),
                    skipped=[{"file": skip["file"], "reason": skip["reason"]} for skip in listing.skipped])
    seen = {skip["key"] for skip in listing.skipped if "key" in skip}
    added: dict[str, str] = {}  # key -> content hash of documents new to the index, to notice moves
    progress = Progress(len(listing.documents), label, quiet)
    for item in listing.documents:
        progress.update()
        seen.add(item.key)
        _apply(writer, item, known.get(item.key), full, report, added)
    progress.close()
    gone = sorted(set(known) - seen) if listing.complete else []
    moved = _moves(added, [known[key].content_hash for key in gone])
    report.counts.update(moved=moved, deleted=len(gone) - moved)
    report.counts["added"] -= moved
    for key in gone:
        writer.remove(key)
    writer.flush()
    return report


def check_shrink(label: str, known: int, listing: Listing, allowed: bool) -> None:
    """Fail the source when a complete listing is empty or less than half of what is indexed."""
    listed = len(listing.documents) + len(listing.skipped)
    if allowed or not listing.complete or not known or (listed and listed * 2 >= known):
        return
    raise SourceFailed(
        f"{label}: found {listed} document(s) where the last run indexed {known}; nothing was changed. If they were "
        "removed on purpose, rerun with --allow-shrink"
    )


def _apply(writer: IndexWriter, item: Listed, previous: DocumentRecord | None, full: bool, report: Report, added: dict) -> None:
    if previous and not full and item.identity is not None and previous.identity == item.identity:
        report.counts["unchanged"] += 1
        return
    kept = "; the previously indexed version is kept" if previous else ""
    try:
        loaded = item.load(None if full else previous)
    except Skip as exc:
        log.warning("%s %s: %s%s", "failed" if exc.failed else "skipped", item.file, exc.reason, kept)
        (report.failed if exc.failed else report.skipped).append({"file": item.file, "reason": exc.reason + kept})
        return
    if isinstance(loaded, Gone):
        log.warning("%s is gone (%s)", item.file, loaded.reason)
        if previous:
            writer.remove(item.key)
            report.counts["deleted"] += 1
        return
    if isinstance(loaded, Unchanged) or (previous and not full and previous.content_hash == loaded.content_hash):
        identity, state = (loaded.identity, loaded.state)
        if previous and (previous.identity, previous.state) != (identity, state):
            writer.keep(item.key, identity, state)
        report.counts["unchanged"] += 1
        return
    try:
        for warning in writer.put(loaded):
            log.warning("%s: %s", item.file, warning)
    except (ParseError, RecursionError) as exc:
        reason = (str(exc) if isinstance(exc, ParseError) else "nested too deeply") + kept
        log.warning("skipped %s: %s", item.file, reason)
        report.skipped.append({"file": item.file, "reason": reason})
        return
    report.counts["updated" if previous else "added"] += 1
    if not previous:
        added[item.key] = loaded.content_hash


def _moves(added: dict[str, str], gone_hashes: list[str]) -> int:
    """How many new documents have the content of a removed one (a rename or move)."""
    remaining = Counter(gone_hashes)
    moved = 0
    for content in added.values():
        if remaining[content] > 0:
            remaining[content] -= 1
            moved += 1
    return moved
