#!/usr/bin/env python3
"""Search your personal context and the indexed documentation; prints ranked chunks as JSON."""

import argparse
import sys

from rag_search.cli import use_project_venv

use_project_venv()

from rag_search import cli  # noqa: E402
from rag_search.config import data_dir  # noqa: E402

EPILOG = """output (JSON on stdout):
  {"query", "results": [{"rank", "score", "source", "file", "chunk", "metadata"}],
   "searched_collections", "total_chunks_searched"}}
  score is the cosine similarity of chunk and query, 0 to 1, higher is better.
  No match is not an error: exit 0 with an empty "results" list."""


def top_k(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 100:
        raise argparse.ArgumentTypeError("must be between 1 and 100")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("search.py", __doc__, EPILOG)
    parser.add_argument("query", help="what to look for, in plain words")
    parser.add_argument("--index", choices=["personal", "docs", "all"], default="all", help="which collection to search (default: all)")
    parser.add_argument("--top-k", type=top_k, default=5, metavar="N", help="number of results, 1-100 (default: 5)")
    parser.add_argument("--format", choices=["json", "text"], default="json", help="json for agents (default), text for people")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cli.setup_logging(quiet=True)
    return cli.run(lambda: search(args), json_errors=args.format == "json")


def search(args: argparse.Namespace) -> int:
    from rag_search import output
    from rag_search.embedding import SentenceTransformerEmbedder, find_model
    from rag_search.retrieval import dense_search, open_collections
    from rag_search.store import Store, fingerprint

    model = find_model()
    expected = fingerprint(model)
    store = Store.open_for_reading(data_dir(args.data_dir))
    try:
        collections, notes = open_collections(store, args.index, expected)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        vector = SentenceTransformerEmbedder(model).embed([args.query])[0]
        result = dense_search(collections, args.query, vector, args.top_k)
    finally:
        store.close()
    payload = output.result_payload(result)
    print(output.to_json(payload) if args.format == "json" else output.to_text(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
