#!/usr/bin/env python3
"""Index your own notes, state, memory and decision files into the `personal` collection."""

import argparse
import logging
import sys

from rag_search.cli import use_project_venv

use_project_venv()

from rag_search import cli  # noqa: E402
from rag_search.config import chroma_server, data_dir, load_config, personal_roots  # noqa: E402

log = logging.getLogger("rag_search")

EPILOG = """roots, first found wins:
  command-line ROOTS > RAG_SEARCH_PERSONAL_DIRS (comma-separated)
  > "personal_roots" in $RAG_SEARCH_CONFIG or ~/.config/rag-search/config.json
  > ~/.claude/state

ignored: .git/, node_modules/, *.log, folders starting with . or _, the config's
"ignore_patterns", and each root's .ragignore (full gitignore syntax, ! negates).

stdout: one JSON summary (files seen, added, updated, unchanged, deleted,
skipped with reasons, chunks, seconds). Progress and warnings go to stderr."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("index_personal.py", __doc__, EPILOG)
    parser.add_argument("roots", nargs="*", metavar="ROOT", help="folders to index (default: see below)")
    parser.add_argument("--full", action="store_true", help="rebuild the personal collection from scratch")
    cli.add_index_run_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cli.setup_logging(args.quiet)
    return cli.run(lambda: index(args))


def index(args: argparse.Namespace) -> int:
    from rag_search.embedding import find_model
    from rag_search.indexer import Pipeline
    from rag_search.sources.personal import check_roots, index_personal
    from rag_search.store import Store

    config = load_config()
    for warning in config.warnings:
        log.warning(warning)
    roots, origin = personal_roots(args.roots, config)
    roots = check_roots(roots, origin)
    log.info("using roots from %s: %s", origin, ", ".join(str(root) for root in roots))
    model = find_model()
    folder = data_dir(args.data_dir)
    store = Store.open_for_writing(folder, args.wait, chroma_server(args.chroma_url))
    try:
        pipeline = Pipeline(model, folder)
        summary = index_personal(store, pipeline, roots, config, full=args.full, quiet=args.quiet)
        summary["published"] = store.commit()
    finally:
        store.close()
    cli.emit_json({**summary, "roots_from": origin})
    return 0


if __name__ == "__main__":
    sys.exit(main())
