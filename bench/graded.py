"""Scoring docs-faq rankings on graded labels (bench/docs_faq_grades.jsonl), and leave-one-corpus-out selection.

A label grades one page for one question: 2 = it answers the question, 1 = useful toward the
answer, 0 = not (bench/README.md says how they were made). Rankings are lists of files, best
first; only the first 10 distinct files count.

- answer Hit@1 / Hit@5: a grade-2 page first / in the first 5 (over the questions that have one);
- nDCG@10: graded gain 2^grade - 1, ideal order from every judged page of the question;
- Recall@10: the share of the question's grade-2 pages among the first 10 distinct pages;
- linked Hit@5: a page the FAQ links in the first 5 (the label docs-faq ships, for continuity);
- unjudged@5: pages in the first 5 that nobody judged (to be judged before a result is quoted).

Leave-one-corpus-out: for each corpus, the candidate system with the best objective on the
other corpora (mean over their questions of answer Hit@1 and nDCG@10) answers that corpus's
questions; the assembled ranking is scored as one system, so no choice ever sees the corpus it is
scored on.

    .venv/bin/python bench/graded.py [LABELS]    # the label counts bench/README.md quotes
"""

import json
import math
from collections import defaultdict
from pathlib import Path

K = 10
GRADED = ("hit1", "hit5", "ndcg10", "recall10", "linked5", "unjudged5")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def load_grades(path: Path) -> dict[str, dict[str, int]]:
    """{question id: {file: grade}} from the labels file (one JSON object per judged page)."""
    grades: dict[str, dict[str, int]] = defaultdict(dict)
    for row in read_jsonl(path):
        grades[row["id"]][row["file"]] = int(row["grade"])
    return dict(grades)


def graded_metrics(grades: dict[str, int], relevant: list[str], ranked: list[str]) -> dict[str, float | None]:
    """The metrics of one question's ranking; answer metrics are None when no judged page answers it."""
    files = list(dict.fromkeys(ranked))[:K]
    answering = {name for name, grade in grades.items() if grade == 2}
    gains = [2 ** grades.get(name, 0) - 1 for name in files]
    ideal = sorted((2 ** grade - 1 for grade in grades.values()), reverse=True)[:K]
    found: dict[str, float | None] = {
        "ndcg10": _dcg(gains) / _dcg(ideal) if any(ideal) else None,
        "linked5": float(bool(set(relevant) & set(files[:5]))),
        "unjudged5": float(sum(name not in grades for name in files[:5])),
        "hit1": None, "hit5": None, "recall10": None}
    if answering:
        found.update(hit1=float(bool(files[:1]) and files[0] in answering), hit5=float(bool(answering & set(files[:5]))),
                     recall10=len(answering & set(files)) / len(answering))
    return found


def _dcg(gains: list[float]) -> float:
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def per_question(questions: list[dict], ranked: dict[str, list[str]], grades: dict[str, dict[str, int]]) -> dict[str, dict]:
    return {q["id"]: graded_metrics(grades.get(q["id"], {}), q["relevant"], ranked.get(q["id"], [])) for q in questions}


def mean_of(values: list[dict], name: str) -> float | None:
    present = [found[name] for found in values if found[name] is not None]
    return sum(present) / len(present) if present else None


def objective(values: list[dict]) -> float:
    """What leave-one-corpus-out maximises: the mean of answer Hit@1 and nDCG@10 over the questions given."""
    return _combined(mean_of(values, "hit1"), mean_of(values, "ndcg10"))


def _combined(hit1: float | None, ndcg10: float | None) -> float:
    return ((hit1 or 0.0) + (ndcg10 or 0.0)) / 2


