"""The dense half of a search: ChromaDB's HNSW graph must return the true nearest chunks, not most of them."""

import subprocess
import sys

import numpy as np
import pytest

from conftest import SCRIPTS, call_script
from rag_search.store.records import Filters
from rag_search.store.vectors import EF_SEARCH, VectorIndex

NO_FILTERS = Filters()

DEPTH = 50  # the dense candidates a search asks for (SearchOptions.depth)

_SEARCH_BREADTH = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from rag_search.store.vectors import VectorIndex
root = Path(sys.argv[2]) / "personal"
vectors = VectorIndex.open_local(root / "generations" / (root / "CURRENT").read_text().strip() / "chroma", "personal")
if len(sys.argv) > 3:
    vectors.collection.modify(configuration={"hnsw": {"ef_search": int(sys.argv[3])}})
print(vectors.collection.configuration_json["hnsw"]["ef_search"])
"""


def search_breadth(data, set_to: int | None = None) -> int:
    """The published personal collection's ef_search, read (or first set) in a process of its own."""
    command = [sys.executable, "-c", _SEARCH_BREADTH, str(SCRIPTS), str(data), *([str(set_to)] if set_to else [])]
    return int(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def clustered(rng, centres: np.ndarray, count: int) -> np.ndarray:
    """Unit vectors around a few hundred centres, as text embeddings cluster by topic."""
    points = centres[rng.integers(0, len(centres), count)] + 0.9 * rng.standard_normal((count, centres.shape[1]))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def test_the_dense_half_finds_the_true_nearest_chunks(tmp_path):
    """With ChromaDB's default breadth (ef_search 100) this index gave about 95% of the true 50 nearest."""
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((200, 384))
    vectors, queries = clustered(rng, centres, 3000), clustered(rng, centres, 30)
    ids = np.array([f"chunk-{number}" for number in range(len(vectors))])
    index = VectorIndex.open_local(tmp_path, "docs")
    index.create({"test": True})
    index.add(list(ids), vectors, [{"source_id": "test"}] * len(ids))
    index.close()
    index = VectorIndex.open_local(tmp_path, "docs", reading=True)  # as a search opens it: the graph loaded afresh
    found = [{chunk_id for chunk_id, _ in index.query(query, DEPTH, NO_FILTERS)} for query in queries]
    recall = [len(near & set(ids[np.argsort(-(vectors @ query))[:DEPTH]])) / DEPTH for near, query in zip(found, queries, strict=True)]
    index.close()
    assert np.mean(recall) >= 0.99 and min(recall) >= 0.9, recall


@pytest.mark.processes
def test_an_index_made_with_chromas_default_breadth_gets_ours_from_its_next_change(state_dir, tmp_path):
    data = tmp_path / "data"
    assert call_script("index_personal.py", "--data-dir", data, state_dir).code == 0
    assert search_breadth(data, set_to=100) == 100  # as an index made before EF_SEARCH was set
    (state_dir / "notes" / "new.md").write_text("# New\n\nA note about the MinIO bucket policy.\n")
    result = call_script("index_personal.py", "--data-dir", data, state_dir)
    assert result.code == 0 and result.json["published"] is True, result
    assert search_breadth(data) == EF_SEARCH
