"""Finding the chunks that answer a query, across the personal and docs collections.

Hybrid by default: the nearest chunks by meaning (ChromaDB, cosine) and the
best chunks by keywords (BM25 over the same chunks) are fused with reciprocal
rank fusion, so an exact identifier and a paraphrase can both be found. Pages
are then ranked by their combined evidence, not by one lucky chunk: each
section of a page counts with its best chunk, and a page's score is the damped
sum of its sections' (a page that answers in many sections beats a page with
one chance match; a long section split into several chunks counts once, so
length alone earns nothing). Each page shows its best chunks, best first.
Then recency, an optional cross-encoder and the per-file cap shape the page (the
token budget is the formatter's: it counts the answer as printed, output.py).

Every hit's `score` is the cosine similarity of chunk and query (0 to 1) in
every mode, so --min-score means the same thing everywhere; the order is the
mode's ranking, which in hybrid mode is the fused one.
"""

import contextlib
import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import lexical
from .config import Settings
from .datadir import MARKER
from .embedding import find_model, query_embedder
from .errors import IndexNotBuilt, UsageError
from .parsing import normalize_tag
from .records import Filters, Hit
from .store import COLLECTIONS, INDEX_COMMANDS, Store, fingerprint, nothing_built

MODES = ("hybrid", "dense", "lexical")
RECORD_KINDS = ("json", "jsonl")  # a file of records: each record stands alone, it is not a section of a page
SECONDS_PER_DAY = 86400.0
PERSONAL = "personal"  # the personal collection, and the source id of its documents
NOTES_SAID = ".notes-said"


@dataclass
class SearchOptions:
    top_k: int = 5
    mode: str = "hybrid"
    sources: list[str] | None = None  # source ids: "personal" or doc source ids
    since: float | None = None  # epoch seconds, on the chunk's date
    until: float | None = None
    types: list[str] | None = None  # record types, any of them
    tags: list[str] | None = None  # tags, every one of them
    min_score: float | None = None  # on the cosine score
    per_file: int = 2  # at most this many chunks of one file; 0 = no limit
    recency_half_life_days: float | None = None  # personal chunks: newer ranks higher
    # Fusion settings, tuned on SciFact's 809 train queries with bench/eval_beir.py --grid (k=10 beat 30, 60, 100).
    depth: int = 50  # candidates taken from each retriever
    rrf_k: int = 10
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    # Hybrid: a page scores S1 + d*S2 + d^2*S3 ..., its sections' best fused scores, highest first; 0 ranks a page by its
    # best chunk. Tuned on docs-faq dev with SciFact train (bench/eval_docs.py, bench/eval_beir.py).
    page_decay: float = 1.0
    # A section after a page's best counts only if its cosine (when the dense list has it) is at least this fraction of
    # the query's best cosine. In a small index every chunk is a candidate, and sections that barely relate to the
    # question lifted long pages over the note that answers it. No ranking moved on docs-faq dev and test, SciFact test.
    section_floor: float = 0.5

    @property
    def filters(self) -> Filters:
        return Filters(tuple(self.sources or ()), self.since, self.until, tuple(self.types or ()),
                       tuple(normalize_tag(tag) for tag in self.tags or ()))


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    searched: list[str]
    total_chunks: int
    mode: str = "hybrid"
    notes: list[str] = field(default_factory=list)  # for stderr: e.g. an index not built yet
    reindex: dict[str, str] = field(default_factory=dict)  # collection -> why to rebuild it (it still answered)


def first_time(settings: Settings, note: str) -> bool:
    """Whether `note` is news for this data dir: true once, remembered in <data dir>/.notes-said (best effort).

    "The docs index has not been built yet" is worth saying once, not on every search of someone who uses only
    the personal index.
    """
    said = settings.data_dir / NOTES_SAID
    if not (settings.data_dir / MARKER).is_file():
        return True  # not a data dir of ours (yet): nothing is written there
    try:
        if note in said.read_text(encoding="utf-8").splitlines():
            return False
    except (OSError, UnicodeDecodeError):
        pass
    with contextlib.suppress(OSError):
        with open(said, "a", encoding="utf-8") as out:
            out.write(" ".join(note.split()) + "\n")
    return True


