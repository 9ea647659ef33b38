#!/usr/bin/env python3
"""Index your own notes, state, memory and decision files into the `personal` collection."""

import argparse
import logging
import sys

from rag_search.cli import use_project_venv

use_project_venv()

from rag_search import cli  # noqa: E402
from rag_search.errors import EXIT_PARTIAL  # noqa: E402

log = logging.getLogger("rag_search")

EPILOG = """roots, first found wins:
  command-line ROOTS > RAG_SEARCH_PERSONAL_DIRS (comma-separated)
  > "personal_roots" in $RAG_SEARCH_CONFIG or ~/.config/rag-search/config.json
  > ~/.claude/state

ignored: .git/, node_modules/, *.log, folders starting with . or _, the config's
"ignore_patterns", and each root's .ragignore (full gitignore syntax, ! negates).

A root that lists no files, or less than half of what it had, is taken for an
outage (an unmounted disk): it keeps its chunks and the run exits 9, unless
--allow-shrink (or --full) says the files were removed on purpose.

stdout: one JSON summary (files seen, added, updated, unchanged, moved, deleted,
skipped with reasons, failed_roots, chunks, seconds). Progress and warnings go to stderr."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("index_personal.py", __doc__, EPILOG, cli.INDEX_EXIT_CODES)
    parser.add_argument("roots", nargs="*", metavar="ROOT", help="folders to index (default: see below)")
    parser.add_argument("--full", action="store_true", help="rebuild the personal collection from scratch")
    cli.add_index_run_arguments(parser, allow_shrink=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cli.setup_logging(args.quiet)
    return cli.run(lambda: index(args))


def index(args: argparse.Namespace) -> int:
    from rag_search.errors import one_line
    from rag_search.runs import index_run
    from rag_search.sources.personal import COLLECTION, check_roots, index_personal, record_runs

    settings = cli.settings(args, roots=args.roots)
    for warning in settings.warnings:
        log.warning(warning)
    roots = check_roots(settings.personal_roots, settings.roots_origin)
    log.info("using roots from %s: %s", settings.roots_origin, ", ".join(str(root) for root in roots))
    try:
        with index_run(settings, COLLECTION, fresh=args.full) as run:
            summary = index_personal(run.store, run.pipeline, roots, settings, full=args.full, allow_shrink=args.allow_shrink,
                                     quiet=args.quiet)
    except Exception as exc:
        record_runs(settings.data_dir, roots, {}, error=one_line(exc))
        raise
    record_runs(settings.data_dir, roots, {failure["root"]: failure["error"] for failure in summary["failed_roots"]})
    cli.emit_json({**summary, "published": run.published, "roots_from": settings.roots_origin})
    return EXIT_PARTIAL if summary["failed_roots"] else 0


if __name__ == "__main__":
    sys.exit(main())
