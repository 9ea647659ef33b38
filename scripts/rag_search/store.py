"""The index of one collection: vectors (ChromaDB), catalog (chunk text and metadata), keyword index and source state,
as one thing.

The store is the only door to the index: sources, the indexer, retrieval and
the scripts call its methods with our own types (records.py) and never see a
chromadb collection or the catalog's tables.

Writing happens in a generation of its own (generations.py). One flush is one
operation: new vectors are added, then the catalog is written; if the catalog
write fails the new vectors are deleted again, so the source being written
fails and the index stays consistent. Chunk ids are derived from the document,
the position, the text and the metadata, so an id always names the same chunk: a
vector found by id can be reused for equal text, and writing an id that exists
changes nothing.

Server mode (--chroma-url): the vectors live on a Chroma server, which applies
writes at once; the catalog stays in local generations. Before touching the
server, a run appends the ids it will add or remove to a journal beside the
generations; removals wait until the run has published. A killed or failed run
is resolved by the next one: a journaled id stays on the server exactly when
the published catalog has it. Each machine marks its chunks with its owner id,
so `verify` can check both directions: every catalogued chunk is on the server,
and every chunk this machine put there is catalogued (orphans are removed).
"""

import contextlib
import json
import logging
import math
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import generations
from .atomic import folder_size, write_atomically
from .catalog import SCHEMA_VERSION, Catalog
from .chunking import Chunk, chunking_settings
from .config import Settings
from .embedding import ModelInfo
from .errors import DiskFull, FingerprintMismatch, IndexNotBuilt, IndexWriteError, RagSearchError, StoreError, is_disk_full, one_line
from .generations import INDEX_COMMANDS
from .locking import exclusive_lock
from .records import ChunkRecord, DocumentRecord, Filters, Hit, IndexedFiles, StoredChunk
from .vector_file import VectorFile, unpublished_path
from .vectors import VectorIndex

log = logging.getLogger("rag_search")

COLLECTIONS = ("personal", "docs")
CATALOG = "catalog.sqlite"
CHROMA = "chroma"
OWNER_FILE = "owner"
JOURNAL_FILE = "server-journal.jsonl"
MIRROR_STATE = "server-keyword-copy"  # the keyword copy's record of the server version it holds
FINGERPRINT_STATE = "@fingerprint"  # the vectors' fingerprint, in the catalog ("@" is never in a source id)
FILTER_FIELDS = ("source_id", "date_ts", "type", "tags")  # what _where() filters on, kept beside each vector
SAME_VECTORS = ("model_id", "embedding", "dimension", "chunking")  # fingerprint keys that decide what a text's vector is
MB = 1024 * 1024
# Up to this many chunks added or removed, bringing the generation before the published one up to date costs less
# than copying the index: ChromaDB adds about 700 vectors a second, and a copy at 200k chunks writes a gigabyte.
CATCH_UP_LIMIT = 500


def fingerprint(model: ModelInfo, embedding: str) -> dict:
    """What must match between the index and the code searching it; `embedding` is the graph (settings.embedding)."""
    return {
        "model": model.name,
        "model_id": model.model_id,
        "embedding": embedding,
        "dimension": model.dimension,
        "chunking": chunking_settings(model.max_tokens),
        "schema": SCHEMA_VERSION,
    }


def rebuild_hint(name: str) -> str:
    return f"rebuild it from scratch: {INDEX_COMMANDS[name]} --full"


