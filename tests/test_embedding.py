"""The ONNX export gives the vectors sentence-transformers gives, without torch on the search path."""

import json
import shutil

import numpy as np
import pytest

from rag_search.embedding import (
    EXPORT_META,
    ModelDamaged,
    ModelInfo,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    TokenCounter,
    export_problem,
    find_model,
    query_embedder,
)
from rag_search.onnx_export import prepare_cache

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
    vectors = OnnxEmbedder(export).embed(SAMPLE)
    cosines = np.sum(reference * vectors, axis=1)
    assert cosines.min() >= 0.9999, cosines
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_batching_by_length_does_not_change_vectors(export):
    embedder = OnnxEmbedder(export, batch_size=2)
    together = embedder.embed(SAMPLE)
    alone = np.stack([embedder.embed([text])[0] for text in SAMPLE])
    assert np.max(np.abs(together - alone)) < 1e-4


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
    assert isinstance(OnnxEmbedder.checked(copy, model), OnnxEmbedder)
    onnx = copy / "model.onnx"
    data = bytearray(onnx.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = bytes(4096)  # same size, other weights
    onnx.write_bytes(bytes(data))
    assert export_problem(copy, model) is None, "the size check alone cannot see it"
    assert export_problem(copy, model, hashes=True) == "model.onnx has the wrong checksum"
    with pytest.raises(ModelDamaged):
        OnnxEmbedder.checked(copy, model)


def test_without_an_export_queries_fall_back_to_sentence_transformers_and_say_so(model, export, tmp_path, caplog):
    assert isinstance(query_embedder(tmp_path / "data", model), OnnxEmbedder), "the setup's export serves a bare data dir"
    other = tmp_path / "other-model"  # the same weights under another identity: no export exists for it
    shutil.copytree(model.path, other, copy_function=os_link_or_copy)
    modules = (other / "modules.json").read_text()
    (other / "modules.json").unlink()  # a hard link to the installed file: replace it, never write through it
    (other / "modules.json").write_text(modules + "\n")
    other_model = ModelInfo(other, "other")
    assert other_model.model_id != model.model_id
    embedder = query_embedder(tmp_path / "data", other_model)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert "no usable ONNX export" in caplog.text


def os_link_or_copy(source, target):
    import os

    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
