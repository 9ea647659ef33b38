"""Finding the chunks that answer a query, across the personal and docs collections.

Hybrid by default: the nearest chunks by meaning (ChromaDB, cosine) and the
best chunks by keywords (BM25 over the same chunks) are fused with reciprocal
rank fusion, so an exact identifier and a paraphrase can both be found. Then
filters, recency, an optional cross-encoder, the per-file cap and the token
budget shape the page.

Every hit's `score` is the cosine similarity of chunk and query (0 to 1) in
every mode, so --min-score means the same thing everywhere; the order is the
mode's ranking, which in hybrid mode is the fused one.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import lexical
from .errors import IndexNotBuilt
from .store import COLLECTIONS, INDEX_COMMANDS, Store

MODES = ("hybrid", "dense", "lexical")
SECONDS_PER_DAY = 86400.0
CHARS_PER_TOKEN = 4  # the usual estimate for English text and code


@dataclass
class SearchOptions:
    top_k: int = 5
    mode: str = "hybrid"
    sources: list[str] | None = None  # source ids: "personal" or doc source ids
    since: float | None = None  # epoch seconds, on the chunk's date
    until: float | None = None
    min_score: float | None = None  # on the cosine score
    per_file: int = 2  # at most this many chunks of one file; 0 = no limit
    max_tokens: int | None = None  # budget for the text of all results
    recency_half_life_days: float | None = None  # personal chunks: newer ranks higher
    # Fusion settings, tuned on SciFact's 809 train queries with bench/eval_beir.py --grid (k=10 beat 30, 60, 100).
    depth: int = 50  # candidates taken from each retriever
    rrf_k: int = 10
    dense_weight: float = 1.0
    lexical_weight: float = 1.0


@dataclass
class Hit:
    id: str
    collection: str
    score: float  # cosine similarity of chunk and query, clipped to 0..1
    text: str
    metadata: dict
    explain: dict = field(default_factory=dict)  # ranks and scores of each stage


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    searched: list[str]
    total_chunks: int
    mode: str = "hybrid"
    notes: list[str] = field(default_factory=list)  # for stderr: e.g. an index not built yet
    truncated: bool = False  # the token budget cut the list short


def open_collections(store: Store, index: str, expected: dict) -> tuple[dict, list[str]]:
    """The collections to search for --index personal|docs|all, and notes about missing ones.

    Asking for one index that was never built is an error; with `all`, a
    missing one is skipped with a note, and it is an error only if none exists.
    """
    names = COLLECTIONS if index == "all" else (index,)
    opened, notes = {}, []
    for name in names:
        try:
            opened[name] = store.collection_for_search(name, expected)
        except IndexNotBuilt as exc:
            if index != "all":
                raise
            notes.append(str(exc))
    if not opened:
        raise IndexNotBuilt(
            "no index has been built yet",
            hint=f"run {INDEX_COMMANDS['personal']} and/or {INDEX_COMMANDS['docs']}",
        )
    return opened, notes


def search(store: Store, collections: dict, query: str, vector: np.ndarray, options: SearchOptions, reranker=None) -> SearchResult:
    """Rank chunks of `collections` for `query` (embedded as `vector`) as `options` say."""
    total = sum(collection.count() for collection in collections.values())
    candidates: dict[str, Hit] = {}
    dense_order: list[str] = []
    lexical_order: list[str] = []
    if options.mode in ("hybrid", "dense"):
        dense_order = _dense(collections, vector, options, candidates)
    if options.mode in ("hybrid", "lexical"):
        lexical_order = _lexical(store, collections, query, options, candidates)
    _fill_missing(collections, vector, candidates)

    ranking = _rank(candidates, dense_order, lexical_order, options)
    hits = [candidates[chunk_id] for chunk_id in ranking]
    if options.min_score is not None:
        hits = [hit for hit in hits if hit.score >= options.min_score]
    if reranker is not None:
        hits = reranker.rerank(query, hits[: max(options.top_k * 4, 20)])
    hits = _cap_per_file(hits, options.per_file)[: options.top_k]
    hits, truncated = _within_budget(hits, options.max_tokens)
    return SearchResult(query, hits, list(collections), total, options.mode, truncated=truncated)


def _where(options: SearchOptions) -> dict | None:
    """The ChromaDB metadata filter for --source, --since and --until."""
    clauses = []
    if options.sources:
        clauses.append({"source_id": {"$in": list(options.sources)}})
    if options.since is not None:
        clauses.append({"date_ts": {"$gte": options.since}})
    if options.until is not None:
        clauses.append({"date_ts": {"$lte": options.until}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _dense(collections: dict, vector: np.ndarray, options: SearchOptions, candidates: dict) -> list[str]:
    """Nearest chunks by cosine similarity, all collections merged; ids best first."""
    found: list[Hit] = []
    where = _where(options)
    for name, collection in collections.items():
        count = collection.count()
        if count == 0:
            continue
        result = collection.query(
            query_embeddings=[vector.tolist()],
            n_results=min(options.depth, count),
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        for chunk_id, text, metadata, distance in zip(
            result["ids"][0], result["documents"][0], result["metadatas"][0], result["distances"][0], strict=True
        ):
            found.append(Hit(chunk_id, name, _clip(1.0 - distance), text or "", dict(metadata or {})))
    found.sort(key=lambda hit: hit.score, reverse=True)
    for rank, hit in enumerate(found, start=1):
        hit.explain.update(dense_rank=rank, cosine=round(hit.score, 4))
        candidates[hit.id] = hit
    return [hit.id for hit in found]


def _lexical(store: Store, collections: dict, query: str, options: SearchOptions, candidates: dict) -> list[str]:
    """Best chunks by BM25 over the same collections and filters; ids best first."""
    match = lexical.match_expression(query)
    if match is None:
        return []
    rows = store.catalog.keyword_search(
        match, list(collections), options.depth, options.sources, options.since, options.until
    )
    for rank, (chunk_id, name, bm25) in enumerate(rows, start=1):
        hit = candidates.setdefault(chunk_id, Hit(chunk_id, name, 0.0, "", {}))
        hit.explain.update(lexical_rank=rank, bm25=round(bm25, 4))
    return [row[0] for row in rows]


def _fill_missing(collections: dict, vector: np.ndarray, candidates: dict) -> None:
    """Text, metadata and cosine score for chunks only the keyword search found."""
    missing: dict[str, list[str]] = {}
    for hit in candidates.values():
        if "dense_rank" not in hit.explain:
            missing.setdefault(hit.collection, []).append(hit.id)
    for name, ids in missing.items():
        found = collections[name].get(ids=ids, include=["documents", "metadatas", "embeddings"])
        for chunk_id, text, metadata, embedding in zip(
            found["ids"], found["documents"], found["metadatas"], found["embeddings"], strict=True
        ):
            hit = candidates[chunk_id]
            hit.text, hit.metadata = text or "", dict(metadata or {})
            hit.score = _clip(float(np.dot(np.asarray(embedding, dtype=np.float32), vector)))
            hit.explain["cosine"] = round(hit.score, 4)
        for chunk_id in set(ids) - set(found["ids"]):
            del candidates[chunk_id]  # in the keyword index but not among the vectors: never show it


def _rank(candidates: dict, dense_order: list[str], lexical_order: list[str], options: SearchOptions) -> list[str]:
    """Candidate ids in the mode's order, with recency applied to personal chunks."""
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
    return sorted((chunk_id for chunk_id in order if chunk_id in candidates), key=lambda chunk_id: keys[chunk_id], reverse=True)


def _cap_per_file(hits: list[Hit], per_file: int) -> list[Hit]:
    """At most `per_file` chunks of any one file, so one long file cannot fill the page."""
    if per_file <= 0:
        return hits
    seen: dict[tuple, int] = {}
    kept = []
    for hit in hits:
        key = (hit.collection, hit.metadata.get("file"))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= per_file:
            kept.append(hit)
    return kept


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _within_budget(hits: list[Hit], max_tokens: int | None) -> tuple[list[Hit], bool]:
    """The leading hits whose text fits in `max_tokens`; the first is cut to fit if it alone is too long."""
    if not max_tokens:
        return hits, False
    kept, used = [], 0
    for hit in hits:
        cost = estimate_tokens(hit.text)
        if used + cost > max_tokens:
            if not kept:
                hit.text = hit.text[: max_tokens * CHARS_PER_TOKEN]
                hit.explain["cut_to_budget"] = True
                kept.append(hit)
            return kept, True
        kept.append(hit)
        used += cost
    return kept, False


def _clip(similarity: float) -> float:
    return float(min(1.0, max(0.0, similarity)))
