#!/usr/bin/env python3
"""A calibrated relevance for each collection's results, and the merge it makes, fitted leave-one-persona-out.

For every question of every persona (bench/eval_personas.py builds their data dirs under --work),
each collection is searched alone, as it ranks its own candidates (top 10, search.py's per-file
cap), and each result becomes a row: the signals retrieval already has (cosine and its distance to
the collection's best, the two ranks, BM25 normalised within the collection, the lead, the place
in its collection's order, whether both retrievers found it) and whether it answers the question
(bench/eval_personas.answers). A logistic model per collection, fitted on the other personas,
gives each result of the held-out persona its estimated chance of answering, and relevance.merge
makes the merged list by it (the five likeliest to show the user's answer among the first three
and a page among the five, likelier first). Scored as eval_personas scores the default search,
beside each collection alone, with calibration per collection (predicted against observed, in
bins).

The weights relevance.py ships are fitted on every persona, with the head start chosen on every
persona the same way (--weights prints them).

    .venv/bin/python bench/fit_merge.py --work /tmp/personas [--head-start 0 1] [--weights]
"""

import argparse
import datetime as dt
import sys
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))
sys.path.insert(0, str(PROJECT / "bench"))

import eval_personas as personas  # noqa: E402

from rag_search.core.config import load_settings  # noqa: E402
from rag_search.search import relevance  # noqa: E402
from rag_search.search.retrieval import Searcher, SearchOptions, collection_lists, shown  # noqa: E402

COLLECTIONS = ("personal", "docs")
SHOWN = personas.SHOWN


def gather(work: Path, names: list[str], searchers: list[Searcher]) -> list[dict]:
    """Per question: its persona, kind, each collection's list as the merge sees it, and which of its results answer;
    with the question, its vector and the stores, for what the answer shows (retrieval.shown). Each persona's searcher
    is appended to `searchers`, for the caller to close."""
    records = []
    for name in names:
        persona = personas.platform_persona() if name == personas.PLATFORM else personas.load_persona(name, dt.date.today(), False)
        searchers.append(searcher := Searcher(load_settings(data_dir=str(work / name / "data")), "all"))
        stores = searcher.refresh()
        for q in persona.questions:
            vector = searcher.embedder.embed([q["question"]])[0]
            lists = collection_lists(stores, q["question"], vector, SearchOptions())
            lists = {c: lists.get(c, [])[: relevance.DEPTH] for c in COLLECTIONS}
            others = relevance.best_scores(lists)
            records.append({"persona": name, "kind": q["kind"], "lists": lists, "question": q, "vector": vector, "stores": stores,
                            "rows": {c: relevance.signals(lists[c], others[c]) for c in COLLECTIONS},
                            "labels": {c: [personas.answers(hit, q, c) for hit in lists[c]] for c in COLLECTIONS}})
    return records


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> tuple[float, ...]:
    """Logistic regression by Newton's method with a small L2 penalty (the intercept unpenalised): weights, intercept last."""
    x = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        step = np.linalg.solve((x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty) + 1e-9 * np.eye(len(w)),
                               x.T @ (p - y) + penalty * w)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return tuple(round(float(value), 4) for value in w)


def fitted(records: list[dict]) -> dict[str, tuple[float, ...]]:
    return {c: fit(np.asarray([row for r in records for row in r["rows"][c]]),
                   np.asarray([label for r in records for label in r["labels"][c]], dtype=float)) for c in COLLECTIONS}


def outcomes(records: list[dict], weights: dict, head_start: float) -> list[dict]:
    """Per question, the rank of the first answering result of each collection in what the answer shows of the merge."""
    found = []
    for r in records:
        order, _ = relevance.merge(r["lists"], SHOWN, weights, head_start)
        answer = shown(r["stores"], r["vector"], order, SHOWN, SearchOptions.per_file)
        found.append({c: personas.rank_of(answer, r["question"], c) for c in COLLECTIONS})
    return found


def alone(records: list[dict]) -> list[dict]:
    """As with --index personal / --index docs: the rank of the first answering result in what the answer shows of the
    collection's own list."""
    return [{c: personas.rank_of(shown(r["stores"], r["vector"], r["lists"][c], SHOWN, SearchOptions.per_file), r["question"], c)
             for c in COLLECTIONS} for r in records]


def score(records: list[dict], found: list[dict]) -> dict:
    return personas.tally([(record["kind"], ranks) for record, ranks in zip(records, found, strict=True)])


def objective(row: dict) -> float:
    """What a setting is chosen by: the shares of personal first, personal top 3, docs in top 5 and cross both in top 5."""
    return sum(row[hit] / row[count] for hit, count in (("top1", "personal"), ("top3", "personal"), ("docs5", "docs"),
                                                         ("cross5", "cross")) if row[count])


def choose(records: list[dict], names: list[str], weights: dict, grid: list[float]) -> float:
    """The head start with the best objective summed over these personas."""
    by_persona = {name: [r for r in records if r["persona"] == name] for name in names}
    return max(grid, key=lambda head: sum(objective(score(mine, outcomes(mine, weights, head))) for mine in by_persona.values()))


def calibration(pairs: list[tuple[float, bool]], bins: int = 5) -> str:
    """Predicted against observed, in equal-count bins."""
    pairs = sorted(pairs)
    parts = [pairs[n * len(pairs) // bins:(n + 1) * len(pairs) // bins] for n in range(bins)]
    return " ".join(f"{np.mean([p for p, _ in part]):.2f}->{np.mean([y for _, y in part]):.2f}" for part in parts if part)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--personas", nargs="+")
    parser.add_argument("--head-start", type=float, nargs="+", default=[0.0, 0.5, 1.0, 1.5, 2.0])
    parser.add_argument("--weights", action="store_true", help="print the weights and setting fitted on every persona")
    args = parser.parse_args()
    names = args.personas or sorted(p.name for p in personas.PERSONAS.iterdir() if p.is_dir()) + [personas.PLATFORM]
    searchers: list[Searcher] = []
    try:
        return report(gather(args.work, names, searchers), names, args)
    finally:
        for searcher in searchers:
            searcher.close()


def report(records: list[dict], names: list[str], args: argparse.Namespace) -> int:
    grid = args.head_start
    print("\n".join(personas.HEADER))
    pairs: dict[str, list] = {c: [] for c in COLLECTIONS}
    for name in names:
        mine, others = [r for r in records if r["persona"] == name], [r for r in records if r["persona"] != name]
        weights = fitted(others)
        head = choose(others, [other for other in names if other != name], weights, grid)
        print(personas.row_line(name, "alone", score(mine, alone(mine))))
        print(personas.row_line(name, f"merged, held out (head start {head})", score(mine, outcomes(mine, weights, head))))
        for c in COLLECTIONS:
            pairs[c] += [(p, label) for r in mine for p, label in
                         zip(relevance.chances(c, r["rows"][c], weights, 0.0), r["labels"][c], strict=True)]
    for c in COLLECTIONS:
        print(f"calibration {c}, held out (predicted->observed, 5 bins): {calibration(pairs[c])}", file=sys.stderr)
    if args.weights:
        weights = fitted(records)
        print(f"WEIGHTS = {weights!r}\nPERSONAL_HEAD_START = {choose(records, names, weights, grid)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
