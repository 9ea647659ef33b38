"""From evidence to an order: fusion, recency and page evidence.

retrieval.py gathers the candidates, each a Hit whose `evidence` (records.Evidence)
holds its rank in its own collection's dense list (with the cosine) and in its own
collection's keyword list (with the BM25 score). This module turns that evidence
into an order, and writes into the evidence what it used, for --explain.

- Fusion: reciprocal rank fusion of the two ranks, each taken within the chunk's
  own collection, so neither collection wins by its size or by its term statistics;
  plus a lead for each collection's best match in a list, as far as its score
  stands above the runner-up's (ranks hide that an identifier matched exactly).
- Recency (--recency-half-life, or what a question naming a recent time implies:
  "yesterday" two days, "last week" seven) raises recent personal chunks; an older
  record keeps its evidence and never falls below what it beats on evidence.
- Page evidence: a page scores as its best section plus a bounded bonus from a
  few supporting sections that are themselves strong in both signals (keyword
  matches close in meaning: retrieval looks up the cosine of a keyword-only section
  of a page with other candidates), so a long page with many weak sections does not
  outrank the one record that answers. A documentation page, whose answer usually
  spans sections, earns more from them, and from its closeness as a whole (the
  cosine of its chunks' mean vector, ranked among the candidate pages: a third
  list, of pages), but never rises above a page whose best chunk ranks better in
  both lists.
- Release history (--kind changelog pages: changelogs, release notes) weighs less
  (history_penalty), unless the question asks about a version, a release or a
  change: it matches most questions in passing, and the guide answers them.
- Exact identifiers: the one page of a collection that holds an identifier the
  question names (a ticket id, a version, a code span) comes before every page
  that lacks it, in hybrid and keyword modes.

In hybrid mode each collection is ranked on its own; relevance.py merges them.
"""

import math
import re
import time
from collections.abc import Callable
from typing import NamedTuple

from ..store.records import Evidence, Hit

RECORD_FILES = ("json", "jsonl")  # a file of records: each record stands alone, it is not a section of a page
SECONDS_PER_DAY = 86400.0
PERSONAL = "personal"


# A time the question asks about, and the recency half-life (days) it implies when none is set.
_RECENT_TIMES = (
    (re.compile(r"\b(?:yesterday|today|tonight|this morning|this afternoon)\b", re.IGNORECASE), 2.0),
    (re.compile(r"\b(?:(?:last|this|past) week|(?:last|past) few days)\b", re.IGNORECASE), 7.0),
    (re.compile(r"\b(?:recent|recently|lately)\b", re.IGNORECASE), 14.0),
    (re.compile(r"\b(?:(?:last|this|past) month)\b", re.IGNORECASE), 30.0),
)


# A question about a version, a release or a change: release history may answer it, and keeps its full weight.
_ABOUT_HISTORY = re.compile(
    r"\bv?\d+\.\d+(?:\.\d+)*\b|\bv\d+\b|\b(?:versions?|releases?|released|releasing|change ?logs?|changed|breaking|"
    r"deprecat\w*|removed|removal|upgrad\w*|migrat\w*|backwards? compatib\w*|no longer)\b|"
    r"\bwhat'?s new\b|\bnew in\b|\bsince (?:v?\d|version|release|when)\b", re.IGNORECASE)


def asks_about_history(query: str) -> bool:
    """Whether the question asks about a version, a release or a change ("new in 2.0", "why was X deprecated", "how do
    I upgrade"), which release history answers."""
    return bool(_ABOUT_HISTORY.search(query))


def implied_recency_days(query: str) -> float | None:
    """The recency half-life a question implies by naming a recent time ("yesterday", "last week"), or None: "what
    did I push yesterday" asks for the newest of similar records."""
    return next((days for pattern, days in _RECENT_TIMES if pattern.search(query)), None)


def rank(candidates: dict[str, Hit], options) -> list[str]:
    """Candidate ids best first, as the mode says (`options`: retrieval.SearchOptions); in hybrid mode page by page, the
    candidates of one collection."""
    if options.mode == "dense":
        return sorted(candidates, key=lambda chunk_id: candidates[chunk_id].score, reverse=True)
    if options.mode == "lexical":  # collections interleave by their own keyword ranks; BM25 breaks ties within one
        ranked = sorted(candidates, key=lambda chunk_id: _keyword_order(candidates[chunk_id].evidence))
        return [chunk_id for ids in holders_first([[chunk_id] for chunk_id in ranked], candidates, options) for chunk_id in ids]
    lead = leads(candidates, options)
    keys = {chunk_id: _fused(hit, options, lead.get(chunk_id, 0.0)) for chunk_id, hit in candidates.items()}
    ranked = sorted(candidates, key=lambda chunk_id: keys[chunk_id], reverse=True)
    pages = by_page(ranked, candidates, keys, options)
    return [chunk_id for ids in holders_first(pages, candidates, options) for chunk_id in ids]


