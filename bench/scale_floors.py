#!/usr/bin/env python3
"""What the fixed design itself costs at one index size: the floors under the scale goals that were missed (not a test).

bench_scale.py measures the product. This measures the parts of it that the design fixes (ChromaDB in the
search process, all-MiniLM-L6-v2 on this machine's cores), on the docs index of a bench_scale.py work folder,
so that a missed goal can be read against what no code of ours removes:

- a cold search: `import chromadb` in a fresh process; then, in another fresh process, opening the published
  docs index and its first dense query, which loads ChromaDB's whole HNSW graph into memory (the graph's files
  are sized), a second query for comparison, and that process's peak RSS;
- indexing: the model alone on chunks of the index (their indexed text: heading path, then passage; the same
  embedder a search uses, on every core), ChromaDB adding as many vectors to a copy of the collection, and both
  at once in two threads (whether overlapping them gains anything on this machine).

    .venv/bin/python bench/scale_floors.py --work /tmp/scale [--chunks 1000] [--runs 5] [--json FILE]

Run it on an idle machine; --work is a folder bench_scale.py built (its data/ is read, never changed: the
ChromaDB additions go to a copy in a temporary folder).
"""

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from bench_speed import SCRIPTS, child_peak

from rag_search.core.config import load_settings
from rag_search.model.embedding import find_model, query_embedder
from rag_search.store.local_vectors import CHROMA
from rag_search.store.records import Filters
from rag_search.store.store import Store
from rag_search.store.vectors import VectorIndex
from rag_search.text.chunking import Chunk

IMPORT_ONLY = "import time; started = time.perf_counter(); import chromadb; print(time.perf_counter() - started)"
# In a fresh process: import chromadb, open the published docs index, two dense queries; the seconds of each step.
FIRST_QUERY = """import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from rag_search.core.config import load_settings
from rag_search.model.embedding import find_model
from rag_search.store.records import Filters
from rag_search.store.store import Store
settings = load_settings(data_dir=sys.argv[2])
vector = np.random.default_rng(0).standard_normal(find_model(settings.model_dir).dimension).astype(np.float32)
vector /= np.linalg.norm(vector)
marks = [time.perf_counter()]
import chromadb
marks.append(time.perf_counter())
store = Store.open_for_reading(settings, "docs")
marks.append(time.perf_counter())
for _ in range(2):
    store.dense(vector, 50, Filters())
    marks.append(time.perf_counter())
print(json.dumps([b - a for a, b in zip(marks, marks[1:])]))
"""
STEPS = ("import", "open", "first_query", "second_query")


def graph_bytes(folder: Path) -> int:
    """The size of the HNSW files in a generation's ChromaDB folder (all of it but its SQLite file)."""
    chroma = folder / CHROMA
    return sum(path.stat().st_size for path in chroma.rglob("*") if path.is_file() and path.parent != chroma)


def cold(data: Path, runs: int) -> dict:
    """Medians over `runs` fresh processes: chromadb's import alone; then each step up to a second query."""
    imports = [float(child_peak([sys.executable, "-c", IMPORT_ONLY], dict(os.environ))[2]) for _ in range(runs)]
    steps, peaks = [], []
    for _ in range(runs):
        _, peak, output = child_peak([sys.executable, "-c", FIRST_QUERY, str(SCRIPTS), str(data)], dict(os.environ))
        steps.append(json.loads(output))
        peaks.append(peak)
    median = {name: round(statistics.median(step[i] for step in steps), 3) for i, name in enumerate(STEPS)}
    return {"import_chromadb_s": round(statistics.median(imports), 3), "steps_s": median,
            "graph_load_s": round(median["first_query"] - median["second_query"], 3), "peak_rss_mb": round(statistics.median(peaks))}


def sample_texts(store: Store, count: int, seed: int = 0) -> list[str]:
    """The indexed text of about `count` chunks, of whole documents picked at random."""
    keys = sorted(store.documents())
    random.Random(seed).shuffle(keys)
    texts: list[str] = []
    for key in keys:
        texts += [Chunk(chunk.text, chunk.metadata.get("heading", ""), chunk.metadata).embed_text for chunk in store.document_chunks(key)]
        if len(texts) >= count:
            break
    return texts[:count]


