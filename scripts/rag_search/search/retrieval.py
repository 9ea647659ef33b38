"""Finding the chunks that answer a query, across the personal and docs collections.

Hybrid by default: each collection's nearest chunks by meaning (ChromaDB, cosine)
and its best chunks by keywords (BM25 over the same chunks) are gathered here,
at most a few of any one file from each retriever, each with its evidence (its
ranks in its own collection, cosine, BM25); ranking.py turns that evidence into
each collection's order (fusion, recency, page evidence), and relevance.py merges
the collections by each result's chance of answering. Then an optional
cross-encoder and the per-file cap shape the page (the token budget is the
formatter's: it counts the answer as printed, output.py).

Every hit's `score` is the cosine similarity of chunk and query (0 to 1) in
every mode, so --min-score means the same thing everywhere; the order is the
mode's ranking, which in hybrid mode is the fused one.
"""

import contextlib
import os
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.config import Settings, is_ours
from ..core.errors import IndexNotBuilt, UsageError
from ..core.private_files import open_private
from ..model.embedding import find_model, query_embedder
from ..store import lexical
from ..store.records import Filters, Hit
from ..store.store import COLLECTIONS, INDEX_COMMANDS, Store, fingerprint, join_chunks, nothing_built
from ..text.sections import normalize_tag
from . import ranking, relevance

MODES = ("hybrid", "dense", "lexical")
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
    kinds: list[str] | None = None  # documentation page kinds (page_kind.KINDS), any of them
    min_score: float | None = None  # on the cosine score
    per_file: int = 2  # at most this many chunks of one file; 0 = no limit
    recency_half_life_days: float | None = None  # personal chunks: newer ranks higher
    # Fusion settings, tuned on SciFact's 809 train queries with bench/eval_beir.py --grid (k=10 beat 30, 60, 100).
    depth: int = 50  # candidates taken from each retriever
    rrf_k: int = 10
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    # Each collection's best match in each list earns up to this much more, as far as its score stands above the
    # runner-up's (ranking.leads).
    lead: float = 0.1
    # A keyword search scores about this many chunks at most: the query's most common terms then only add to the score
    # of chunks that hold a rarer one (Catalog.common_terms, lexical.match_expression; 0 = no limit).
    keyword_budget: int = 20_000
    # At most this many candidates of one file from each retriever, so one long file (a transcript) cannot take them all.
    per_file_candidates: int = 5
    # Hybrid (ranking.py): a page scores as its best section plus page_bonus times the keys of up to page_support other
    # sections found by the keyword search whose cosine is at least section_floor of the question's best; documentation
    # pages, whose answers span sections, with docs_page_bonus and docs_page_support; and a documentation page earns
    # docs_page_closeness / (rrf_k + its rank among the candidate pages by its closeness as a whole: the cosine of its
    # chunks' mean vector), so a page about the question outranks a pointer to it (leave-one-corpus-out on docs-faq
    # picks both values in every fold: docs/benchmarks.md).
    page_bonus: float = 0.1
    page_support: int = 2
    docs_page_bonus: float = 1.0
    docs_page_support: int = 3
    docs_page_closeness: float = 0.5
    section_floor: float = 0.5
    # Hybrid and lexical: the one page of a collection that holds an identifier of the question (lexical.identifiers)
    # is ranked below no page that lacks it (ranking.holders_first).
    exact_identifiers: bool = True
    # Hybrid: a chunk of release history (page_kind "changelog": changelogs, release notes, announcements) weighs
    # 1 - history_penalty, so the guides come first, unless the question asks about a version, a release or a change
    # (ranking.asks_about_history). 0: leave-one-corpus-out over docs-faq and docs-rst picks it in 16 of 17 folds
    # (bench/eval_rst.py --loco); release history comes first for 1 of the 37 ordinary docs-rst questions at 0 and 0.25.
    history_penalty: float = 0.0
    # Hybrid: a keyword match scoring below this is left out of the fusion. BM25 weighs a term in half the chunks or
    # more at about zero (a product's name in its own docs: "Who is Linkerd for?"), and such a list's ranks say nothing.
    min_bm25: float = 0.01

    @property
    def filters(self) -> Filters:
        return Filters(tuple(self.sources or ()), self.since, self.until, tuple(self.types or ()),
                       tuple(normalize_tag(tag) for tag in self.tags or ()), tuple(self.kinds or ()))


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    searched: list[str]
    total_chunks: int
    mode: str = "hybrid"
    notes: list[str] = field(default_factory=list)  # for stderr: e.g. an index not built yet
    reindex: dict[str, str] = field(default_factory=dict)  # collection -> why to rebuild it (it still answered)
    more: dict[str, int] = field(default_factory=dict)  # both collections searched: results likely to answer, not shown
    partial: dict[str, str] = field(default_factory=dict)  # doc sources whose first index is not done: how far it got


