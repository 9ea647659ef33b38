#!/usr/bin/env python3
"""Documentation retrieval on docs-faq: real FAQ questions, answered by the doc pages the FAQ links to.

Each corpus is indexed through the product as a local doc source (add_doc_source.py,
then index_docs.py, in a store of its own under --work: a rerun finds the index
there and only refreshes it, which costs a walk when nothing changed). Every
question of the split is then searched in-process in each mode, one result per
file (--per-file 1, --top-k 10), and scored at file level as docs-faq's score.py
does: Hit@1, Hit@5, Recall@10, MRR@10, per corpus and overall (the mean over
questions). The two baselines run in the same run on the same questions
(bench/docs_baselines.py: bm25s over whole files, and the naive ChromaDB + MiniLM
design on 380-word chunks); their rankings are kept under --work too.

    .venv/bin/python bench/eval_docs.py --work /tmp/docs-eval --split dev        # tune on dev
    .venv/bin/python bench/eval_docs.py --work /tmp/docs-eval --split test       # report on test
    .venv/bin/python bench/eval_docs.py --work /tmp/docs-eval --split dev --variant best-section:page_bonus=0,docs_page_bonus=0

--variant NAME:field=value[,field=value] adds a hybrid system with other SearchOptions
(retrieval.py), to compare settings in one run. --runs DIR writes score.py run files.

With the graded labels (bench/docs_faq_grades.jsonl, bench/README.md) every system is also scored
by what answers (bench/graded.py: answer Hit@1 and Hit@5, graded nDCG@10, Recall@10 pages, linked
Hit@5, unjudged pages in the top 5), as means over questions and over corpora, with the corpora
each system helps and hurts against the default. --loco adds product:loco: each corpus answered
by the hybrid system (the default or a --variant) that scores best on the other 13.

    .venv/bin/python bench/eval_docs.py --work /tmp/docs-eval --split all --loco --variant more-bonus:page_bonus=0.2

The data is read where it lies (default ../shared/bench/docs-faq) and never copied.
"""

import argparse
import dataclasses
import hashlib
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
SCRIPTS = PROJECT / "scripts"
sys.path.insert(0, str(SCRIPTS))
sys.path.insert(0, str(PROJECT / "bench"))

import docs_baselines  # noqa: E402
import graded  # noqa: E402
from variants import parse_variant  # noqa: E402

from rag_search.core.config import load_settings  # noqa: E402
from rag_search.search.retrieval import MODES, Searcher, SearchOptions, search  # noqa: E402

DEFAULT_DATA = PROJECT.parent / "shared" / "bench" / "docs-faq"
DEFAULT_GRADES = PROJECT / "bench" / "docs_faq_grades.jsonl"
K = 10
METRICS = ("hit1", "hit5", "recall10", "mrr10")
BASELINES = ("bm25s-files", "naive-chroma-380w")


