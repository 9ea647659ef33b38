#!/usr/bin/env python3
"""The resident searcher that lets search.py answer in a tenth of a second: see it, stop it.

search.py starts one on demand (detached, one per data dir) and it exits by itself
after resident_idle_minutes without a request (default 15). `serve` is what
search.py starts; you need not run it."""

import argparse
import json
import sys

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli, logs  # noqa: E402

EXIT_CODES = (0, 1, 2, 6)
MEANINGS = {0: "success (also when no searcher runs)", 6: "bad input: the config file, or a data dir another user owns or can write"}

EPILOG = """output (JSON on stdout):
  status: {"resident": {"pid", "since", "rss_bytes", "answers"} or null}
  stop:   {"stopped": the same, or null when none ran}; it returns once the searcher has exited
          (it finishes the answer it is giving first; 10 s at most)
Turn it off: RAG_SEARCH_RESIDENT=0, search.py or get.py --no-resident, or "resident_idle_minutes": 0
in the config file. Its log is <data dir>/resident/log."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("resident.py", __doc__, EPILOG, EXIT_CODES, MEANINGS)
    parser.add_argument("action", choices=["status", "stop", "serve"], help="status, stop, or serve (run by search.py)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup_logging(quiet=args.action != "serve")
    return cli.run(lambda: act(args))


def act(args: argparse.Namespace) -> int:
    from rag_search.serve import resident

    if args.action == "serve":
        return serve(args)
    settings = cli.settings(args)
    if args.action == "stop":
        cli.emit_json({"stopped": resident.stop(settings)})
    else:
        cli.emit_json({"resident": resident.about(settings)})
    return 0


def serve(args: argparse.Namespace) -> int:
    """Started by a client, which hands over on stdin what its flags chose and the identity it expects (on a terminal,
    as when run by hand, the flags and the environment alone decide)."""
    from rag_search.serve.resident_server import serve

    handover = {} if sys.stdin.isatty() else json.loads(sys.stdin.readline() or "{}")
    sys.stdin.close()
    args.data_dir = handover.get("data_dir") or args.data_dir
    args.chroma_url = handover.get("chroma_url") or args.chroma_url
    return serve(cli.settings(args), handover.get("identity"))


if __name__ == "__main__":
    sys.exit(main())
