#!/usr/bin/env python3
"""Index your own notes, state, memory and decision files into the `personal` collection."""

import argparse
import logging
import sys

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli, logs  # noqa: E402
from rag_search.core.errors import EXIT_PARTIAL  # noqa: E402

log = logging.getLogger("rag_search")

EPILOG = """roots: the index remembers every root it has indexed. With ROOTS on the command
line, only those are indexed (and remembered); without, every remembered root is
refreshed, plus RAG_SEARCH_PERSONAL_DIRS (comma-separated) or else "personal_roots"
in $RAG_SEARCH_CONFIG or ~/.config/rag-search/config.json (~/.claude/state when
nothing is remembered or configured). A missing root (an unplugged disk) is skipped
with a warning and keeps its chunks; --forget ROOT removes a root and its chunks.

ignored: .git/, node_modules/, *.log, folders starting with . or _, the config's
"ignore_patterns", and each root's .ragignore (full gitignore syntax, ! negates).

A root that lists no files, or less than half of what it had, is taken for an
outage (an unmounted disk): it keeps its chunks and the run exits 9, unless
--allow-shrink (or --full) says the files were removed on purpose.

A file left with no text (a memory file whose entries were all removed, a note
emptied) is indexed as empty: its chunks go, and it counts as "empty", not as added
or updated. A file that cannot be read or parsed (binary, malformed JSON, too large)
is skipped, with why, and keeps what was indexed from it.

stdout: one JSON summary (files seen, added, updated, unchanged, moved, deleted, empty,
skipped with reasons, failed_roots, missing_roots, chunks, seconds); with --forget,
{"forgotten", "chunks_removed", "roots"}. Progress and warnings go to stderr."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("index_personal.py", __doc__, EPILOG, cli.INDEX_EXIT_CODES)
    parser.add_argument("roots", nargs="*", metavar="ROOT", help="folders to index (default: see below)")
    parser.add_argument("--full", action="store_true", help="rebuild the personal collection from scratch")
    parser.add_argument("--forget", action="append", metavar="ROOT",
                        help="stop indexing ROOT and remove its chunks (repeatable); nothing else is indexed in that run")
    cli.add_index_run_arguments(parser, allow_shrink=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup_logging(args.quiet)
    return cli.run(lambda: index(args))


def index(args: argparse.Namespace) -> int:
    from rag_search.core.errors import one_line
    from rag_search.index.runs import index_run
    from rag_search.sources.personal import (
        COLLECTION,
        REBUILD_HINT,
        choose_roots,
        index_personal,
        left_out,
        record_runs,
        recorded_roots,
        remember_roots,
        roots_left_out,
    )

    settings = cli.settings(args, roots=args.roots)
    for warning in settings.warnings:
        log.warning(warning)
    recorded = recorded_roots(settings)
    if args.forget:
        return forget(settings, recorded, args.forget)
    roots, missing, origin = choose_roots(settings, recorded, full=args.full)
    log.info("using roots from %s: %s", origin, ", ".join(str(root) for root in roots))
    try:
        with index_run(settings, COLLECTION, fresh=args.full, left_out=lambda indexed: left_out(indexed, roots, settings)) as run:
            run.check_whole(roots_left_out(recorded, roots, missing), args.allow_shrink, REBUILD_HINT)
            summary = index_personal(run.store, run.pipeline, roots, settings, full=args.full, allow_shrink=args.allow_shrink,
                                     quiet=args.quiet)
            run.check_whole([failure["root"] for failure in summary["failed_roots"]], args.allow_shrink, REBUILD_HINT)
            remember_roots(run.store, [*recorded, *roots])
    except Exception as exc:
        record_runs(settings.data_dir, roots, {}, error=one_line(exc))
        raise
    failed = {failure["root"]: failure["error"] for failure in summary["failed_roots"]}
    record_runs(settings.data_dir, [*roots, *missing], {**failed, **{str(root): "missing or not a folder" for root in missing}})
    cli.emit_json({**summary, "missing_roots": [str(root) for root in missing], "published": run.published, "roots_from": origin})
    return EXIT_PARTIAL if summary["failed_roots"] else 0


def forget(settings, recorded: list, roots: list[str]) -> int:
    from rag_search.core.config import expand
    from rag_search.index.runs import index_run
    from rag_search.sources.personal import COLLECTION, forget_root, forget_runs, recorded_runs

    removed, forgotten = 0, [expand(root) for root in roots]
    reported = recorded_runs(settings.data_dir)
    with index_run(settings, COLLECTION, embeds=False) as run:
        for root in forgotten:
            removed += forget_root(run.store, root, recorded, str(root) in reported)
            recorded = [path for path in recorded if path != root]
    forget_runs(settings.data_dir, forgotten)
    cli.emit_json({"forgotten": [str(root) for root in forgotten], "chunks_removed": removed,
                   "roots": [str(root) for root in recorded], "published": run.published})
    return 0


if __name__ == "__main__":
    sys.exit(main())
