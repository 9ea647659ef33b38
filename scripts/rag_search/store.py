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

from . import generations
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
    """A ChromaDB PersistentClient and a catalog over one generation folder (see generations.py)."""

    def __init__(self, folder: Path, writable: bool = True):
        self.folder = folder
        self.catalog = Catalog(folder / "catalog.sqlite", writable)
        self._client = None
        self._session: generations.WriteSession | None = None
        self._read_lock: int | None = None

    @classmethod
    def open_for_writing(cls, data_dir: Path, wait_seconds: float = generations.DEFAULT_WAIT_SECONDS) -> "Store":
        """A writable copy of the current index; nothing is visible to searches until commit()."""
        make_private_dir(data_dir)
        try:
            session = generations.WriteSession(data_dir, wait_seconds)
        except OSError as exc:  # disk full while copying, permissions…
            raise StoreError(f"cannot prepare the next index in {data_dir}: {exc.strerror or exc}", hint="free disk space") from None
        try:
            store = cls(session.folder)
        except Exception as exc:  # sqlite3 and OS errors alike
            session.discard()
            raise StoreError(f"cannot open the index in {data_dir}: {exc}", hint="reindex with --full") from None
        store._session = session
        return store

    @classmethod
    def open_for_reading(cls, data_dir: Path) -> "Store":
        """The published index, locked against deletion until close()."""
        folder, lock = generations.open_for_reading(data_dir)
        try:
            store = cls(folder, writable=False)
        except FingerprintMismatch:
            os.close(lock)
            raise
        except Exception as exc:
            os.close(lock)
            raise StoreError(f"cannot open the index in {folder}: {exc}", hint=f"reindex: {INDEX_COMMANDS['personal']} --full") from None
        store._read_lock = lock
        return store

    def commit(self) -> bool:
        """Verify the work generation and publish it, if this run changed anything; True if published."""
        if self._session is None:
            raise RuntimeError("commit() needs a store opened for writing")
        if not self.catalog.changed:
            return False
        self._release_handles()
        verify(self.folder)
        try:
            self._session.publish()
        except OSError as exc:
            raise StoreError(f"cannot publish the new index: {exc.strerror or exc}", hint="free disk space and rerun") from None
        return True

    def close(self) -> None:
        """Release everything; an uncommitted work generation is discarded."""
        self._release_handles()
        if self._session is not None:
            self._session.discard()
            self._session = None
        if self._read_lock is not None:
            os.close(self._read_lock)
            self._read_lock = None

    def _release_handles(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self.catalog.close()

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


def verify(folder: Path) -> None:
    """Reopen a generation from disk and check vectors, catalog and keyword index agree.

    Runs in the index run's process: if the new store crashes on open, the run
    dies and the previous generation keeps serving.
    """
    store = Store(folder, writable=False)
    try:
        for collection in store.client.list_collections():
            name = collection.name
            vectors, chunks = collection.count(), store.catalog.chunk_count(name)
            keywords = len(store.catalog.keyword_index_ids(name))
            if not vectors == chunks == keywords:
                raise StoreError(
                    f"the new {name} index is inconsistent ({vectors} vectors, {chunks} chunks, {keywords} keyword rows); "
                    "the previous index still serves",
                    hint=f"rerun with --full: {INDEX_COMMANDS[name]} --full",
                )
            if vectors:
                sample = collection.get(limit=1, include=["embeddings"])
                if not collection.query(query_embeddings=sample["embeddings"], n_results=1)["ids"][0]:
                    raise StoreError(f"the new {name} index does not answer queries; the previous index still serves",
                                     hint=f"rerun with --full: {INDEX_COMMANDS[name]} --full")
    finally:
        store._release_handles()
