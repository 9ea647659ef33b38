#!/usr/bin/env python3
"""Search your personal context and the indexed documentation; prints ranked chunks as JSON."""

import argparse
import sys

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli  # noqa: E402
from rag_search.text.page_kind import KINDS  # noqa: E402

EXIT_CODES = (0, 1, 2, 3, 4, 5, 6, 7)
MEANINGS = {0: "success (an empty result list is success)",
            2: "bad command line: a bad flag or value (an empty --source, --type or --tag), an empty query, an unknown --source id",
            6: "bad input: the config file, or a data dir another user owns or can write",
            7: "store cannot be opened (damaged: the message names the rebuild)"}

EPILOG = """output (JSON on stdout, one line unless stdout is a terminal):
  {"query", "results": [{"rank", "score", "source", "file", "id", "kind", "chunk", "metadata"}],
   "searched_collections", "total_chunks_searched", "mode", "truncated", "more", "partial"}
  metadata: what to cite (heading, date, url or path, doc_version, commit, a record's
  record_id, loop_id, iteration, confidence and updated, which its chunk never shows,
  and record fields the chunk does not show); a later result of the same file omits
  what its first result said (path, date, tags); --verbose gives every stored field.
  score: the cosine similarity of chunk and query, 0 to 1, higher is better, in every
  mode. kind: a documentation page's kind (guide, reference, changelog, blog; none for
  the user's own files). rank: the order of the mode: hybrid (default) fuses keyword (BM25) and meaning
  (vector) rankings by reciprocal rank fusion, so an exact identifier can rank above a
  chunk with a higher score. --explain adds each stage's ranks and scores.
  No match is not an error: exit 0 with an empty "results" list.
  truncated: --max-tokens left results out (or cut the first one's chunk).
  more (both collections searched, hybrid): per collection, how many results likely to
  answer were not shown, e.g. {"docs": 3, "personal": 0}; search again with --index.
  partial: doc sources whose index run (a first index, a large update) is published in
  parts and not done yet, e.g. {"fastapi": "86 of 120 documents indexed so far"}: the
  answer holds what they have.
  A query that starts with "-" goes after "--": search.py -- "-v flag".
  Read a whole file or a chunk with its neighbours: get.py FILE_OR_ID.

dates (--since, --until): YYYY-MM-DD, an ISO time, or 7d, 2w, 3m, 1y ago; they apply
to the chunk's own date (front matter, record field, commit, Last-Modified, mtime).

fresh at search time: before searching the personal index, a stat walk of its roots
finds files changed since it was built. Up to 20 small files (512 KiB) are indexed
before answering (about a second or two; never waiting for another index run);
otherwise the answer carries "stale": {"files": N, "since": TIME} and stderr says to
run index_personal.py.

records (--type, --tag): JSON records (memory entries, decisions) carry their type
and tags; a record without a type in a file named for a kind (decisions.json,
lessons.json, todos.json…) is of that kind (decision, lesson, todo); --type matches
exactly. Notes carry the tags of their front matter. Tags match whole and ignore case
and a leading '#'. All filters combine, in every --mode.

resident searcher: the first search answers cold (about a second) and leaves a searcher
running for the data dir, warm, which answers the next ones in about a tenth of a second
(the same JSON and exit code); it exits after resident_idle_minutes without a search
(config file, default 15). Off: --no-resident, RAG_SEARCH_RESIDENT=0, or
"resident_idle_minutes": 0. See or stop it: scripts/resident.py status|stop."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("search.py", __doc__, EPILOG, EXIT_CODES, MEANINGS)
    parser.add_argument("query", help="what to look for, in plain words or exact identifiers")
    parser.add_argument("--index", choices=["personal", "docs", "all"], default="all", help="which collection to search (default: all)")
    parser.add_argument("--top-k", type=cli.number_in(1, 100), default=5, metavar="N", help="number of results, 1-100 (default: 5)")
    parser.add_argument("--mode", choices=["hybrid", "dense", "lexical"], default="hybrid", help="ranking (default: hybrid)")
    parser.add_argument("--source", action="append", type=cli.non_empty, metavar="ID",
                        help="only this source: 'personal' or a doc source id (repeatable)")
    parser.add_argument("--since", type=cli.date_bound, metavar="DATE", help="only chunks dated on or after DATE")
    parser.add_argument("--until", type=cli.date_bound, metavar="DATE", help="only chunks dated on or before DATE")
    parser.add_argument("--type", action="append", dest="types", type=cli.non_empty, metavar="TYPE",
                        help="only records of this type, e.g. decision, lesson_learned (repeatable: any of them)")
    parser.add_argument("--tag", action="append", dest="tags", type=cli.non_empty, metavar="TAG",
                        help="only records and notes carrying this whole tag (repeatable: every one of them)")
    parser.add_argument("--kind", action="append", dest="kinds", choices=KINDS,
                        help="only documentation pages of this kind: guide, reference, changelog (release notes, "
                             "announcements) or blog (repeatable: any of them)")
    parser.add_argument("--min-score", type=cli.number_in(0.0, 1.0, float), metavar="S", help="drop results whose score is below S (0-1)")
    parser.add_argument("--per-file", type=cli.number_in(0, 100), default=2, metavar="N",
                        help="at most N chunks per file (default 2, 0 = no limit)")
    parser.add_argument("--max-tokens", type=cli.number_in(1, 10_000_000), metavar="N",
                        help="at most about N tokens of answer as printed (4 characters a token): later results are left out, "
                             "and a first result too long alone is cut; truncated says so")
    parser.add_argument("--metadata-only", action="store_true", help="paths, titles, scores and metadata; no chunk text")
    parser.add_argument("--recency-half-life", type=cli.number_in(0.01, 1e6, float), metavar="DAYS",
                        help="rank newer personal chunks higher; age DAYS halves the boost (default: config recency_half_life_days)")
    parser.add_argument("--rerank", action="store_true", help="reorder the top candidates with a local cross-encoder, if one is configured")
    parser.add_argument("--explain", action="store_true", help="add each result's ranks and scores per stage")
    parser.add_argument("--no-refresh", action="store_true",
                        help="do not bring in personal files changed since the index (see 'fresh at search time' below)")
    parser.add_argument("--verbose", action="store_true", help="every stored metadata field (default: only what to cite)")
    parser.add_argument("--format", choices=["json", "text"], default="json", help="json for agents (default), text for people")
    parser.add_argument("--no-resident", action="store_true",
                        help="answer in this process, without the resident searcher (see 'resident searcher' below)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.query.strip():
        parser.error("the query is empty; give the question in plain words (a query starting with - goes after --)")
    return cli.run(lambda: search(args), json_errors=args.format == "json")


def search(args: argparse.Namespace) -> int:
    """Answered by the resident searcher when one runs for these settings (started after a cold answer otherwise)."""
    from rag_search.serve import client

    return client.answer("search", args, cli.settings(args), off=args.no_resident)


if __name__ == "__main__":
    sys.exit(main())
