"""The index on disk: one ChromaDB store and its catalog, side by side in one folder.

Collections are created with `embedding_function=None` and cosine space, and
vectors are always passed in: given text alone, chromadb 1.5 would download an
ONNX model of its own. Each collection's metadata carries the fingerprint of
the model and chunking that built it, checked before every search.
"""

import json
import os
import tempfile
from pathlib import Path

from .catalog import SCHEMA_VERSION, Catalog
from .chunking import chunking_settings
from .embedding import ModelInfo
from .errors import FingerprintMismatch, IndexNotBuilt, StoreError

COLLECTIONS = ("personal", "docs")
FINGERPRINT_KEY = "rag_search_fingerprint"
INDEX_COMMANDS = {"personal": "scripts/index_personal.py", "docs": "scripts/index_docs.py --all"}


def fingerprint(model: ModelInfo) -> dict:
    """What must match between the index and the code searching it."""
    return {
        "model": model.name,
        "model_id": model.model_id,
        "dimension": model.dimension,
        "chunking": chunking_settings(model.max_tokens),
        "schema": SCHEMA_VERSION,
    }


def make_private_dir(path: Path) -> None:
    """Create `path` (and parents) readable by the owner only; fail clearly if impossible."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe-")
        probe.close()
    except OSError as exc:
        raise StoreError(
            f"cannot write to the data folder {path}: {exc.strerror or exc}",
            hint="choose a writable folder with --data-dir or RAG_SEARCH_HOME",
        ) from None


class Store:
    """A ChromaDB PersistentClient and a catalog over one folder."""

    def __init__(self, folder: Path, writable: bool = True):
        self.folder = folder
        self.catalog = Catalog(folder / "catalog.sqlite", writable)
        self._client = None

    @classmethod
    def open_for_writing(cls, data_dir: Path) -> "Store":
        folder = data_dir / "index"
        make_private_dir(data_dir)
        make_private_dir(folder)
        try:
            return cls(folder)
        except Exception as exc:  # sqlite3 and OS errors alike
            raise StoreError(f"cannot open the index in {folder}: {exc}", hint="check the folder, or delete it and reindex") from None

    @classmethod
    def open_for_reading(cls, data_dir: Path) -> "Store":
        folder = data_dir / "index"
        if not (folder / "catalog.sqlite").is_file():
            raise IndexNotBuilt(f"no index in {data_dir}", hint=f"run {INDEX_COMMANDS['personal']} (and {INDEX_COMMANDS['docs']} for docs)")
        try:
            return cls(folder, writable=False)
        except FingerprintMismatch:
            raise
        except Exception as exc:
            raise StoreError(f"cannot open the index in {folder}: {exc}", hint="reindex with --full") from None

    @property
    def chroma_path(self) -> Path:
        return self.folder / "chroma"

    @property
    def client(self):
        if self._client is None:
            os.environ["ANONYMIZED_TELEMETRY"] = "False"
            import chromadb
            from chromadb.config import Settings

            try:
                self._client = chromadb.PersistentClient(path=str(self.chroma_path), settings=Settings(anonymized_telemetry=False))
            except Exception as exc:
                raise StoreError(f"cannot open the ChromaDB store in {self.folder}: {exc}", hint="reindex with --full") from None
        return self._client

    def collection(self, name: str):
        """The named collection, or None if it was never built."""
        from chromadb.errors import NotFoundError

        try:
            return self.client.get_collection(name, embedding_function=None)
        except NotFoundError:
            return None

    def reset_collection(self, name: str, expected: dict):
        """Drop `name` (vectors and catalog rows) and create it empty with the given fingerprint."""
        if self.collection(name) is not None:
            self.client.delete_collection(name)
        self.catalog.delete_collection(name)
        return self.client.create_collection(
            name,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={FINGERPRINT_KEY: json.dumps(expected, sort_keys=True)},
        )

    def collection_for_search(self, name: str, expected: dict):
        """The collection if it was built with the expected fingerprint; raise otherwise."""
        collection = self.collection(name)
        if collection is None:
            raise IndexNotBuilt(f"the {name} index has not been built yet", hint=f"run {INDEX_COMMANDS[name]}")
        stored = stored_fingerprint(collection)
        if stored != expected:
            raise FingerprintMismatch(
                f"the {name} index was built with {_describe(stored)}, but this install uses {_describe(expected)}",
                hint=f"reindex: {INDEX_COMMANDS[name]} --full",
            )
        return collection

    def close(self) -> None:
        self.catalog.close()


def stored_fingerprint(collection) -> dict | None:
    raw = (collection.metadata or {}).get(FINGERPRINT_KEY)
    try:
        return json.loads(raw) if raw else None
    except json.JSONDecodeError:
        return None


def _describe(value: dict | None) -> str:
    if not value:
        return "an unknown model and chunking"
    return (
        f"model {value.get('model')} ({value.get('model_id')}, {value.get('dimension')} dims), "
        f"chunking {value.get('chunking')}, schema {value.get('schema')}"
    )
