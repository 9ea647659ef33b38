#!/usr/bin/env python3
"""What is indexed and how fresh it is: collections, personal roots, doc sources and the daily timer."""

import argparse
import sys

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli  # noqa: E402

EXIT_CODES = (0, 1, 2, 6, 7)
MEANINGS = {0: "success, however stale the indexes are, and with a registry it cannot read (see doc_sources)",
            6: "bad input: the config file, or a data dir another user owns or can write",
            7: "store cannot be opened (damaged: the message names the rebuild)"}

EPILOG = """output (JSON on stdout, one line unless stdout is a terminal):
  {"data_dir",
   "collections": {"personal"|"docs": {"built", "documents", "chunks", "generation",
                   "published", "size_bytes", "disk_bytes", "age_seconds",
                   "large_files": [{"file", "chunks", "share"}]}},
   "personal_roots": [{"root", "documents", "last_indexed", "last_attempt", "last_error",
                       "skipped": [{"file", "reason"}], "skipped_count", "empty": [file], "empty_count",
                       "changed_since_index": {"not_indexed", "changed", "gone", "examples"}}],
   "doc_sources": [{"id", "type", "name", "documents", "chunks", "version", "commit", "partial",
                    "last_indexed", "last_attempt", "last_status", "last_error"}]
                  or, when the registry cannot be read (bad JSON, a bad entry):
                  {"registry", "error", "hint", "indexed": [{"id", "documents", "chunks"}]},
   "resident": {"pid", "since", "rss_bytes", "answers"} or null,
   "timer": {"installed", "enabled", "last_run", "last_result", "next_run"}}
  size_bytes is the published generation; disk_bytes the whole collection, with the
  generation kept so that the next small change need not copy the index. large_files:
  files holding more than a quarter of a collection's chunks (and over 50), which
  searches see at most 5 chunks of per retriever. last_status: a doc source's last
  run, ok, empty (it matched no file: fix its --glob or --path), partial or failed.
  partial (the field): a source's index run (a first index, a large update),
  published in parts, is not done yet ("86 of 120 documents indexed so far"):
  searches answer from what it has; the next index run goes on.
  Roots are those index runs were given (else the configured ones); files are
  compared by size and mtime, as an index run does. skipped: the first 50 files the
  runs left out, with why; a file skipped as it is now is no change since the index.
  empty: the first 50 files indexed with no text (a memory file with no entries left,
  an emptied note): searches find nothing in them. The timer's state comes from
  `systemctl --user`; where no user manager answers it is "unknown". resident: the
  resident searcher that answers search.py, get.py, status.py and memory.py list and
  query warm (scripts/resident.py stops it); status.py itself is answered by it when
  one runs, except with --sources (RAG_SEARCH_RESIDENT=0 for a cold call)."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("status.py", __doc__, EPILOG, EXIT_CODES, MEANINGS)
    parser.add_argument("--sources", metavar="PATH", help="the registry file (default: $RAG_SEARCH_SOURCES or references/sources.json)")
    parser.add_argument("--format", choices=["json", "text"], default="json", help="json for agents (default), text for people")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return cli.run(lambda: status(args), json_errors=args.format == "json")


def status(args: argparse.Namespace) -> int:
    """Answered by the resident searcher when one runs for these settings (not for another --sources)."""
    from rag_search.serve import client

    return client.answer("status", args, cli.settings(args), off=args.sources is not None)


if __name__ == "__main__":
    sys.exit(main())
