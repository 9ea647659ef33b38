#!/usr/bin/env python3
"""Record and recall the agent's memory entries (lessons learned, failure and success patterns)."""

import argparse
import sys

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli, logs  # noqa: E402
from rag_search.core.config import DEFAULT_WAIT_SECONDS  # noqa: E402
from rag_search.core.errors import EXIT_CONFIG  # noqa: E402
from rag_search.serve.answers import print_memory  # noqa: E402

EXIT_CODES = (0, 1, 2, 3, 4, 5, 6, 7)
MEANINGS = {2: "bad command line: also a blank lesson or type, an empty --type or --tag, an unknown id, an --id taken by another entry",
            3: "query: the personal index has not been built yet",
            6: "the memory file is missing or not a memory file, or remove, update or clear without --yes (nothing was changed); "
               "a data dir another user owns or can write"}

EPILOG = """subcommands:
  list    entries of the memory file and of any other indexed memory file, newest first
  query   hybrid search (meaning and keywords) over memory records, through the personal index
  add     record an entry (createdAt now) atomically, and index it at once; the same add twice records it once
  remove  delete entries by id
  update  change an entry's lesson, type, context, tags or confidence by id (its id and createdAt stay)
  clear   delete entries (of --loop-id, and/or created --before DATE; else all)

remove, update and clear reach every entry list shows: the memory file's, and those of other memory
files the personal index holds (a file that is one entry is deleted; others are rewritten in their
shape). Without --yes they print what they would change and exit 6; with --yes each file changed is
first copied beside itself (<name>.<time>.bak), and the files are reindexed at once.

add's id: --id, else mem_ and a hash of type, lesson, context, loop id and iteration, so a retried add
finds its entry instead of adding a second ("created": false; tags and confidence are not part of the
hash: change them with update). An --id taken by an entry that says something else is refused (exit 2).
add, remove, update and clear write the files whatever happens to the indexing: "indexed" says whether
the index follows; if not (another index run held it past --wait, an index to rebuild first), "reindex"
says why, and a retried add indexes it.

memory file, first found wins: --memory-file > RAG_SEARCH_MEMORY_FILE > "memory_file" in the
config file > <first personal root>/memory/memory.json. It holds a JSON array of entries:
  {"id", "loopId", "iteration", "createdAt", "type", "lesson", "context", "tags", "confidence"}

stdout: JSON ({"memory_file", "entries": [...]} for list and query; {"added", "created", "indexed"} for
add; {"removed"|"updated"|"deleted", "entries", "files": [{"file", "entries", "action", "backup"}],
"backup", "indexed"} for remove, update, clear, and "would_remove"|"would_update"|"would_delete" without
--yes); --format text, before or after the subcommand, prints a table for people.

tags (add, update): --tag TAG, repeatable, and --tags A,B, comma-separated, together; stored
normalised (lower case, no leading '#'), each once. update's tags replace the entry's; --tags ''
clears them.

list and query are answered by the resident searcher when one runs (as search.py is), unless
--memory-file is given; RAG_SEARCH_RESIDENT=0 for a cold call."""

FORMATS, FORMAT_HELP = ["json", "text"], "json for agents (default), text for people"
WAIT_HELP = ("how long to wait for an index run that holds the personal index before leaving the change unindexed "
             f'("indexed": false; default {DEFAULT_WAIT_SECONDS:g})')


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("memory.py", __doc__, EPILOG, EXIT_CODES, MEANINGS)
    parser.add_argument("--memory-file", metavar="PATH", help="the memory file (default: see below)")
    parser.add_argument("--format", choices=FORMATS, default="json", help=FORMAT_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,query,add,remove,update,clear}")
    listing = commands.add_parser("list", help="entries, newest first")
    query = commands.add_parser("query", help="search memory records by meaning and keywords")
    query.add_argument("text", help="what to look for")
    query.add_argument("--top-k", type=int, default=5, metavar="N", help="number of entries (default 5)")
    for sub in (listing, query):
        sub.add_argument("--since", type=cli.date_bound, metavar="DATE", help="created on or after DATE (YYYY-MM-DD, 7d, 2w…)")
        sub.add_argument("--type", action="append", dest="types", type=cli.non_empty, metavar="TYPE", help="only this type (repeatable)")
        sub.add_argument("--loop-id", metavar="ID", help="only entries of this loop")
        sub.add_argument("--tag", action="append", dest="tags", type=cli.non_empty, metavar="TAG",
                         help="only entries with this tag (repeatable: all)")
    add = commands.add_parser("add", help="record an entry and index it at once (a retry does not duplicate it)")
    add.add_argument("--id", dest="entry_id", metavar="ID", help="the entry's id (default: derived from what it says)")
    add.add_argument("--type", required=True, dest="kind", metavar="TYPE", help="lesson_learned, failure_pattern, success_pattern…")
    add.add_argument("--lesson", required=True, help="what was learned, in one sentence")
    _entry_fields(add)
    add.add_argument("--loop-id", metavar="ID", help="the loop that learned it")
    add.add_argument("--iteration", type=int, metavar="N", help="the loop's iteration")
    remove = commands.add_parser("remove", help="delete entries by id (needs --yes)")
    remove.add_argument("ids", nargs="+", metavar="ID", help="an entry's id (list shows them)")
    update = commands.add_parser("update", help="change an entry by id (needs --yes)")
    update.add_argument("entry_id", metavar="ID", help="the entry's id (list shows them)")
    update.add_argument("--type", dest="kind", metavar="TYPE", help="a new type")
    update.add_argument("--lesson", help="a new lesson")
    _entry_fields(update, update=True)
    clear = commands.add_parser("clear", help="delete entries (needs --yes)")
    clear.add_argument("--loop-id", metavar="ID", help="only entries of this loop")
    clear.add_argument("--before", type=cli.date_bound, metavar="DATE", help="only entries created before DATE")
    for sub in (remove, update, clear):
        sub.add_argument("--yes", action="store_true", help="really change the files (each is backed up first)")
    for sub in (add, remove, update, clear):
        sub.add_argument("--wait", type=float, default=DEFAULT_WAIT_SECONDS, metavar="SECONDS", help=WAIT_HELP)
    for sub in (listing, query, add, remove, update, clear):  # after the subcommand too; not given there, the one before counts
        sub.add_argument("--format", choices=FORMATS, default=argparse.SUPPRESS, help=FORMAT_HELP)
    return parser


