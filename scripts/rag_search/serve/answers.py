"""The answers of the reading scripts (search.py, get.py, status.py, memory.py list and query) and of the MCP tools
that stand for them, for a parsed command line: answered cold or warm by the same code.

Each answer function takes the script's parsed options (an argparse.Namespace; an
MCP tool names its arguments as those options), the settings, a WarmIndex or None,
and `say`, which takes what the script says on stderr (a note that the index is
stale or not built yet, that --rerank is ignored); it returns the JSON document.
answer() prints it as the script does.

Cold: this process embeds the query while a child process opens the index and
reads it (isolation.py: a damaged store must not crash the caller). Warm: the
resident searcher's (or the MCP server's) WarmIndex answers, already loaded. Both
print through the same formatting, so the resident searcher's answer is the cold
answer, byte for byte. Where the warm index cannot serve (an index of another
model, say), the searcher answers the cold way, which says what is wrong as a
cold call would.
"""

import argparse
import contextlib
import sys

from ..core import cli
from ..core.config import Settings
from ..core.errors import RagSearchError
from . import output


def on_stderr(line: str) -> None:
    """How a script says a note: one line on stderr."""
    print(line, file=sys.stderr)


def answer(command: str, args: argparse.Namespace, settings: Settings, warm=None) -> int:
    """Print the answer to a script's `command` (COMMANDS) for its parsed `args` on stdout, its notes on stderr; the exit
    code. `settings`: those of `args` (the client's, or the resident searcher's, which checked that they are the same);
    `warm`: a WarmIndex to answer from."""
    answer_of, as_text = COMMANDS[command]
    _print(args, answer_of(args, settings, warm), as_text)
    return 0


def print_memory(args: argparse.Namespace, payload: dict) -> None:
    """What every memory.py command prints: the JSON, or the text for --format text."""
    _print(args, payload, output.memory_text)


def _print(args: argparse.Namespace, payload: dict, as_text) -> None:
    print(cli.to_json(payload) if args.format == "json" else as_text(payload), flush=True)


def search(args: argparse.Namespace, settings: Settings, warm=None, say=on_stderr) -> dict:
    """search.py's answer: the ranked chunks, with "stale" when personal files changed since the index were not brought in."""
    settings = settings._replace(recency_half_life_days=args.recency_half_life or settings.recency_half_life_days)
    result, stale = _cold(args, settings, say) if warm is None else _warm(args, settings, warm, say)
    payload = output.result_payload(result, metadata_only=args.metadata_only, explain=args.explain, verbose=args.verbose)
    if stale:
        payload["stale"] = stale
    return output.within_budget(payload, args.max_tokens)


def _options(args: argparse.Namespace, settings: Settings):
    from ..search.retrieval import SearchOptions

    return SearchOptions(top_k=args.top_k, mode=args.mode, sources=args.source, since=args.since, until=args.until,
                         types=args.types, tags=args.tags, kinds=args.kinds, min_score=args.min_score, per_file=args.per_file,
                         recency_half_life_days=settings.recency_half_life_days)


def _warm(args: argparse.Namespace, settings: Settings, warm, say):
    if args.rerank and (why_not := warm.reranker()[1]):
        say(_no_reranker(why_not))
    result, stale = warm.search(args.query, _options(args, settings), args.index, args.rerank, refresh=not args.no_refresh)
    for note in warm.notes:
        say(f"note: {note}")
    if stale:
        say(warm.stale_note)
    return result, stale


def _cold(args: argparse.Namespace, settings: Settings, say):
    from ..model.embedding import find_model
    from ..search.rerank import find_rerank_model

    model = find_model(settings.model_dir)
    rerank_model = None
    if args.rerank:
        rerank_model, why_not = find_rerank_model(settings)
        if rerank_model is None:
            say(_no_reranker(why_not))
    stale = _freshen_cold(settings, say) if args.index != "docs" and not args.no_refresh else None
    return _search_isolated(settings, model, args.index, args.query, _options(args, settings), args.source, rerank_model, say), stale


def _search_isolated(settings: Settings, model, index: str, query: str, options, sources: list[str] | None = None,
                     rerank_model=None, say=None):
    """The SearchResult of a cold search: a child process opens the index and searches it (a damaged store must not
    crash us) while this one embeds the query (the child's half a second of ChromaDB imports). The child says its
    notes (an index not built yet) by `say`, if given."""
    from ..model.embedding import query_embedder
    from ..safety.isolation import run_isolated
    from ..search.rerank import CrossEncoderReranker
    from ..search.retrieval import open_stores, stores_for
    from ..search.retrieval import search as run_search
    from ..store.store import fingerprint

    expected = fingerprint(model, settings.embedding)

    def read_index(receive_vector):
        stores, notes = open_stores(settings, index, expected)
        try:
            for note in notes if say else ():
                say(f"note: {note}")
            reranker = CrossEncoderReranker(rerank_model) if rerank_model else None
            return run_search(stores_for(stores, sources), query, receive_vector(), options, reranker)
        finally:
            for store in stores.values():
                store.close()

    return run_isolated(read_index, lambda: query_embedder(settings.data_dir, model, settings.embedding).embed([query])[0])


