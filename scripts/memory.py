#!/usr/bin/env python3
"""Record and recall the agent's memory entries (lessons learned, failure and success patterns)."""

import argparse
import sys

from rag_search.cli import use_project_venv

use_project_venv()

from rag_search import cli  # noqa: E402
from rag_search.errors import EXIT_CONFIG  # noqa: E402

EXIT_CODES = (0, 1, 2, 3, 4, 5, 6, 7, 8)
MEANINGS = {3: "query: the personal index has not been built yet",
            6: "the memory file is missing or not a memory file, or clear without --yes (nothing was deleted)",
            8: "add, clear: another index run held the personal index too long (the wait setting)"}

EPILOG = """subcommands:
  list   entries of the memory file and of any other indexed memory file, newest first
  query  hybrid search (meaning and keywords) over memory records, through the personal index
  add    append a well-formed entry (generated id and createdAt) atomically, and index it at once
  clear  delete entries (of --loop-id, and/or created --before DATE; else all); without --yes it
         prints what it would delete and exits 6; with --yes a backup is written beside the file first

memory file, first found wins: --memory-file > RAG_SEARCH_MEMORY_FILE > "memory_file" in the
config file > <first personal root>/memory/memory.json. It holds a JSON array of entries:
  {"id", "loopId", "iteration", "createdAt", "type", "lesson", "context", "tags", "confidence"}

stdout: JSON ({"memory_file", "entries": [...]} for list and query; {"added"} for add;
{"deleted", "remaining", "backup"} for clear); --format text prints a table for people."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("memory.py", __doc__, EPILOG, EXIT_CODES, MEANINGS)
    parser.add_argument("--memory-file", metavar="PATH", help="the memory file (default: see below)")
    parser.add_argument("--format", choices=["json", "text"], default="json", help="json for agents (default), text for people")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,query,add,clear}")
    listing = commands.add_parser("list", help="entries, newest first")
    query = commands.add_parser("query", help="search memory records by meaning and keywords")
    query.add_argument("text", help="what to look for")
    query.add_argument("--top-k", type=int, default=5, metavar="N", help="number of entries (default 5)")
    for sub in (listing, query):
        sub.add_argument("--since", type=cli.date_bound, metavar="DATE", help="created on or after DATE (YYYY-MM-DD, 7d, 2w…)")
        sub.add_argument("--type", action="append", dest="types", metavar="TYPE", help="only this type (repeatable)")
        sub.add_argument("--loop-id", metavar="ID", help="only entries of this loop")
        sub.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="only entries with this tag (repeatable: all)")
    add = commands.add_parser("add", help="record an entry and index it at once")
    add.add_argument("--type", required=True, dest="kind", metavar="TYPE", help="lesson_learned, failure_pattern, success_pattern…")
    add.add_argument("--lesson", required=True, help="what was learned, in one sentence")
    add.add_argument("--context", help="where it came from (a file, a task)")
    add.add_argument("--tags", help="comma-separated tags")
    add.add_argument("--confidence", type=float, metavar="0-1", help="how sure, 0 to 1")
    add.add_argument("--loop-id", metavar="ID", help="the loop that learned it")
    add.add_argument("--iteration", type=int, metavar="N", help="the loop's iteration")
    clear = commands.add_parser("clear", help="delete entries (needs --yes)")
    clear.add_argument("--loop-id", metavar="ID", help="only entries of this loop")
    clear.add_argument("--before", type=cli.date_bound, metavar="DATE", help="only entries created before DATE")
    clear.add_argument("--yes", action="store_true", help="really delete (a backup is written first)")
    return parser



def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cli.setup_logging(quiet=True)
    return cli.run(lambda: COMMANDS[args.command](args, cli.settings(args, memory_file=args.memory_file)),
                   json_errors=args.format == "json")


def do_list(args, settings) -> int:
    from rag_search import memory

    entries, problem = memory.listing(settings, _filters(args), args.loop_id)
    if problem is not None:
        print(f"warning: {problem} (hint: {problem.hint})", file=sys.stderr)
    _emit(args, {"memory_file": str(settings.memory_file), "count": len(entries), "entries": [_entry_json(e) for e in entries]})
    return 0


def do_query(args, settings) -> int:
    from rag_search import memory
    from rag_search.embedding import find_model, query_embedder
    from rag_search.isolation import run_isolated
    from rag_search.retrieval import open_stores, search
    from rag_search.store import fingerprint

    options = memory.query_options(settings, _filters(args), args.top_k, args.loop_id)
    model = find_model(settings.model_dir)

    def read_index(receive_vector):
        stores, _ = open_stores(settings, "personal", fingerprint(model, settings.embedding))
        try:
            return search(stores, args.text, receive_vector(), options).hits
        finally:
            for store in stores.values():
                store.close()

    hits = run_isolated(read_index, lambda: query_embedder(settings.data_dir, model, settings.embedding).embed([args.text])[0])
    _emit(args, {"query": args.text, "memory_file": str(settings.memory_file),
                 "entries": memory.query_entries(hits, args.top_k, args.loop_id)})
    return 0


def do_add(args, settings) -> int:
    from rag_search import memory

    tags = (args.tags or "").split(",")
    entry, published = memory.record(settings, args.kind, args.lesson, args.context, tags, args.confidence, args.loop_id, args.iteration)
    _emit(args, {"added": entry, "memory_file": str(settings.memory_file), "indexed": published})
    return 0


def do_clear(args, settings) -> int:
    from rag_search import memory

    path = settings.memory_file
    doomed, kept, backup = memory.clear_entries(path, args.loop_id, args.before, apply=args.yes)
    if not args.yes:
        _emit(args, {"would_delete": len(doomed), "entries": [_entry_json(memory.Entry(e, str(path))) for e in doomed],
                     "memory_file": str(path), "hint": "rerun with --yes to delete them (a backup is written first)"})
        print(f"error: {len(doomed)} entries would be deleted; nothing was (hint: add --yes)", file=sys.stderr)
        return EXIT_CONFIG
    if doomed:
        memory.reindex(settings)
    _emit(args, {"deleted": len(doomed), "remaining": len(kept), "backup": str(backup) if backup else None, "memory_file": str(path)})
    return 0


COMMANDS = {"list": do_list, "query": do_query, "add": do_add, "clear": do_clear}


def _filters(args):
    from rag_search import memory

    return memory.entry_filters(args.since, args.types, args.tags)


def _entry_json(entry) -> dict:
    return {**entry.fields, "file": entry.file}


def _emit(args, payload: dict) -> None:
    if args.format == "json":
        cli.emit_json(payload)
        return
    rows = payload.get("entries") or ([payload["added"]] if "added" in payload else [])
    print(f"{len(rows)} entries · {payload.get('memory_file', '')}")
    print(f"{'ID':<18} {'Type':<16} {'Loop':<10} {'Iter':>4}  {'Date':<10}  Lesson")
    for row in rows:
        print(f"{str(row.get('id', '')):<18} {str(row.get('type', '')):<16} {str(row.get('loopId', '')):<10} "
              f"{str(row.get('iteration', '')):>4}  {str(row.get('createdAt', ''))[:10]:<10}  {row.get('lesson', '')}")
    for key in ("deleted", "remaining", "backup", "would_delete"):
        if key in payload:
            print(f"{key}: {payload[key]}")


if __name__ == "__main__":
    sys.exit(main())
