"""Making the ONNX export that search (and indexing) run on, once per model.

The export is made with torch from the same weights sentence-transformers
loads, with mean pooling and normalisation inside the graph, and checked
against sentence-transformers before it is used (cosine >= 0.9999 on texts that
include an empty one and one longer than the window). Its export.json records
each file's size and checksum; search checks them as it loads the files. `make setup` makes
it into a cache in the virtual environment; every index run checks the copy
beside its index (<data dir>/model/<model id>/, where search finds it) against
those checksums and replaces a missing or damaged one from the cache. Only a
missing export needs torch: an index run without one takes a few seconds longer.
"""

import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .atomic import write_atomically
from .embedding import (
    EXPORT_CACHE,
    EXPORT_FILES,
    EXPORT_META,
    ONNX_FILE,
    ModelInfo,
    OnnxEmbedder,
    export_dir,
    export_problem,
    file_sha256,
    force_offline,
)

log = logging.getLogger("rag_search")

MIN_COSINE = 0.9999
CHECK_TEXTS = [
    "",
    "How do I disable self-heal in ArgoCD?",
    "kube-proxy --max-tokens selfHeal v1.30.0",
    "東京都の天気と Привет мир",
    " ".join(f"word{i} and more text" for i in range(300)),  # far beyond the 256-token window
]


def prepare_cache(model: ModelInfo) -> Path:
    """The export in the virtual environment's cache, checked in full, made now if missing or damaged (the setup step)."""
    cache = EXPORT_CACHE / model.model_id
    problem = export_problem(cache, model, hashes=True)
    if problem is None:
        return cache
    if cache.exists():
        log.warning("the model export in %s is unusable (%s): making it again", cache, problem)
    return export(model, cache)


def ensure_export(data_dir: Path, model: ModelInfo) -> Path:
    """The export beside the index in `data_dir`, checked in full; copied from the cache (or made) when missing or damaged."""
    target = export_dir(data_dir, model)
    problem = export_problem(target, model, hashes=True)
    if problem is None:
        return target
    if target.exists():
        log.warning("the model copy in %s is damaged (%s): replacing it from the install's export", target, problem)
    try:
        source = prepare_cache(model)
    except OSError:  # the venv is read-only: make it where the index is
        return export(model, target)
    _copy_folder(source, target)
    return target


def export(model: ModelInfo, target: Path) -> Path:
    """Export `model` to `target` (model.onnx, tokenizer.json, export.json) and check it."""
    log.info("exporting %s to ONNX (once per model; needs torch)", model.name)
    force_offline()
    import torch
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(
        str(model.path), device="cpu", local_files_only=True, model_kwargs={"attn_implementation": "eager"}
    )
    reference.eval()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        sample = reference.tokenizer(["a short text", "and a somewhat longer one"], padding=True, return_tensors="pt")
        # The tracer warns about shapes it bakes in; the cosine check below is what proves the export right.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _pooled_encoder(reference[0].auto_model),
                (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
                str(work / ONNX_FILE),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["sentence_embedding"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in ("input_ids", "attention_mask", "token_type_ids")}
                | {"sentence_embedding": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
        shutil.copyfile(model.path / "tokenizer.json", work / "tokenizer.json")
        meta = {"model": model.name, "model_id": model.model_id, "dimension": model.dimension, "max_tokens": model.max_tokens,
                "torch": torch.__version__,
                "files": {name: {"size": (work / name).stat().st_size, "sha256": file_sha256(work / name)} for name in EXPORT_FILES}}
        write_atomically(work / EXPORT_META, json.dumps(meta, indent=2))
        embedder = OnnxEmbedder(work, threads=1)
        expected = reference.encode(CHECK_TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        worst = float(np.min(np.sum(embedder.embed(CHECK_TEXTS) * expected, axis=1)))
        if worst < MIN_COSINE:
            raise RuntimeError(f"the ONNX export of {model.name} differs from sentence-transformers (cosine {worst:.6f})")

        _replace_folder(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _pooled_encoder(transformer):
    """The transformer plus sentence-transformers' mean pooling and normalisation, as one graph."""
    import torch

    class PooledEncoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            tokens = self.transformer(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    return PooledEncoder()


def _copy_folder(source: Path, target: Path) -> None:
    """Copy (never hard-link: damage to one copy must not reach the other) and swap in atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for file in source.iterdir():
            shutil.copyfile(file, work / file.name)
        _replace_folder(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _replace_folder(work: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    os.replace(work, target)
