"""The index: ChromaDB collections and the catalog beside them, in one generation folder.

Collections are created with `embedding_function=None` and cosine space, and
vectors are always passed in: given text alone, chromadb 1.5 would download an
ONNX model of its own. Each collection's metadata carries the fingerprint of
the model and chunking that built it, checked before every search.

Server mode (--chroma-url): the vectors live on a Chroma server instead of in
the generation folder; index runs keep their catalog in local generations as
usual, and stamp the server's collections with a new version when they
publish. Searches keep a local copy of the keyword index, rebuilt from the
server's chunk texts whenever that version moves, so keyword search covers
every chunk on the server, whichever machine indexed it.
"""

import json
import os
import tempfile
import time
from pathlib import Path

from . import generations, lexical
from .catalog import SCHEMA_VERSION, Catalog, ChunkRecord, DocumentRecord
from .chunking import Chunk, chunking_settings
from .config import ChromaServer
from .embedding import ModelInfo
from .errors import FingerprintMismatch, IndexNotBuilt, StoreError
from .locking import exclusive_lock

COLLECTIONS = ("personal", "docs")
FINGERPRINT_KEY = "rag_search_fingerprint"
VERSION_KEY = "rag_search_version"  # server mode: moved by every published index run
MIRROR_STATE = "server-keyword-copy"  # the catalog's record of the server version its keyword copy holds
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

    def __init__(self, folder: Path, writable: bool = True, server: ChromaServer | None = None):
        self.folder = folder
        self.server = server
        self.catalog = Catalog(folder / "catalog.sqlite", writable)
        self._client = None
        self._session: generations.WriteSession | None = None
        self._read_lock: int | None = None
        self._keyword_copy = False  # server mode search: the catalog is the local keyword copy

    @classmethod
    def open_for_writing(
        cls, data_dir: Path, wait_seconds: float = generations.DEFAULT_WAIT_SECONDS, server: ChromaServer | None = None
    ) -> "Store":
        """A writable copy of the current index; nothing is visible to searches until commit()."""
        make_private_dir(data_dir)
        try:
            session = generations.WriteSession(data_dir, wait_seconds)
        except OSError as exc:  # disk full while copying, permissions…
            raise StoreError(f"cannot prepare the next index in {data_dir}: {exc.strerror or exc}", hint="free disk space") from None
        try:
            store = cls(session.folder, server=server)
        except Exception as exc:  # sqlite3 and OS errors alike
            session.discard()
            raise StoreError(f"cannot open the index in {data_dir}: {exc}", hint="reindex with --full") from None
        store._session = session
        return store

    @classmethod
    def open_for_reading(cls, data_dir: Path, server: ChromaServer | None = None) -> "Store":
        """The published index, locked against deletion until close(); in server mode, the server
        and this machine's keyword copy of it."""
        if server is not None:
            folder = data_dir / "server" / f"{server.host}_{server.port}"
            make_private_dir(folder)
            store = cls(folder, server=server)
            store._keyword_copy = True
            return store
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
        verify(self.folder, self.server)
        try:
            self._session.publish()
        except OSError as exc:
            raise StoreError(f"cannot publish the new index: {exc.strerror or exc}", hint="free disk space and rerun") from None
        if self.server is not None:
            for name in COLLECTIONS:  # ours only: a server may hold other applications' collections
                collection = self.collection(name)
                if collection is not None:
                    collection.modify(metadata={**(collection.metadata or {}), VERSION_KEY: str(time.time_ns())})
            self._release_handles()
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

            settings = Settings(anonymized_telemetry=False)
            if self.server is None:
                try:
                    self._client = chromadb.PersistentClient(path=str(self.chroma_path), settings=settings)
                except Exception as exc:
                    raise StoreError(f"cannot open the ChromaDB store in {self.folder}: {exc}", hint="reindex with --full") from None
            else:
                server = self.server
                try:
                    self._client = chromadb.HttpClient(host=server.host, port=server.port, ssl=server.ssl, headers=server.headers,
                                                       settings=settings)
                    self._client.heartbeat()
                except Exception as exc:
                    self._client = None
                    raise StoreError(f"cannot reach the Chroma server at {server.url}: {exc}",
                                     hint="check --chroma-url / RAG_SEARCH_CHROMA_URL, RAG_SEARCH_CHROMA_HEADERS and the server") from None
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
        if self._keyword_copy:
            self._refresh_keyword_copy(name, collection)
        return collection

    def _refresh_keyword_copy(self, name: str, collection) -> None:
        """Server mode: rebuild this machine's keyword index of `name` if the server's version moved."""
        version = (collection.metadata or {}).get(VERSION_KEY, "")
        if (self.catalog.source_state(name, MIRROR_STATE) or {}).get("version") == version:
            return
        with exclusive_lock(self.folder / "rebuild.lock"):
            if (self.catalog.source_state(name, MIRROR_STATE) or {}).get("version") == version:
                return  # another search rebuilt it meanwhile
            pages = [collection.get(include=["documents", "metadatas"], limit=1000, offset=offset)
                     for offset in range(0, collection.count(), 1000)]
            self.catalog.delete_collection(name)
            self.catalog.replace_documents(name, _keyword_documents(pages))
            self.catalog.set_source_state(name, MIRROR_STATE, {"version": version})


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


def verify(folder: Path, server: ChromaServer | None = None) -> None:
    """Reopen a generation from disk and check vectors, catalog and keyword index agree.

    Runs in the index run's process: if the new store crashes on open, the run
    dies and the previous generation keeps serving. On a server, which other
    machines may fill too, every chunk of the catalog must be there.
    """
    store = Store(folder, writable=False, server=server)
    try:
        for name in COLLECTIONS:
            collection = store.collection(name)
            if collection is None:
                continue
            chunks = store.catalog.chunk_count(name)
            keyword_ids = store.catalog.keyword_index_ids(name)
            if server is None:
                vectors = collection.count()
            else:
                listed = sorted(keyword_ids)
                vectors = sum(len(collection.get(ids=listed[i : i + 1000], include=[])["ids"]) for i in range(0, len(listed), 1000))
            if not vectors == chunks == len(keyword_ids):
                raise StoreError(
                    f"the new {name} index is inconsistent ({vectors} vectors, {chunks} chunks, {len(keyword_ids)} keyword rows); "
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


def _keyword_documents(pages: list[dict]) -> list[tuple[DocumentRecord, list[ChunkRecord]]]:
    """Catalog rows for a server collection: its chunks grouped by file, with their keyword terms."""
    documents: dict[str, tuple[DocumentRecord, list[ChunkRecord]]] = {}
    for page in pages:
        for chunk_id, text, metadata in zip(page["ids"], page["documents"], page["metadatas"], strict=True):
            metadata = metadata or {}
            source_id, file = metadata.get("source_id", ""), metadata.get("file", "")
            key = f"{source_id}:{file}"
            if key not in documents:
                documents[key] = (DocumentRecord(key, source_id, file, None, None, "", 0, metadata.get("indexed_at", "")), [])
            record, chunks = documents[key]
            embedded = Chunk(text or "", metadata.get("heading", "")).embed_text  # what the index run embedded
            terms = " ".join(lexical.terms(embedded))
            chunks.append(ChunkRecord(chunk_id, int(metadata.get("chunk_index", 0)), "", terms, source_id, metadata.get("date_ts")))
            record.chunk_count += 1
    return list(documents.values())
