"""Making the ONNX export that search (and indexing) run on, once per model.

The float graph is made with torch from the same weights sentence-transformers
loads, with mean pooling and normalisation inside the graph; the int8 graph is
made from it by onnxruntime's dynamic quantisation (onnxruntime and onnx only).
Both are checked against sentence-transformers before they are used, on texts
that include an empty one and one longer than the window: cosine >= 0.9999 for
the float graph, >= INT8_MIN_COSINE for the int8 one. Its export.json records
each file's size and checksum; search checks them as it loads the files. `make setup` makes
it into a cache in the virtual environment; every index run checks the copy
beside its index (<data dir>/model/<model id>/, where search finds it) against
those checksums and replaces a missing or damaged one from the cache. Only a
missing float graph needs torch: an index run without one takes a few seconds longer.
"""

import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ..core.atomic import write_atomically
from ..core.telemetry import keep_libraries_local
from .embedding import EXPORT_CACHE, EXPORT_META, GRAPHS, ModelInfo, OnnxEmbedder, export_dir, export_problem, file_sha256

log = logging.getLogger("rag_search")

FLOAT_MIN_COSINE = 0.9999
# The int8 graph's vectors move a little (and, activations being quantised per batch, a little with their batch):
# the check texts give 0.981-0.995 one by one and 0.969 for the worst in one padded batch (1,000 doc chunks: min 0.982,
# mean 0.993), while a broken quantisation (weights per tensor, or static with min/max calibration) gives 0.79-0.87
# for its worst check text.
INT8_MIN_COSINE = 0.95
FLOAT_FILES = (GRAPHS["float"], "tokenizer.json")
CHECK_TEXTS = [
    "",
    "How do I disable self-heal in ArgoCD?",
    "kube-proxy --max-tokens selfHeal v1.30.0",
    "東京都の天気と Привет мир",
    " ".join(f"word{i} and more text" for i in range(300)),  # far beyond the 256-token window
]


def prepare_cache(model: ModelInfo) -> Path:
    """The export in the virtual environment's cache, checked in full, made now if missing or damaged (the setup step)."""
    return complete_export(EXPORT_CACHE / model.model_id, model)


def complete_export(folder: Path, model: ModelInfo) -> Path:
    """`folder` as a complete export of `model`, checked in full. When only the int8 graph is missing or damaged (an
    export made before it existed), it is made from the float graph there; otherwise the whole export is made again."""
    problem = export_problem(folder, model, hashes=True)
    if problem is None:
        return folder
    if export_problem(folder, model, hashes=True, files=FLOAT_FILES) is not None:
        if folder.exists():
            log.warning("the model export in %s is unusable (%s): making it again", folder, problem)
        return export(model, folder)
    log.info("making the int8 graph in %s from its float graph (%s)", folder, problem)
    _add_int8(folder)
    return folder


def _add_int8(folder: Path) -> None:
    """Make the int8 graph of the checked float graph in `folder` (no torch needed) and swap it in."""
    expected = OnnxEmbedder(folder, "float", threads=1).embed(CHECK_TEXTS)  # checked against sentence-transformers when made
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for name in (EXPORT_META, "tokenizer.json"):
            shutil.copyfile(folder / name, work / name)
        _make_int8(folder / GRAPHS["float"], work, expected)
        os.replace(work / GRAPHS["int8"], folder / GRAPHS["int8"])
        os.replace(work / EXPORT_META, folder / EXPORT_META)
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
        return complete_export(target, model)
    _copy_folder(source, target)
    return target


def export(model: ModelInfo, target: Path) -> Path:
    """Export `model` to `target` (both graphs, tokenizer.json, export.json) and check it."""
    log.info("exporting %s to ONNX (once per model; needs torch)", model.name)
    keep_libraries_local()
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
                str(work / GRAPHS["float"]),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["sentence_embedding"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in ("input_ids", "attention_mask", "token_type_ids")}
                | {"sentence_embedding": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
        shutil.copyfile(model.path / "tokenizer.json", work / "tokenizer.json")
        meta = {"model": model.name, "model_id": model.model_id, "dimension": model.dimension, "max_tokens": model.max_tokens,
                "torch": torch.__version__, "files": _file_records(work, FLOAT_FILES)}
        write_atomically(work / EXPORT_META, json.dumps(meta, indent=2))
        expected = reference.encode(CHECK_TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        _check(OnnxEmbedder(work, "float", threads=1), expected, FLOAT_MIN_COSINE, f"the ONNX export of {model.name}")
        _make_int8(work / GRAPHS["float"], work, expected)
        _replace_folder(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _make_int8(float_graph: Path, work: Path, expected: np.ndarray) -> None:
    """The int8 graph in `work`, made from `float_graph`, checked against `expected` (the vectors of CHECK_TEXTS) and
    recorded in work's export.json. Dynamic quantisation: weights int8 per channel, activations quantised per batch
    as it runs, so no calibration data is needed."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # it advises "pre-processing" on the root logger; the check below is what counts
    try:
        quantize_dynamic(float_graph, work / GRAPHS["int8"], per_channel=True, weight_type=QuantType.QInt8)
    finally:
        logging.disable(logging.NOTSET)
    meta = json.loads((work / EXPORT_META).read_text())
    meta["files"].update(_file_records(work, (GRAPHS["int8"],)))
    meta["int8"] = {"quantization": "dynamic, per-channel QInt8 weights", "min_cosine": INT8_MIN_COSINE}
    write_atomically(work / EXPORT_META, json.dumps(meta, indent=2))
    _check(OnnxEmbedder(work, "int8", threads=1), expected, INT8_MIN_COSINE, "the int8 graph")


def _file_records(folder: Path, names) -> dict:
    return {name: {"size": (folder / name).stat().st_size, "sha256": file_sha256(folder / name)} for name in names}


def _check(embedder: OnnxEmbedder, expected: np.ndarray, bound: float, what: str) -> None:
    worst = float(np.min(np.sum(embedder.embed(CHECK_TEXTS) * expected, axis=1)))
    if worst < bound:
        raise RuntimeError(f"{what} differs from the reference vectors (cosine {worst:.6f}, at least {bound} needed)")


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
