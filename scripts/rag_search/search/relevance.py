"""One answer from both collections: each result's chance of answering, and the merge it makes.

Each collection ranks its own candidates (ranking.py). What decides between them is
an estimate, for each result, of the chance that it answers the question, from the
signals its own search gathered: its cosine, how far below its collection's best and
above the other collection's best it is, its two ranks, its BM25 score against its
collection's best, its lead, its place in its collection's list and whether both
retrievers found it. A logistic model per collection turns them into a chance; its
weights and the personal head start were fitted on five personas
(bench/personas, four written blind; bench/fit_merge.py --weights), and are measured
leave-one-persona-out (docs/benchmarks.md).

Which results are shown first: the five (search.py's default; fewer when fewer are
asked for) likeliest to hold an answer of the user's own among the first three and a
documentation answer among the five, each collection's taken from the top of its own
list. In what order: each collection keeps its own, the collections taking turns by the
best chance each has still to show, except that the user's own results chosen for the
first three are shown there (they were chosen for being there); the rest follow the same
way. The answer says per
collection how many results at least LIKELY to answer were not shown (`more`), so an
agent knows when to look again with --index.
"""

import itertools
import math

from ..store.records import Hit

DEPTH = 10  # results of each collection weighed (more when more are asked for)
FEATURES = ("cosine", "below_best", "over_other", "dense", "lexical", "bm25", "lead", "place", "both")
# Logistic weights per collection, in FEATURES order, then the intercept: bench/fit_merge.py --weights.
WEIGHTS: dict[str, tuple[float, ...]] = {
    "personal": (1.3024, -0.8443, 3.1509, 2.0355, 3.147, 3.9024, 1.1611, 2.6356, -0.0599, -8.7569),
    "docs": (3.2255, 0.7186, 3.8179, 0.3001, 2.8168, 1.1365, 0.2375, 2.0222, 0.0098, -6.9046),
}
PERSONAL_HEAD_START = 1.0  # log-odds added to the personal collection's chances: the user's own context first
FIRST = 3  # the places where an answer of the user's own is worth showing
SHOWN = 5  # the first results chosen together (search.py shows five); the rest take turns
LIKELY = 0.2  # a result not shown that is at least this likely to answer is counted in `more`


def signals(hits: list[Hit], other_best: float) -> list[list[float]]:
    """One row of FEATURES per result of one collection's list (best first, every hit scored); `other_best`: the best
    cosine of the other collection's list (0 when it has none)."""
    best = max((hit.score for hit in hits), default=0.0)
    top_bm25 = max((hit.evidence.bm25 or 0.0 for hit in hits), default=0.0) or 1.0
    rows = []
    for place, hit in enumerate(hits, start=1):
        evidence = hit.evidence
        rows.append([hit.score, best - hit.score, hit.score - other_best,
                     1.0 / (1 + evidence.dense_rank) if evidence.dense_rank else 0.0,
                     1.0 / (1 + evidence.lexical_rank) if evidence.lexical_rank else 0.0,
                     (evidence.bm25 or 0.0) / top_bm25, evidence.lead or 0.0, 1.0 / place,
                     float(evidence.dense_rank is not None and evidence.lexical_rank is not None)])
    return rows


def chances(collection: str, rows: list[list[float]], weights: dict[str, tuple[float, ...]] = WEIGHTS,
            head_start: float = PERSONAL_HEAD_START) -> list[float]:
    """Each row's chance of answering, by its collection's model (the personal collection's with its head start)."""
    *coefficients, intercept = weights[collection]
    shift = intercept + (head_start if collection == "personal" else 0.0)
    return [1.0 / (1.0 + math.exp(-(shift + sum(w * x for w, x in zip(coefficients, row, strict=True))))) for row in rows]


def best_scores(lists: dict[str, list[Hit]]) -> dict[str, float]:
    """{collection: the best cosine of the other collections' lists}."""
    return {name: max((hit.score for other, hits in lists.items() if other != name for hit in hits), default=0.0)
            for name in lists}


def merge(lists: dict[str, list[Hit]], top_k: int, weights: dict[str, tuple[float, ...]] = WEIGHTS,
          head_start: float = PERSONAL_HEAD_START) -> tuple[list[Hit], dict[str, int]]:
    """The collections' lists (each best first, every hit scored) as one, and per collection how many results at least
    LIKELY to answer fall below the first `top_k`. Each hit's chance is written into its evidence."""
    others = best_scores(lists)
    chance_of: dict[str, float] = {}
    for name, hits in lists.items():
        for hit, chance in zip(hits, chances(name, signals(hits, others[name]), weights, head_start), strict=True):
            chance_of[hit.id] = hit.evidence.relevance = round(chance, 4)
    counts = _shown_counts(lists, chance_of, min(top_k, SHOWN, sum(map(len, lists.values()))))
    due = [FIRST if name == "personal" else math.inf for name in lists]
    first = _taking_turns([hits[:count] for hits, count in zip(lists.values(), counts, strict=True)], chance_of, due)
    rest = _taking_turns([hits[count:] for hits, count in zip(lists.values(), counts, strict=True)], chance_of, [math.inf] * len(lists))
    order = first + rest
    more = {name: sum(hit.collection == name and chance_of[hit.id] >= LIKELY for hit in order[top_k:]) for name in lists}
    return order, more


def _shown_counts(lists: dict[str, list[Hit]], chance_of: dict[str, float], size: int) -> tuple[int, ...]:
    """How many results of each collection's top to show first, `size` in all: the split likeliest to show an answer of
    the user's own among the first FIRST and an answer of every other collection among all `size` (chances taken as
    independent, so a collection's next result is worth less the likelier those before it are)."""
    best: tuple[int, ...] = ()
    best_worth = -1.0
    for counts in itertools.product(range(size + 1), repeat=len(lists)):
        if sum(counts) != size or any(count > len(hits) for count, hits in zip(counts, lists.values(), strict=True)):
            continue
        worth = sum(1 - math.prod(1 - chance_of[hit.id] for hit in hits[: min(count, FIRST) if name == "personal" else count])
                    for (name, hits), count in zip(lists.items(), counts, strict=True))
        if worth > best_worth:
            best, best_worth = counts, worth
    return best


def _taking_turns(lists: list[list[Hit]], chance_of: dict[str, float], due: list[float]) -> list[Hit]:
    """Each list in its own order, the lists taking turns by the best chance each has still to show; a list with a place
    `due` (not inf) is shown whole by that place (the user's own results chosen for the first FIRST stay there)."""
    still = [[max(chance_of[hit.id] for hit in hits[at:]) for at in range(len(hits))] for hits in lists]
    at = [0] * len(lists)
    order: list[Hit] = []
    while live := [n for n, hits in enumerate(lists) if at[n] < len(hits)]:
        late = [n for n in live if len(lists[n]) - at[n] >= due[n] - len(order)]
        pick = late[0] if late else max(live, key=lambda n: still[n][at[n]])
        order.append(lists[pick][at[pick]])
        at[pick] += 1
    return order
