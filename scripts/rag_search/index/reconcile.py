"""One reconcile step for every source: what a source lists against what is indexed.

A source lists its documents (key, a cheap identity, a loader) and says whether
the listing is complete; it never writes the index. `reconcile` puts new and
changed documents, keeps unchanged ones, notices moves, removes what is no
longer listed, and counts it all. Search-time freshness plans with the same
rules (`plan`).

A document left with no text (a memory file whose entries were all removed, a
note emptied) is put as an empty document: its chunks go, and unchanged it is
not read again. Only a document that cannot be read or parsed (binary, bad
JSON, over a cap) is skipped and keeps what was indexed from it.

A document's identity covers every input of its indexed text and metadata: its
own (size and mtime, a git blob id), the files it includes (each by its own
identity now), and the source's context (a git source's version, commit and
URL). So an edit to an included file, or a git source moving to a new commit,
reaches the document without --full. When only the context moved, the document
is not read: its chunks keep their text, ids and vectors and take the context's
new metadata (`Listing.provenance`: a git commit, version and URL).

Two rules protect what was indexed:

- nothing is removed on the word of an incomplete listing (a sitemap that did
  not load, a folder that could not be read);
- a listing that is empty, or less than half of what the last run indexed, is
  taken for an outage (an unmounted disk, a moved docs folder), and so is a run
  whose documents answer "gone" (HTTP 404) until less than half is left: the
  source fails and nothing is removed, unless the run says the shrink is
  intended (--allow-shrink or --full).

Documents the source's own settings now leave out (a narrower glob, a new
exclude pattern, another path: `Listing.deselected`) are removed as the change
the user made; the outage rule weighs only what the settings still select.
"""

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..core.errors import SourceFailed
from ..core.progress import ROUTINE, Progress
from ..store.records import DocumentRecord
from ..text.sections import ParseError
from .indexer import IndexWriter, SourceDocument

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


def _no_dependencies(path: str) -> str | None:
    return None


def _none_deselected(key: str) -> bool:
    return False


@dataclass
class Listing:
    documents: list[Listed]
    complete: bool = True  # False: some documents may be missing from the list, so none is removed
    problem: str | None = None  # why the listing is incomplete
    skipped: list[dict] = field(default_factory=list)  # found but not listable ({"file", "reason", "key"?}): kept
    state: dict | None = None  # the source's state once this listing is indexed (a git commit)
    details: dict = field(default_factory=dict)  # for the run summary
    context: dict = field(default_factory=dict)  # what every document's metadata depends on (a git version, commit, URL)
    dependency: Callable[[str], str | None] = _no_dependencies  # the identity now of a file a document includes
    deselected: Callable[[str], bool] = _none_deselected  # an indexed key the source's own settings now leave out
    provenance: Callable[[str], dict] | None = None  # the metadata a document's chunks take from the context, by key

    def identity(self, own: str | None, depends: list[str]) -> str | None:
        """A document's identity: its own, the context's and that of each file it includes (None: unknown until loaded)."""
        if own is None:
            return None
        if not self.context and not depends:
            return own
        included = {path: self.dependency(path) for path in sorted(depends)}
        return f"{own}|{_digest(self.context)}|{_digest(included)}"


def _digest(value: dict) -> str:
    return hashlib.blake2b(json.dumps(value, sort_keys=True).encode("utf-8"), digest_size=8).hexdigest() if value else ""


def _context_part(identity: str | None) -> str:
    """The context's digest in an identity made by Listing.identity ("" for none)."""
    parts = (identity or "").split("|")
    return parts[1] if len(parts) == 3 else ""


def _only_context_moved(old: str | None, new: str | None) -> bool:
    """Whether two identities made by Listing.identity differ in the context's digest alone."""
    before, after = (old or "").split("|"), (new or "").split("|")
    return len(before) == len(after) == 3 and before[1] != after[1] and (before[0], before[2]) == (after[0], after[2])


