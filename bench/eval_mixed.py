#!/usr/bin/env python3
"""The user's own context first: do documentation pages bury personal answers, and does personal context
bury documentation?

One data dir under --work holds both collections, as a user's would: the personal index of a
generated state (bench/mixed_state.py: ~70 files, one ~400 KB transcript, questions about it)
and the docs-faq corpora (default helm and traefik) as local doc sources. Both are built
through the product's scripts and only refreshed on a rerun (the state is rewritten only
where it changed; a code change that alters chunking rebuilds what it must).

Systems, each searched in-process with the retrieval function scripts/search.py calls (each
query embedded once; latency excludes the embedding):
  default           search.py with no --index: both collections (hybrid)
  personal          --index personal
  personal-lexical  --index personal --mode lexical (a question it misses is likely an authoring mistake)
  docs              --index docs
  NAME              each --variant NAME:FIELD=VALUE,... : default search with other SearchOptions fields
  NAME@personal     the same settings with --index personal
Personal questions: top-1, top-3, MRR@10 (a hit is a result of the answer's file whose text holds
the needle; per-file cap as search.py's default), and the share of the first 5 results (what
search.py shows by default) taken by documentation. Docs-faq questions (every split of the
corpora): Hit@5 and MRR@10 on the linked pages, one result per file, as bench/eval_docs.py.

    .venv/bin/python bench/eval_mixed.py --work /tmp/mixed [--corpora helm traefik] [--variant ...]
"""

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))
sys.path.insert(0, str(PROJECT / "bench"))

import mixed_state  # noqa: E402
from eval_docs import DEFAULT_DATA, K, metrics, read_questions, run_script  # noqa: E402
from variants import parse_variant  # noqa: E402

from rag_search.core.config import load_settings  # noqa: E402
from rag_search.search.retrieval import Searcher, SearchOptions, search, stores_for  # noqa: E402

SHOWN = 5  # results search.py prints by default: the slots the documentation share is counted over


@dataclasses.dataclass
class System:
    name: str
    index: str  # as search.py --index: all, personal or docs
    personal: SearchOptions | None  # options for the personal questions; None: not asked
    docs: SearchOptions | None  # options for the docs-faq questions; None: not asked


def build(work: Path, data_root: Path, corpora: list[str]) -> dict:
    """The state under work/state and one data dir, work/data, with both indexes, each brought up to date."""
    files = mixed_state.state_files()
    problems = mixed_state.check_questions(files)
    if problems:
        raise SystemExit("question errors in mixed_state.py:\n" + "\n".join(problems))
    state, data = work / "state", work / "data"
    written = mixed_state.write_state(state, files)
    personal = run_script("index_personal.py", "--data-dir", data, "--quiet", state)
    registry = register(work / "sources.json", data, data_root, corpora)
    # --all: the registry holds these corpora alone, and only a run over every source may rebuild the collection
    docs = run_script("index_docs.py", "--sources", registry, "--data-dir", data, "--quiet", "--all")
    failed = [source for source in docs["sources"] if source["status"] != "ok"]
    if failed:
        raise SystemExit(f"indexing docs failed: {failed}")
    return {"state": written, "personal": {key: personal[key] for key in ("files_seen", "chunks", "embedded", "seconds")},
            "docs": {source["id"]: {key: source[key] for key in ("chunks", "embedded", "seconds")} for source in docs["sources"]}}


def register(registry: Path, data: Path, data_root: Path, corpora: list[str]) -> Path:
    """A registry of exactly these corpora as local doc sources (sources of an earlier run with other corpora are removed,
    so that nothing else competes)."""
    if not registry.is_file():
        registry.parent.mkdir(parents=True, exist_ok=True)
        registry.write_text('{"sources": []}\n')
    known = {source["id"] for source in json.loads(registry.read_text())["sources"]}
    for corpus in sorted(known - set(corpora)):
        run_script("add_doc_source.py", "--sources", registry, "--data-dir", data, "--quiet", "--remove", corpus)
    for corpus in [name for name in corpora if name not in known]:
        run_script("add_doc_source.py", "--sources", registry, "--data-dir", data, "--quiet", "--id", corpus, "--name", f"{corpus} docs",
                   "--type", "local", "--path", (data_root / corpus).resolve(), "--glob", "**/*.md*")
    return registry


