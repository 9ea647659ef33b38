"""The docs index: refreshing registered sources, each on its own.

A source that fails (dead URL, auth failure, a tag that does not exist) is
reported and skipped; what it indexed before stays searchable, and its saved
state and `last_indexed` move on only when it completes.
"""

import logging
import shutil
import time
from pathlib import Path

from .. import dates, registry
from ..config import Config
from ..errors import ConfigError, SourceFailed
from ..indexer import IndexWriter, Pipeline, remove_source
from ..store import Store
from .git import sync_git
from .local import sync_local
from .web import sync_web

log = logging.getLogger("rag_search")

COLLECTION = "docs"


def cache_dir(data_dir: Path, source_id: str) -> Path:
    """Per-source working files (the git clone); ids are slugs, so this stays inside the data dir."""
    return data_dir / "sources" / source_id


def index_sources(
    store: Store,
    pipeline: Pipeline,
    sources: list[dict],
    data_dir: Path,
    config: Config,
    full: bool = False,
    quiet: bool = False,
) -> list[dict]:
    """Refresh each source in turn; returns one summary per source."""
    return [_index_one(store, pipeline, source, data_dir, config, full, quiet) for source in sources]


def _index_one(store, pipeline, source, data_dir, config, full, quiet) -> dict:
    source_id = source["id"]
    started = time.monotonic()
    summary: dict = {"id": source_id, "type": source["type"]}
    log.info("indexing %s (%s)", source_id, source["type"])
    try:
        with IndexWriter(store, COLLECTION, pipeline) as writer:
            if source["type"] == "git":
                details = sync_git(writer, source, cache_dir(data_dir, source_id), config.max_file_bytes, full)
            elif source["type"] == "web":
                details = sync_web(writer, source, config, full)
            else:
                details = sync_local(writer, source, config, full, quiet)
        state = details.pop("state", {})
        status = details.pop("status", "ok")
        summary.update(status=status, **details)
        if status == "ok":
            store.catalog.set_source_state(COLLECTION, source_id, state)
        summary.update(
            embedded=writer.stats.embedded,
            chunks_added=writer.stats.chunks_added,
            chunks_removed=writer.stats.chunks_removed,
            redacted=writer.stats.redacted,
        )
    except SourceFailed as exc:
        log.error("%s failed: %s", source_id, exc.message)
        summary.update(status="failed", error=exc.message)
    except Exception as exc:  # a bug in one source must not stop the others
        log.error("%s failed unexpectedly: %s", source_id, exc, exc_info=True)
        summary.update(status="failed", error=f"unexpected {type(exc).__name__}: {exc}")
    summary["chunks"] = store.catalog.chunk_count(COLLECTION, source_id)
    summary["seconds"] = round(time.monotonic() - started, 2)
    return summary


def record_completions(registry_file: Path, summaries: list[dict]) -> None:
    """Write last_indexed (and last_commit) of the sources that completed into the registry.

    Call it after the store is committed: a source has completed when searches can see it.
    A failure here is only a warning.
    """
    completed = {summary["id"]: summary.get("commit") for summary in summaries if summary["status"] == "ok"}
    if not completed:
        return

    def change(reg: registry.Registry) -> None:
        for source_id, commit in completed.items():
            entry = reg.get(source_id)
            if entry is not None:
                entry["last_indexed"] = dates.now_iso()
                if commit:
                    entry["last_commit"] = commit

    try:
        registry.update(registry_file, change)
    except ConfigError as exc:
        log.warning("indexed %s, but could not record last_indexed: %s", ", ".join(completed), exc)


def prune_sources(store: Store, data_dir: Path, keep: set[str]) -> list[str]:
    """Remove chunks, state and cached clones of sources no longer in the registry."""
    removed = sorted(store.catalog.source_ids(COLLECTION) - keep)
    for source_id in removed:
        remove_source(store, COLLECTION, source_id)
    sources_dir = data_dir / "sources"
    if sources_dir.is_dir():
        for folder in sources_dir.iterdir():
            if folder.name not in keep:
                shutil.rmtree(folder, ignore_errors=True)
                if folder.name not in removed:
                    removed.append(folder.name)
    return removed
