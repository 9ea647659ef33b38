"""One collection's vectors in ChromaDB, a local folder or a server: the only module that imports chromadb.

Collections are created with `embedding_function=None` and cosine space, and
vectors are always passed in: given text alone, chromadb would download an
ONNX model of its own. Telemetry is off. The store (store.py) is the only user.
Locally a collection holds ids, vectors and the fields filters need; the text
lives in the catalog. On a server it holds the text and metadata too, because
other machines search it.

ChromaDB writes a row into its SQLite file every time a client opens a folder,
so on a full disk even a search could not open the index. A reader that meets
that opens a private copy of the folder in memory instead (/dev/shm): searches
never need to write to the data dir. The copy is removed when the reader closes
it; one that a killed process left is removed by the next process of ours that
makes a copy, or starts a resident searcher (its name says whose it is).
"""

import contextlib
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..core.config import ChromaServer
from ..core.errors import StoreError, is_disk_full, one_line
from .records import Filters

log = logging.getLogger("rag_search")

FINGERPRINT_KEY = "rag_search_fingerprint"
VERSION_KEY = "rag_search_version"  # server mode: moved by every published index run
BATCH = 1000  # well under ChromaDB's max batch size
RAM_DIR = Path("/dev/shm")
RAM_COPY = "rag-search-"  # a copy's name: this, its owner's pid namespace, pid and start time, and a random part
# ChromaDB writes its HNSW graph to disk every this many writes, and a process opening the index first replays the
# writes since then into the graph. Its default, 1000, cost each cold search and each index run 1-2 s at 100k chunks;
# 100 (its default batch size) cost 0.3 s. Persisting writes only what changed, so indexing barely slows.
SYNC_THRESHOLD = 100
# How many candidates ChromaDB's HNSW search keeps while it walks the graph (ef_search). Its default, 100, returned
# 98.4% of the true 50 nearest chunks on SciFact (10k chunks) and 81% on bench_scale.py's 200k; 800 returns all of
# them on SciFact and 95% at 200k, for an in-process query p50 1.19x at 20k and 1.05x at 200k.
EF_SEARCH = 800
_preloading: threading.Thread | None = None  # preload()'s thread


def preload() -> None:
    """Import chromadb in a thread of its own, once, for a run that knows early that it will write: a git source whose
    commit moved imports it (0.3 s) while git checks its files out, which waits on git and leaves Python free.
    Not a daemon thread, so the process never exits half way through an import; a failure is left for the open that
    needs chromadb to report."""
    global _preloading
    if _preloading is None and "chromadb" not in sys.modules:
        _preloading = threading.Thread(target=_import_chromadb, name="import chromadb")
        _preloading.start()


def _import_chromadb() -> None:
    with contextlib.suppress(Exception):
        import chromadb  # noqa: F401


def _settings():
    """ChromaDB's product telemetry off, whatever ANONYMIZED_TELEMETRY says: a no-op since chromadb dropped posthog
    (chroma-core/chroma#6489, in 1.5.9), kept for any earlier version requirements.txt allows."""
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)