def holders_first(pages: list[list[str]], candidates: dict[str, Hit], options) -> list[list[str]]:
    """`pages` in order, except that the pages holding an identifier of the question, each the one page of its collection
    that holds it (retrieval marks them), come first when options.exact_identifiers: an exact ticket id or version
    outranks any paraphrase of it."""
    if not options.exact_identifiers:
        return pages
    holding = [ids for ids in pages if any(candidates[chunk_id].evidence.identifier is not None for chunk_id in ids)]
    return holding + [ids for ids in pages if ids not in holding] if holding else pages


def leads(candidates: dict[str, Hit], options) -> dict[str, float]:
    """{chunk id: lead} for each collection's best match in each list, in proportion to how far its score (BM25, cosine)
    stands above the runner-up's: an exact identifier scores far above every other keyword match, a paraphrase can be
    far closer in meaning than the rest, and ranks alone hide both gaps."""
    found: dict[str, float] = {}
    scores: tuple[Callable[[Evidence], float | None], ...] = (
        lambda evidence: evidence.bm25, lambda evidence: evidence.cosine if evidence.dense_rank is not None else None)
    for score_of in scores:  # BM25, then the cosine of the dense list's chunks
        by_collection: dict[str, list[tuple[float, str]]] = {}
        for hit in candidates.values():
            if (score := score_of(hit.evidence)) is not None:
                by_collection.setdefault(hit.collection, []).append((score, hit.id))
        for scored in by_collection.values():
            if len(scored) < 2:
                continue  # nothing to stand above
            (first, first_id), (second, _) = sorted(scored, key=lambda pair: pair[0], reverse=True)[:2]
            if first > 0:
                found[first_id] = found.get(first_id, 0.0) + options.lead * (1.0 - max(second, 0.0) / first)
    return found


def _fused(hit: Hit, options, lead: float) -> float:
    """The chunk's fused key: RRF of its ranks in its collection, plus any lead, times any recency boost and the weight
    of release history."""
    evidence = hit.evidence
    key = 0.0
    if evidence.dense_rank is not None:
        key += options.dense_weight / (options.rrf_k + evidence.dense_rank)
    if evidence.lexical_rank is not None:
        key += options.lexical_weight / (options.rrf_k + evidence.lexical_rank)
    evidence.rrf = round(key, 6)
    if lead:
        evidence.lead = round(lead, 6)
        key += lead
    if options.recency_half_life_days and hit.collection == PERSONAL and hit.metadata.get("date_ts") is not None:
        age_days = max(0.0, (time.time() - float(hit.metadata["date_ts"])) / SECONDS_PER_DAY)
        boost = 1.0 + 0.5 * math.pow(0.5, age_days / options.recency_half_life_days)
        evidence.recency = round(boost, 4)
        key *= boost
    if options.history_penalty and hit.metadata.get("page_kind") == "changelog":
        evidence.history = round(1.0 - options.history_penalty, 4)
        key *= 1.0 - options.history_penalty
    return key


class _Page(NamedTuple):
    score: float  # the best section's key plus the bonus
    first: int  # the rank of its best chunk among all candidates: breaks ties
    ids: list[str]


def by_page(ranked: list[str], candidates: dict[str, Hit], keys: dict[str, float], options) -> list[list[str]]:
    """Chunk ids (best first) grouped page by page, best page first: a page scores as its best section's key plus
    page_bonus times the keys of up to page_support other sections that are strong in both signals (found by the keyword
    search, and close in meaning: cosine at least section_floor of the question's best); a documentation page with
    docs_page_bonus and docs_page_support, and there a page whose best chunk is better in both lists stays above (the
    larger bonus never lifts a page of fair sections over the chunk first in both). Ties keep the order of each page's
    best chunk. A section is a heading path of a file; a record of a JSON file is a page of its own. Documentation
    pages earn their closeness as a whole too (_with_closeness)."""
    pages: dict[tuple, list[str]] = {}
    for chunk_id in ranked:
        pages.setdefault(_page_of(candidates[chunk_id]), []).append(chunk_id)
    cosines = [hit.evidence.cosine for hit in candidates.values() if hit.evidence.cosine is not None]
    floor = options.section_floor * max(cosines) if cosines else math.inf
    orders: dict[str, list[_Page]] = {}
    for first, ids in enumerate(pages.values()):
        collection = candidates[ids[0]].collection
        weight, count = ((options.page_bonus, options.page_support) if collection == PERSONAL
                         else (options.docs_page_bonus, options.docs_page_support))
        best, support = _page_sections(ids, candidates, keys, floor)
        bonus = weight * sum(support[:count])
        for chunk_id in ids:
            evidence = candidates[chunk_id].evidence
            evidence.page_score, evidence.page_bonus, evidence.page_chunks = round(best + bonus, 6), round(bonus, 6), len(ids)
        orders.setdefault(collection, []).append(_Page(best + bonus, first, ids))
    for collection, order in orders.items():
        if collection != PERSONAL:  # a record is a page of its own: no closeness as a whole
            order = _with_closeness(order, candidates, options)
        order.sort(key=lambda page: (-page.score, page.first))
        if collection != PERSONAL:  # personal pages keep a bonus too small to need it, and recency may lift one
            order = _dominated_last(order, candidates)
        orders[collection] = order
    return [page.ids for order in orders.values() for page in order]