def depends_of(record: DocumentRecord | None) -> list[str]:
    """The files an indexed document included when it was indexed."""
    return list((record.state or {}).get("depends", [])) if record is not None else []


@dataclass
class Plan:
    """What an index run (or a search's freshness step) has to do for a listing."""

    load: list[Listed]  # new, or changed by identity (every document with --full)
    gone: list[str]  # keys indexed and no longer listed (none when the listing is incomplete)
    restamp: list[tuple[Listed, str | None]] = field(default_factory=list)  # unchanged but for the context, with its identity now


def plan(known: dict[str, DocumentRecord], listing: Listing, full: bool = False) -> Plan:
    """Which listed documents to load, which only take the context's new metadata (when the listing says what that
    is), and which indexed ones are gone, by the rules above."""
    changed = [item for item in listing.documents if full or not _unchanged(item, known.get(item.key), listing)]
    restamp = []
    if listing.provenance is not None and not full:
        now = {item.key: listing.identity(item.identity, depends_of(known[item.key])) for item in changed if item.key in known}
        restamp = [(item, now[item.key]) for item in changed
                   if item.key in now and _only_context_moved(known[item.key].identity, now[item.key])]
    restamped = {item.key for item, _ in restamp}
    load = [item for item in changed if item.key not in restamped]
    seen = {skip["key"] for skip in listing.skipped if "key" in skip} | {item.key for item in listing.documents}
    return Plan(load, sorted(set(known) - seen) if listing.complete else [], restamp)


def _unchanged(item: Listed, previous: DocumentRecord | None, listing: Listing) -> bool:
    identity = listing.identity(item.identity, depends_of(previous))
    return previous is not None and identity is not None and previous.identity == identity


# What a run did with each listed document. empty: put with no text to index (new, or its text gone: its chunks
# removed); not counted as added or updated. Skipped documents are listed apart.
COUNTS = ("added", "updated", "unchanged", "moved", "deleted", "empty")


@dataclass
class Report:
    listed: int = 0
    counts: Counter = field(default_factory=Counter)  # of COUNTS
    skipped: list[dict] = field(default_factory=list)  # {"file", "reason"}, and "identity" if skipped when loaded
    failed: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        counts = {name: self.counts[name] for name in COUNTS}
        return {**counts, "skipped": self.shown_skips(), **({"failed_documents": self.failed} if self.failed else {})}

    def shown_skips(self) -> list[dict]:
        """The skipped documents as run summaries show them: file and reason."""
        return [{"file": skip["file"], "reason": skip["reason"]} for skip in self.skipped]


def reconcile(writer: IndexWriter, known: dict[str, DocumentRecord], listing: Listing, label: str,
              full: bool = False, allow_shrink: bool = False, quiet: bool = False) -> Report:
    """Bring the documents `known` for a source in line with its `listing`; the writer is flushed at the end."""
    allowed = full or allow_shrink
    listed = len(listing.documents) + len(listing.skipped)
    deselected = {key for key in known if listing.deselected(key)}
    selected = len(known) - len(deselected)
    if listing.complete:
        check_shrink(label, selected, listed, allowed)
    work = plan(known, listing, full)
    writer.expect(len(work.load))
    if deselected and listing.complete:
        log.info("%s: %d document(s) the source's settings no longer select are removed", label, len(deselected))
    report = Report(listed=listed, skipped=[{"file": skip["file"], "reason": skip["reason"]} for skip in listing.skipped])
    report.counts["unchanged"] = len(listing.documents) - len(work.load)
    for item, identity in work.restamp:  # plan() takes them only from a listing with provenance
        writer.keep(item.key, identity, known[item.key].state, listing.provenance(item.key) if listing.provenance else None)
    added: dict[str, str] = {}  # key -> content hash of documents new to the index, to notice moves
    gone: dict[str, str] = {}  # key -> why, of documents whose loader found them gone
    progress = Progress(len(work.load), label, quiet)
    for item in work.load:
        progress.update()
        _apply(writer, item, known.get(item.key), listing, full, report, added, gone)
    progress.close()
    moved = _moves(added, [known[key].content_hash for key in work.gone])
    report.counts.update(moved=moved, deleted=len(work.gone) - moved + len(gone))
    report.counts["added"] -= moved
    if gone and not allowed:
        writer.flush()
        _check_gone(label, selected, selected - len(set(work.gone) - deselected) - len(gone), gone)
    for key in [*work.gone, *gone]:
        writer.remove(key)
    writer.flush()
    return report