def check_query(query: str) -> str:
    """The query, unless it is empty or blank (which would match nothing, or everything)."""
    if not query.strip():
        raise UsageError("the query is empty", hint="give the question in plain words; a query starting with - goes after --")
    return query


def open_store(settings: Settings, name: str, expected: dict) -> Store:
    """The published index of one collection, checked against the model's fingerprint: one built by an earlier version
    whose vectors still answer this install's queries is searched, and says to reindex."""
    store = Store.open_for_reading(settings, name, expected)
    try:
        store.reindex = store.check_built_as(expected)
        store.load_vectors()
    except BaseException:
        store.close()
        raise
    if store.reindex:
        store.notes.append(store.reindex)
    return store


def open_stores(settings: Settings, index: str, expected: dict) -> tuple[dict[str, Store], list[str]]:
    """The stores to search for --index personal|docs|all, and notes about missing ones.

    Asking for one index that was never built is an error; with `all`, a missing
    one is skipped with a note (said once per data dir), and it is an error only
    if none exists.
    """
    names = COLLECTIONS if index == "all" else (index,)
    optional = index == "all"
    opened: dict[str, Store] = {}
    notes: list[str] = []
    try:
        for name in names:
            try:
                opened[name] = open_store(settings, name, expected)
            except IndexNotBuilt as exc:
                if not optional:
                    raise
                notes += [str(exc)] if first_time(settings, str(exc)) else []
                continue
            notes += opened[name].notes
    except BaseException:
        for store in opened.values():
            store.close()
        raise
    if not opened:
        raise nothing_built()
    return opened, notes


def stores_for(stores: dict[str, Store], sources: list[str] | None) -> dict[str, Store]:
    """The open stores that hold these sources (all of them without --source), so that only those are searched;
    an unknown source id is an error naming the known ones."""
    if not sources:
        return stores
    known = {name: store.source_ids() | ({PERSONAL} if name == PERSONAL else set()) for name, store in stores.items()}
    every = set().union(*known.values())
    unknown = [source_id for source_id in sources if source_id not in every]
    if unknown:
        hint = "see add_doc_source.py --list" if "docs" in stores else "doc source ids are in the docs index (--index docs or all)"
        raise UsageError(f"unknown source id(s) {', '.join(unknown)}; known: {', '.join(sorted(every)) or 'none'}", hint=hint)
    return {name: store for name, store in stores.items() if known[name] & set(sources)}


class Searcher:
    """A warm search for many queries in one process (the MCP server, benchmarks): the model stays loaded and the
    stores stay open, but follow index runs. Before each search, a collection whose published generation changed is
    reopened and the old store closed, which releases its read lock so the next run can delete that generation."""

    def __init__(self, settings: Settings, index: str = "all"):
        model = find_model(settings.model_dir)
        self.settings = settings
        self.index = index
        self.expected = fingerprint(model, settings.embedding)
        self.embedder = query_embedder(settings.data_dir, model, settings.embedding)
        self.stores: dict[str, Store] = {}
        self.notes: list[str] = []  # what the last refresh found: e.g. an index not built yet

    def refresh(self) -> dict[str, Store]:
        """Open what was published since the last call (a collection built meanwhile too); the open stores.

        A reopen that fails leaves the old store serving and raises, so the caller sees the problem.
        """
        self.notes = []
        for name in COLLECTIONS if self.index == "all" else (self.index,):
            current = self.stores.get(name)
            if current is not None and not current.is_stale():
                continue
            try:
                fresh = open_store(self.settings, name, self.expected)
            except IndexNotBuilt as exc:
                if current is None and self.index == "all":
                    self.notes += [str(exc)] if first_time(self.settings, str(exc)) else []
                    continue
                raise
            self.notes += fresh.notes
            self.stores[name] = fresh
            if current is not None:
                current.close()
        if not self.stores:
            raise nothing_built()
        return self.stores

    def search(self, query: str, options: SearchOptions, index: str = "all", reranker=None) -> SearchResult:
        """Search the open stores (or only the collection `index`), reopening first what an index run published."""
        check_query(query)
        stores = self.refresh()
        if index != "all":
            if index not in stores:
                raise IndexNotBuilt(f"the {index} index has not been built yet", hint=f"run {INDEX_COMMANDS[index]}")
            stores = {index: stores[index]}
        stores = stores_for(stores, options.sources)
        return search(stores, query, self.embedder.embed([query])[0], options, reranker)

    def close(self) -> None:
        for store in self.stores.values():
            store.close()
        self.stores = {}


