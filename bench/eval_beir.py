#!/usr/bin/env python3
"""Retrieval quality on a BEIR-format collection, through the product's own indexing and search code.

Indexes corpus.jsonl (title + text of each document, chunked like any markdown
file) into a throwaway data dir, runs every query of the chosen qrels split
through rag_search.search.retrieval in each mode, and reports nDCG@10, Recall@10,
MRR@10 and latency, as a table and as JSON. Documents are ranked by their best
chunk (one chunk per document on the page).

    .venv/bin/python bench/eval_beir.py                          # SciFact test split, all modes
    .venv/bin/python bench/eval_beir.py --split train --grid     # tune fusion on the train queries
    .venv/bin/python bench/eval_beir.py --index-dir /tmp/scifact-index   # keep (and reuse) the index
    .venv/bin/python bench/eval_beir.py --split train --variant best-section:page_bonus=0,docs_page_bonus=0  # other SearchOptions

The collection is read where it lies (default ../shared/bench/scifact); it is
evaluation data and is never copied into the project.
"""

import argparse
import hashlib
import itertools
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))
sys.path.insert(0, str(PROJECT / "bench"))

from variants import parse_variant  # noqa: E402

from rag_search.core.config import load_settings  # noqa: E402
from rag_search.index.indexer import IndexWriter, SourceDocument  # noqa: E402
from rag_search.index.runs import index_run  # noqa: E402
from rag_search.model.embedding import find_model  # noqa: E402
from rag_search.search.retrieval import MODES, Searcher, SearchOptions, search  # noqa: E402
from rag_search.store.store import fingerprint  # noqa: E402

DEFAULT_DATA = PROJECT.parent / "shared" / "bench" / "scifact"
COLLECTION = "docs"
K = 10


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            query_id, doc_id, score = line.split("\t")
            if int(score) > 0:
                qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def build_index(data_dir: Path, corpus_file: Path) -> dict:
    """Index the corpus unless data_dir already holds it (same corpus file size and model fingerprint)."""
    marker = data_dir / "beir-corpus.json"
    settings = load_settings(data_dir=str(data_dir))
    stamp = {"corpus": str(corpus_file), "size": corpus_file.stat().st_size, "fingerprint": fingerprint(find_model(), settings.embedding)}
    if marker.is_file() and json.loads(marker.read_text()).get("stamp") == stamp:
        return json.loads(marker.read_text())["indexing"]
    started = time.monotonic()
    documents = read_jsonl(corpus_file)
    with index_run(settings, COLLECTION, fresh=True) as run:
        writer = IndexWriter(run.store, run.pipeline)
        for number, doc in enumerate(documents, start=1):
            title, text = doc.get("title", "").strip(), doc.get("text", "").strip()
            body = f"# {title}\n\n{text}" if title else text
            writer.put(SourceDocument(
                key=doc["_id"], source_id="beir", file=doc["_id"], kind="markdown", text=body,
                content_hash=hashlib.sha256(body.encode()).hexdigest(),
            ))
            if number % 1000 == 0:
                print(f"indexed {number}/{len(documents)} documents", file=sys.stderr)
        writer.flush()
        chunks = run.store.chunk_count()
    indexing = {"documents": len(documents), "chunks": chunks, "seconds": round(time.monotonic() - started, 1)}
    indexing["chunks_per_second"] = round(indexing["chunks"] / indexing["seconds"], 1)
    marker.write_text(json.dumps({"stamp": stamp, "indexing": indexing}))
    return indexing


def metrics(ranked: list[str], relevant: dict[str, int]) -> dict[str, float]:
    """nDCG@10 (as pytrec_eval computes it), Recall@10 and MRR@10 for one query."""
    top = ranked[:K]
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(top, start=1))
    ideal = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(sorted(relevant.values(), reverse=True)[:K], start=1))
    first = next((rank for rank, doc in enumerate(top, start=1) if doc in relevant), None)
    return {
        "ndcg@10": dcg / ideal if ideal else 0.0,
        "recall@10": len(set(top) & set(relevant)) / len(relevant),
        "mrr@10": 1.0 / first if first else 0.0,
    }