def make_systems(variants: list[str], recency: float | None) -> list[System]:
    """The fixed systems, then one per --variant (parse_variant fails clearly on a field SearchOptions does not have)."""
    personal = SearchOptions(top_k=K, recency_half_life_days=recency)
    docs = SearchOptions(top_k=K, per_file=1, recency_half_life_days=recency)
    systems = [System("default", "all", personal, docs), System("personal", "personal", personal, None),
               System("personal-lexical", "personal", dataclasses.replace(personal, mode="lexical"), None),
               System("docs", "docs", None, docs)]
    for text in variants:
        name, on_personal = parse_variant(text, personal)
        systems.append(System(name, "all", on_personal, parse_variant(text, docs)[1]))
        systems.append(System(f"{name}@personal", "personal", on_personal, None))
    return systems


def evaluate(settings, systems: list[System], personal: list[tuple], docs: list[dict]) -> tuple[dict, dict]:
    """{system: {"personal": outcomes, "docs": outcomes, "latencies": ms}} and the reindex notes of the stores (none
    expected right after a build)."""
    searcher = Searcher(settings, "all")
    try:
        stores = searcher.refresh()  # what search.py opens with no --index: every collection built
        texts = sorted({question for _, question, _, _ in personal} | {q["question"] for q in docs})
        vectors = {text: searcher.embedder.embed([text])[0] for text in texts}
        outcomes = {system.name: run_system(stores, system, personal, docs, vectors) for system in systems}
        return outcomes, {name: store.reindex for name, store in stores.items() if store.reindex}
    finally:
        searcher.close()


def run_system(stores: dict, system: System, personal: list[tuple], docs: list[dict], vectors: dict) -> dict:
    chosen = stores_for(stores if system.index == "all" else {system.index: stores[system.index]}, None)
    latencies: list[float] = []

    def ask(text: str, options: SearchOptions) -> list:
        started = time.perf_counter()
        hits = search(chosen, text, vectors[text], options).hits
        latencies.append((time.perf_counter() - started) * 1000)
        return hits

    found: dict = {"personal": [], "docs": [], "latencies": latencies}
    if system.personal:
        found["personal"] = [personal_outcome(ask(question, system.personal), path, needle) for _, question, path, needle in personal]
    if system.docs:
        found["docs"] = [docs_outcome(ask(q["question"], system.docs), q) for q in docs]
    return found


def where(hit) -> str:
    return f"{hit.collection}:{hit.metadata.get('file', '')}"


def personal_outcome(hits: list, path: str, needle: str) -> dict:
    """The rank of the first result that answers (its file, and the needle in its text), and what took the first slots."""
    rank = next((rank for rank, hit in enumerate(hits, start=1)
                 if hit.collection == "personal" and hit.metadata.get("file") == path and needle in hit.text), None)
    return {"rank": rank, "docs_shown": sum(hit.collection == "docs" for hit in hits[:SHOWN]), "first": where(hits[0]) if hits else None}


def docs_outcome(hits: list, question: dict) -> dict:
    """eval_docs.metrics on the linked pages; a personal result takes a slot like any other page."""
    relevant = [f"docs:{question['corpus']}/{path}" for path in question["relevant"]]
    return {**metrics(relevant, [where(hit) for hit in hits]), "personal_shown": sum(hit.collection == "personal" for hit in hits[:SHOWN]),
            "first": where(hits[0]) if hits else None}


def mean(values) -> float:
    values = list(values)
    return round(sum(values) / len(values), 3) if values else 0.0


def summarize(system: System, outcome: dict, personal: list[tuple]) -> dict:
    row = {"system": system.name, "index": system.index, "mode": (system.personal or system.docs).mode}
    if outcome["personal"]:
        ranks = [found["rank"] for found in outcome["personal"]]
        by_style = {style: [rank for (style_of, *_), rank in zip(personal, ranks, strict=True) if style_of == style]
                    for style in ("own", "neutral")}
        row.update(top1=mean(rank == 1 for rank in ranks), top3=mean(rank is not None and rank <= 3 for rank in ranks),
                   mrr10=mean(1 / rank if rank else 0 for rank in ranks),
                   **{f"top1_{style}": mean(rank == 1 for rank in group) for style, group in by_style.items()},
                   docs_in_top5=mean(found["docs_shown"] / SHOWN for found in outcome["personal"]))
    if outcome["docs"]:
        row.update(docs_hit5=mean(found["hit5"] for found in outcome["docs"]), docs_mrr10=mean(found["mrr10"] for found in outcome["docs"]),
                   personal_in_top5=mean(found["personal_shown"] / SHOWN for found in outcome["docs"]))
    row["p50_ms"] = round(statistics.median(outcome["latencies"]), 1)
    return row