def read_questions(data: Path, split: str, corpora: set[str]) -> list[dict]:
    rows = [json.loads(line) for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    return [q for q in rows if (split == "all" or q["split"] == split) and (not corpora or q["corpus"] in corpora)]


def metrics(relevant: list[str], ranked: list[str]) -> dict[str, float]:
    """As docs-faq's score.py: the first 10 distinct files of the ranking against the relevant ones."""
    files = list(dict.fromkeys(ranked))[:K]
    first = next((rank for rank, name in enumerate(files, start=1) if name in relevant), None)
    return {"hit1": float(first == 1), "hit5": float(first is not None and first <= 5),
            "recall10": len(set(relevant) & set(files)) / len(relevant), "mrr10": 1.0 / first if first else 0.0}


def run_script(name: str, *args) -> dict:
    completed = subprocess.run([sys.executable, str(SCRIPTS / name), *map(str, args)], capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"{name} failed ({completed.returncode}): {completed.stderr[-3000:]}")
    return json.loads(completed.stdout)


def index_corpus(corpus: str, folder: Path, work: Path, glob: str = "**/*.md*") -> dict:
    """The corpus (its files matching `glob`) as a local doc source in its own store under `work`, built or refreshed
    through the product's scripts."""
    registry, data = work / corpus / "sources.json", work / corpus / "data"
    if not registry.is_file():
        registry.parent.mkdir(parents=True, exist_ok=True)
        registry.write_text('{"sources": []}\n')
        run_script("add_doc_source.py", "--sources", registry, "--data-dir", data, "--quiet", "--id", corpus, "--name", f"{corpus} docs",
                   "--type", "local", "--path", folder.resolve(), "--glob", glob)
    started = time.monotonic()
    # --all: the registry holds this corpus alone, and only a run over every source may rebuild the collection
    summary = run_script("index_docs.py", "--sources", registry, "--data-dir", data, "--quiet", "--all")["sources"][0]
    if summary["status"] != "ok":
        raise SystemExit(f"indexing {corpus} failed: {summary.get('error')}")
    return {"chunks": summary["chunks"], "embedded": summary["embedded"], "seconds": round(time.monotonic() - started, 1)}


def product_rankings(corpus: str, work: Path, questions: list[dict], systems: dict[str, SearchOptions],
                     kinds: dict[str, str] | None = None) -> dict:
    """{system: {question id: ranked files}} and retrieval latencies (ms), with each query embedded once; `kinds`, if
    given, gets each ranked file's page kind (none for an index built before kinds)."""
    searcher = Searcher(load_settings(data_dir=str(work / corpus / "data")), "docs")
    try:
        stores = searcher.refresh()  # a new Searcher has no store open yet
        vectors = {q["id"]: searcher.embedder.embed([q["question"]])[0] for q in questions}
        ranked: dict = {name: {} for name in systems}
        latencies: list[float] = []
        for name, options in systems.items():
            for q in questions:
                started = time.perf_counter()
                result = search(stores, q["question"], vectors[q["id"]], dataclasses.replace(options, sources=[corpus]))
                latencies.append((time.perf_counter() - started) * 1000)
                ranked[name][q["id"]] = [hit.metadata["file"].removeprefix(f"{corpus}/") for hit in result.hits]
                if kinds is not None:
                    kinds.update(zip(ranked[name][q["id"]], (hit.metadata.get("page_kind", "") for hit in result.hits), strict=True))
        return ranked, latencies
    finally:
        searcher.close()


def baseline_rankings(corpus: str, folder: Path, work: Path, questions: list[dict], everyone: list[dict], embed) -> dict:
    """{baseline: {question id: ranked files}}, kept under `work` while the corpus and the questions are the same.

    A missing ranking is made for every question of the corpus (`everyone`, all splits), so the
    naive baseline embeds the corpus once, not once per split.
    """
    files = docs_baselines.corpus_files(folder)
    stamp = hashlib.sha256(json.dumps([[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in files]).encode()).hexdigest()
    cache = work / "baselines" / f"{corpus}.json"
    kept = json.loads(cache.read_text()) if cache.is_file() else {}
    if kept.get("stamp") != stamp:
        kept = {"stamp": stamp, "ranked": {name: {} for name in BASELINES}}
    if any(q["id"] not in kept["ranked"][name] for q in questions for name in BASELINES):
        todo = [q for q in everyone if any(q["id"] not in kept["ranked"][name] for name in BASELINES)]
        kept["ranked"]["bm25s-files"].update(docs_baselines.bm25s_files(folder, todo))
        kept["ranked"]["naive-chroma-380w"].update(docs_baselines.naive_chroma(folder, todo, embed()))
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(kept))
    return {name: {q["id"]: kept["ranked"][name][q["id"]] for q in questions} for name in BASELINES}


def table(rows: list[dict]) -> str:
    lines = ["| system | corpus | n | Hit@1 | Hit@5 | Recall@10 | MRR@10 |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['system']} | {row['corpus']} | {row['n']} | "
                     + " | ".join(f"{row[name]:.3f}" for name in METRICS) + " |")
    return "\n".join(lines)


def margins(overall: list[dict]) -> str:
    """Each product system's Hit@5 and MRR@10 against the better baseline of the same run (the issue's yardstick)."""
    baselines = [row for row in overall if row["system"].startswith("baseline:")]
    if not baselines:
        return ""
    best = {name: max(row[name] for row in baselines) for name in ("hit5", "mrr10")}
    return "\n".join(f"{row['system']}: Hit@5 {row['hit5'] - best['hit5']:+.3f}, MRR@10 {row['mrr10'] - best['mrr10']:+.3f} "
                     "over the better baseline" for row in overall if row["system"].startswith("product:"))


def score(questions: list[dict], rankings: dict[str, dict]) -> list[dict]:
    """Rows per system and corpus, then overall (the mean over questions)."""
    rows = []
    for system, ranked in rankings.items():
        groups = defaultdict(list)
        for q in questions:
            found = metrics(q["relevant"], ranked.get(q["id"], []))
            groups[q["corpus"]].append(found)
            groups["overall"].append(found)
        for corpus in sorted(groups, key=lambda name: (name == "overall", name)):
            group = groups[corpus]
            rows.append({"system": system, "corpus": corpus, "n": len(group),
                         **{name: round(sum(m[name] for m in group) / len(group), 3) for name in METRICS}})
    return rows


def graded_table(rows: list[dict]) -> str:
    lines = ["| system | corpus | n | answerable | answer Hit@1 | answer Hit@5 | nDCG@10 | Recall@10 pages | linked Hit@5 | "
             "unjudged in top 5 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = [f"{row[name]:.3f}" if row[name] is not None else "–" for name in graded.GRADED[:-1]]
        lines.append(f"| {row['system']} | {row['corpus']} | {row['n']} | {row['answerable']} | " + " | ".join(cells)
                     + f" | {row['unjudged5']} |")
    return "\n".join(lines)


def graded_report(questions: list[dict], rankings: dict, grades: dict, chosen: dict | None) -> list[dict]:
    """Print the graded tables (means over questions and over corpora, every corpus of the default, LOCO and the
    baselines) and each system's corpora helped and hurt against the default; return the rows."""
    rows = graded.graded_rows(questions, rankings, grades)
    print("\ngraded labels (answer = a grade-2 page; means over answerable questions, nDCG over questions with a judged page):")
    print(graded_table([row for row in rows if row["corpus"] in ("overall", "corpora")]))
    shown = {"product:hybrid", "product:loco"} | {name for name in rankings if name.startswith("baseline:")}
    print()
    print(graded_table(sorted((row for row in rows if row["system"] in shown and row["corpus"] not in ("overall", "corpora")),
                              key=lambda row: (row["corpus"], row["system"]))))
    for system in rankings:
        if system != "product:hybrid" and "product:hybrid" in rankings:
            verdict = graded.against(rows, system, "product:hybrid")
            print(f"{system} against product:hybrid (mean of answer Hit@1 and nDCG@10 per corpus): "
                  f"{len(verdict['helped'])} helped, {len(verdict['hurt'])} hurt ({', '.join(verdict['hurt']) or 'none'}), "
                  f"{len(verdict['level'])} level")
    if chosen:
        print("LOCO choices: " + ", ".join(f"{corpus} {name.removeprefix('product:')}" for corpus, name in chosen.items()))
    return rows


def write_unjudged(path: Path, questions: list[dict], rankings: dict, grades: dict) -> None:
    """The pages any system puts in its first 5 that have no label, per question, in docs_faq_pool.py's form."""
    with path.open("w", encoding="utf-8") as out:
        for q in questions:
            pages = {name for ranked in rankings.values() for name in list(dict.fromkeys(ranked.get(q["id"], [])))[:5]}
            pages -= set(grades.get(q["id"], {}))
            if pages:
                out.write(json.dumps({"id": q["id"], "corpus": q["corpus"], "question": q["question"], "pages": sorted(pages)}) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="keeps the indexes and baseline rankings between runs")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the docs-faq folder")
    parser.add_argument("--split", choices=["dev", "test", "all"], default="test")
    parser.add_argument("--corpora", nargs="+", default=[], help="only these corpora")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:FIELD=VALUE,…", help="an extra hybrid system")
    parser.add_argument("--no-baselines", action="store_true", help="skip the two baselines")
    parser.add_argument("--runs", type=Path, help="write score.py run files (one per system) into this folder")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--grades", type=Path, default=DEFAULT_GRADES, help="graded labels (bench/README.md); none: linked pages only")
    parser.add_argument("--loco", action="store_true",
                        help="add product:loco: per corpus, the hybrid system (default or a --variant) best on the other corpora")
    parser.add_argument("--unjudged", type=Path, help="write the unjudged pages in each system's first 5 here (a pool to judge)")
    args = parser.parse_args()
    if args.loco and not args.grades.is_file():
        parser.error(f"--loco needs graded labels: {args.grades} is missing")

    questions = read_questions(args.data, args.split, set(args.corpora))
    systems = {f"product:{mode}": SearchOptions(top_k=K, per_file=1, mode=mode) for mode in args.modes}
    base = SearchOptions(top_k=K, per_file=1)
    systems.update((f"product:{name}", options) for name, options in (parse_variant(text, base) for text in args.variant))
    embedder = None

    def embed():
        nonlocal embedder
        embedder = embedder or docs_baselines.onnx_embed()
        return embedder

    rankings: dict[str, dict] = defaultdict(dict)
    indexing, latencies = {}, []
    for corpus in sorted({q["corpus"] for q in questions}):
        subset = [q for q in questions if q["corpus"] == corpus]
        indexing[corpus] = index_corpus(corpus, args.data / corpus, args.work)
        print(f"{corpus}: {indexing[corpus]}", file=sys.stderr)
        ranked, spent = product_rankings(corpus, args.work, subset, systems)
        latencies += spent
        if not args.no_baselines:
            everyone = read_questions(args.data, "all", {corpus})
            ranked.update((f"baseline:{name}", found) for name, found in baseline_rankings(corpus, args.data / corpus, args.work,
                                                                                            subset, everyone, embed).items())
        for system, found in ranked.items():
            rankings[system].update(found)

    grades = graded.load_grades(args.grades) if args.grades.is_file() else None
    if grades and args.loco:
        candidates = [name for name in rankings if name.startswith("product:") and name not in ("product:dense", "product:lexical")]
        rankings["product:loco"], chosen = graded.loco(questions, rankings, grades, candidates)
    rows = score(questions, rankings)
    overall = [row for row in rows if row["corpus"] == "overall"]
    print(f"docs-faq {args.split}: {len(questions)} questions, {sum(i['chunks'] for i in indexing.values())} chunks")
    print(table(overall))
    print(margins(overall))
    print()
    print(table(rows))
    if grades:
        judged_rows = graded_report(questions, rankings, grades, chosen if args.loco else None)
        if args.unjudged:
            write_unjudged(args.unjudged, questions, rankings, grades)
    latencies.sort()
    print(f"\nretrieval latency (in-process, query embedding excluded): p50 {statistics.median(latencies):.1f} ms")
    if args.runs:
        args.runs.mkdir(parents=True, exist_ok=True)
        for system, ranked in rankings.items():
            with (args.runs / f"{system.replace(':', '-')}-{args.split}.jsonl").open("w") as handle:
                for q in questions:
                    handle.write(json.dumps({"id": q["id"], "system": system, "ranked_files": ranked[q["id"]]}) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"split": args.split, "indexing": indexing, "rows": rows, "rankings": rankings,
                                         "graded": judged_rows if grades else None}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