def _with_closeness(order: list[_Page], candidates: dict[str, Hit], options) -> list[_Page]:
    """`order`'s pages, each scoring docs_page_closeness / (rrf_k + its rank by closeness as a whole) more: a third list,
    of pages, fused by rank like the other two (a page without a page vector earns nothing)."""
    closeness_of = {page.first: page_cosine for page in order
                    if (page_cosine := candidates[page.ids[0]].evidence.page_cosine) is not None}
    closest = sorted((page for page in order if page.first in closeness_of), key=lambda page: closeness_of[page.first],
                     reverse=True)
    rank_of = {page.first: rank for rank, page in enumerate(closest, start=1)}
    scored = []
    for page in order:
        closeness = options.docs_page_closeness / (options.rrf_k + rank_of[page.first]) if page.first in rank_of else 0.0
        for chunk_id in page.ids:
            evidence = candidates[chunk_id].evidence
            evidence.page_closeness, evidence.page_score = round(closeness, 6), round(page.score + closeness, 6)
        scored.append(page._replace(score=page.score + closeness))
    return scored


def _dominated_last(order: list[_Page], candidates: dict[str, Hit]) -> list[_Page]:
    """`order`, except that a page whose best chunk ranks better in both lists than another page's comes before it
    (release history weighed down, never before a page that is not)."""
    placed: list[_Page] = []
    for page in order:
        at = len(placed)
        while at and _lifted_over(candidates[page.ids[0]], candidates[placed[at - 1].ids[0]]):
            at -= 1
        placed.insert(at, page)
    return placed


def _lifted_over(hit: Hit, other: Hit) -> bool:
    """Whether `hit`'s page goes before `other`'s: better in both lists, unless only `hit` was weighed as history."""
    held_back = hit.evidence.history is not None and other.evidence.history is None
    return not held_back and _better_in_both(hit, other)


def _better_in_both(hit: Hit, other: Hit) -> bool:
    """Whether `hit` ranks above `other` in the dense list and in the keyword list (missing from a list: last)."""
    return all(_rank_or_last(mine) < _rank_or_last(theirs) for mine, theirs in
               ((hit.evidence.dense_rank, other.evidence.dense_rank), (hit.evidence.lexical_rank, other.evidence.lexical_rank)))


def _rank_or_last(rank: int | None) -> float:
    return math.inf if rank is None else rank


def _keyword_order(evidence: Evidence) -> tuple[float, float]:
    """Lexical mode's sort key: the keyword rank in its collection, then the BM25 score (missing: last)."""
    return _rank_or_last(evidence.lexical_rank), -(evidence.bm25 if evidence.bm25 is not None else 0.0)


def needing_closeness(candidates: dict[str, Hit]) -> list[Hit]:
    """The candidates without a cosine (found by keyword only) whose closeness page evidence weighs: those of a page
    with other sections among the candidates (looking up every one cost a search about a fifth more)."""
    sections: dict[tuple, set] = {}
    for hit in candidates.values():
        sections.setdefault(_page_of(hit), set()).add(hit.metadata.get("heading", ""))
    return [hit for hit in candidates.values() if hit.evidence.cosine is None and len(sections[_page_of(hit)]) > 1]


def _page_of(hit: Hit) -> tuple:
    """What page evidence counts as one page: a file, or a record of a JSON file (each record stands alone)."""
    return (*hit.page, hit.metadata.get("heading") if hit.metadata.get("kind") in RECORD_FILES else None)


def _page_sections(ids: list[str], candidates: dict[str, Hit], keys: dict[str, float], floor: float) -> tuple[float, list[float]]:
    """The best key of one page (`ids` best first), and the best keys of its other sections that the keyword search found
    and whose cosine reaches `floor`, highest first: a section whose closeness is unknown earns nothing."""
    best: dict[str, float] = {}
    strong: set[str] = set()
    for chunk_id in ids:  # best first: the first chunk seen of a section is its best
        hit = candidates[chunk_id]
        heading = hit.metadata.get("heading", "")
        best.setdefault(heading, keys[chunk_id])
        if hit.evidence.lexical_rank is not None and (hit.evidence.cosine if hit.evidence.cosine is not None else -1.0) >= floor:
            strong.add(heading)
    ordered = sorted(best, key=lambda heading: best[heading], reverse=True)
    return best[ordered[0]], [best[heading] for heading in ordered[1:] if heading in strong]
