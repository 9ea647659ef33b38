"""The docs index: refreshing registered sources, each on its own.

A source that fails (dead URL, auth failure, a tag that does not exist, a
listing that shrank) is reported and skipped; what it indexed before stays
searchable, and its saved state and `last_indexed` move on only when it completes.
A source whose listing is complete and holds nothing ends "empty", with a warning
naming its globs and the file types it saw: a tree of another format than its
globs (a Sphinx tree and `**/*.md`) says so instead of indexing nothing as "ok".
"""

import logging
import time
from collections.abc import Callable
from pathlib import Path

from ..core import dates
from ..core.config import Settings
from ..core.datadir import DataDir
from ..core.errors import ConfigError, IndexWriteError, SourceFailed, is_disk_full
from ..index.indexer import IndexWriter, Pipeline
from ..index.reconcile import Listing, Report, reconcile
from ..store.records import IndexedFiles, settled
from ..store.store_writer import StoreWriter
from . import registry
from .fetch import WebFetcher
from .git import git_listing
from .local import local_listing
from .specs import GitSource, LocalSource, SourceSpec, WebSource
from .web import web_listing

log = logging.getLogger("rag_search")

COLLECTION = "docs"
REBUILD_HINT = "fix or remove those sources and rerun, or pass --allow-shrink to publish the rebuild without them"


def sources_left_out(indexed: IndexedFiles, chosen: set[str]) -> list[str]:
    """The sources with documents in the docs index that a run over `chosen` would not rebuild."""
    return sorted({key.split(":", 1)[0] for key in indexed.documents} - chosen)


def index_sources(store: StoreWriter, pipeline: Pipeline, specs: list[SourceSpec], settings: Settings,
                  full: bool = False, allow_shrink: bool = False, quiet: bool = False) -> list[dict]:
    """Refresh each source in turn; returns one summary per source."""
    fetcher = WebFetcher(timeout=settings.web_timeout_seconds, max_bytes=settings.web_max_page_bytes)
    try:
        return [_index_one(store, pipeline, spec, settings, fetcher, full, allow_shrink, quiet) for spec in specs]
    finally:
        fetcher.close()


def _index_one(store: StoreWriter, pipeline: Pipeline, spec: SourceSpec, settings: Settings, fetcher: WebFetcher,
               full: bool, allow_shrink: bool, quiet: bool) -> dict:
    started = time.monotonic()
    summary: dict = {"id": spec.id, "type": spec.type}
    log.info("indexing %s (%s)", spec.id, spec.type)
    try:
        writer = IndexWriter(store, pipeline)
        listing = _listing(spec, settings, store, fetcher, moved=writer.expect_writes)
        known = store.documents(spec.id)
        before = store.source_state(spec.id)
        in_parts = store.publishes_in_parts  # a new source or a large update: searchable in parts long before it is done
        if in_parts:
            writer.publish_in_parts(spec.id, before, new=not known)
        report = reconcile(writer, known, listing, spec.id, full=full, allow_shrink=allow_shrink, quiet=quiet)
        status, error = _status(listing, report)
        if status in ("ok", "empty"):
            store.set_source_state(spec.id, listing.state or {})
        elif in_parts:  # every document was tried (some failed): no longer indexed "so far"
            store.set_source_state(spec.id, settled(before) or None)
        notice = {"error": error} if error else {}
        if status == "empty":
            notice = {"warning": nothing_matched(spec, listing.details.get("seen"))}
            log.warning("%s", notice["warning"])
        summary.update(status=status, **notice, **listing.details, **report.summary(),
                       embedded=writer.stats.embedded, chunks_added=writer.stats.chunks_added,
                       chunks_removed=writer.stats.chunks_removed, redacted=writer.stats.redacted)
    except (SourceFailed, IndexWriteError) as exc:
        log.error("%s failed: %s", spec.id, exc.message)
        summary.update(status="failed", error=exc.message)
    except ConfigError:
        raise
    except Exception as exc:  # a bug in one source must not stop the others; a full disk stops the run
        if is_disk_full(exc):
            raise
        log.error("%s failed unexpectedly: %s", spec.id, exc, exc_info=True)
        summary.update(status="failed", error=f"unexpected {type(exc).__name__}: {exc}")
    summary["chunks"] = store.chunk_count(spec.id)
    summary["seconds"] = round(time.monotonic() - started, 2)
    return summary