def loco(questions: list[dict], rankings: dict[str, dict], grades: dict, candidates: list[str]) -> tuple[dict, dict[str, str]]:
    """The leave-one-corpus-out ranking ({question id: files}) and the candidate chosen for each corpus (ties go to the
    earlier candidate: list today's default first)."""
    scored = {name: per_question(questions, rankings[name], grades) for name in candidates}
    chosen: dict[str, str] = {}
    assembled: dict[str, list[str]] = {}
    for corpus in sorted({q["corpus"] for q in questions}):
        others = [q["id"] for q in questions if q["corpus"] != corpus]
        best = max(candidates, key=lambda name: (objective([scored[name][qid] for qid in others]), -candidates.index(name)))
        chosen[corpus] = best
        assembled.update((q["id"], rankings[best][q["id"]]) for q in questions if q["corpus"] == corpus)
    return assembled, chosen


def graded_rows(questions: list[dict], rankings: dict[str, dict], grades: dict) -> list[dict]:
    """Rows per system and corpus, then the mean over questions ("overall") and the mean over corpora ("corpora")."""
    rows = []
    for system, ranked in rankings.items():
        scored = per_question(questions, ranked, grades)
        by_corpus: dict[str, list[dict]] = defaultdict(list)
        for q in questions:
            by_corpus[q["corpus"]].append(scored[q["id"]])
        corpus_rows = [_row(system, corpus, values) for corpus, values in sorted(by_corpus.items())]
        overall = _row(system, "overall", list(scored.values()))
        corpora = {"system": system, "corpus": "corpora", "n": len(corpus_rows), "answerable": overall["answerable"]}
        for name in GRADED:
            present = [row[name] for row in corpus_rows if row[name] is not None]
            corpora[name] = round(sum(present) / len(present), 3) if present else None
        corpora["unjudged5"] = overall["unjudged5"]
        rows += corpus_rows + [overall, corpora]
    return rows


def _row(system: str, corpus: str, values: list[dict]) -> dict:
    row = {"system": system, "corpus": corpus, "n": len(values), "answerable": sum(found["hit1"] is not None for found in values)}
    for name in GRADED:
        value = mean_of(values, name)
        row[name] = None if value is None else round(value, 3)
    row["unjudged5"] = int(sum(found["unjudged5"] for found in values))  # a count, not a mean
    return row


def against(rows: list[dict], system: str, reference: str) -> dict[str, list[str]]:
    """Corpora where `system` scores above / below / level with `reference` on the objective's two metrics (their mean)."""
    mine = {row["corpus"]: row for row in rows if row["system"] == system and row["corpus"] not in ("overall", "corpora")}
    theirs = {row["corpus"]: row for row in rows if row["system"] == reference and row["corpus"] not in ("overall", "corpora")}
    verdict: dict[str, list[str]] = {"helped": [], "hurt": [], "level": []}
    for corpus in sorted(mine):
        delta = (_combined(mine[corpus]["hit1"], mine[corpus]["ndcg10"])
                 - _combined(theirs[corpus]["hit1"], theirs[corpus]["ndcg10"]))
        verdict["helped" if delta > 1e-9 else "hurt" if delta < -1e-9 else "level"].append(corpus)
    return verdict


def label_counts(questions: list[dict], grades: dict[str, dict[str, int]]) -> dict:
    """What bench/README.md quotes of the labels: pages judged, grades, and how the linked pages fared."""
    linked = [grades.get(q["id"], {}).get(page) for q in questions for page in q["relevant"]]
    answerable = [q for q in questions if 2 in grades.get(q["id"], {}).values()]
    only_unlinked = [q for q in answerable if not any(grades[q["id"]].get(page) == 2 for page in q["relevant"])]
    every = [grade for judged in grades.values() for grade in judged.values()]
    return {"questions": len(questions), "judged": len(every), "grade 2": every.count(2), "grade 1": every.count(1),
            "grade 0": every.count(0), "answerable": len(answerable), "answered only by unlinked pages": len(only_unlinked),
            "linked pages": len(linked), "linked graded 2": linked.count(2), "linked graded 1": linked.count(1),
            "linked graded 0": linked.count(0), "linked unjudged": linked.count(None)}


if __name__ == "__main__":
    import sys

    from eval_docs import DEFAULT_DATA, DEFAULT_GRADES, read_questions

    labels = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_GRADES
    print(json.dumps(label_counts(read_questions(DEFAULT_DATA, "all", set()), load_grades(labels)), indent=1))
