"""A collection's vectors on a Chroma server (--chroma-url): one of the store's two vector backends.

The server applies writes at once, so a run is made safe by a journal: before
it adds or removes anything there, a run appends the ids to a journal beside
its generations; removals wait until the run has published. A killed or failed
run is resolved by the next one: a journaled id stays on the server exactly when
the published catalog has it. Each machine marks its chunks with its owner id,
so a publish checks both directions: every catalogued chunk is on the server,
and every chunk this machine put there is catalogued (orphans are removed).

Machines share a collection only when they index with the same fingerprint:
its name carries the fingerprint's digest (`personal-3fa9c2d1e0`; the plain
`personal` of earlier versions is still used while its fingerprint matches).
A machine that moves to another fingerprint rebuilds into that collection and
then removes only its own chunks from the old one, which goes when it is empty.
A collection this machine's index lives in never comes back silently once gone:
the next run fails and names the rebuild.

Searches keep a copy of the chunks' text in the data dir for the keyword index,
rebuilt whenever the server's version stamp moves.
"""

import contextlib
import hashlib
import json
import logging
import os
import time
import uuid
from pathlib import Path
from typing import NoReturn

import numpy as np

from ..core.atomic import write_atomically
from ..core.config import ChromaServer, Settings
from ..core.datadir import DataDir, make_private_dir
from ..core.errors import FingerprintMismatch, IndexNotBuilt, IndexWriteError, StoreError, one_line
from ..core.locking import exclusive_lock
from ..core.private_files import open_private
from ..text.chunking import Chunk
from .catalog import Catalog, PublishedIndex
from .generations import INDEX_COMMANDS
from .records import ChunkRecord, DocumentRecord, Filters, StoredChunk
from .vectors import VectorIndex, page_vector

log = logging.getLogger("rag_search")

CATALOG = "catalog.sqlite"
OWNER_FILE = "owner"
JOURNAL_FILE = "server-journal.jsonl"
MIRROR_STATE = "server-keyword-copy"  # the keyword copy's record of the server version it holds
COLLECTION_STATE = "@collection"  # in a writer's catalog: the server collection its chunks live in
FINGERPRINT_STATE = "@fingerprint"
SAME_VECTORS = ("model_id", "embedding", "dimension")


def collection_name(name: str, fingerprint: dict) -> str:
    """The server collection of `name` for one fingerprint: machines share it only when they index alike."""
    digest = hashlib.blake2b(json.dumps(fingerprint, sort_keys=True).encode(), digest_size=5).hexdigest()
    return f"{name}-{digest}"