COLUMNS = (("top1", "top-1"), ("top3", "top-3"), ("mrr10", "MRR@10"), ("top1_own", "top-1 own"), ("top1_neutral", "top-1 neutral"),
           ("docs_in_top5", "docs in top-5"), ("docs_hit5", "docs-faq Hit@5"), ("docs_mrr10", "docs-faq MRR@10"),
           ("personal_in_top5", "personal in top-5"), ("p50_ms", "p50 ms"))


def table(rows: list[dict]) -> str:
    lines = ["| system | index | mode | " + " | ".join(title for _, title in COLUMNS) + " |", "|---" * (3 + len(COLUMNS)) + "|"]
    for row in rows:
        cells = [f"{row[key]:.1f}" if key == "p50_ms" else f"{row[key]:.3f}" if key in row else "–" for key, _ in COLUMNS]
        lines.append(f"| {row['system']} | {row['index']} | {row['mode']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def misses(outcomes: dict, personal: list[tuple]) -> str:
    """Personal questions the default search does not answer first (and what came first), and those lexical search over
    the personal index misses entirely (a sign of a wrong needle or question)."""
    lines = []
    for name, wanted in (("default", lambda rank: rank != 1), ("personal-lexical", lambda rank: rank is None)):
        for (style, question, path, _), found in zip(personal, outcomes[name]["personal"], strict=True):
            if wanted(found["rank"]):
                lines.append(f"{name}: [{style}] {question!r} -> {path}: rank {found['rank']}, first {found['first']}")
    return "\n".join(lines)


def code_state() -> dict:
    """The commit and the files under scripts/ changed since: others may be editing them while this runs."""
    def git(*args) -> str:
        return subprocess.run(["git", "-C", str(PROJECT), *args], capture_output=True, text=True).stdout.strip()
    return {"head": git("rev-parse", "--short", "HEAD"), "changed": git("status", "--porcelain", "--", "scripts").splitlines()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="keeps the generated state and the data dir between runs")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the docs-faq folder (read in place)")
    parser.add_argument("--corpora", nargs="+", default=["helm", "traefik"], help="docs-faq corpora indexed as doc sources")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:FIELD=VALUE,…", help="an extra default-search system")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()

    settings = load_settings(data_dir=str(args.work / "data"))
    systems = make_systems(args.variant, settings.recency_half_life_days)  # a bad --variant fails before any indexing
    docs = read_questions(args.data, "all", set(args.corpora))
    missing = set(args.corpora) - {q["corpus"] for q in docs}
    if missing:
        raise SystemExit(f"no docs-faq questions for {', '.join(sorted(missing))} in {args.data}")
    personal = mixed_state.QUESTIONS
    started = time.monotonic()
    built = build(args.work, args.data, args.corpora)
    built["seconds"] = round(time.monotonic() - started, 1)
    started = time.monotonic()
    outcomes, reindex = evaluate(settings, systems, personal, docs)
    searched = round(time.monotonic() - started, 1)
    rows = [summarize(system, outcomes[system.name], personal) for system in systems]
    code = code_state()

    corpora = ", ".join(f"{name} {info['chunks']} chunks" for name, info in built["docs"].items())
    print(f"state: {built['state']['files']} files ({built['state']['bytes'] // 1000} KB), {built['personal']['chunks']} chunks; "
          f"docs: {corpora}")
    print(f"questions: {len(personal)} personal ({sum(q[0] == 'own' for q in personal)} own, {sum(q[0] == 'neutral' for q in personal)} "
          f"neutral), {len(docs)} docs-faq ({', '.join(args.corpora)}, all splits)")
    print(f"code: {code['head']}" + (f" + uncommitted changes in {len(code['changed'])} files under scripts/" if code["changed"] else ""))
    print(f"build {built['seconds']} s, searches {searched} s" + (f"; stores to reindex: {reindex}" if reindex else ""))
    print()
    print(table(rows))
    print()
    print(misses(outcomes, personal))
    if args.json:
        args.json.write_text(json.dumps({"build": built, "searched_seconds": searched, "code": code, "reindex": reindex, "rows": rows,
                                         "outcomes": outcomes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
