"""A damaged index is reported with a repair command, never a segfault in the agent's face."""

import os
import random

import numpy as np
import pytest

from conftest import run_script
from rag_search.core.config import load_settings
from rag_search.index.indexer import IndexWriter, SourceDocument
from rag_search.index.runs import index_run

pytestmark = pytest.mark.processes  # a damaged store may crash the process reading it

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
    settings = load_settings(data_dir=str(data))
    with index_run(settings, "personal") as run:
        run.pipeline._embedder = RandomEmbedder()
        writer = IndexWriter(run.store, run.pipeline)
        rng = random.Random(0)
        for number in range(1500):
            text = f"# Note {number}\n\n" + " ".join(rng.choice(WORDS) for _ in range(40))
            writer.put(SourceDocument(f"personal:{number}", "personal", f"note-{number}.md", "markdown", text, str(number)))
        writer.flush()
    assert run.published


def test_a_damaged_vector_index_gives_a_clear_error_and_a_repair_command(tmp_path):
    data = tmp_path / "data"
    build_large_index(data)
    assert run_script("search.py", "--data-dir", data, "backup policy").code == 0

    graph = next(data.glob("personal/generations/g000001/chroma/*/data_level0.bin"))
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


def damage(path, offset_fraction=0.5, size=4096):
    """Overwrite part of a file with random bytes, as a bad disk or a stray write would."""
    with open(path, "r+b") as damaged:
        damaged.seek(int(path.stat().st_size * offset_fraction))
        damaged.write(os.urandom(size))


def search(data, query="why is ArgoCD self-heal off?"):
    return run_script("search.py", "--data-dir", data, query)


@pytest.mark.parametrize("how", ["garbled", "truncated", "header"])
@pytest.mark.parametrize("file", ["chroma/chroma.sqlite3", "catalog.sqlite"])
def test_a_damaged_store_names_the_command_that_rebuilds_it_and_that_command_works(file, how, example_index, example_data):
    target = example_data / "personal" / "generations" / "g000001" / file
    if how == "garbled":
        damage(target, 0.3, 64 * 1024)
    elif how == "truncated":
        os.truncate(target, target.stat().st_size // 3)
    else:
        damage(target, 0.0, 100)
    broken = search(example_data)
    assert broken.code == 7, broken
    assert "Traceback" not in broken.stderr
    hint = broken.json["error"]["hint"]
    assert "index_personal.py --full" in hint and "index_docs.py" not in hint, hint

    repaired = run_script("index_personal.py", "--data-dir", example_data, "--full", example_index.parent / "state")
    assert repaired.code == 0, repaired
    found = search(example_data)
    assert found.code == 0 and found.json["results"][0]["file"] in ("notes/argocd-setup.md", "memory/decisions.json"), found


def onnx_copy(data):
    return next(data.glob("model/*/model-int8.onnx"))  # the graph search runs (RAG_SEARCH_EMBEDDING defaults to int8)


@pytest.mark.parametrize("how", ["truncated", "garbled", "deleted"])
def test_a_broken_onnx_copy_is_noticed_and_replaced(how, state_dir, tmp_path):
    example_data = tmp_path / "data"
    assert run_script("index_personal.py", "--data-dir", example_data, state_dir).code == 0
    before = search(example_data)
    assert before.code == 0, before
    model = onnx_copy(example_data)
    size = model.stat().st_size
    if how == "truncated":
        os.truncate(model, size // 2)
    elif how == "garbled":  # the same size, weights changed: scores would silently go wrong
        damage(model, 0.5, 256 * 1024)
    else:
        model.unlink()

    found = search(example_data)
    assert found.code == 0, found
    assert "is damaged" in found.stderr or "no usable ONNX export" in found.stderr, "the damage is reported"
    assert [(r["file"], r["score"]) for r in found.json["results"]] == [(r["file"], r["score"]) for r in before.json["results"]]

    (state_dir / "notes" / "new.md").write_text("# New\n\nThe MinIO bucket policy allows read-only access.\n")
    indexed = run_script("index_personal.py", "--data-dir", example_data, state_dir)
    assert indexed.code == 0, indexed
    assert how == "deleted" or "is damaged" in indexed.stderr
    assert onnx_copy(example_data).stat().st_size == size
    clean = search(example_data)
    assert clean.code == 0 and "is damaged" not in clean.stderr and "ONNX" not in clean.stderr, clean