def _entry_fields(sub: argparse.ArgumentParser, update: bool = False) -> None:
    new, removes, replace, clears = ("new ", " ('' removes it)", "; they replace the entry's", " ('' clears them)") if update else [""] * 4
    sub.add_argument("--context", help=f"where it came from (a file, a task){removes}")
    sub.add_argument("--tag", action="append", type=cli.non_empty, metavar="TAG", help=f"a {new}tag (repeatable{replace})")
    sub.add_argument("--tags", action="append", metavar="A,B", help=f"comma-separated {new}tags, with those of --tag{clears}")
    sub.add_argument("--confidence", type=cli.number_in(0.0, 1.0, float), metavar="0-1", help="how sure, 0 to 1")


def _given_tags(args: argparse.Namespace) -> list[str] | None:
    """The tags of --tag and --tags together (memory.normalized_tags drops blanks and repeats); None when neither is
    given (update keeps the entry's)."""
    if args.tag is None and args.tags is None:
        return None
    return [*(args.tag or ()), *(tag for tags in args.tags or () for tag in tags.split(","))]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup_logging(quiet=True)
    return cli.run(lambda: COMMANDS[args.command](args, cli.settings(args, memory_file=args.memory_file)),
                   json_errors=args.format == "json")


def do_list(args, settings) -> int:
    from rag_search.serve import client

    return client.answer("memory_list", args, settings, off=args.memory_file is not None)  # a searcher has the default file


def do_query(args, settings) -> int:
    from rag_search.serve import client

    return client.answer("memory_query", args, settings, off=args.memory_file is not None)


def do_add(args, settings) -> int:
    from rag_search.serve import memory

    answer = memory.record(settings, args.kind, args.lesson, args.context, _given_tags(args), args.confidence, args.loop_id,
                           args.iteration, args.entry_id)
    if "reindex" in answer:
        print(f"note: the entry is in {settings.memory_file}, but not indexed yet: {answer['reindex']}", file=sys.stderr)
    print_memory(args, answer)
    return 0


def do_remove(args, settings) -> int:
    from rag_search.serve import memory_edits

    return _edited(args, memory_edits.remove(settings, args.ids, apply=args.yes), "removed")


def do_update(args, settings) -> int:
    from rag_search.serve import memory_edits

    return _edited(args, memory_edits.update(settings, args.entry_id, args.kind, args.lesson, args.context, _given_tags(args),
                                             args.confidence,
                                             apply=args.yes), "updated")


def do_clear(args, settings) -> int:
    from rag_search.serve import memory_edits

    return _edited(args, memory_edits.clear(settings, args.loop_id, args.before, apply=args.yes), "deleted")


def _edited(args, answer: dict, done: str) -> int:
    """Print what remove, update or clear did; without --yes, what they would do, and exit 6 (nothing was changed)."""
    from rag_search.serve.output import MEMORY_PREVIEWS

    if not args.yes:
        count = answer[MEMORY_PREVIEWS[done]]
        print_memory(args, {**answer, "hint": "rerun with --yes to apply it (each file changed is backed up first)"})
        print(f"error: {count} entries would be {done}; nothing was (hint: add --yes)", file=sys.stderr)
        return EXIT_CONFIG
    if "reindex" in answer:
        print(f"note: the files are changed, but not indexed yet: {answer['reindex']}", file=sys.stderr)
    print_memory(args, answer)
    return 0


COMMANDS = {"list": do_list, "query": do_query, "add": do_add, "remove": do_remove, "update": do_update, "clear": do_clear}


if __name__ == "__main__":
    sys.exit(main())