def first_time(settings: Settings, note: str) -> bool:
    """Whether `note` is news for this data dir: true once, remembered in <data dir>/.notes-said (best effort).

    "The docs index has not been built yet" is worth saying once, not on every search of someone who uses only
    the personal index.
    """
    if not is_ours(settings.data_dir):
        return True  # not a data dir of ours (yet): nothing is written there
    with contextlib.suppress(OSError):
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND
        with open(open_private(settings.data_dir / NOTES_SAID, flags), "r+", encoding="utf-8", errors="replace") as said:
            if note in said.read().splitlines():
                return False
            said.write(" ".join(note.split()) + "\n")
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
        self.missing: dict[str, IndexNotBuilt] = {}  # why a collection is not open: asked for alone, that is the error

    def refresh(self) -> dict[str, Store]:
        """Open what was published since the last call (a collection built meanwhile too); the open stores.

        A collection deleted since is closed, and missing as in a cold search. A reopen that fails otherwise leaves
        the old store serving and raises, so the caller sees the problem.
        """
        self.notes = []
        for name in COLLECTIONS if self.index == "all" else (self.index,):
            current = self.stores.get(name)
            if current is not None and not current.is_stale():
                continue
            try:
                fresh = open_store(self.settings, name, self.expected)
            except IndexNotBuilt as exc:
                self.missing[name] = exc
                if current is not None:
                    current.close()
                    del self.stores[name]
                if self.index == "all":
                    self.notes += [str(exc)] if first_time(self.settings, str(exc)) else []
                    continue
                raise
            self.notes += fresh.notes
            self.stores[name] = fresh
            self.missing.pop(name, None)
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
                raise self.missing.get(index) or IndexNotBuilt(f"the {index} index has not been built yet",
                                                                hint=f"run {INDEX_COMMANDS[index]}")
            stores = {index: stores[index]}
        stores = stores_for(stores, options.sources)
        return search(stores, query, self.embedder.embed([query])[0], options, reranker)

    def close_stale(self) -> None:
        """Close the stores an index run has replaced (releasing their generation), to reopen at the next refresh."""
        for name, store in list(self.stores.items()):
            if store.is_stale():
                store.close()
                del self.stores[name]

    def close(self) -> None:
        for store in self.stores.values():
            store.close()
        self.stores = {}


def search(stores: dict[str, Store], query: str, vector: np.ndarray, options: SearchOptions, reranker=None) -> SearchResult:
    """Rank chunks of the `stores` for `query` (embedded as `vector`) as `options` say; a question naming a recent time
    ("yesterday", "last week") ranks recent personal chunks higher unless a recency half-life is set, and one about a
    version, a release or a change keeps release history at full weight."""
    options = _as_asked(options, query)
    total = sum(store.chunk_count() for store in stores.values())
    candidates = _candidates(stores, query, vector, options)
    more: dict[str, int] = {}
    if options.mode == "hybrid" and len({hit.collection for hit in candidates.values()}) > 1:
        hits, more = relevance.merge(_collection_lists(stores, vector, candidates, options), options.top_k)
    else:
        hits = [candidates[chunk_id] for chunk_id in ranking.rank(candidates, options)]
    if reranker is not None:
        hits = reranker.rerank(query, hits[: max(options.top_k * 4, 20)])
    hits = shown(stores, vector, hits, options.top_k, options.per_file)
    return SearchResult(query, hits, list(stores), total, options.mode, more=more,
                        reindex={name: store.reindex for name, store in stores.items() if store.reindex},
                        partial={source: far for store in stores.values() for source, far in store.in_parts.items()})


def collection_lists(stores: dict[str, Store], query: str, vector: np.ndarray, options: SearchOptions) -> dict[str, list[Hit]]:
    """What relevance.merge weighs for `query` in hybrid mode: each collection's own list (bench/fit_merge.py fits the
    merge on them)."""
    options = _as_asked(options, query)
    return _collection_lists(stores, vector, _candidates(stores, query, vector, options), options)


