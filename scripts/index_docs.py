#!/usr/bin/env python3
"""Refresh the `docs` collection from the sources registered in references/sources.json."""

import argparse
import logging
import sys
import time

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli, logs  # noqa: E402
from rag_search.core.errors import EXIT_EMPTY, EXIT_PARTIAL, ConfigError  # noqa: E402

log = logging.getLogger("rag_search")

EPILOG = """registry, first found wins: --sources > RAG_SEARCH_SOURCES > references/sources.json
(in the skill folder). Register sources with add_doc_source.py.

Each source is refreshed on its own: git sources fetch their version and index the
files whose git blob changed since the last run, web pages are fetched conditionally (ETag /
Last-Modified), local folders are compared by size, mtime and content. A source that
fails is reported and keeps what it indexed before; the others still index. A source
that lists nothing, or less than half of what it had (a sitemap or a docs folder
gone), is taken for an outage: it fails and keeps its chunks unless --allow-shrink
(or --full) says so; an incomplete listing (an unreadable sitemap) removes nothing.
With --all, sources no longer in the registry are removed from the index.
A page left with no text is indexed as empty (counted as "empty"): its chunks go;
a web page served empty fails instead, and keeps them. Files a source's own
--glob, --exclude or --path no longer select are removed as the change it is,
not taken for an outage. A source that matches no file at all ends with status
"empty" and one warning naming its globs and the file types it saw (exit 10);
a rebuild (--all --full) is not published without it unless --allow-shrink.

stdout: one JSON document {"sources": [one summary per source], "removed_sources",
"failed", "empty", "seconds"}. Progress and warnings go to stderr."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("index_docs.py", __doc__, EPILOG, cli.DOCS_INDEX_EXIT_CODES)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every registered source")
    which.add_argument("--source", action="append", metavar="ID", help="one source id (repeatable)")
    parser.add_argument("--full", action="store_true",
                        help="index every document again, ignoring saved state; with --all, rebuild the docs index from scratch")
    parser.add_argument("--sources", metavar="PATH", help="the registry file (default: see below)")
    cli.add_index_run_arguments(parser, allow_shrink=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup_logging(args.quiet)
    return cli.run(lambda: index(args))


def index(args: argparse.Namespace) -> int:
    from rag_search.core.progress import ROUTINE
    from rag_search.index.runs import index_run
    from rag_search.sources import registry
    from rag_search.sources.docs import COLLECTION, REBUILD_HINT, index_sources, prune_sources, record_runs, sources_left_out

    started = time.monotonic()
    settings = cli.settings(args)
    for warning in settings.warnings:
        log.warning(warning)
    reg = registry.load(settings.registry)
    if args.all:
        selected = reg.sources
        if not selected:
            log.warning("no doc sources registered in %s (add one with add_doc_source.py)", settings.registry, extra=ROUTINE)
    else:
        unknown = [source_id for source_id in args.source if reg.get(source_id) is None]
        if unknown:
            raise ConfigError(
                f"unknown source id(s) {', '.join(unknown)} in {settings.registry}", hint="list them with add_doc_source.py --list"
            )
        selected = [spec for source_id in dict.fromkeys(args.source) if (spec := reg.get(source_id)) is not None]

    chosen = {spec.id for spec in selected}
    with index_run(settings, COLLECTION, fresh=args.full and args.all,
                   left_out=lambda indexed: [] if args.all else sources_left_out(indexed, chosen)) as run:
        summaries = index_sources(run.store, run.pipeline, selected, settings, full=args.full, allow_shrink=args.allow_shrink,
                                  quiet=args.quiet)
        failed = [summary["id"] for summary in summaries if summary["status"] not in ("ok", "empty")]
        empty = [summary["id"] for summary in summaries if summary["status"] == "empty"]
        run.check_whole(failed + empty, args.allow_shrink, REBUILD_HINT)
        removed = prune_sources(run.store, settings.data_dir, {spec.id for spec in reg.sources}) if args.all else []
    record_runs(settings.registry, summaries)
    cli.emit_json({
        "registry": str(settings.registry),
        "sources": summaries,
        "removed_sources": removed,
        "failed": failed,
        "empty": empty,
        "published": run.published,
        "seconds": round(time.monotonic() - started, 2),
    })
    return EXIT_PARTIAL if failed else EXIT_EMPTY if empty else 0


if __name__ == "__main__":
    sys.exit(main())