def search(stores: dict[str, Store], query: str, vector: np.ndarray, options: SearchOptions, reranker=None) -> SearchResult:
    """Rank chunks of the `stores` for `query` (embedded as `vector`) as `options` say."""
    total = sum(store.chunk_count() for store in stores.values())
    candidates: dict[str, Hit] = {}
    dense_order: list[str] = []
    lexical_order: list[str] = []
    if options.mode in ("hybrid", "dense"):
        dense_order = _dense(stores, vector, options, candidates)
    if options.mode in ("hybrid", "lexical"):
        lexical_order = _lexical(stores, query, options, candidates)
    _fill_text(stores, candidates)
    if options.min_score is not None:
        candidates = {hit.id: hit for hit in _scored(stores, vector, list(candidates.values())) if hit.score >= options.min_score}

    hits = [candidates[chunk_id] for chunk_id in _rank(candidates, dense_order, lexical_order, options)]
    if reranker is not None:
        hits = reranker.rerank(query, hits[: max(options.top_k * 4, 20)])
    hits = _first_scored(stores, vector, _cap_per_file(hits, options.per_file), options.top_k)
    return SearchResult(query, hits, list(stores), total, options.mode,
                        reindex={name: store.reindex for name, store in stores.items() if store.reindex})


def _dense(stores: dict[str, Store], vector: np.ndarray, options: SearchOptions, candidates: dict) -> list[str]:
    """Nearest chunks by cosine similarity, all collections merged; ids best first."""
    found = [hit for store in stores.values() for hit in store.dense(vector, options.depth, options.filters)]
    found.sort(key=lambda hit: hit.score, reverse=True)
    for rank, hit in enumerate(found, start=1):
        hit.explain.update(dense_rank=rank, cosine=round(hit.score, 4))
        candidates[hit.id] = hit
    return [hit.id for hit in found]


def _lexical(stores: dict[str, Store], query: str, options: SearchOptions, candidates: dict) -> list[str]:
    """Best chunks by BM25 over the same collections and filters; ids best first."""
    match = lexical.match_expression(query)
    if match is None:
        return []
    rows = [(chunk_id, name, bm25) for name, store in stores.items()
            for chunk_id, bm25 in store.keyword(match, options.depth, options.filters)]
    rows.sort(key=lambda row: row[2], reverse=True)
    for rank, (chunk_id, name, bm25) in enumerate(rows[: options.depth], start=1):
        hit = candidates.setdefault(chunk_id, Hit(chunk_id, name, 0.0, "", {}))
        hit.explain.update(lexical_rank=rank, bm25=round(bm25, 4))
    return [row[0] for row in rows[: options.depth]]


def _fill_text(stores: dict[str, Store], candidates: dict) -> None:
    """Text and metadata for chunks only the keyword search found (ranking needs no vectors)."""
    for name, store in stores.items():
        missing = [hit for hit in candidates.values() if hit.collection == name and "dense_rank" not in hit.explain]
        kept = {hit.id for hit in store.fill_text(missing)} if missing else set()
        for hit in missing:
            if hit.id not in kept:
                del candidates[hit.id]


def _scored(stores: dict[str, Store], vector: np.ndarray, hits: list[Hit]) -> list[Hit]:
    """`hits` in order, those found by keyword only given their cosine score; one without a vector is dropped (in the
    keyword index but not among the vectors: never show it)."""
    for name, store in stores.items():
        missing = [hit for hit in hits if hit.collection == name and "cosine" not in hit.explain]
        for hit in store.fill_scores(missing, vector) if missing else []:
            hit.explain["cosine"] = round(hit.score, 4)
    return [hit for hit in hits if "cosine" in hit.explain]


def _first_scored(stores: dict[str, Store], vector: np.ndarray, hits: list[Hit], top_k: int) -> list[Hit]:
    """The first `top_k` of `hits` that have a vector. Only these need a score: reading the vectors of every
    keyword-only candidate cost each search several milliseconds."""
    kept: list[Hit] = []
    start = 0
    while len(kept) < top_k and start < len(hits):
        batch = hits[start : start + top_k - len(kept)]
        start += len(batch)
        kept += _scored(stores, vector, batch)
    return kept


