#!/usr/bin/env python3
"""Documentation retrieval on the three Sphinx trees of docs-rst (flask, requests, pytest), and release history's place.

Each tree is indexed through the product as a local doc source of its .rst pages, in a store
of its own under --work (eval_docs.index_corpus: a rerun refreshes it). Every question of the
frozen file (bench/docs_rst_questions.jsonl: id, corpus, question, answers and helps, paths
relative to the project folder, and asks_version) is searched in-process in hybrid mode, one
result per file, top 10, and scored on graded labels (bench/graded.py: an answer page gains 3,
a page that helps 1): answer Hit@1, answer Hit@5 and nDCG@10 per corpus, over questions and
over corpora. "changelog first" counts the questions that do not ask about a version whose
first result is release history: by the page kind the index stored, and by the path alone
(page_kind.py without the page's shape) as a check.

    .venv/bin/python bench/eval_rst.py --work /tmp/rst-eval
    .venv/bin/python bench/eval_rst.py --work /tmp/rst-eval --variant behind:history_penalty=0.5
    .venv/bin/python bench/eval_rst.py --work /tmp/rst-eval --loco --variant behind:history_penalty=0.5

--variant NAME:field=value[,field=value] adds a hybrid system with other SearchOptions, as in
eval_docs.py. --loco adds product:loco over the union of docs-faq (its 14 sets, all splits, graded
labels) and these three trees: each corpus answered by the system (the default or a --variant)
that scores best on the other 16 (graded.loco). The data is read where it lies (default
../shared/bench) and never copied.
"""

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))
sys.path.insert(0, str(PROJECT / "bench"))

import eval_docs  # noqa: E402
import graded  # noqa: E402
from variants import parse_variant  # noqa: E402

from rag_search.search.retrieval import SearchOptions  # noqa: E402
from rag_search.text.page_kind import page_kind  # noqa: E402

DEFAULT_DATA = PROJECT.parent / "shared" / "bench" / "docs-rst"
DEFAULT_QUESTIONS = PROJECT / "bench" / "docs_rst_questions.jsonl"
CORPORA = ("flask", "requests", "pytest")
K = 10
SHOWN = ("hit1", "hit5", "ndcg10")


def read_questions(path: Path, corpora: set[str]) -> list[dict]:
    """The questions of these corpora, each with the `relevant` list graded.py reads (none here: the labels are graded)."""
    return [{**q, "relevant": []} for q in graded.read_jsonl(path) if not corpora or q["corpus"] in corpora]


def grades_of(questions: list[dict]) -> dict[str, dict[str, int]]:
    """{question id: {path: grade}}: 2 for a page that answers (gain 3), 1 for one that helps (gain 1)."""
    return {q["id"]: {**{path: 1 for path in q["helps"]}, **{path: 2 for path in q["answers"]}} for q in questions}


def rankings_of(questions: list[dict], data: Path, work: Path, systems: dict[str, SearchOptions]) -> tuple[dict, dict]:
    """{system: {question id: ranked files}} and {corpus: {file: page kind}}, each tree indexed (or refreshed) first."""
    rankings: dict[str, dict] = defaultdict(dict)
    kinds: dict[str, dict[str, str]] = {}
    for corpus in sorted({q["corpus"] for q in questions}):
        indexed = eval_docs.index_corpus(corpus, data / corpus, work, glob="**/*.rst")
        print(f"{corpus}: {indexed}", file=sys.stderr)
        kinds[corpus] = {}
        ranked, _ = eval_docs.product_rankings(corpus, work, [q for q in questions if q["corpus"] == corpus], systems,
                                               kinds[corpus])
        for system, found in ranked.items():
            rankings[system].update(found)
    return rankings, kinds


