#!/usr/bin/env python3
"""What is indexed and how fresh it is: collections, personal roots, doc sources and the daily timer."""

import argparse
import sys

from rag_search.cli import use_project_venv

use_project_venv()

from rag_search import cli  # noqa: E402

EXIT_CODES = (0, 1, 2, 6, 7)
MEANINGS = {0: "success, however stale the indexes are, and with a registry it cannot read (see doc_sources)",
            6: "bad input: the config file", 7: "store cannot be opened (damaged: the message names the rebuild)"}

EPILOG = """output (JSON on stdout, one line unless stdout is a terminal):
  {"data_dir",
   "collections": {"personal"|"docs": {"built", "documents", "chunks", "generation",
                   "published", "size_bytes", "disk_bytes", "age_seconds",
                   "large_files": [{"file", "chunks", "share"}]}},
   "personal_roots": [{"root", "documents", "last_indexed", "last_attempt", "last_error",
                       "skipped": [{"file", "reason"}], "skipped_count",
                       "changed_since_index": {"not_indexed", "changed", "gone", "examples"}}],
   "doc_sources": [{"id", "type", "name", "documents", "chunks", "version", "commit",
                    "last_indexed", "last_attempt", "last_error"}]
                  or, when the registry cannot be read (bad JSON, a bad entry):
                  {"registry", "error", "hint", "indexed": [{"id", "documents", "chunks"}]},
   "resident": {"pid", "since", "rss_bytes", "answers"} or null,
   "timer": {"installed", "enabled", "last_run", "last_result", "next_run"}}
  size_bytes is the published generation; disk_bytes the whole collection, with the
  generation kept so that the next small change need not copy the index. large_files:
  files holding more than a quarter of a collection's chunks (and over 50), which
  searches see at most 5 chunks of per retriever.
  Roots are those index runs were given (else the configured ones); files are
  compared by size and mtime, as an index run does. skipped: the first 50 files the
  runs left out, with why; a file skipped as it is now is no change since the index. The timer's state comes from
  `systemctl --user`; where no user manager answers it is "unknown". resident: the
  resident searcher that answers search.py warm (scripts/resident.py stops it)."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("status.py", __doc__, EPILOG, EXIT_CODES, MEANINGS)
    parser.add_argument("--sources", metavar="PATH", help="the registry file (default: $RAG_SEARCH_SOURCES or references/sources.json)")
    parser.add_argument("--format", choices=["json", "text"], default="json", help="json for agents (default), text for people")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cli.setup_logging(quiet=True)
    return cli.run(lambda: status(args), json_errors=args.format == "json")


def status(args: argparse.Namespace) -> int:
    from rag_search.isolation import run_isolated
    from rag_search.status import collect
    from rag_search.store import open_published
    from rag_search.timer import timer_state

    settings = cli.settings(args)

    def read(receive_timer):
        """In a child process, like search.py: a damaged store must not crash us."""
        stores = open_published(settings)
        try:
            return {**collect(settings, stores, with_timer=False), "timer": receive_timer()}
        finally:
            for store in stores.values():
                store.close()

    # The parent asks systemd about the timer while the child reads the index.
    report = run_isolated(read, lambda: timer_state(settings.unit_dir))
    print(cli.to_json(report) if args.format == "json" else to_text(report))
    return 0


def to_text(report: dict) -> str:
    lines = [f"data dir {report['data_dir']}"]
    for name, collection in report["collections"].items():
        if not collection["built"]:
            lines.append(f"{name}: not built ({collection['hint']})")
            continue
        age = collection["age_seconds"]
        where = collection.get("generation") or collection.get("server")
        lines.append(f"{name}: {collection['documents']} documents, {collection['chunks']} chunks, {where}"
                     + (f", published {age // 3600} h {age % 3600 // 60} min ago" if age is not None else "")
                     + (f", {collection['size_bytes'] / 1e6:.1f} MB ({collection['disk_bytes'] / 1e6:.1f} MB on disk)"
                        if collection.get("disk_bytes") is not None else ""))
        lines += [f"  large file {large['file']}: {large['chunks']} chunks, {large['share']:.0%} of them"
                  for large in collection.get("large_files", [])]
    for root in report["personal_roots"]:
        changes = root["changed_since_index"]
        changed = changes if isinstance(changes, str) else ", ".join(f"{count} {what.replace('_', ' ')}" for what, count in changes.items()
                                                                      if what != "examples")
        lines.append(f"root {root['root']}: {root['documents']} documents, last indexed {root['last_indexed'] or 'never'}"
                     + (f", last error: {root['last_error']}" if root["last_error"] else "")
                     + (f", {root['skipped_count']} skipped (e.g. {root['skipped'][0]['file']}: {root['skipped'][0]['reason']})"
                        if root["skipped"] else "") + f"; on disk since: {changed}")
    sources = report["doc_sources"]
    if isinstance(sources, dict):  # the registry cannot be read
        lines.append(f"registry {sources['registry']}: {sources['error']} (hint: {sources['hint']})")
        sources = sources["indexed"]
    for source in sources:
        lines.append(f"source {source['id']}: {source['documents']} documents, last indexed {source.get('last_indexed') or 'never'}"
                     + (f", last error: {source['last_error']}" if source.get("last_error") else ""))
    searcher = report["resident"]
    lines.append(f"resident searcher: pid {searcher['pid']} since {searcher['since']}, {searcher['answers']} answers, "
                 f"{(searcher['rss_bytes'] or 0) / 1e6:.0f} MB" if searcher else "resident searcher: none running")
    timer = report["timer"]
    lines.append(f"timer: installed {timer['installed']}, last run {timer['last_run'] or 'never'}, next {timer['next_run'] or 'none'}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
