#!/usr/bin/env python3
"""Read what a search result points to: the whole document, or one chunk with its neighbours."""

import argparse
import sys

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli  # noqa: E402

EXIT_CODES = (0, 1, 2, 3, 6, 7)
MEANINGS = {2: "bad command line (also --section with a chunk id, --context with --max-chars), or FILE_OR_ID names no "
                "indexed document or chunk (or several documents)",
            6: "bad input: the config file, or a data dir another user owns or can write",
            7: "store cannot be opened (damaged: the message names the rebuild)"}

EPILOG = """what to pass: a result's "file" (notes/argocd-setup.md), its metadata.path or
metadata.url, or its "id" (a chunk).

output (JSON on stdout, one line unless stdout is a terminal):
  a document: {"source", "file", "path" or "url", "indexed_at", "chunks", "from", "text"}
    "from": "file" (the file as indexed, secrets redacted as in the index),
    "saved page" (a web page's markdown as indexed), or "index" (the indexed
    chunks joined, when the file is gone or changed since it was indexed)
    with --section: also "section" (the heading path read) and "outline" (the
    document's heading paths), "from" is "index"
  a chunk: {"source", "file", "path" or "url", "indexed_at", "chunks", "id",
    "shown": [{"id", "index", "heading", "text"}]}: the chunk and --context chunks either side

--max-chars N: the whole answer (as printed on one line) in at most N characters
  (only the fields that say what the document is can overflow a tiny N). The
  outline is cut first, to the headings nearest the text shown (a quarter of the
  room, more when the text needs less), then the text, at a paragraph. Of a file,
  the text from its start (or the section's); of a chunk id, the document's text
  around that chunk (the passage a search matched), with "id". What was cut:
    "truncated": true, "total_chars" (of the whole text), "text_start" and
    "text_end" (the characters shown: text is whole_text[text_start:text_end])
    "outline": the headings kept (always, when anything was cut), and
    "outline_omitted": {"before", "after"}: how many headings were left out
    either side of them

Why a script of its own rather than search.py --get: it takes no query, needs no
model (it starts in a fraction of search's time) and has flags of its own.

resident searcher: like search.py, answered by the warm searcher when one runs for
these settings (the same JSON); --no-resident or RAG_SEARCH_RESIDENT=0 for a cold call."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("get.py", __doc__, EPILOG, EXIT_CODES, MEANINGS)
    parser.add_argument("reference", metavar="FILE_OR_ID", help="a result's file, path, URL or chunk id")
    parser.add_argument("--context", type=int, metavar="N", choices=range(0, 51),
                        help="with a chunk id (without --max-chars): the N chunks before and after it too (0-50, default 1)")
    parser.add_argument("--section", type=cli.non_empty, metavar="HEADING",
                        help="of a document: only this section and its subsections (a heading, or a result's heading path)")
    parser.add_argument("--max-chars", type=cli.number_in(1, 100_000_000), metavar="N",
                        help="the whole answer in at most N characters: the outline cut to the headings near the "
                             "text shown, then the text; with a chunk id, the document's text around that chunk")
    parser.add_argument("--format", choices=["json", "text"], default="json", help="json for agents (default), text for people")
    parser.add_argument("--no-resident", action="store_true",
                        help="answer in this process, without the resident searcher (see 'resident searcher' below)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return cli.run(lambda: get(args), json_errors=args.format == "json")


def get(args: argparse.Namespace) -> int:
    """Answered by the resident searcher when one runs for these settings, as search.py is."""
    from rag_search.serve import client

    return client.answer("get", args, cli.settings(args), off=args.no_resident)


if __name__ == "__main__":
    sys.exit(main())
