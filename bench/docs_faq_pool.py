#!/usr/bin/env python3
"""The pages to judge for each docs-faq question: the pool behind bench/docs_faq_grades.jsonl.

For every question, the union of
- the top 10 distinct pages of the product's hybrid, dense and lexical modes (an eval_docs.py --json
  file, whose "rankings" hold them),
- the top 10 of both BM25 baselines kept with docs-faq (results/bm25s-files-*.jsonl and
  results/bm25s-chunks-*.jsonl: whole files and chunks),
- the top 10 pages of BM25 over whole files queried with the FAQ answer's own words (link targets
  dropped): pages that hold the answer's key terms whatever the question says,
- the pages the FAQ answer links.
Pages are listed in path order, so a judge reading the pool cannot tell which system found a page,
at which rank, or whether the FAQ links it.

    .venv/bin/python bench/eval_docs.py --work /tmp/docs-eval --split all --no-baselines --json /tmp/ranks.json
    .venv/bin/python bench/docs_faq_pool.py --rankings /tmp/ranks.json --out /tmp/pool.jsonl
"""

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "bench"))

import docs_baselines  # noqa: E402
from eval_docs import DEFAULT_DATA, read_questions  # noqa: E402
from graded import read_jsonl  # noqa: E402

DEPTH = 10
LINK_TARGET = re.compile(r"\]\([^)]*\)")


def baseline_rankings(data: Path) -> dict[str, list[list[str]]]:
    """{question id: [ranked files of each kept BM25 run]}."""
    found: dict[str, list[list[str]]] = defaultdict(list)
    for path in sorted((data / "results").glob("bm25s-*.jsonl")):
        for row in read_jsonl(path):
            found[row["id"]].append(row["ranked_files"])
    return found


def answer_term_rankings(data: Path, questions: list[dict], answers: dict[str, str]) -> dict[str, list[str]]:
    """{question id: the files BM25 ranks highest for the FAQ answer's words}."""
    ranked: dict[str, list[str]] = {}
    by_corpus: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        by_corpus[q["corpus"]].append({"id": q["id"], "question": LINK_TARGET.sub("]", answers[q["id"]])})
    for corpus, queries in by_corpus.items():
        ranked.update(docs_baselines.bm25s_files(data / corpus, queries, top_k=DEPTH))
    return ranked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rankings", type=Path, required=True, help="an eval_docs.py --json file of split all")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the docs-faq folder")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    questions = read_questions(args.data, "all", set())
    answers = {row["id"]: row["answer"] for row in read_jsonl(args.data / "faq_answers.jsonl")}
    product = json.loads(args.rankings.read_text())["rankings"]
    baselines = baseline_rankings(args.data)
    answer_terms = answer_term_rankings(args.data, questions, answers)
    sizes = []
    with args.out.open("w", encoding="utf-8") as out:
        for q in questions:
            lists = [ranking[q["id"]] for ranking in product.values()] + baselines[q["id"]] + [answer_terms[q["id"]]]
            pages = {page for ranked in lists for page in list(dict.fromkeys(ranked))[:DEPTH]} | set(q["relevant"])
            pages = {page for page in pages if (args.data / q["corpus"] / page).is_file()}
            sizes.append(len(pages))
            out.write(json.dumps({"id": q["id"], "corpus": q["corpus"], "question": q["question"], "pages": sorted(pages)}) + "\n")
    print(f"{len(sizes)} questions, {sum(sizes)} pages to judge "
          f"(per question {min(sizes)}-{max(sizes)}, mean {sum(sizes) / len(sizes):.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