def changelog_first(questions: list[dict], ranked: dict[str, list[str]], kinds: dict[str, dict[str, str]]) -> dict:
    """{corpus and "overall": (by kind, by path, questions)}: questions not asking about a version whose first result
    is release history, by the stored page kind and by the path alone."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for q in questions:
        if q["asks_version"]:
            continue
        first = (ranked.get(q["id"]) or [""])[0]
        by_kind, by_path = kinds[q["corpus"]].get(first) == "changelog", bool(first) and page_kind(first) == "changelog"
        for group in (q["corpus"], "overall"):
            counts[group][0] += by_kind
            counts[group][1] += by_path
            counts[group][2] += 1
    return {group: tuple(values) for group, values in counts.items()}


def table(rows: list[dict], history: dict[str, dict]) -> str:
    lines = ["| system | corpus | n | answerable | answer Hit@1 | answer Hit@5 | nDCG@10 | changelog first (kind / path / of) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = " | ".join(f"{row[name]:.3f}" if row[name] is not None else "–" for name in SHOWN)
        first = history.get(row["system"], {}).get(row["corpus"])
        lines.append(f"| {row['system']} | {row['corpus']} | {row['n']} | {row['answerable']} | {cells} | "
                     + (f"{first[0]} / {first[1]} / {first[2]}" if first else "–") + " |")
    return "\n".join(lines)


def with_docs_faq(questions: list[dict], rankings: dict, grades: dict, work: Path, systems: dict) -> tuple[list, dict, dict]:
    """The docs-faq questions (all splits), rankings and grades added to these, for leave-one-corpus-out over both."""
    faq = eval_docs.read_questions(eval_docs.DEFAULT_DATA, "all", set())
    clash = {q["id"] for q in faq} & {q["id"] for q in questions}
    if clash:
        raise SystemExit(f"question ids in both sets: {sorted(clash)[:5]}")
    for corpus in sorted({q["corpus"] for q in faq}):
        eval_docs.index_corpus(corpus, eval_docs.DEFAULT_DATA / corpus, work)
        ranked, _ = eval_docs.product_rankings(corpus, work, [q for q in faq if q["corpus"] == corpus], systems)
        for system, found in ranked.items():
            rankings[system].update(found)
    return questions + faq, rankings, {**grades, **graded.load_grades(eval_docs.DEFAULT_GRADES)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="keeps each tree's index between runs")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the docs-rst folder")
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS, help="the frozen questions file")
    parser.add_argument("--corpora", nargs="+", choices=CORPORA, default=[], help="only these trees")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:FIELD=VALUE,…", help="an extra hybrid system")
    parser.add_argument("--loco", action="store_true", help="add product:loco over docs-faq and these trees together")
    parser.add_argument("--json", type=Path, help="also write the rows and rankings to this file")
    args = parser.parse_args()

    base = SearchOptions(top_k=K, per_file=1)
    systems = {"product:hybrid": base}
    systems.update((f"product:{name}", options) for name, options in (parse_variant(text, base) for text in args.variant))
    questions = read_questions(args.questions, set(args.corpora))
    rankings, kinds = rankings_of(questions, args.data, args.work, systems)
    grades = grades_of(questions)
    history = {system: changelog_first(questions, ranked, kinds) for system, ranked in rankings.items()}
    rows = graded.graded_rows(questions, rankings, grades)
    print(f"docs-rst: {len(questions)} questions, {sum(not q['asks_version'] for q in questions)} not asking about a version")
    print(table(rows, history))
    if args.loco:
        union, every, union_grades = with_docs_faq(questions, rankings, grades, args.work, systems)
        every["product:loco"], chosen = graded.loco(union, every, union_grades, list(systems))
        loco_rows = graded.graded_rows(union, every, union_grades)
        history["product:loco"] = changelog_first(questions, every["product:loco"], kinds)
        per_tree = {system: {corpus: counts for corpus, counts in found.items() if corpus in CORPORA} for system, found in history.items()}
        print("\ndocs-faq and docs-rst together (overall: over every question; corpora: the mean over the corpora):")
        print(table([row for row in loco_rows if row["corpus"] in ("overall", "corpora") or row["corpus"] in CORPORA], per_tree))
        print("LOCO choices: " + ", ".join(f"{corpus} {name.removeprefix('product:')}" for corpus, name in chosen.items()))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "changelog_first": history, "rankings": rankings}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