class VectorIndex:
    """The ChromaDB collection `name` (absent until created) in a local folder or on a server."""

    def __init__(self, client, name: str, ram_copy: Path | None = None):
        self._client = client
        self.name = name
        self._collection = None
        self._ram_copy = ram_copy

    @classmethod
    def open_local(cls, folder: Path, name: str, reading: bool = False) -> "VectorIndex":
        """The collection in `folder`; a reader on a full disk gets a copy of it in memory."""
        import chromadb

        try:
            return cls(chromadb.PersistentClient(path=str(folder), settings=_settings()), name)
        except Exception as exc:
            if reading and is_disk_full(exc) and folder.is_dir():
                return cls._open_ram_copy(folder, name)
            raise  # the store says which index it is and how to rebuild it

    @classmethod
    def _open_ram_copy(cls, folder: Path, name: str) -> "VectorIndex":
        import chromadb

        shown = folder.resolve()  # a reader's folder is /proc/self/fd/N/chroma (generations.held_path): say which it is
        if not RAM_DIR.is_dir():
            raise StoreError(f"the disk holding {shown} is full, and there is no {RAM_DIR} to read a copy from", hint="free disk space")
        remove_orphaned_ram_copies()
        copy = Path(tempfile.mkdtemp(prefix=ram_copy_prefix(os.getpid()) or RAM_COPY, dir=RAM_DIR))
        try:
            shutil.copytree(folder, copy / "chroma")
            log.warning("the disk holding %s is full: searching a copy of the index in memory", shown)
            return cls(chromadb.PersistentClient(path=str(copy / "chroma"), settings=_settings()), name, ram_copy=copy)
        except BaseException:
            shutil.rmtree(copy, ignore_errors=True)
            raise

    @classmethod
    def open_server(cls, server: ChromaServer, name: str) -> "VectorIndex":
        import chromadb

        try:
            client = chromadb.HttpClient(host=server.host, port=server.port, ssl=server.ssl, headers=server.headers,
                                         settings=_settings())
            client.heartbeat()
        except Exception as exc:
            raise StoreError(f"cannot reach the Chroma server at {server.url}: {one_line(exc)}",
                             hint="check --chroma-url / RAG_SEARCH_CHROMA_URL, RAG_SEARCH_CHROMA_HEADERS and the server") from None
        return cls(client, name)

    def close(self) -> None:
        if self._client is not None and hasattr(self._client, "close"):
            with contextlib.suppress(Exception):
                self._client.close()
        self._client = self._collection = None
        if self._ram_copy is not None:
            shutil.rmtree(self._ram_copy, ignore_errors=True)
            self._ram_copy = None

    @property
    def collection(self):
        """The chromadb collection, or None if it was never created."""
        if self._collection is None:
            from chromadb.errors import NotFoundError

            try:
                self._collection = self._client.get_collection(self.name, embedding_function=None)
            except NotFoundError:
                return None
        return self._collection

    def fingerprint(self) -> dict | None:
        """The fingerprint the collection was created with; None if absent or unreadable."""
        collection = self.collection
        raw = (collection.metadata or {}).get(FINGERPRINT_KEY) if collection is not None else None
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return None

    def version(self) -> str:
        """Server mode: the stamp of the last published index run."""
        collection = self.collection
        return str((collection.metadata or {}).get(VERSION_KEY, "")) if collection is not None else ""

    def fresh_version(self) -> str:
        """Server mode: the stamp as the server has it now (the cached collection may be older)."""
        self._collection = None
        return self.version()

    def create(self, fingerprint: dict, replace: bool = True) -> None:
        """Make the collection with this fingerprint, empty; `replace=False` keeps one that exists (a server collection
        other machines fill)."""
        from chromadb.errors import NotFoundError

        if replace:
            with contextlib.suppress(NotFoundError, ValueError):
                self._client.delete_collection(self.name)
        elif self.collection is not None:
            return
        self._collection = self._client.create_collection(
            self.name,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine", "sync_threshold": SYNC_THRESHOLD, "ef_search": EF_SEARCH}},
            metadata={FINGERPRINT_KEY: json.dumps(fingerprint, sort_keys=True)},
        )

    def drop(self) -> None:
        """Delete the collection (a server collection no machine has chunks in any more)."""
        self._client.delete_collection(self.name)
        self._collection = None

    def renamed(self, name: str) -> "VectorIndex":
        """The collection `name` through the same client."""
        return VectorIndex(self._client, name)

    def family(self) -> list[tuple[str, dict | None]]:
        """(name, fingerprint) of the collections named `name` or `name-…` (one per fingerprint on a server)."""
        found = []
        for collection in self._client.list_collections():
            if collection.name == self.name or collection.name.startswith(f"{self.name}-"):
                found.append((collection.name, self.renamed(collection.name).fingerprint()))
        return sorted(found)

    def widen_search(self) -> None:
        """Give a collection made before EF_SEARCH its search breadth; searches that open it afterwards use it."""
        collection = self.collection
        if collection is not None and (collection.configuration_json or {}).get("hnsw", {}).get("ef_search") != EF_SEARCH:
            collection.modify(configuration={"hnsw": {"ef_search": EF_SEARCH}})

    def stamp(self, version: str) -> None:
        """Server mode: record a published index run, so searches know to refresh their keyword copy."""
        collection = self.collection
        collection.modify(metadata={**(collection.metadata or {}), VERSION_KEY: version})

    def count(self) -> int:
        collection = self.collection
        return collection.count() if collection is not None else 0

    def add(self, ids: list[str], vectors: np.ndarray, metadatas: list[dict], texts: list[str] | None = None) -> None:
        for start in range(0, len(ids), BATCH):
            end = start + BATCH
            self.collection.upsert(ids=ids[start:end], embeddings=vectors[start:end], metadatas=metadatas[start:end],
                                   documents=None if texts is None else texts[start:end])

    def update_metadata(self, ids: list[str], metadatas: list[dict]) -> None:
        for start in range(0, len(ids), BATCH):
            self.collection.update(ids=ids[start : start + BATCH], metadatas=metadatas[start : start + BATCH])

    def delete(self, ids: list[str]) -> None:
        collection = self.collection
        if collection is None:
            return
        for start in range(0, len(ids), BATCH):
            collection.delete(ids=ids[start : start + BATCH])

    def existing(self, ids: list[str]) -> set[str]:
        """Which of `ids` the collection holds."""
        found: set[str] = set()
        for start in range(0, len(ids), BATCH):
            found.update(self.collection.get(ids=ids[start : start + BATCH], include=[])["ids"])
        return found

    def ids_where(self, field: str, value: str) -> set[str]:
        """Ids of the chunks whose metadata `field` equals `value` (server mode: a machine's own chunks)."""
        found: set[str] = set()
        offset = 0
        while True:
            page = self.collection.get(where={field: value}, include=[], limit=BATCH, offset=offset)["ids"]
            found.update(page)
            if len(page) < BATCH:
                return found
            offset += BATCH

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), BATCH):
            page = self.collection.get(ids=ids[start : start + BATCH], include=["embeddings"])
            out.update(zip(page["ids"], (np.asarray(vector, dtype=np.float32) for vector in page["embeddings"]), strict=True))
        return out

    def pages(self) -> Iterator[tuple[list[str], list[str | None], list[dict], np.ndarray]]:
        """Every chunk, a page at a time: ids, texts (None where the collection holds none), metadatas and vectors."""
        for offset in range(0, self.count(), BATCH):
            page = self.collection.get(include=["documents", "metadatas", "embeddings"], limit=BATCH, offset=offset)
            vectors = np.asarray(page["embeddings"], np.float32)
            yield page["ids"], list(page["documents"]), [dict(metadata or {}) for metadata in page["metadatas"]], vectors

    def chunks(self) -> list[tuple[str, str, dict, np.ndarray]]:
        """(id, text, metadata, vector) of every chunk: a server collection's content, for a machine's keyword copy."""
        return [(chunk_id, text or "", metadata, vector) for ids, texts, metadatas, vectors in self.pages()
                for chunk_id, text, metadata, vector in zip(ids, texts, metadatas, vectors, strict=True)]

    def query(self, vector: np.ndarray, n: int, filters: Filters) -> list[tuple[str, float]]:
        """The `n` nearest chunks: (id, cosine similarity), nearest first.

        Not bounded by count() first: ChromaDB returns what it has, and counting costs as much as a small query."""
        if self.collection is None:
            return []
        result = self.collection.query(query_embeddings=[vector.tolist()], n_results=n, where=where(filters), include=["distances"])
        return [(chunk_id, 1.0 - distance) for chunk_id, distance in zip(result["ids"][0], result["distances"][0], strict=True)]

    def answers_queries(self) -> bool:
        """Whether a stored vector finds itself: the store's graph is readable."""
        sample = self.collection.get(limit=1, include=["embeddings"])
        if not sample["ids"]:
            return True
        return bool(self.collection.query(query_embeddings=sample["embeddings"], n_results=1)["ids"][0])