def _as_asked(options: SearchOptions, query: str) -> SearchOptions:
    """`options` as the question implies: a recent time ranks recent personal chunks higher unless a half-life is set; a
    version, a release or a change keeps release history at full weight."""
    if options.recency_half_life_days is None and (implied := ranking.implied_recency_days(query)):
        options = replace(options, recency_half_life_days=implied)
    if options.history_penalty and ranking.asks_about_history(query):
        options = replace(options, history_penalty=0.0)
    return options


def _candidates(stores: dict[str, Store], query: str, vector: np.ndarray, options: SearchOptions) -> dict[str, Hit]:
    """Every collection's candidates with their evidence, as the mode gathers them."""
    candidates: dict[str, Hit] = {}
    if options.mode in ("hybrid", "dense"):
        _dense(stores, vector, options, candidates)
    if options.mode in ("hybrid", "lexical"):
        _lexical(stores, query, options, candidates)
        _identifier_holders(stores, query, options, candidates)
    _fill_text(stores, candidates)
    if options.min_score is not None:
        candidates = {hit.id: hit for hit in _scored(stores, vector, list(candidates.values())) if hit.score >= options.min_score}
    elif options.mode == "hybrid":  # page evidence weighs its sections' closeness, and a page's as a whole
        _scored(stores, vector, ranking.needing_closeness(candidates))
    if options.mode == "hybrid" and options.docs_page_closeness:
        _page_closeness(stores, vector, candidates)
    return candidates


def _collection_lists(stores: dict[str, Store], vector: np.ndarray, candidates: dict, options: SearchOptions) -> dict[str, list[Hit]]:
    """Each collection's candidates ranked on their own, at most per_file of a file, the first relevance.DEPTH (or
    top_k) of them scored: what relevance.merge weighs."""
    lists = {}
    for name in stores:
        own = {chunk_id: hit for chunk_id, hit in candidates.items() if hit.collection == name}
        if own:
            ranked = _cap_per_file([own[chunk_id] for chunk_id in ranking.rank(own, options)], options.per_file)
            lists[name] = _first_scored(stores, vector, ranked, max(relevance.DEPTH, options.top_k))
    return lists


def _dense(stores: dict[str, Store], vector: np.ndarray, options: SearchOptions, candidates: dict) -> None:
    """Each collection's nearest chunks by cosine similarity, ranked within their collection."""
    for store in stores.values():
        for rank, hit in enumerate(store.dense(vector, options.depth, options.filters, options.per_file_candidates), start=1):
            hit.evidence.dense_rank, hit.evidence.cosine = rank, round(hit.score, 4)
            candidates[hit.id] = hit


def _lexical(stores: dict[str, Store], query: str, options: SearchOptions, candidates: dict) -> None:
    """Each collection's best chunks by BM25 over the same filters, ranked within their collection (BM25 scores of two
    collections are not comparable: their term statistics differ); in hybrid mode only matches that score."""
    terms = lexical.query_terms(query)
    for name, store in stores.items():
        common = store.common_terms(terms, options.keyword_budget) if options.keyword_budget and terms else frozenset()
        match = lexical.match_expression(terms, common)
        if match is None:
            return  # a question of stopwords only matches nothing
        found = [(chunk_id, bm25 / match.scale) for chunk_id, bm25 in
                 store.keyword(match.expression, options.depth, options.filters, options.per_file_candidates)]
        if options.mode == "hybrid":
            found = [(chunk_id, bm25) for chunk_id, bm25 in found if bm25 >= options.min_bm25]
        for rank, (chunk_id, bm25) in enumerate(found, start=1):
            hit = candidates.setdefault(chunk_id, Hit(chunk_id, name, 0.0, "", {}))
            hit.evidence.lexical_rank, hit.evidence.bm25 = rank, round(bm25, 4)


def _identifier_holders(stores: dict[str, Store], query: str, options: SearchOptions, candidates: dict) -> None:
    """Mark the best chunk of the one page of a collection that holds an identifier of the query (LED-517, v1.30.0, a
    code span), a candidate now if it was not: ranking puts no page that lacks it above it."""
    for term in lexical.identifiers(query):
        for name, store in stores.items():
            chunk_id = store.sole_holder(term, options.filters)
            if chunk_id is not None:
                candidates.setdefault(chunk_id, Hit(chunk_id, name, 0.0, "", {})).evidence.identifier = term


def _fill_text(stores: dict[str, Store], candidates: dict) -> None:
    """Text and metadata for chunks only the keyword search found (ranking needs no vectors)."""
    for name, store in stores.items():
        missing = [hit for hit in candidates.values() if hit.collection == name and hit.evidence.dense_rank is None]
        kept = {hit.id for hit in store.fill_text(missing)} if missing else set()
        for hit in missing:
            if hit.id not in kept:
                del candidates[hit.id]