def _no_reranker(why_not: str) -> str:
    return f"note: --rerank ignored: {why_not}; keeping the fused order"


def _freshen_cold(settings: Settings, say) -> dict | None:
    """Bring personal files changed since the index in before searching (a few, if the index is free this instant);
    otherwise the staleness to report. The index is written in a child process, like it is read."""
    from ..safety.isolation import run_isolated
    from .freshness import bring_in, find_changes, stale_note, stale_report

    changes = find_changes(settings)
    if changes is None or not changes.count:
        return None
    if changes.small and run_isolated(lambda _: bring_in(settings, changes), lambda: None):
        return None
    say(stale_note(changes))
    return stale_report(changes)


def get(args: argparse.Namespace, settings: Settings, warm=None, say=on_stderr) -> dict:
    """get.py's answer: the document, section or chunk `args.reference` names."""
    from .documents import get as read_back

    def read(stores):
        return read_back(stores, args.reference, args.context, settings.data_dir, settings.max_file_bytes, section=args.section,
                         max_chars=args.max_chars)

    return _read_published(settings, warm, read, needs_index=True)


def status(args: argparse.Namespace, settings: Settings, warm=None, say=on_stderr) -> dict:
    """status.py's answer: what is indexed and how fresh, and the timer (asked of systemd while the index is read)."""
    from .status import collect
    from .timer import timer_state

    return _read_published(settings, warm, lambda stores: collect(settings, stores, with_timer=False),
                           beside=lambda: timer_state(settings.unit_dir))


def _read_published(settings: Settings, warm, read, beside=None, needs_index: bool = False):
    """read(stores) over the published collections, with beside()'s value as "timer" when given: from the warm
    index's open stores, or (cold, or when they cannot serve) in a child process that opens them (no model needed)."""
    stores = None
    if warm is not None:
        with contextlib.suppress(RagSearchError):  # else the cold way says what is wrong, as a cold call would
            stores = warm.searcher().refresh()
    if stores is not None:
        found = read(stores)
        return {**found, "timer": beside()} if beside else found
    from ..safety.isolation import run_isolated
    from ..store.store import nothing_built, open_published

    def in_child(receive):
        stores = open_published(settings)
        try:
            if needs_index and not stores:
                raise nothing_built()
            found = read(stores)
            return {**found, "timer": receive()} if beside else found
        finally:
            for store in stores.values():
                store.close()

    return run_isolated(in_child, beside or (lambda: None))


def memory_list(args: argparse.Namespace, settings: Settings, warm=None, say=on_stderr) -> dict:
    """memory.py list's answer: the memory entries, newest first (a file read: warm or cold alike)."""
    from . import memory

    entries, problem = memory.listing(settings, memory.entry_filters(args.since, args.types, args.tags), args.loop_id)
    if problem is not None:
        say(f"warning: {problem} (hint: {problem.hint})")
    return {"memory_file": str(settings.memory_file), "count": len(entries),
            "entries": [{**entry.fields, "file": entry.file} for entry in entries]}


def memory_query(args: argparse.Namespace, settings: Settings, warm=None, say=on_stderr) -> dict:
    """memory.py query's answer: the entries closest to `args.text`, by meaning and keywords."""
    from ..model.embedding import find_model
    from . import memory

    options = memory.query_options(settings, memory.entry_filters(args.since, args.types, args.tags), args.top_k, args.loop_id)
    hits = None
    if warm is not None:
        with contextlib.suppress(RagSearchError):  # else the cold way says what is wrong, as a cold call would
            hits = warm.searcher().search(args.text, options, "personal").hits
    if hits is None:
        hits = _search_isolated(settings, find_model(settings.model_dir), "personal", args.text, options).hits
    return {"query": args.text, "memory_file": str(settings.memory_file),
            "entries": memory.query_entries(hits, args.top_k, args.loop_id)}


# What a client may ask the resident searcher for (client.answer): the function that answers it either way, and the
# text its script prints for --format text.
COMMANDS = {"search": (search, output.to_text), "get": (get, output.document_text), "status": (status, output.status_text),
            "memory_list": (memory_list, output.memory_text), "memory_query": (memory_query, output.memory_text)}