def ram_copy_prefix(pid: int) -> str | None:
    """How the copies of the running process `pid` are named; None where /proc cannot tell (its copies are then named
    without an owner, and never removed by another process)."""
    namespace, start = _pid_namespace(), _start_time(pid)
    return None if namespace is None or start is None else f"{RAM_COPY}{namespace}-{pid}-{start}-"


def remove_orphaned_ram_copies() -> None:
    """Remove the copies that processes of ours left behind when they were killed: a copy whose owner no longer runs
    (its pid is gone, or now another process's: the start time differs). Another user's copy, or one made in another
    pid namespace (whose processes we cannot see), is never touched."""
    namespace = _pid_namespace()
    try:
        entries = list(os.scandir(RAM_DIR))
    except OSError:
        return
    for entry in entries:
        owner = entry.name.removeprefix(RAM_COPY).split("-")  # namespace, pid, start time, random part
        if not entry.name.startswith(RAM_COPY) or len(owner) != 4 or owner[0] != namespace or not owner[1].isdigit():
            continue
        if _start_time(int(owner[1])) == owner[2]:
            continue  # its owner runs
        with contextlib.suppress(OSError):
            found = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid():
                shutil.rmtree(entry.path, ignore_errors=True)


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid").removeprefix("pid:[").removesuffix("]")
    except OSError:
        return None


def _start_time(pid: int) -> str | None:
    """When process `pid` started (clock ticks after boot, /proc/<pid>/stat field 22); None if it does not run (a
    zombie has exited)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def page_vector(vectors: list[np.ndarray]) -> np.ndarray:
    """The normalised mean of a page's chunk vectors: its direction as a whole, whose cosine with a question says how
    close the page is to it throughout (a pointer page matches in one sentence)."""
    mean = np.mean(vectors, axis=0)
    return mean / (np.linalg.norm(mean) or 1.0)


def where(filters: Filters) -> dict | None:
    """The ChromaDB metadata filter for sources, dates, record types, tags (a tag matches a whole element of `tags`) and
    page kinds."""
    clauses: list[dict] = []
    if filters.sources:
        clauses.append({"source_id": {"$in": list(filters.sources)}})
    if filters.types:
        clauses.append({"type": {"$in": list(filters.types)}})
    clauses += [{"tags": {"$contains": tag}} for tag in filters.tags]
    if filters.kinds:
        clauses.append({"page_kind": {"$in": list(filters.kinds)}})
    if filters.since is not None:
        clauses.append({"date_ts": {"$gte": filters.since}})
    if filters.until is not None:
        clauses.append({"date_ts": {"$lte": filters.until}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