def _page_closeness(stores: dict[str, Store], vector: np.ndarray, candidates: dict) -> None:
    """Each documentation candidate's page closeness (the cosine of its page's vector), for ranking.by_page. A record
    of a JSON file is a page of its own: its closeness is its own cosine. The user's records and notes get none."""
    for name, store in stores.items():
        hits = [hit for hit in candidates.values() if hit.collection == name and hit.document]
        if name == ranking.PERSONAL or not hits:
            continue
        records = [hit for hit in hits if hit.metadata.get("kind") in ranking.RECORD_FILES]
        for hit in records:
            hit.evidence.page_cosine = hit.evidence.cosine
        pages = [hit for hit in hits if hit.metadata.get("kind") not in ranking.RECORD_FILES]
        closeness = store.page_closeness(sorted({hit.document for hit in pages}), vector) if pages else {}
        for hit in pages:
            if hit.document in closeness:
                hit.evidence.page_cosine = round(closeness[hit.document], 4)


def _scored(stores: dict[str, Store], vector: np.ndarray, hits: list[Hit], after_ranking: bool = False) -> list[Hit]:
    """`hits` in order, those found by keyword only given their cosine score (`after_ranking`: for the answer only); one
    without a vector is dropped (in the keyword index but not among the vectors: never show it)."""
    for name, store in stores.items():
        missing = [hit for hit in hits if hit.collection == name and hit.evidence.cosine is None]
        for hit in store.fill_scores(missing, vector) if missing else []:
            hit.evidence.cosine, hit.evidence.cosine_after_ranking = round(hit.score, 4), after_ranking
    return [hit for hit in hits if hit.evidence.cosine is not None]


def shown(stores: dict[str, Store], vector: np.ndarray, hits: list[Hit], top_k: int, per_file: int) -> list[Hit]:
    """What an answer shows of ranked `hits`: at most `per_file` chunks of a file, the first `top_k` that have a vector,
    each with its near neighbours joined to it (bench/fit_merge.py scores the merge by it)."""
    return _first_scored(stores, vector, _cap_per_file(hits, per_file), top_k)


def _first_scored(stores: dict[str, Store], vector: np.ndarray, hits: list[Hit], top_k: int) -> list[Hit]:
    """The first `top_k` of `hits` that have a vector, a hit near one of its document's already kept joined to it
    (_join), as answers show them: each collection's list is weighed by the merge so. Only these need a score: reading
    the vectors of every keyword-only candidate cost each search several milliseconds."""
    kept: list[Hit] = []
    start = 0
    while len(kept) < top_k and start < len(hits):
        batch = hits[start : start + top_k - len(kept)]
        start += len(batch)
        for hit in _scored(stores, vector, batch, after_ranking=True):
            if not _join(stores[hit.collection], kept, hit):
                kept.append(hit)
    return kept


NEAR = 2  # a hit this many chunks or fewer from a shown one of its document is shown with it, the chunks between too


def _join(store: Store, kept: list[Hit], hit: Hit) -> bool:
    """Whether `hit` was joined to a kept hit of its document at most NEAR chunks away (of one record, in a file of
    records): that hit's text then runs from the first of them to the last, the chunks between included (a passage cut
    in three, whose middle chunk ranks below its neighbours, is shown whole), and `hit` takes no place of its own."""
    at = hit.metadata.get("chunk_index")
    if not hit.document or not isinstance(at, int):
        return False
    record = hit.metadata.get("heading") if hit.metadata.get("kind") in ranking.RECORD_FILES else None  # stands alone
    for n, other in enumerate(kept):
        own = other.metadata.get("chunk_index")
        if (other.collection, other.document) != (hit.collection, hit.document) or not isinstance(own, int):
            continue
        first, last = other.span or (own, own)
        if not first - NEAR <= at <= last + NEAR:
            continue
        first, last = min(first, at), max(last, at)
        chunks = store.document_chunks(hit.document, first, last)
        if [chunk.metadata.get("chunk_index") for chunk in chunks] != list(range(first, last + 1)):
            return False  # the document changed since it was searched: keep the hits as they are
        if record is not None and any(chunk.metadata.get("heading") != record for chunk in chunks):
            return False  # records of a JSON file: only the chunks of one record are joined
        kept[n] = replace(other, text=join_chunks(chunks, first_heading=False), span=(first, last))
        return True
    return False


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