def _rank(candidates: dict, dense_order: list[str], lexical_order: list[str], options: SearchOptions) -> list[str]:
    """Candidate ids in the mode's order, with recency applied to personal chunks; in hybrid mode, page by page."""
    now = time.time()
    keys: dict[str, float] = {}
    for chunk_id, hit in candidates.items():
        if options.mode == "dense":
            key = hit.score
        elif options.mode == "lexical":
            key = hit.explain.get("bm25", 0.0)
        else:
            key = 0.0
            if "dense_rank" in hit.explain:
                key += options.dense_weight / (options.rrf_k + hit.explain["dense_rank"])
            if "lexical_rank" in hit.explain:
                key += options.lexical_weight / (options.rrf_k + hit.explain["lexical_rank"])
            hit.explain["rrf"] = round(key, 6)
        if options.recency_half_life_days and hit.collection == "personal" and hit.metadata.get("date_ts") is not None:
            age_days = max(0.0, (now - float(hit.metadata["date_ts"])) / SECONDS_PER_DAY)
            factor = 0.5 + 0.5 * math.pow(0.5, age_days / options.recency_half_life_days)
            hit.explain["recency"] = round(factor, 4)
            key *= factor
        keys[chunk_id] = key
    order = dense_order if options.mode == "dense" else lexical_order if options.mode == "lexical" else list(candidates)
    ranked = sorted((chunk_id for chunk_id in order if chunk_id in candidates), key=lambda chunk_id: keys[chunk_id], reverse=True)
    return _by_page(ranked, candidates, keys, options) if options.mode == "hybrid" else ranked


def _by_page(ranked: list[str], candidates: dict, keys: dict[str, float], options: SearchOptions) -> list[str]:
    """Chunk ids (best first) regrouped page by page: pages by the damped sum of their sections' best keys, counting a
    section after the best only if it is close enough in meaning (options.section_floor).

    A section is a heading path of a file; a record of a JSON file is a unit of its own.
    Ties keep the order of each page's best chunk.
    """
    pages: dict[tuple, list[str]] = {}
    for chunk_id in ranked:
        hit = candidates[chunk_id]
        record = hit.metadata.get("kind") in RECORD_KINDS
        pages.setdefault((*hit.page, hit.metadata.get("heading") if record else None), []).append(chunk_id)
    cosines = [hit.explain["cosine"] for hit in candidates.values() if "cosine" in hit.explain]
    floor = options.section_floor * max(cosines) if cosines else None
    scored = []
    for first, ids in enumerate(pages.values()):
        sections = _page_sections(ids, candidates, keys, floor)
        score = sum(key * options.page_decay**i for i, key in enumerate(sections))
        for chunk_id in ids:
            candidates[chunk_id].explain.update(page_score=round(score, 6), page_sections=len(sections), page_chunks=len(ids))
        scored.append((-score, first, ids))
    scored.sort()
    return [chunk_id for _, _, ids in scored for chunk_id in ids]


def _page_sections(ids: list[str], candidates: dict, keys: dict[str, float], floor: float | None) -> list[float]:
    """The best key of each section of one page (`ids` best first), highest first: the first always, the others only if
    their best cosine reaches `floor` (a section no dense candidate is in keeps counting: its cosine is not known)."""
    best: dict[str, float] = {}
    closest: dict[str, float] = {}
    for chunk_id in ids:  # best first: the first chunk seen of a section is its best
        hit = candidates[chunk_id]
        heading = hit.metadata.get("heading", "")
        best.setdefault(heading, keys[chunk_id])
        if "cosine" in hit.explain:
            closest[heading] = max(closest.get(heading, -1.0), hit.explain["cosine"])
    ordered = sorted(best, key=best.get, reverse=True)
    return [best[heading] for n, heading in enumerate(ordered)
            if n == 0 or floor is None or heading not in closest or closest[heading] >= floor]


def _cap_per_file(hits: list[Hit], per_file: int) -> list[Hit]:
    """At most `per_file` chunks of any one file, so one long file cannot fill the page."""
    if per_file <= 0:
        return hits
    seen: dict[tuple, int] = {}
    kept = []
    for hit in hits:
        seen[hit.page] = seen.get(hit.page, 0) + 1
        if seen[hit.page] <= per_file:
            kept.append(hit)
    return kept