def make_private_dir(path: Path) -> None:
    """Create `path` (and parents) readable by the owner only; fail clearly if impossible."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe-").close()
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFull(f"the disk is full: free some space in {path}", hint="free disk space and rerun") from None
        raise StoreError(f"cannot write to the data folder {path}: {exc.strerror or exc}",
                         hint="choose a writable folder with --data-dir or RAG_SEARCH_HOME") from None


class ServerJournal:
    """Server mode: the ids a run is about to add to or remove from the server, written before it does."""

    def __init__(self, path: Path, server_url: str):
        self.path = path
        self.server_url = server_url

    def record(self, ids: list[str]) -> None:
        if not ids:
            return
        with open(self.path, "a", encoding="utf-8") as journal:
            journal.write(json.dumps({"server": self.server_url, "ids": ids}) + "\n")
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
                if entry["server"] == self.server_url:
                    pending.update(entry["ids"])
        return pending

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass
class CatchUp:
    """What turns the generation before the published one into the published one (Store._catch_up_plan)."""

    previous: Path  # the older generation's folder
    keys: list[str]  # the documents that differ
    removed: list[str]  # ids of the chunks only the older one has
    added: dict[str, np.ndarray]  # the chunks only the published one has: id -> vector


class Store:
    """One collection's index in one generation (or, in server mode, the server and a local catalog)."""

    def __init__(self, name: str, folder: Path, settings: Settings):
        self.name = name
        self.folder = folder
        self.settings = settings
        self.notes: list[str] = []  # for the caller to log: e.g. CURRENT was unreadable
        self._catalog: Catalog | None = None
        self._vector_index: VectorIndex | None = None
        self._vectors_at: tuple[Path, bool] | None = None  # (folder, reading): vectors to open on first use
        self._session: generations.WriteSession | None = None
        self._read_lock: int | None = None
        self._journal: ServerJournal | None = None
        self._owner: str | None = None
        self._deferred: list[str] = []  # server mode: ids to delete once the run has published
        self._unpublished: VectorFile | None = None  # writers: vectors of runs that did not publish
        self._added: VectorFile | None = None  # writers: what this run adds to ChromaDB, while that is little
        self._added_count = 0
        self._fingerprint: dict | None = None  # writers: what prepare() was given

    # --- opening and closing ------------------------------------------------

    @classmethod
    def open_for_reading(cls, settings: Settings, name: str) -> "Store":
        """The published index of `name`, held until close(); in server mode, the server and this machine's keyword copy."""
        if settings.server is not None:
            return cls._open_server_copy(settings, name)
        folder, lock, note = generations.open_for_reading(settings.data_dir / name)
        store = cls(name, folder, settings)
        store._read_lock = lock
        store.notes = [note] if note else []

        def open_parts():
            store._catalog = Catalog(folder / CATALOG, writable=False)
            store._catalog.chunk_count()  # a catalog that is not a database fails here, not half way through a search
            store._vectors = VectorIndex.open_local(folder / CHROMA, name, reading=True)

        return store._attach(open_parts)

    @classmethod
    def open_for_writing(cls, settings: Settings, name: str, fresh: bool = False) -> "Store":
        """The next generation of `name`: it reads the published one (or nothing when `fresh`) until the first
        write copies it into a work folder, so a run that changes nothing copies nothing."""
        make_private_dir(settings.data_dir)
        generations.remove_legacy_layout(settings.data_dir)
        root = settings.data_dir / name
        try:
            session = generations.WriteSession(root, settings.wait_seconds, fresh)
        except RagSearchError:
            raise
        except OSError as exc:
            raise cannot_prepare(root, exc) from None
        store = cls(name, session.base or root, settings)
        store._session = session

        def open_published():
            try:
                store._open_local(writable=False)
            except FingerprintMismatch:  # a catalog of an older schema, which only a writable copy can rebuild
                store._start_writing()

        try:
            if session.base is None:
                store._start_writing()
            else:
                store._attach(open_published)
            if settings.server is not None:
                store._attach(lambda: store._open_server_for_writing(fresh))
        except BaseException:
            store.close()
            raise
        return store

    def _open_local(self, writable: bool) -> None:
        """Open the catalog of self.folder, and its vectors unless they live on a server."""
        self._catalog = Catalog(self.folder / CATALOG, writable=writable)
        if self.settings.server is None:
            self._vectors_at = (self.folder / CHROMA, not writable)

    @property
    def _vectors(self) -> VectorIndex | None:
        """The vectors, opened on first use: a run that finds nothing to change never loads ChromaDB (a second)."""
        if self._vector_index is None and self._vectors_at is not None:
            folder, reading = self._vectors_at
            self._vectors_at = None
            self._attach(lambda: self._open_vectors(folder, reading))
        return self._vector_index

    def _open_vectors(self, folder: Path, reading: bool) -> None:
        self._vectors = VectorIndex.open_local(folder, self.name, reading=reading)
        if not reading:  # an index made before EF_SEARCH takes it with the first change written to it
            self._vectors.widen_search()

    @_vectors.setter
    def _vectors(self, vectors: VectorIndex | None) -> None:
        self._vector_index = vectors

    def _start_writing(self) -> None:
        """Before the first write: reopen the index on a work folder. That is the generation before the published one
        brought up to date when that is cheap and no search holds it (generations.py), else a copy of the published one."""
        if self._session.folder is not None:
            return
        plan = self._catch_up_plan()
        self._open_work(plan.previous if plan is not None else None)
        if self._session.reused:
            log.debug("bringing %s up to date instead of copying %s", plan.previous.name, self._session.base.name)
            try:
                self._catch_up(plan)
            except Exception as exc:
                if is_disk_full(exc):
                    raise disk_full(self._session.root, [self._session.name]) from None
                log.warning("could not bring the %s generation before the current one up to date (%s): copying the "
                            "current one instead", self.name, one_line(exc))
                self._close_local()
                self._session.restart()
                self._open_work(None)
        if self._fingerprint is not None:  # kept in the catalog too, so a run that changes nothing needs no vectors
            self._catalog.set_source_state(FINGERPRINT_STATE, self._fingerprint)
        if self.settings.server is None:
            self._added, self._added_count = VectorFile(self.folder / generations.ADDED), 0

    def _open_work(self, previous: Path | None) -> None:
        root = self._session.root
        self._close_local()
        try:
            self.folder = self._session.start(previous)
        except OSError as exc:
            raise cannot_prepare(root, exc) from None
        except Exception as exc:  # sqlite3 errors while copying a damaged generation
            raise StoreError(f"the {self.name} index in {root} cannot be copied: {one_line(exc)}",
                             hint=rebuild_hint(self.name)) from None
        self._attach(lambda: self._open_local(writable=True))

    def _catch_up_plan(self) -> CatchUp | None:
        """What turns the generation before the published one into the published one, if it is little and the published
        one recorded the vectors its run added (locally only: a server's vectors are not in generations)."""
        base = self._session.base
        if self.settings.server is not None or base is None or self._catalog is None:
            return None
        previous = generations.predecessor(self._session.root, base.name)
        if previous is None:
            return None
        try:
            fingerprint = self._catalog.source_state(FINGERPRINT_STATE)
            older = Catalog(previous / CATALOG, writable=False)
            try:
                same_vectors = older.source_state(FINGERPRINT_STATE) == fingerprint
            finally:
                older.close()
            keys, removed, added = self._catalog.difference(previous / CATALOG)
            if not same_vectors or len(removed) + len(added) > CATCH_UP_LIMIT:
                return None
            record = VectorFile(base / generations.ADDED, fingerprint["dimension"], writable=False)
            try:
                vectors = record.get(added)
            finally:
                record.close()
        except Exception as exc:  # a damaged older generation: copy the current one
            log.debug("not catching up %s: %s", previous, one_line(exc))
            return None
        return CatchUp(previous, keys, removed, vectors) if len(vectors) == len(added) else None

    def _catch_up(self, plan: CatchUp) -> None:
        """Apply the published generation's changes to its predecessor, now the work folder: catalog rows, then vectors."""
        self._catalog.catch_up(self._session.base / CATALOG, plan.keys)
        if plan.removed:
            self._vectors.delete(plan.removed)
        if plan.added:
            ids = sorted(plan.added)
            stored = self._catalog.stored_chunks(ids)
            self._vectors.add(ids, np.stack([plan.added[i] for i in ids]),
                              [{k: v for k, v in stored[i].metadata.items() if k in FILTER_FIELDS} for i in ids])

    def _record_added(self, ids: list[str], vectors: np.ndarray) -> None:
        """Keep what this run adds to ChromaDB while it is little: the next run brings this generation's predecessor up
        to date with it instead of copying the index."""
        if self._added is None:
            return
        self._added_count += len(ids)
        if self._added_count > CATCH_UP_LIMIT:
            self._forget_added()
        else:
            self._added.put(ids, vectors)

    def _forget_added(self) -> None:
        """No record of added vectors for this generation: the next run copies it."""
        if self._added is not None:
            self._added.clear()
            self._added = None

    def _close_local(self) -> None:
        """Close the catalog and the record of added vectors, and the vectors unless they live on a server (those stay
        open across a run)."""
        if self._catalog is not None:
            self._catalog.close()
        if self._added is not None:
            self._added.close()
            self._added = None
        if self.settings.server is None and self._vector_index is not None:
            self._vector_index.close()
            self._vector_index = None

    def _attach(self, open_parts) -> "Store":
        """Run `open_parts`; if it fails, release what was opened and say which index cannot be opened and how to rebuild it."""
        try:
            open_parts()
        except RagSearchError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise StoreError(f"the {self.name} index in {self.folder} cannot be opened: {one_line(exc)}",
                             hint=rebuild_hint(self.name)) from None
        return self

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
        for handle in (self._vector_index, self._catalog, self._unpublished, self._added):
            if handle is not None:
                handle.close()
        self._vector_index = self._catalog = self._unpublished = self._added = None
        self._vectors_at = None

    @staticmethod
    def indexed_files(settings: Settings, name: str, source_id: str) -> IndexedFiles | None:
        """The documents of `source_id` in the published index of `name` with their identities, and the source's
        state; None if it was never built. Reads only the catalog (milliseconds), under the readers' shared lock."""
        root = settings.data_dir / name
        if not root.is_dir() or generations.published(root)[0] is None:
            return None  # never built (or the data dir is unusable, which the caller's own use reports)
        folder, lock, _ = generations.open_for_reading(root)
        try:
            catalog = Catalog(folder / CATALOG, writable=False)
            try:
                identities = catalog.identities(source_id)
                state = catalog.source_state(source_id)
            finally:
                catalog.close()
            published = generations.published_at(folder)
        except RagSearchError:
            raise
        except Exception as exc:
            raise StoreError(f"the {name} index in {folder} cannot be read: {one_line(exc)}", hint=rebuild_hint(name)) from None
        finally:
            os.close(lock)
        return IndexedFiles(identities, state, published)

    @staticmethod
    def is_built(settings: Settings, name: str) -> bool:
        """Whether `name` has a published index (on a server: assumed, the server decides)."""
        return settings.server is not None or generations.published(settings.data_dir / name)[0] is not None

    # --- what is indexed ----------------------------------------------------

    def prepare(self, expected: dict) -> bool:
        """Make sure the collection exists with this fingerprint; True if it was (re)created empty."""
        if self._session is not None and self._unpublished is None:
            self._unpublished = VectorFile(unpublished_path(self._session.root, f"{expected['model_id']}-{expected['embedding']}"),
                                           expected["dimension"])
        self._fingerprint = expected
        stored = self._catalog.source_state(FINGERPRINT_STATE) or self._vectors.fingerprint()  # an index made before the copy
        if stored == expected:
            return False
        if stored is not None:
            log.warning("the %s index was built with another model or chunking: rebuilding it", self.name)
        self._start_writing()
        self._forget_added()  # a rebuild: the predecessor has nothing in common with it
        if stored is not None and all(stored.get(key) == expected.get(key) for key in SAME_VECTORS):
            self._keep_vectors_for_rebuild()
        self._vectors.create(expected)
        self._catalog.clear()
        self._catalog.set_source_state(FINGERPRINT_STATE, expected)
        return True

    def _keep_vectors_for_rebuild(self) -> None:
        """Only the catalog's layout changed: keep the stored vectors by the hash of their text, so the rebuild reuses
        them rather than embedding everything again (an hour at 200k chunks). Collections that hold their text (those
        of earlier layouts, and servers) can offer them; a hash is of the text the run will embed, so a vector is only
        ever reused for its own text."""
        if self._unpublished is None:
            return
        kept = 0
        for _, texts, metadatas, vectors in self._vectors.pages(with_vectors=True):
            rows = [(_as_indexed(text, metadata).text_hash, row) for row, (text, metadata) in
                    enumerate(zip(texts, metadatas, strict=True)) if text is not None]
            self._unpublished.put([text_hash for text_hash, _ in rows], vectors[[row for _, row in rows]])
            kept += len(rows)
        log.warning("keeping %d vectors of the %s index for its rebuild", kept, self.name)

    def check_fingerprint(self, expected: dict) -> None:
        """Raise IndexNotBuilt or FingerprintMismatch unless the collection was built as `expected` says."""
        with self._reading():
            exists = self._vectors.collection is not None
            stored = self._vectors.fingerprint() if exists else None
        if not exists:
            raise IndexNotBuilt(f"the {self.name} index has not been built yet", hint=f"run {INDEX_COMMANDS[self.name]}")
        if stored != expected:
            raise FingerprintMismatch(
                f"the {self.name} index was built with {_describe(stored)}, but this install uses {_describe(expected)}",
                hint=f"reindex: {INDEX_COMMANDS[self.name]} --full",
            )

    def documents(self, source_id: str | None = None, key_prefix: str | None = None) -> dict[str, DocumentRecord]:
        return self._catalog.documents(source_id, key_prefix)

    def source_ids(self) -> set[str]:
        return self._catalog.source_ids()

    def source_state(self, source_id: str) -> dict | None:
        return self._catalog.source_state(source_id)

    def chunk_count(self, source_id: str | None = None) -> int:
        with self._reading():
            return self._catalog.chunk_count(source_id)

    def document_count(self, source_id: str | None = None) -> int:
        with self._reading():
            return self._catalog.document_count(source_id)

    def find_documents(self, reference: str) -> list[DocumentRecord]:
        """The documents a reference names: the file a result shows, a path on disk, a page URL, or a document key."""
        with self._reading():
            return self._catalog.find_documents(reference)

    def document_of_chunk(self, chunk_id: str) -> DocumentRecord | None:
        """The document holding the chunk `chunk_id`, or None if this index has no such chunk."""
        with self._reading():
            key = self._catalog.document_of_chunk(chunk_id)
            return self._catalog.documents(key_prefix=key).get(key) if key else None

    def document_chunks(self, key: str) -> list[StoredChunk]:
        """One document's chunks, in the document's order."""
        with self._reading():
            return self._catalog.document_chunks(key)

    def is_stale(self) -> bool:
        """Whether an index run has published since this store was opened for reading (it then reads an old generation)."""
        if self.settings.server is not None:
            with self._reading():
                return self._vectors.fresh_version() != (self._catalog.source_state(MIRROR_STATE) or {}).get("version")
        return generations.published(self.settings.data_dir / self.name)[0] != self.folder.name

    def generation(self) -> dict:
        """What this store reads: the generation's name, when it was published and its size on disk (None in server
        mode); and what the collection takes on disk, with the generation kept for the next small change."""
        if self.settings.server is not None:
            return {"generation": None, "server": self.settings.server.url}
        return {"generation": self.folder.name, "published": generations.published_at(self.folder),
                "size_bytes": _folder_size(self.folder), "disk_bytes": _folder_size(self.settings.data_dir / self.name)}

    def keyword_ids(self) -> set[str]:
        """Ids of the chunks in the keyword index (to check it agrees with the vectors)."""
        return self._catalog.keyword_index_ids()

    def all_chunks(self) -> list[StoredChunk]:
        with self._reading():
            return self._catalog.all_chunks()

    # --- searching ----------------------------------------------------------

    def dense(self, vector: np.ndarray, depth: int, filters: Filters) -> list[Hit]:
        """The `depth` nearest chunks by cosine similarity, nearest first."""
        with self._reading():
            found = self._vectors.query(vector, depth, _where(filters))
            stored = self._catalog.stored_chunks([chunk_id for chunk_id, _ in found])
        return [Hit(chunk_id, self.name, _clip(cosine), stored[chunk_id].text, stored[chunk_id].metadata)
                for chunk_id, cosine in found if chunk_id in stored]

    def matching(self, filters: Filters, limit: int = 10_000) -> list[StoredChunk]:
        """Up to `limit` chunks that pass `filters`, oldest written first: records listed by their fields, without a query."""
        with self._reading():
            return self._catalog.matching(filters, limit)

    def keyword(self, match: str, depth: int, filters: Filters) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) of the best keyword matches, best first."""
        with self._reading():
            return self._catalog.keyword_search(match, depth, filters)

    def fill_text(self, hits: list[Hit]) -> list[Hit]:
        """Text and metadata for hits found by keyword only; hits the catalog lacks are dropped."""
        with self._reading():
            stored = self._catalog.stored_chunks([hit.id for hit in hits])
        for hit in hits:
            if hit.id in stored:
                hit.text, hit.metadata = stored[hit.id].text, stored[hit.id].metadata
        return [hit for hit in hits if hit.id in stored]

    def fill_scores(self, hits: list[Hit], vector: np.ndarray) -> list[Hit]:
        """The cosine score of hits found by keyword only; hits without a stored vector are dropped."""
        with self._reading():
            vectors = self._vectors.vectors([hit.id for hit in hits])
        for hit in hits:
            if hit.id in vectors:
                hit.score = _clip(float(np.dot(vectors[hit.id], vector)))
        return [hit for hit in hits if hit.id in vectors]

    @contextlib.contextmanager
    def _reading(self):
        try:
            yield
        except RagSearchError:
            raise
        except Exception as exc:
            raise StoreError(f"the {self.name} index cannot be read: {one_line(exc)}", hint=rebuild_hint(self.name)) from None

    # --- writing ------------------------------------------------------------

    def reusable_vectors(self, text_hashes: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors of chunks whose embedded text has these hashes (ids name their text, so they match)."""
        ids = self._catalog.ids_for_text_hashes(text_hashes)
        vectors = self._vectors.vectors(sorted(set(ids.values()))) if ids else {}
        found = {text_hash: vectors[chunk_id] for text_hash, chunk_id in ids.items() if chunk_id in vectors}
        if self._unpublished is not None:  # embedded by a run that did not publish (killed, failed)
            found.update(self._unpublished.get([text_hash for text_hash in text_hashes if text_hash not in found]))
        return found

    def write(self, items: list[tuple[DocumentRecord, list[ChunkRecord]]],
              embed: Callable[[list[ChunkRecord]], np.ndarray]) -> tuple[int, int]:
        """Put documents with their chunks, replacing earlier versions: one operation. Returns (chunks added, removed).

        `embed` gives the vectors of the chunks that are new to the index. On failure
        nothing of this write stays, and IndexWriteError says so (or the disk is full).
        """
        self._start_writing()
        old_ids = set(self._catalog.chunk_ids([record.key for record, _ in items]))
        chunks = [chunk for _, document_chunks in items for chunk in document_chunks]
        fresh = list({chunk.id: chunk for chunk in chunks if chunk.id not in old_ids}.values())
        stale = sorted(old_ids - {chunk.id for chunk in chunks})
        vectors = embed(fresh) if fresh else np.zeros((0, 0), np.float32)
        if fresh and self._unpublished is not None:
            self._unpublished.put([chunk.text_hash for chunk in fresh], vectors)
        if self._journal is not None:
            self._journal.record([chunk.id for chunk in fresh] + stale)
        try:
            self._add_vectors(fresh, vectors)
        except Exception as exc:
            self._vector_store_failed(exc)
        try:
            self._catalog.write(items)
        except Exception as exc:
            self._undo([chunk.id for chunk in fresh], exc)
        self._drop_vectors(stale)
        return len(fresh), len(stale)

    def remove(self, keys: list[str]) -> int:
        """Remove documents and their chunks; returns the number of chunks removed."""
        if keys:
            self._start_writing()
        ids = self._catalog.chunk_ids(keys)
        if self._journal is not None:
            self._journal.record(ids)
        try:
            self._catalog.remove(keys)
        except Exception as exc:
            self._undo([], exc)
        self._drop_vectors(ids)
        return len(ids)

    def touch(self, updates: list[tuple[str, str | None, dict | None]]) -> None:
        """New (key, identity, state) for documents whose content did not change."""
        if updates:
            self._start_writing()
            self._catalog.touch(updates)

    def set_source_state(self, source_id: str, state: dict | None) -> None:
        if state != self._catalog.source_state(source_id):
            self._start_writing()
            self._catalog.set_source_state(source_id, state)

    def remove_source(self, source_id: str) -> int:
        """Every chunk and the saved state of one source; returns the number of chunks removed."""
        removed = self.remove(list(self._catalog.documents(source_id)))
        self.set_source_state(source_id, None)
        return removed

    def _add_vectors(self, chunks: list[ChunkRecord], vectors: np.ndarray) -> None:
        """Locally, ChromaDB gets ids, vectors and the fields filters need (the catalog has the rest); a server gets the
        text and metadata too, marked as this machine's, since other machines search it."""
        ids = [chunk.id for chunk in chunks]
        if self.settings.server is None:
            self._vectors.add(ids, vectors, [{k: v for k, v in chunk.metadata.items() if k in FILTER_FIELDS} for chunk in chunks])
            self._record_added(ids, vectors)
        else:
            metadatas = [{**chunk.metadata, "owner": self._owner} for chunk in chunks]
            self._vectors.add(ids, vectors, metadatas, [chunk.text for chunk in chunks])

    def _vector_store_failed(self, exc: Exception):
        """Writing vectors failed. Locally the store's state is then unknown (ChromaDB can hang if used again after a
        failed write), so the run stops and its work is discarded; on a server, the journal resolves it and the
        source being written fails."""
        if is_disk_full(exc):
            raise exc
        if self._journal is not None:
            raise IndexWriteError(f"the Chroma server refused a write to the {self.name} index: {one_line(exc)}") from None
        raise StoreError(f"writing vectors to the {self.name} index failed: {one_line(exc)}; this run stops and the previous "
                         "index still serves", hint="rerun the index script") from None

    def _undo(self, added: list[str], exc: Exception):
        """The catalog write failed after the vectors were added: delete them again, then raise."""
        if is_disk_full(exc):
            raise exc  # the run stops and its work folder goes: nothing to undo
        try:
            self._vectors.delete(added)
        except Exception as undo:
            raise StoreError(f"writing the {self.name} index failed ({one_line(exc)}) and could not be undone ({one_line(undo)}); "
                             "this run stops and the previous index still serves", hint="rerun the index script") from None
        raise IndexWriteError(f"could not write to the {self.name} index: {one_line(exc)}; nothing of this write was kept") from None

    def _drop_vectors(self, ids: list[str]) -> None:
        """Delete vectors the catalog no longer has: now, locally; after publishing, on a server."""
        if self._journal is not None:
            self._deferred.extend(ids)
            return
        try:
            self._vectors.delete(ids)
        except Exception as exc:
            if is_disk_full(exc):
                raise
            raise StoreError(f"could not remove old vectors from the {self.name} index: {one_line(exc)}; "
                             "the previous index still serves", hint="rerun the index script") from None

    # --- publishing ---------------------------------------------------------

    def commit(self) -> bool:
        """Verify the work generation and publish it, if this run changed anything; True if published."""
        if self._session is None:
            raise RuntimeError("commit() needs a store opened for writing")
        if not self._catalog.changed:
            return False
        try:
            self.verify()
            self._close_local()
        except RagSearchError:
            raise
        except Exception as exc:
            if is_disk_full(exc):
                raise
            raise StoreError(f"the new {self.name} index could not be verified: {one_line(exc)}; the previous index still serves",
                             hint="rerun the index script") from None
        try:
            self._session.publish()
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full(self._session.root, [self._session.name]) from None
            raise StoreError(f"cannot publish the new {self.name} index: {exc.strerror or one_line(exc)}; the previous index "
                             "still serves", hint="rerun the index script") from None
        if self._journal is not None:
            self._vectors.delete(self._deferred)
            self._vectors.stamp(str(time.time_ns()))
            self._journal.clear()
        if self._unpublished is not None:
            self._unpublished.clear()
            self._unpublished = None
        return True

    def verify(self) -> None:
        """Check the work generation before it is published: vectors, catalog and keyword index hold the same chunks,
        and the vector graph answers a query.

        Through the connections this run wrote with: opening the generation again would load the whole vector graph a
        second time, the largest part of a small refresh of a large index.
        """
        chunks, keyword_rows, shared = self._catalog.agreement()
        vector_count = self._vectors.count() if self.settings.server is None else chunks
        if not chunks == keyword_rows == shared == vector_count:
            raise StoreError(f"the new {self.name} index is inconsistent ({vector_count} vectors, {chunks} chunks, "
                             f"{keyword_rows} keyword rows); the previous index still serves", hint=rebuild_hint(self.name))
        if self.settings.server is not None:
            self._verify_server(self._catalog.all_chunk_ids())
        elif chunks and not self._vectors.answers_queries():
            raise StoreError(f"the new {self.name} index does not answer queries; the previous index still serves",
                             hint=rebuild_hint(self.name))

    def _verify_server(self, ids: set[str]) -> None:
        """Both directions: every catalogued chunk is on the server; every chunk of ours there is catalogued."""
        missing = ids - self._vectors.existing(sorted(ids))
        if missing:
            raise StoreError(f"the Chroma server lacks {len(missing)} chunks of the {self.name} index; the previous index still serves",
                             hint=rebuild_hint(self.name))
        orphans = self._vectors.ids_where("owner", self._owner) - ids - set(self._deferred)
        if orphans:
            log.warning("removing %d orphan chunks this machine left on the Chroma server (%s index)", len(orphans), self.name)
            self._vectors.delete(sorted(orphans))

    # --- server mode --------------------------------------------------------

    def _open_server_for_writing(self, fresh: bool) -> None:
        data_dir = self.settings.data_dir
        self._vectors = VectorIndex.open_server(self.settings.server, self.name)
        self._vectors.widen_search()
        self._owner = owner_id(data_dir)
        self._journal = ServerJournal(data_dir / self.name / JOURNAL_FILE, self.settings.server.url)
        pending = self._journal.pending()
        if not pending or self._vectors.collection is None:
            self._journal.clear()
            return
        keep = self._published_ids() if fresh else self._catalog.all_chunk_ids()
        if keep is None:
            return  # the published catalog cannot be read: the rebuild's verify removes what is left over
        self._vectors.delete(sorted(pending - keep))
        self._vectors.stamp(str(time.time_ns()))  # the unfinished run may have published without telling the readers
        log.warning("resolved a %s index run that did not finish: %d chunks removed from the Chroma server",
                    self.name, len(pending - keep))
        self._journal.clear()

    def _published_ids(self) -> set[str] | None:
        root = self.settings.data_dir / self.name
        name, _ = generations.published(root)
        if name is None:
            return set()
        try:
            catalog = Catalog(root / generations.GENERATIONS / name / CATALOG, writable=False)
        except Exception:
            return None
        try:
            return catalog.all_chunk_ids()
        finally:
            catalog.close()

    @classmethod
    def _open_server_copy(cls, settings: Settings, name: str) -> "Store":
        server = settings.server
        folder = settings.data_dir / "server" / f"{server.host}_{server.port}" / name
        make_private_dir(folder)
        store = cls(name, folder, settings)
        store._vectors = VectorIndex.open_server(server, name)
        store._catalog = Catalog(folder / CATALOG)
        if store._vectors.collection is not None:
            store._refresh_keyword_copy()
        return store

    def _refresh_keyword_copy(self) -> None:
        """Rebuild this machine's keyword index of the server's chunks if the server's version moved."""
        version = self._vectors.version()
        if (self._catalog.source_state(MIRROR_STATE) or {}).get("version") == version:
            return
        with exclusive_lock(self.folder / "rebuild.lock"):
            if (self._catalog.source_state(MIRROR_STATE) or {}).get("version") == version:
                return  # another search rebuilt it meanwhile
            self._catalog.clear()
            self._catalog.write(keyword_documents(self._vectors.chunks()))
            self._catalog.set_source_state(MIRROR_STATE, {"version": version})


