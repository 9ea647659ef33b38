#!/usr/bin/env python3
"""Refresh the `docs` collection from the sources registered in references/sources.json."""

import argparse
import logging
import sys
import time

from rag_search.cli import use_project_venv

use_project_venv()

from rag_search import cli  # noqa: E402
from rag_search.config import chroma_server, data_dir, load_config  # noqa: E402
from rag_search.errors import EXIT_PARTIAL, ConfigError  # noqa: E402

log = logging.getLogger("rag_search")

EPILOG = """registry, first found wins: --sources > RAG_SEARCH_SOURCES > references/sources.json
(in the skill folder). Register sources with add_doc_source.py.

Each source is refreshed on its own: git sources fetch their version and index the
diff since the last indexed commit, web pages are fetched conditionally (ETag /
Last-Modified), local folders are compared by size, mtime and content. A source that
fails is reported and keeps what it indexed before; the others still index.
With --all, sources no longer in the registry are removed from the index.

stdout: one JSON document {"sources": [one summary per source], "removed_sources",
"failed", "seconds"}. Progress and warnings go to stderr."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("index_docs.py", __doc__, EPILOG)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every registered source")
    which.add_argument("--source", action="append", metavar="ID", help="one source id (repeatable)")
    parser.add_argument("--full", action="store_true", help="ignore saved state (commits, ETags, mtimes) and index every document again")
    parser.add_argument("--sources", metavar="PATH", help="the registry file (default: see below)")
    cli.add_index_run_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cli.setup_logging(args.quiet)
    return cli.run(lambda: index(args))


def index(args: argparse.Namespace) -> int:
    from rag_search import registry
    from rag_search.embedding import find_model
    from rag_search.indexer import IndexWriter, Pipeline
    from rag_search.sources.docs import COLLECTION, index_sources, prune_sources, record_completions
    from rag_search.store import Store

    started = time.monotonic()
    config = load_config()
    for warning in config.warnings:
        log.warning(warning)
    registry_file = registry.registry_path(args.sources)
    reg = registry.load(registry_file)
    if args.all:
        selected = reg.sources
        if not selected:
            log.warning("no doc sources registered in %s (add one with add_doc_source.py)", registry_file)
    else:
        unknown = [source_id for source_id in args.source if reg.get(source_id) is None]
        if unknown:
            raise ConfigError(
                f"unknown source id(s) {', '.join(unknown)} in {registry_file}", hint="list them with add_doc_source.py --list"
            )
        selected = [reg.get(source_id) for source_id in dict.fromkeys(args.source)]

    model = find_model()
    folder = data_dir(args.data_dir)
    store = Store.open_for_writing(folder, args.wait, chroma_server(args.chroma_url))
    try:
        pipeline = Pipeline(model, folder)
        with IndexWriter(store, COLLECTION, pipeline):
            pass  # the collection exists (and has the right fingerprint) even with no sources
        summaries = index_sources(store, pipeline, selected, folder, config, full=args.full, quiet=args.quiet)
        removed = prune_sources(store, folder, {source["id"] for source in reg.sources}) if args.all else []
        store.commit()
    finally:
        store.close()
    record_completions(registry_file, summaries)
    failed = [summary["id"] for summary in summaries if summary["status"] != "ok"]
    cli.emit_json({
        "registry": str(registry_file),
        "sources": summaries,
        "removed_sources": removed,
        "failed": failed,
        "seconds": round(time.monotonic() - started, 2),
    })
    return EXIT_PARTIAL if failed else 0


if __name__ == "__main__":
    sys.exit(main())