def indexing(data: Path, count: int) -> dict:
    """The model and ChromaDB's additions on `count` chunks, the additions going to a copy of the docs collection."""
    settings = load_settings(data_dir=str(data))
    embedder = query_embedder(settings.data_dir, find_model(settings.model_dir), settings.embedding)
    with tempfile.TemporaryDirectory(prefix="scale-floors-") as scratch:
        store = Store.open_for_reading(settings, "docs")  # its read lock keeps the generation while it is copied
        try:
            texts, graph = sample_texts(store, count), graph_bytes(store.folder)
            shutil.copytree(store.folder / CHROMA, Path(scratch) / CHROMA)
        finally:
            store.close()
        vectors = VectorIndex.open_local(Path(scratch) / CHROMA, "docs")
        try:
            return {"graph_mb": round(graph / 1e6, 1), **timed_parts(embedder, vectors, texts)}
        finally:
            vectors.close()


def timed_parts(embedder, vectors: VectorIndex, texts: list[str]) -> dict:
    """The model alone, ChromaDB adding alone, then both at once in two threads, on the same number of chunks."""
    rng = np.random.default_rng(1)
    warm = embedder.embed(texts[:32])
    vectors.query(warm[0], 1, Filters())  # ChromaDB loads the graph before any timing

    def add(tag: str) -> float:
        unit = rng.standard_normal((len(texts), warm.shape[1])).astype(np.float32)
        unit /= np.linalg.norm(unit, axis=1, keepdims=True)
        started = time.perf_counter()
        vectors.add([f"scale-floors-{tag}-{i}" for i in range(len(texts))], unit, [{"source_id": "scale-floors"}] * len(texts))
        return time.perf_counter() - started

    started = time.perf_counter()
    embedder.embed(texts)
    model = time.perf_counter() - started
    alone = add("alone")
    worker = threading.Thread(target=embedder.embed, args=(texts,))
    started = time.perf_counter()
    worker.start()
    add("together")
    worker.join()
    together = time.perf_counter() - started
    count = len(texts)
    return {"chunks": count, "model_chunks_per_s": round(count / model, 1), "add_ms_per_vector": round(1000 * alone / count, 3),
            "in_turn_s": round(model + alone, 2), "at_once_s": round(together, 2),
            "ceiling_chunks_per_s": round(count / (model + alone), 1)}


def report(figures: dict) -> str:
    c, i = figures["cold"], figures["indexing"]
    steps = c["steps_s"]
    floor = c["import_chromadb_s"] + c["graph_load_s"]
    rows = [
        ("`import chromadb`, fresh process", f"{c['import_chromadb_s']} s"),
        ("open the docs index / first dense query / second", f"{steps['open']} / {steps['first_query']} / {steps['second_query']} s"),
        ("HNSW graph: load (first query minus second) / files", f"{c['graph_load_s']} s / {i['graph_mb']} MB"),
        ("peak RSS of a process that only opens the index and queries it", f"{c['peak_rss_mb']} MB"),
        (f"model alone, {i['chunks']} chunks of the index", f"{i['model_chunks_per_s']} chunks/s"),
        ("ChromaDB adding to the collection", f"{i['add_ms_per_vector']} ms per vector"),
        ("model then adding / both at once (two threads)", f"{i['in_turn_s']} / {i['at_once_s']} s"),
        ("floor of a cold search: import + graph load", f"{floor:.2f} s"),
        ("ceiling of indexing: model + adding, nothing else", f"{i['ceiling_chunks_per_s']} chunks/s"),
    ]
    return "\n".join([f"| at {figures['chunks']:,} docs chunks | |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="a bench_scale.py work folder (its data/ is read)")
    parser.add_argument("--chunks", type=int, default=1000, help="chunks for the indexing parts (default 1000)")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per cold figure (default 5)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    data = args.work / "data"
    store = Store.open_for_reading(load_settings(data_dir=str(data)), "docs")
    try:
        chunks = store.chunk_count()
    finally:
        store.close()
    figures = {"chunks": chunks, "cold": cold(data, args.runs), "indexing": indexing(data, args.chunks)}
    print(report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