class ServerJournal:
    """The ids a run is about to add to or remove from one server collection, written before it does."""

    def __init__(self, path: Path, server_url: str, collection: str, legacy_name: str):
        self.path = path
        self.server_url = server_url
        self.collection = collection
        self._legacy = collection == legacy_name  # lines of earlier versions name no collection: theirs was the plain one

    def record(self, ids: list[str]) -> None:
        if not ids:
            return
        with open(open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a", encoding="utf-8") as journal:
            journal.write(json.dumps({"server": self.server_url, "collection": self.collection, "ids": ids}) + "\n")
            journal.flush()
            os.fsync(journal.fileno())

    def pending(self) -> set[str]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return set()
        pending: set[str] = set()
        for line in lines:
            with contextlib.suppress(ValueError, KeyError, TypeError):  # a line cut short by a kill
                entry = json.loads(line)
                mine = entry.get("collection", self.collection if self._legacy else None) == self.collection
                if entry["server"] == self.server_url and mine:
                    pending.update(entry["ids"])
        return pending

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


class ServerVectors:
    """The server collection a store reads or writes, and what keeps a run on it safe: a store.VectorBackend."""

    fresh_at_search_time = False  # whether a search may bring changed personal files in first

    def __init__(self, settings: Settings, server: ChromaServer, name: str):
        self.settings = settings
        self.name = name
        self.server = server
        self._index: VectorIndex | None = None
        self._journal: ServerJournal | None = None  # connect() sets it up, with the owner id
        self._owner: str | None = None
        self._deferred: list[str] = []  # ids to delete once the run has published
        self._left: str | None = None  # a rebuild into another collection: the one this machine leaves when it publishes

    @property
    def index(self) -> VectorIndex:
        """The server collection this store reads or writes."""
        if self._index is None:
            raise RuntimeError(f"the {self.name} index is not connected to {self.server.url}")
        return self._index

    @property
    def journal(self) -> ServerJournal:
        """What this run is about to change on the server."""
        if self._journal is None:
            raise RuntimeError(f"the {self.name} index is not open for writing")
        return self._journal

    @property
    def owner(self) -> str:
        """This data dir's id on the server: which chunks there are this machine's."""
        if self._owner is None:
            raise RuntimeError(f"the {self.name} index is not open for writing")
        return self._owner

    # --- reading ------------------------------------------------------------

    def open_published(self, expected: dict | None = None) -> PublishedIndex:
        """The server collection for `expected`, and this machine's keyword copy of it (the catalog)."""
        self._index = VectorIndex.open_server(self.server, self.name)
        self._index = self._index.renamed(self._choose(self._index, expected))
        data_dir = DataDir.for_writing(self.settings.data_dir, self.settings.embedding)
        folder = data_dir.path / "server" / f"{self.server.host}_{self.server.port}" / self._index.name
        make_private_dir(folder)
        catalog = Catalog(folder / CATALOG)
        try:
            self._refresh_keyword_copy(folder, catalog)
        except BaseException:
            catalog.close()
            raise
        return PublishedIndex(folder, catalog)

    def load(self) -> None:
        """Nothing to load: the server holds the vectors."""

    def query(self, vector: np.ndarray, n: int, filters: Filters) -> list[tuple[str, float]]:
        return self.index.query(vector, n, filters)

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        return self.index.vectors(ids)

    def _choose(self, server: VectorIndex, expected: dict | None) -> str:
        """The collection to read: the one of `expected`, else one whose vectors answer the same queries, else (without
        `expected`) the one published last."""
        family = server.family()
        chosen: str | None
        if expected is not None:
            exact = [name for name, stored in family if stored == expected]
            alike = [name for name, stored in family if stored and all(stored.get(k) == expected.get(k) for k in SAME_VECTORS)]
            chosen = next(iter(exact or alike), None)
        else:
            chosen = max(family, key=lambda entry: server.renamed(entry[0]).version(), default=(None,))[0]
        if chosen is not None:
            return chosen
        if family:
            raise FingerprintMismatch(f"the {self.name} index on {self.server.url} was built with another model or graph",
                                      hint=f"reindex: {INDEX_COMMANDS[self.name]} --full")
        raise IndexNotBuilt(f"the {self.name} index has not been built yet on {self.server.url}", hint=f"run {INDEX_COMMANDS[self.name]}")

    def fingerprint(self) -> dict | None:
        return self._index.fingerprint() if self._index is not None else None

    def stale(self, folder: Path, catalog: Catalog) -> bool:
        return self.index.fresh_version() != (catalog.source_state(MIRROR_STATE) or {}).get("version")

    def describe(self, folder: Path) -> dict:
        return {"generation": None, "server": self.server.url, "collection": self._index.name if self._index else None}

    def _refresh_keyword_copy(self, folder: Path, catalog: Catalog) -> None:
        """Rebuild this machine's keyword index of the server's chunks if the server's version moved."""
        version = self.index.version()
        if (catalog.source_state(MIRROR_STATE) or {}).get("version") == version:
            return
        with exclusive_lock(folder / "rebuild.lock"):
            if (catalog.source_state(MIRROR_STATE) or {}).get("version") == version:
                return  # another search rebuilt it meanwhile
            catalog.clear()
            chunks = self.index.chunks()
            catalog.write(keyword_documents(chunks), page_vectors(chunks))
            catalog.set_source_state(MIRROR_STATE, {"version": version})

    # --- writing ------------------------------------------------------------

    def at(self, folder: Path, reading: bool) -> None:
        """The vectors stay on the server whatever local folder the catalog is in."""

    def connect(self, catalog: Catalog | None, published: set[str] | None, expected: dict | None, fresh: bool) -> None:
        """Open this run's collection and resolve what an unfinished run left in it. `catalog` is the published catalog
        (None: nothing published), `published` its chunk ids (None: it cannot be read)."""
        data_dir = self.settings.data_dir
        server = VectorIndex.open_server(self.server, self.name)
        self._index = server
        tracked = self._tracked(catalog) if catalog is not None else None
        if fresh or tracked is None:
            if expected is None:
                raise RuntimeError("a new collection needs the fingerprint it is written with")
            target = collection_name(self.name, expected)
        else:
            target = tracked
        if tracked is not None and target != tracked and catalog is not None and catalog.chunk_count():
            self._left = tracked
        self._index = server.renamed(target)
        if not fresh and catalog is not None and catalog.chunk_count() and self._index.collection is None:
            raise StoreError(f"the Chroma server at {self.server.url} no longer has the collection {target} that this machine's "
                             f"{self.name} index lives in ({catalog.chunk_count()} chunks); nothing was changed",
                             hint=f"rebuild it: {INDEX_COMMANDS[self.name]} --full")
        self._index.widen_search()
        self._owner = owner_id(data_dir)
        self._journal = ServerJournal(data_dir / self.name / JOURNAL_FILE, self.server.url, target, self.name)
        self._resolve(published if target == tracked else set())

    def _tracked(self, catalog: Catalog) -> str:
        """The collection the published catalog's chunks live in (catalogs of earlier versions: the plain name)."""
        return (catalog.source_state(COLLECTION_STATE) or {}).get("name") or self.name

    def _resolve(self, keep: set[str] | None) -> None:
        pending = self.journal.pending()
        if not pending or self.index.collection is None:
            self.journal.clear()
            return
        if keep is None:
            return  # the published catalog cannot be read: the rebuild's verify removes what is left over
        self.index.delete(sorted(pending - keep))
        self.index.stamp(str(time.time_ns()))  # the unfinished run may have published without telling the readers
        log.warning("resolved a %s index run that did not finish: %d chunks removed from the Chroma server",
                    self.name, len(pending - keep))
        self.journal.clear()

    def states(self) -> dict[str, dict]:
        """What the writer's catalog keeps about the server: which collection its chunks are in."""
        return {COLLECTION_STATE: {"name": self.index.name}}

    def donor_vectors(self, published: Path) -> VectorIndex:
        """The collection the published catalog's chunks live in, through a client of its own (the donor closes it)."""
        catalog = Catalog(published / CATALOG, writable=False, any_schema=True)
        try:
            tracked = self._tracked(catalog)
        finally:
            catalog.close()
        return VectorIndex.open_server(self.server, self.name).renamed(tracked)

    def create(self, fingerprint: dict, catalog: Catalog) -> None:
        """The collection of this fingerprint: made if no machine has made it yet; never emptied."""
        self.index.create(fingerprint, replace=False)

    def add(self, chunks: list[ChunkRecord], vectors: np.ndarray) -> None:
        """The text and metadata go to the server too, marked as this machine's, since other machines search it."""
        ids = [chunk.id for chunk in chunks]
        self.journal.record(ids)
        self.index.add(ids, vectors, [{**chunk.metadata, "owner": self.owner} for chunk in chunks], [chunk.text for chunk in chunks])

    def holds_any(self, fields: set[str]) -> bool:
        """All of a chunk's metadata: other machines read it."""
        return bool(fields)

    def restamp(self, chunks: list[StoredChunk]) -> None:
        """Chunks already on the server with new metadata (a git page's new commit), marked as add() marks them."""
        self.index.update_metadata([chunk.id for chunk in chunks], [{**chunk.metadata, "owner": self.owner} for chunk in chunks])

    def remove(self, ids: list[str]) -> None:
        """Removals wait until the run has published (searches on other machines still see the published catalog)."""
        self.journal.record(ids)
        self._deferred.extend(ids)

    def undo(self, ids: list[str]) -> None:
        self.index.delete(ids)

    def write_failed(self, exc: Exception) -> NoReturn:
        raise IndexWriteError(f"the Chroma server refused a write to the {self.name} index: {one_line(exc)}") from None

    def vector_count(self, chunks: int) -> int:
        """Other machines' chunks share the collection: the ids are checked one by one instead (verify)."""
        return chunks

    def verify(self, catalog: Catalog, chunks: int) -> str | None:
        """Both directions: every catalogued chunk is on the server; every chunk of ours there is catalogued."""
        ids = catalog.all_chunk_ids()
        missing = ids - self.index.existing(sorted(ids))
        if missing:
            return f"lacks {len(missing)} chunks on the Chroma server"
        orphans = self.index.ids_where("owner", self.owner) - ids - set(self._deferred)
        if orphans:
            log.warning("removing %d orphan chunks this machine left on the Chroma server (%s index)", len(orphans), self.name)
            self.index.delete(sorted(orphans))
        return None

    def published(self) -> None:
        """The run published: its removals happen now, readers are told, and a collection this machine left loses its
        chunks (and goes, once no machine has any there)."""
        self.index.delete(self._deferred)
        self.index.stamp(str(time.time_ns()))
        self.journal.clear()
        if self._left is not None:
            self._leave(self._left)

    def _leave(self, name: str) -> None:
        old = self.index.renamed(name)
        try:
            if old.collection is None:
                return
            old.delete(sorted(old.ids_where("owner", self.owner)))
            if old.count() == 0:
                old.drop()
                log.warning("the %s collection %s on %s is empty and was removed", self.name, name, self.server.url)
            else:
                old.stamp(str(time.time_ns()))
        except Exception as exc:  # published already: the chunks left behind go with the next rebuild
            log.warning("could not remove this machine's chunks from %s on %s: %s", name, self.server.url, one_line(exc))

    def release(self) -> None:
        """The server connection stays open across a run."""

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


def keyword_documents(chunks: list[tuple[str, str, dict, np.ndarray]]) -> list[tuple[DocumentRecord, list[ChunkRecord]]]:
    """Catalog rows for a server collection: its chunks grouped by file, with their text and keyword terms."""
    documents: dict[str, tuple[DocumentRecord, list[ChunkRecord]]] = {}
    for chunk_id, text, metadata, _ in chunks:
        key = _document_key(metadata)
        if key not in documents:
            documents[key] = (DocumentRecord(key, metadata.get("source_id", ""), metadata.get("file", ""), None, "", 0,
                                             metadata.get("indexed_at", "")), [])
        record, records = documents[key]
        embedded = Chunk(text, metadata.get("heading", ""), metadata).embed_text
        records.append(ChunkRecord(chunk_id, int(metadata.get("chunk_index", 0)), text, embedded, "", metadata))
        record.chunk_count += 1
    return list(documents.values())


def page_vectors(chunks: list[tuple[str, str, dict, np.ndarray]]) -> dict[str, np.ndarray]:
    """{document key: its page vector} for a server collection's chunks, as the machine that wrote them has."""
    by_document: dict[str, list[np.ndarray]] = {}
    for _, _, metadata, vector in chunks:
        by_document.setdefault(_document_key(metadata), []).append(vector)
    return {key: page_vector(vectors) for key, vectors in by_document.items()}


def _document_key(metadata: dict) -> str:
    return f"{metadata.get('source_id', '')}:{metadata.get('file', '')}"


def owner_id(data_dir: Path) -> str:
    """This data dir's id on a Chroma server, made once: which chunks there are this machine's."""
    path = data_dir / OWNER_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        write_atomically(path, uuid.uuid4().hex + "\n", mode=0o600)
        return path.read_text().strip()