def check_shrink(label: str, known: int, listed: int, allowed: bool) -> None:
    """Fail the source when a complete listing is empty or less than half of what is indexed."""
    if allowed or not known or (listed and listed * 2 >= known):
        return
    raise SourceFailed(
        f"{label}: found {listed} document(s) where the last run indexed {known}; nothing was changed. If they were "
        "removed on purpose, rerun with --allow-shrink"
    )


def _check_gone(label: str, known: int, left: int, gone: dict[str, str]) -> None:
    """Fail the source when documents answering "gone" would leave less than half of what is indexed (a site that
    answers 404 to everything is having an outage, not deleting its docs)."""
    if left and left * 2 >= known:
        return
    key, reason = next(iter(gone.items()))
    raise SourceFailed(f"{label}: {len(gone)} of the {known} indexed documents answered as gone (e.g. {key}: {reason}); none "
                       "was removed. If they were removed on purpose, rerun with --allow-shrink")


def _apply(writer: IndexWriter, item: Listed, previous: DocumentRecord | None, listing: Listing, full: bool, report: Report,
           added: dict, gone: dict) -> None:
    kept = "; the previously indexed version is kept" if previous else ""
    try:
        loaded = item.load(None if full else previous)
    except Skip as exc:
        log.warning("%s %s: %s%s", "failed" if exc.failed else "skipped", item.file, exc.reason, kept,
                    extra=None if exc.failed else ROUTINE)  # a failed fetch is news; a file that cannot be indexed is not
        if exc.failed:
            report.failed.append({"file": item.file, "reason": exc.reason + kept})
        else:
            report.skipped.append({"file": item.file, "reason": exc.reason + kept, "identity": item.identity})
        return
    if isinstance(loaded, Gone):
        log.warning("%s is gone (%s)", item.file, loaded.reason)
        if previous:
            gone[item.key] = loaded.reason
        return
    if isinstance(loaded, SourceDocument):
        loaded = replace(loaded, identity=listing.identity(loaded.identity, loaded.depends),
                         state={**(loaded.state or {}), "depends": loaded.depends} if loaded.depends else loaded.state)
    same = isinstance(loaded, Unchanged) or (previous is not None and not full and previous.content_hash == loaded.content_hash)
    if isinstance(loaded, Unchanged) or (same and previous is not None
                                         and _context_part(previous.identity) == _context_part(loaded.identity)):
        if previous and (previous.identity, previous.state) != (loaded.identity, loaded.state):
            writer.keep(item.key, loaded.identity, loaded.state)
        report.counts["unchanged"] += 1
        return
    try:
        queued = writer.put(loaded)
    except (ParseError, RecursionError) as exc:
        reason = (str(exc) if isinstance(exc, ParseError) else "nested too deeply") + kept
        log.warning("skipped %s: %s", item.file, reason, extra=ROUTINE)
        report.skipped.append({"file": item.file, "reason": reason, "identity": item.identity})
        return
    for warning in queued.warnings:
        log.warning("%s: %s", item.file, warning)
    if same:
        report.counts["unchanged"] += 1
    elif not queued.chunks:
        log.info("%s: no text to index: an empty document%s", item.file,
                 "; its earlier chunks are removed" if previous and previous.chunk_count else "")
        report.counts["empty"] += 1
    else:
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