def _listing(spec: SourceSpec, settings: Settings, store: StoreWriter, fetcher: WebFetcher,
             moved: Callable[[], None]) -> Listing:
    if isinstance(spec, LocalSource):
        return local_listing(spec, settings)
    folder = DataDir(settings.data_dir).source_folder(spec.id)  # ours, or the source fails before anything is written
    if isinstance(spec, GitSource):
        return git_listing(spec, folder, settings.max_file_bytes, store.source_state(spec.id), moved=moved)
    if isinstance(spec, WebSource):
        return web_listing(spec, fetcher, settings.data_dir)
    raise TypeError(f"unknown source spec {spec!r}")


def _status(listing: Listing, report: Report) -> tuple[str, str | None]:
    """ok, empty (a complete listing of nothing), partial (some documents failed to load, or the listing is
    incomplete) or failed (every document failed)."""
    if listing.complete and not listing.documents and not listing.skipped:
        return "empty", None
    if report.failed and len(report.failed) == len(listing.documents):
        first = report.failed[0]
        return "failed", f"every document failed, e.g. {first['file']}: {first['reason']}"
    if report.failed:
        return "partial", f"{len(report.failed)} of {len(listing.documents)} documents failed"
    if not listing.complete:
        return "partial", listing.problem
    return "ok", None


def nothing_matched(spec: SourceSpec, seen: dict[str, int] | None) -> str:
    """The one line an empty source warns with: what it looked for, and the file types it saw instead."""
    if isinstance(spec, WebSource):
        return f"{spec.id}: no page to index" + (f" once {', '.join(spec.exclude)} are excluded" if spec.exclude else "")
    where = f" under {spec.path}/" if isinstance(spec, GitSource) and spec.path else ""
    kinds = ", ".join(f"{suffix} {count}" for suffix, count in sorted((seen or {}).items(), key=lambda item: (-item[1], item[0]))[:8])
    return f"{spec.id}: no file{where} matches {spec.selection.described()}; seen: {kinds or 'no file'}"


def record_runs(registry_file: Path, summaries: list[dict]) -> None:
    """Write each source's last attempt and status (and, for those that completed, last_indexed and last_commit) into
    the registry.

    Call it after the store is committed: a source has completed when searches can see it.
    A failure here is only a warning.
    """
    if not summaries:
        return
    now = dates.now_iso()

    def change(reg: registry.Registry) -> None:
        for summary in summaries:
            if summary["status"] in ("ok", "empty"):
                reg.record(summary["id"], last_attempt=now, last_indexed=now, last_error=None, last_status=summary["status"],
                           **({"last_commit": summary["commit"]} if summary.get("commit") else {}))
            else:
                reg.record(summary["id"], last_attempt=now, last_error=summary.get("error") or summary["status"],
                           last_status=summary["status"])

    try:
        registry.update(registry_file, change)
    except ConfigError as exc:
        log.warning("indexed, but could not record the outcome in %s: %s", registry_file, exc)


def prune_sources(store: StoreWriter, data_dir: Path, keep: set[str]) -> list[str]:
    """Remove chunks, state and working files (clones, pages) of sources no longer in the registry."""
    removed = sorted(store.source_ids() - keep)
    for source_id in removed:
        store.remove_source(source_id)
    folders = DataDir(data_dir)
    for source_id in folders.source_folders():
        if source_id not in keep and folders.remove_source_folder(source_id) and source_id not in removed:
            removed.append(source_id)
    return removed