def evaluate(stores, queries, vectors, qrels, options: SearchOptions) -> dict:
    """Mean metrics and retrieval latency (embedding excluded) over the queries."""
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0}
    latencies = []
    for query_id, text in queries:
        started = time.perf_counter()
        result = search(stores, text, vectors[query_id], options)
        latencies.append((time.perf_counter() - started) * 1000)
        for name, value in metrics([hit.metadata["file"] for hit in result.hits], qrels[query_id]).items():
            totals[name] += value
    summary = {name: round(value / len(queries), 4) for name, value in totals.items()}
    latencies.sort()
    summary["retrieval_ms_p50"] = round(statistics.median(latencies), 1)
    summary["retrieval_ms_p95"] = round(latencies[int(0.95 * (len(latencies) - 1))], 1)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/")
    parser.add_argument("--split", default="test", help="qrels/<split>.tsv to evaluate (default: test)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--index-dir", type=Path, help="keep the index here and reuse it next time")
    parser.add_argument("--grid", action="store_true", help="also try fusion settings (use on the train split)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:FIELD=VALUE,…",
                        help="also a hybrid system with these SearchOptions fields")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()

    model = find_model()
    with tempfile.TemporaryDirectory(prefix="rag-eval-") as temp:
        data_dir = args.index_dir or Path(temp)
        indexing = build_index(data_dir, args.data / "corpus.jsonl")
        qrels = read_qrels(args.data / "qrels" / f"{args.split}.tsv")
        queries = [(q["_id"], q["text"]) for q in read_jsonl(args.data / "queries.jsonl") if q["_id"] in qrels]

        embed_ms = []
        vectors = {}
        searcher = Searcher(load_settings(data_dir=str(data_dir)), COLLECTION)
        stores = searcher.refresh()  # a new Searcher has no store open yet
        embedder = searcher.embedder
        embedder.embed(["warm up"])
        for query_id, text in queries:
            started = time.perf_counter()
            vectors[query_id] = embedder.embed([text])[0]
            embed_ms.append((time.perf_counter() - started) * 1000)

        defaults = SearchOptions(top_k=K, per_file=1)
        results = {}
        for mode in args.modes:
            options = SearchOptions(**{**vars(defaults), "mode": mode})
            evaluate(stores, queries[:20], vectors, qrels, options)  # warm caches
            results[mode] = evaluate(stores, queries, vectors, qrels, options)
        for name, options in (parse_variant(text, defaults) for text in args.variant):
            results[name] = evaluate(stores, queries, vectors, qrels, options)
        grid = []
        if args.grid:
            for depth, rrf_k, lexical_weight in itertools.product((30, 50, 100), (10, 30, 60, 100), (0.5, 0.75, 1.0, 1.5, 2.0)):
                options = SearchOptions(**{**vars(defaults), "depth": depth, "rrf_k": rrf_k, "lexical_weight": lexical_weight})
                grid.append({"depth": depth, "rrf_k": rrf_k, "lexical_weight": lexical_weight,
                             **evaluate(stores, queries, vectors, qrels, options)})
            grid.sort(key=lambda row: row["ndcg@10"], reverse=True)
        searcher.close()

    report = {
        "collection": str(args.data),
        "split": args.split,
        "queries": len(queries),
        "model": model.name,
        "indexing": indexing,
        "query_embedding_ms_p50": round(statistics.median(embed_ms), 1),
        "modes": results,
    }
    if "hybrid" in results and "dense" in results:
        report["hybrid_overhead_ms_p50"] = round(results["hybrid"]["retrieval_ms_p50"] - results["dense"]["retrieval_ms_p50"], 1)
    if grid:
        report["grid_top"] = grid[:10]
    print(f"{args.data.name} {args.split}: {len(queries)} queries, {indexing['documents']} documents, {indexing['chunks']} chunks "
          f"(indexed in {indexing['seconds']} s, {indexing['chunks_per_second']} chunks/s)")
    print(f"{'mode':8} {'nDCG@10':>8} {'Recall@10':>10} {'MRR@10':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for mode, row in results.items():
        print(f"{mode:8} {row['ndcg@10']:8.4f} {row['recall@10']:10.4f} {row['mrr@10']:8.4f} "
              f"{row['retrieval_ms_p50']:8.1f} {row['retrieval_ms_p95']:8.1f}")
    print(f"query embedding p50: {report['query_embedding_ms_p50']} ms (not included above)")
    for row in grid[:10]:
        print("grid:", row)
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
