"""What search.py prints for a parsed command line, answered cold or warm by the same code.

Cold: this process embeds the query while a child process opens the index and
searches it (isolation.py: a damaged store must not crash the caller). Warm: the
resident searcher's WarmIndex answers, already loaded. Both print through the same
formatting, so the resident searcher's answer is the cold answer, byte for byte.
"""

import argparse
import dataclasses
import sys

from . import cli, output
from .config import Settings


def search(args: argparse.Namespace, settings: Settings, warm=None) -> int:
    """Print the answer to search.py's `args` on stdout (notes on stderr); the exit code. `settings`: those of `args`
    (the client's, or the resident searcher's, which checked that they are the same); `warm`: a WarmIndex to answer
    from."""
    settings = dataclasses.replace(settings, recency_half_life_days=args.recency_half_life or settings.recency_half_life_days)
    result, stale = _cold(args, settings) if warm is None else _warm(args, settings, warm)
    payload = output.result_payload(result, metadata_only=args.metadata_only, explain=args.explain, verbose=args.verbose)
    if stale:
        payload["stale"] = stale
    payload = output.within_budget(payload, args.max_tokens)
    print(cli.to_json(payload) if args.format == "json" else output.to_text(payload))
    return 0


def _options(args: argparse.Namespace, settings: Settings):
    from .retrieval import SearchOptions

    return SearchOptions(top_k=args.top_k, mode=args.mode, sources=args.source, since=args.since, until=args.until,
                         types=args.types, tags=args.tags, min_score=args.min_score, per_file=args.per_file,
                         recency_half_life_days=settings.recency_half_life_days)


def _warm(args: argparse.Namespace, settings: Settings, warm):
    if args.rerank and (why_not := warm.reranker()[1]):
        _say_no_reranker(why_not)
    result, stale = warm.search(args.query, _options(args, settings), args.index, args.rerank, refresh=not args.no_refresh)
    for note in warm.notes:
        print(f"note: {note}", file=sys.stderr)
    if stale:
        print(warm.stale_note, file=sys.stderr)
    return result, stale


def _cold(args: argparse.Namespace, settings: Settings):
    from .embedding import find_model, query_embedder
    from .isolation import run_isolated
    from .rerank import CrossEncoderReranker, find_rerank_model
    from .retrieval import open_stores, stores_for
    from .retrieval import search as run_search
    from .store import fingerprint

    model = find_model(settings.model_dir)
    expected = fingerprint(model, settings.embedding)
    options = _options(args, settings)
    rerank_model = None
    if args.rerank:
        rerank_model, why_not = find_rerank_model(settings)
        if rerank_model is None:
            _say_no_reranker(why_not)

    def read_index(receive_vector):
        """In a child process (a damaged store must not crash us): open the index, then search."""
        stores, notes = open_stores(settings, args.index, expected)
        try:
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
            reranker = CrossEncoderReranker(rerank_model) if rerank_model else None
            return run_search(stores_for(stores, args.source), args.query, receive_vector(), options, reranker)
        finally:
            for store in stores.values():
                store.close()

    def vector():
        """In this process, while the child opens ChromaDB (half a second of imports)."""
        return query_embedder(settings.data_dir, model, settings.embedding).embed([args.query])[0]

    stale = _freshen_cold(settings) if args.index != "docs" and not args.no_refresh else None
    return run_isolated(read_index, vector), stale


def _say_no_reranker(why_not: str) -> None:
    print(f"note: --rerank ignored: {why_not}; keeping the fused order", file=sys.stderr)


def _freshen_cold(settings: Settings) -> dict | None:
    """Bring personal files changed since the index in before searching (a few, if the index is free this instant);
    otherwise the staleness to report. The index is written in a child process, like it is read."""
    from .freshness import bring_in, find_changes, stale_note, stale_report
    from .isolation import run_isolated

    changes = find_changes(settings)
    if changes is None or not changes.count:
        return None
    if changes.small and run_isolated(lambda _: bring_in(settings, changes), lambda: None):
        return None
    print(stale_note(changes), file=sys.stderr)
    return stale_report(changes)
