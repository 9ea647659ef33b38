#!/usr/bin/env python3
"""Check your own index with questions whose answer you know: hit@k and MRR.

Each line of the JSONL file is {"query": "...", "expected": "notes/argocd-setup.md"};
"expected" may also be a list of acceptable files. A result matches when its
file (as search.py shows it), its path or its URL ends with an expected value.
Runs the product's own search, in-process, on your data dir.

    .venv/bin/python bench/golden_queries.py my-questions.jsonl [--k 5] [--mode hybrid] [--index all]

stdout: one JSON document (queries, hit@1, hit@3, hit@k, mrr@k, misses, and
first_result_scores: the cosine scores of first results that were right and of those
that were wrong, as min, median and max: what a score means on your index).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))

from rag_search.core.config import load_settings  # noqa: E402
from rag_search.search.retrieval import MODES, Searcher, SearchOptions  # noqa: E402


def read_golden(path: Path) -> list[tuple[str, list[str]]]:
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        item = json.loads(line)
        expected = item["expected"] if isinstance(item["expected"], list) else [item["expected"]]
        if not item.get("query") or not expected:
            sys.exit(f"{path}:{number}: needs a non-empty query and expected")
        pairs.append((item["query"], expected))
    return pairs


def matches(item, expected: list[str]) -> bool:
    names = [item.metadata.get("file", ""), item.metadata.get("path", ""), item.metadata.get("url", "")]
    return any(name and name.endswith(value) for name in names for value in expected)


def spread(scores: list[float]) -> dict | None:
    if not scores:
        return None
    return {"count": len(scores), "min": round(min(scores), 3), "median": round(statistics.median(scores), 3), "max": round(max(scores), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("golden", type=Path, help="JSONL of {query, expected}")
    parser.add_argument("--k", type=int, default=5, help="results per query (default 5)")
    parser.add_argument("--mode", choices=MODES, default="hybrid")
    parser.add_argument("--index", choices=["personal", "docs", "all"], default="all")
    parser.add_argument("--data-dir", help="store folder (default: $RAG_SEARCH_HOME or ~/.claude/data/rag-search)")
    args = parser.parse_args()

    golden = read_golden(args.golden)
    searcher = Searcher(load_settings(data_dir=args.data_dir), args.index)
    hits = {1: 0, 3: 0, args.k: 0}
    reciprocal = 0.0
    misses = []
    first_scores: dict[str, list[float]] = {"right": [], "wrong": []}
    for query, expected in golden:
        result = searcher.search(query, SearchOptions(top_k=args.k, mode=args.mode))
        rank = next((rank for rank, item in enumerate(result.hits, start=1) if matches(item, expected)), None)
        if result.hits:
            first_scores["right" if rank == 1 else "wrong"].append(result.hits[0].score)
        if rank is None:
            misses.append({"query": query, "expected": expected, "got": [item.metadata.get("file") for item in result.hits]})
            continue
        reciprocal += 1.0 / rank
        for k in hits:
            hits[k] += rank <= k
    searcher.close()
    count = len(golden)
    report = {"queries": count, **{f"hit@{k}": round(n / count, 4) for k, n in sorted(hits.items())},
              f"mrr@{args.k}": round(reciprocal / count, 4), "mode": args.mode, "misses": misses,
              "first_result_scores": {key: spread(values) for key, values in first_scores.items()}}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
