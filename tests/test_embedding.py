"""The ONNX export gives the vectors sentence-transformers gives, without torch on the search path."""

import json
import shutil

import numpy as np
import pytest

from rag_search.core.errors import ModelNotFound
from rag_search.model.embedding import (
    EXPORT_META,
    GRAPHS,
    ModelDamaged,
    ModelInfo,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    TokenCounter,
    export_dir,
    export_problem,
    find_model,
    query_embedder,
)
from rag_search.model.onnx_export import INT8_MIN_COSINE, complete_export, ensure_export, prepare_cache
from rag_search.store.store import fingerprint

SAMPLE = [
    "",
    "How do I disable self-heal in ArgoCD?",
    "ERR_CONNECTION_REFUSED kube-proxy --max-tokens v1.30.0",
    "東京都の天気 and Привет мир",
    "A short line.",
    " ".join(f"token{i} with several more words after it" for i in range(200)),  # well over 256 word pieces
]


@pytest.fixture(scope="module")
def model():
    return find_model()


@pytest.fixture(scope="module")
def export(model):
    return prepare_cache(model)


def test_onnx_matches_sentence_transformers(model, export):
    assert TokenCounter(model).count(SAMPLE[-1]) > 1000
    reference = SentenceTransformerEmbedder(model).embed(SAMPLE)
    vectors = OnnxEmbedder(export, "float").embed(SAMPLE)
    cosines = np.sum(reference * vectors, axis=1)
    assert cosines.min() >= 0.9999, cosines
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_int8_graph_is_close_to_sentence_transformers_and_is_the_one_run(model, export):
    reference = SentenceTransformerEmbedder(model).embed(SAMPLE)
    int8 = OnnxEmbedder(export, "int8").embed(SAMPLE)
    assert np.sum(reference * int8, axis=1).min() >= INT8_MIN_COSINE
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(int8, OnnxEmbedder(export, "float").embed(SAMPLE), atol=1e-3), "int8 weights give other vectors"
    assert (export / GRAPHS["int8"]).stat().st_size < (export / GRAPHS["float"]).stat().st_size / 2


def test_the_fingerprint_names_the_graph(model):
    assert fingerprint(model, "int8") != fingerprint(model, "float")
    assert (fingerprint(model, "int8")["embedding"], fingerprint(model, "float")["model_id"]) == ("int8", model.model_id)


def test_batching_by_length_does_not_change_vectors(export):
    embedder = OnnxEmbedder(export, "float", batch_size=2)
    together = embedder.embed(SAMPLE)
    alone = np.stack([embedder.embed([text])[0] for text in SAMPLE])
    assert np.max(np.abs(together - alone)) < 1e-4


def test_an_int8_vector_does_not_depend_on_the_texts_embedded_with_it(export):
    """int8 activations are quantised with one scale per run of the graph, over every text in it and its padding: in a
    batch a text's vector moved by up to 0.04 in cosine from its vector alone, as a query is embedded. Each text is run
    alone, so a document's vector is the same whatever else a run embeds (an index published in parts, a refresh)."""
    embedder = OnnxEmbedder(export, "int8")
    together = embedder.embed(SAMPLE)
    alone = np.stack([embedder.embed([text])[0] for text in SAMPLE])
    assert np.array_equal(together, alone)
    assert np.array_equal(embedder.embed(SAMPLE[::-1])[::-1], together)


def test_an_export_of_another_model_is_not_used(model, export, tmp_path):
    stale = tmp_path / "export"
    shutil.copytree(export, stale)
    assert export_problem(stale, model, hashes=True) is None
    meta = json.loads((stale / EXPORT_META).read_text())
    (stale / EXPORT_META).write_text(json.dumps({**meta, "model_id": "something-else"}))
    assert export_problem(stale, model) == "made for another model"
    assert export_problem(tmp_path / "missing", model) is not None


