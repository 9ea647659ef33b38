"""A damaged index is reported with a repair command, never a segfault in the agent's face."""

import os
import random

import numpy as np

from conftest import run_script
from rag_search.embedding import find_model
from rag_search.indexer import IndexWriter, Pipeline, SourceDocument
from rag_search.store import Store

WORDS = "kernel volume network storage cluster ingress backup policy secret quota".split()


class RandomEmbedder:
    """Deterministic stand-in vectors: this test is about reading a damaged store, not about embedding."""

    dimension = 384

    def __init__(self):
        self._rng = np.random.default_rng(0)

    def embed(self, texts):
        vectors = self._rng.normal(size=(len(texts), self.dimension)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build_large_index(data):
    """1,500 chunks: enough for ChromaDB to keep its HNSW graph in files (it keeps small ones in SQLite)."""
    store = Store.open_for_writing(data)
    pipeline = Pipeline(find_model(), data)
    pipeline._embedder = RandomEmbedder()
    rng = random.Random(0)
    with IndexWriter(store, "personal", pipeline) as writer:
        for number in range(1500):
            text = f"# Note {number}\n\n" + " ".join(rng.choice(WORDS) for _ in range(40))
            writer.put(SourceDocument(f"personal:{number}", "personal", f"note-{number}.md", "markdown", text, str(number)))
    assert store.commit()
    store.close()


def test_a_damaged_vector_index_gives_a_clear_error_and_a_repair_command(tmp_path):
    data = tmp_path / "data"
    build_large_index(data)
    assert run_script("search.py", "--data-dir", data, "backup policy").code == 0

    graph = next(data.glob("generations/g000001/chroma/*/data_level0.bin"))
    rng = random.Random(1)
    with open(graph, "r+b") as damaged:  # what a bad disk does to it
        for _ in range(2000):
            damaged.seek(rng.randrange(0, graph.stat().st_size - 8))
            damaged.write(os.urandom(8))

    for query in ("backup policy", "kernel network quota"):
        result = run_script("search.py", "--data-dir", data, query)
        assert result.code == 7, result
        assert result.json["error"]["type"] == "StoreError"
        assert "damaged" in result.stderr or "cannot be read" in result.stderr
        assert "index_personal.py --full" in result.stderr
        assert "Traceback" not in result.stderr