def nothing_built() -> IndexNotBuilt:
    return IndexNotBuilt("no index has been built yet", hint=f"run {INDEX_COMMANDS['personal']} and/or {INDEX_COMMANDS['docs']}")


def open_published(settings: Settings) -> dict[str, Store]:
    """Every collection that has a published index, open for reading (no model needed); the caller closes them."""
    stores: dict[str, Store] = {}
    try:
        for name in COLLECTIONS:
            try:
                stores[name] = Store.open_for_reading(settings, name)
            except IndexNotBuilt:
                continue
    except BaseException:
        for store in stores.values():
            store.close()
        raise
    return stores


def keyword_documents(chunks: list[tuple[str, str, dict]]) -> list[tuple[DocumentRecord, list[ChunkRecord]]]:
    """Catalog rows for a server collection: its chunks grouped by file, with their text and keyword terms."""
    documents: dict[str, tuple[DocumentRecord, list[ChunkRecord]]] = {}
    for chunk_id, text, metadata in chunks:
        key = f"{metadata.get('source_id', '')}:{metadata.get('file', '')}"
        if key not in documents:
            documents[key] = (DocumentRecord(key, metadata.get("source_id", ""), metadata.get("file", ""), None, "", 0,
                                             metadata.get("indexed_at", "")), [])
        record, records = documents[key]
        embedded = _as_indexed(text, metadata).embed_text
        records.append(ChunkRecord(chunk_id, int(metadata.get("chunk_index", 0)), text, embedded, "", metadata))
        record.chunk_count += 1
    return list(documents.values())