def test_a_damaged_export_is_caught_cheaply_or_by_its_checksum(model, export, tmp_path):
    copy = tmp_path / "export"
    shutil.copytree(export, copy)
    assert isinstance(OnnxEmbedder.checked(copy, model, "float"), OnnxEmbedder)
    onnx = copy / "model.onnx"
    data = bytearray(onnx.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = bytes(4096)  # same size, other weights
    onnx.write_bytes(bytes(data))
    assert export_problem(copy, model) is None, "the size check alone cannot see it"
    assert export_problem(copy, model, hashes=True) == "model.onnx has the wrong checksum"
    with pytest.raises(ModelDamaged):
        OnnxEmbedder.checked(copy, model, "float")


def test_a_damaged_int8_graph_beside_the_index_is_replaced(model, export, tmp_path):
    folder = ensure_export(tmp_path / "data", model)
    graph = folder / GRAPHS["int8"]
    data = bytearray(graph.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = bytes(4096)
    graph.write_bytes(bytes(data))
    assert export_problem(folder, model, hashes=True) == f"{GRAPHS['int8']} has the wrong checksum"
    with pytest.raises(ModelDamaged):
        OnnxEmbedder.checked(folder, model, "int8")
    assert ensure_export(tmp_path / "data", model) == folder
    assert export_problem(folder, model, hashes=True) is None
    assert isinstance(OnnxEmbedder.checked(folder, model, "int8"), OnnxEmbedder)


def test_an_export_without_its_int8_graph_gets_one_made_from_the_float_graph(model, export, tmp_path):
    """As an export made before int8 existed: the float graph is kept (no torch needed), the int8 graph is added."""
    old = tmp_path / "export"
    shutil.copytree(export, old)
    (old / GRAPHS["int8"]).unlink()
    meta = json.loads((old / EXPORT_META).read_text())
    del meta["files"][GRAPHS["int8"]]
    (old / EXPORT_META).write_text(json.dumps(meta))
    float_graph = (old / GRAPHS["float"]).stat()
    assert export_problem(old, model) == f"{GRAPHS['int8']} is missing"
    assert complete_export(old, model) == old
    assert export_problem(old, model, hashes=True) is None
    assert (old / GRAPHS["float"]).stat().st_ino == float_graph.st_ino, "the float graph was not exported again"
    int8 = OnnxEmbedder.checked(old, model, "int8").embed(SAMPLE)
    assert np.allclose(int8, OnnxEmbedder(export, "int8").embed(SAMPLE), atol=1e-5), "the same graph as setup makes"


def test_without_an_export_float_queries_fall_back_to_sentence_transformers_and_int8_ones_fail(model, export, tmp_path, caplog):
    assert isinstance(query_embedder(tmp_path / "data", model, "int8"), OnnxEmbedder), "the setup's export serves a bare data dir"
    other = tmp_path / "other-model"  # the same weights under another identity: no export exists for it
    shutil.copytree(model.path, other, copy_function=os_link_or_copy)
    modules = (other / "modules.json").read_text()
    (other / "modules.json").unlink()  # a hard link to the installed file: replace it, never write through it
    (other / "modules.json").write_text(modules + "\n")
    other_model = ModelInfo(other, "other")
    assert other_model.model_id != model.model_id
    embedder = query_embedder(tmp_path / "data", other_model, "float")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert "no usable ONNX export" in caplog.text
    with pytest.raises(ModelNotFound, match="no usable int8 graph"):
        query_embedder(tmp_path / "data", other_model, "int8")  # sentence-transformers would give float vectors


def os_link_or_copy(source, target):
    import os

    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def test_a_model_loaded_in_a_thread_is_the_one_used_and_its_failure_is_raised_where_it_is_first_used(model, export, tmp_path):
    """A git source that moved loads the model beside its checkout (Pipeline.expect_embedding): what the thread loads is
    what embeds, and a graph that does not load fails the first embedding, as it does when loaded there."""
    from rag_search.core.config import load_settings
    from rag_search.index.indexer import Pipeline

    settings = load_settings(data_dir=str(tmp_path / "data"))
    pipeline = Pipeline(model, settings)
    pipeline.expect_embedding()
    assert pipeline.embedder.embed(SAMPLE[1:2]).shape == (1, model.dimension)

    def damaged() -> Pipeline:
        pipeline = Pipeline(model, settings)  # its export check puts a damaged graph back
        (export_dir(settings.data_dir, model) / GRAPHS[settings.embedding]).write_bytes(b"not a graph")
        return pipeline

    with pytest.raises(Exception) as loaded_here:
        damaged().embedder  # noqa: B018
    in_a_thread = damaged()
    in_a_thread.expect_embedding()
    with pytest.raises(type(loaded_here.value)):
        in_a_thread.embedder  # noqa: B018