def _as_indexed(text: str, metadata: dict) -> Chunk:
    """A stored chunk as the index run made it: what it embedded was its heading path, then its text."""
    return Chunk(text, metadata.get("heading", ""))


def owner_id(data_dir: Path) -> str:
    """This data dir's id on a Chroma server, made once: which chunks there are this machine's."""
    path = data_dir / OWNER_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        write_atomically(path, uuid.uuid4().hex + "\n", mode=0o600)
        return path.read_text().strip()


def cannot_prepare(root: Path, exc: OSError) -> RagSearchError:
    """The error for a next generation that cannot be set up in `root`: a full disk says how much to free."""
    if is_disk_full(exc):
        return disk_full(root, generations.complete_generations(root))
    return StoreError(f"cannot prepare the next {root.name} index in {root}: {exc.strerror or one_line(exc)}",
                      hint=rebuild_hint(root.name))


def disk_full(root: Path, generation_names: list[str]) -> DiskFull:
    """The error for a full disk, with how much to free: room for a copy of the index and some growth."""
    sizes = [_folder_size(root / generations.GENERATIONS / name) for name in generation_names[-1:]]
    needed = (sizes[0] if sizes else 0) + 64 * MB
    stat = os.statvfs(root if root.exists() else root.parent)
    free = stat.f_bavail * stat.f_frsize
    to_free = max(math.ceil((needed - free) / MB), 16)
    return DiskFull(f"the disk is full: free at least {to_free} MB in {root.parent} (an index run there needs about "
                    f"{math.ceil(needed / MB)} MB); the previous index still serves", hint="free disk space and rerun")


def _folder_size(folder: Path) -> int:
    return folder_size(folder) if folder.is_dir() else 0


def _where(filters: Filters) -> dict | None:
    """The ChromaDB metadata filter for sources, dates, record types and tags (a tag matches a whole element of `tags`)."""
    clauses = []
    if filters.sources:
        clauses.append({"source_id": {"$in": list(filters.sources)}})
    if filters.types:
        clauses.append({"type": {"$in": list(filters.types)}})
    clauses += [{"tags": {"$contains": tag}} for tag in filters.tags]
    if filters.since is not None:
        clauses.append({"date_ts": {"$gte": filters.since}})
    if filters.until is not None:
        clauses.append({"date_ts": {"$lte": filters.until}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _describe(value: dict | None) -> str:
    if not value:
        return "an unknown model and chunking"
    graph = value.get("embedding") or "float"  # indexes made before the int8 graph existed used the float one
    return (f"model {value.get('model')} ({value.get('model_id')}, {graph} graph, {value.get('dimension')} dims), "
            f"chunking {value.get('chunking')}, schema {value.get('schema')}")


def _clip(similarity: float) -> float:
    return float(min(1.0, max(0.0, similarity)))
