"""Writing a collection: the next generation, built beside the published one and published whole (store.py reads).

A store opened for writing keeps the published index's fingerprint (model,
graph, chunking, schema) or refuses to open: only a store opened `fresh` (a
rebuild into an empty generation) writes with another one. Nothing but a
rebuild ever empties a collection, and a rebuild replaces the published index
only when it is published; meanwhile it takes the vectors of the texts it has
in common with it (reuse.py).

One flush is one operation: new vectors are added, then the catalog is
written; if the catalog write fails the new vectors are deleted again, so the
source being written fails and the index stays consistent.
"""

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np

from ..core.config import Settings
from ..core.datadir import DataDir
from ..core.errors import DiskFull, FingerprintMismatch, IndexNotBuilt, IndexWriteError, RagSearchError, StoreError, is_disk_full, one_line
from . import generations
from .catalog import Catalog
from .generations import INDEX_COMMANDS
from .local_vectors import CATALOG, FINGERPRINT_STATE, folder_size
from .records import ChunkRecord, DocumentRecord
from .reuse import Donor, same_vectors
from .store import CatchesUp, Store, VectorBackend, describe, rebuild_hint, vector_backend
from .vector_file import VectorFile, unpublished_path
from .vectors import page_vector, preload

log = logging.getLogger("rag_search")

MB = 1024 * 1024


class StoreWriter(Store):
    """The next generation of one collection, written by one index run under the collection's write lock."""

    def __init__(self, name: str, folder: Path, settings: Settings, vectors: VectorBackend):
        super().__init__(name, folder, settings, vectors)
        self.rebuilt = False  # whether this run builds the collection from empty
        self._session: generations.WriteSession | None = None
        self._expected: dict | None = None  # the fingerprint this run writes with (None: removals only)
        self._unpublished: VectorFile | None = None  # vectors of runs that did not publish
        self._donor: Donor | None = None  # a rebuild: the index it replaces, for its vectors
        self._replaces = False  # whether an index was published when the run began

    @classmethod
    def open(cls, settings: Settings, name: str, expected: dict | None, fresh: bool = False) -> "StoreWriter":
        """The next generation of `name`, written with the fingerprint `expected` (None: a run that only removes).

        It reads the published generation until the first write copies it into a work folder, so a run that changes
        nothing copies nothing. A published index built with another fingerprint raises FingerprintMismatch unless
        `fresh`: then the run rebuilds into an empty generation, taking what vectors it can from the published one.
        """
        data_dir = DataDir.for_writing(settings.data_dir, settings.embedding)
        root = data_dir.collection(name)
        try:
            session = generations.WriteSession(root, settings.wait_seconds, fresh)
        except RagSearchError:
            raise
        except OSError as exc:
            raise cannot_prepare(root, exc) from None
        store = cls(name, session.base or root, settings, vector_backend(settings, name))
        store._session, store._expected = session, expected
        store._replaces = session.published is not None
        try:
            store._open(fresh)
        except BaseException:
            store.close()
            raise
        return store

    @property
    def _live_session(self) -> generations.WriteSession:
        """This run's write lock and work folder (a closed writer has none)."""
        if self._session is None:
            raise RuntimeError(f"the {self.name} index is not open for writing")
        return self._session

    def _open(self, fresh: bool) -> None:
        session, expected = self._live_session, self._expected
        if session.base is not None:
            self._attach(lambda: self._open_catalog(writable=False))
            stored = self.built_as()
            if expected is not None and stored != expected:
                raise FingerprintMismatch(f"the {self.name} index was built with {describe(stored)}, but this install uses "
                                          f"{describe(expected)}", hint=f"rebuild it: {INDEX_COMMANDS[self.name]}")
        elif expected is None:
            raise IndexNotBuilt(f"the {self.name} index has not been built yet", hint=f"run {INDEX_COMMANDS[self.name]}")
        published = self._published_catalog(session.published) if session.base is None and session.published is not None else None
        try:
            self._attach(lambda: self._vectors.connect(published or self._catalog, _chunk_ids(published or self._catalog),
                                                       expected, fresh))
            if session.base is None:
                self._begin(published)
        finally:
            if published is not None and self._donor is None:  # a donor keeps it open
                published.close()

    def _begin(self, published: Catalog | None) -> None:
        """A first index or a rebuild: an empty generation with a new collection; the index it replaces (`published`)
        offers the vectors of texts it has in common."""
        self.rebuilt = True
        folder = self._live_session.published
        if published is not None and folder is not None and same_vectors(_state(published, FINGERPRINT_STATE), self._expected):
            self._donor = Donor.open(published, lambda: self._vectors.donor_vectors(folder))
        self._start_writing()
        expected = self._expected
        if expected is None:
            raise RuntimeError("a new index needs a store opened with the fingerprint it writes with")
        self._attach(lambda: self._vectors.create(expected, self._live_catalog))

    def _published_catalog(self, folder: Path) -> Catalog | None:
        """The published catalog, read while a rebuild replaces it (for its vectors and, on a server, its collection)."""
        try:
            return Catalog(folder / CATALOG, writable=False, any_schema=True)
        except Exception as exc:
            log.warning("the %s index being replaced cannot be read (%s)", self.name, one_line(exc))
            return None

    def _open_catalog(self, writable: bool) -> None:
        """Open the catalog of self.folder, and point the vectors at it (they open on first use)."""
        self._catalog = Catalog(self.folder / CATALOG, writable=writable)
        self._vectors.at(self.folder, reading=not writable)

    def _start_writing(self) -> None:
        """Before the first write: reopen the index on a work folder. That is the generation before the published one
        brought up to date when that is cheap and no search holds it (generations.py), else a copy of the published one."""
        session = self._live_session
        if session.folder is not None:
            return
        if self._expected is not None and self._unpublished is None:
            model = f"{self._expected['model_id']}-{self._expected['embedding']}"
            self._unpublished = VectorFile(unpublished_path(session.root, model), self._expected["dimension"])
        vectors = self._vectors  # only vectors kept in generations catch up (store.CatchesUp)
        plan = vectors.catch_up_plan(session, self._catalog) if isinstance(vectors, CatchesUp) and self._catalog is not None else None
        self._open_work(plan.previous if plan is not None else None)
        if isinstance(vectors, CatchesUp) and plan is not None and session.reused:
            log.debug("bringing %s up to date instead of copying %s", plan.previous.name, plan.published.name)
            try:
                vectors.catch_up(plan, self._live_catalog)
            except Exception as exc:
                if is_disk_full(exc):
                    raise disk_full(session.root, [session.name]) from None
                log.warning("could not bring the %s generation before the current one up to date (%s): copying the "
                            "current one instead", self.name, one_line(exc))
                self._close_local()
                session.restart()
                self._open_work(None)
        for key, state in {**({FINGERPRINT_STATE: self._expected} if self._expected else {}), **self._vectors.states()}.items():
            self._live_catalog.set_source_state(key, state)

    def _open_work(self, previous: Path | None) -> None:
        session = self._live_session
        root = session.root
        self._close_local()
        try:
            self.folder = session.start(previous)
        except OSError as exc:
            raise cannot_prepare(root, exc) from None
        except Exception as exc:  # sqlite3 errors while copying a damaged generation
            raise StoreError(f"the {self.name} index in {root} cannot be copied: {one_line(exc)}",
                             hint=rebuild_hint(self.name)) from None
        self._attach(lambda: self._open_catalog(writable=True))

    def _close_local(self) -> None:
        """Close the catalog and what of the vectors lives in the folder (before it is copied, taken or published)."""
        if self._catalog is not None:
            self._catalog.close()
        self._vectors.release()

    def close(self) -> None:
        """Release everything; an uncommitted work generation is discarded."""
        for handle in (self._unpublished, self._donor):
            if handle is not None:
                handle.close()
        self._unpublished = self._donor = None
        super().close()
        if self._session is not None:
            self._session.discard()
            self._session = None

    @property
    def replacing(self) -> bool:
        """Whether this run rebuilds a collection that has a published index (which it replaces when it publishes)."""
        return self.rebuilt and self._session is not None and self._replaces

    # --- writing ------------------------------------------------------------

    def expect_writes(self) -> None:
        """This run is about to write (a source moved): load the vectors' library now, beside the work that comes first."""
        preload()

    def holds(self, text_hashes: list[str]) -> set[str]:
        """Which of these texts reusable_vectors() can give a vector for, as the catalogs and records say: known before
        the vectors' library is loaded."""
        held = set(self._live_catalog.ids_for_text_hashes(text_hashes))
        for more in (self._donor, self._unpublished):
            if more is not None:
                held |= more.holds([text_hash for text_hash in text_hashes if text_hash not in held])
        return held

    def reusable_vectors(self, text_hashes: list[str]) -> dict[str, np.ndarray]:
        """Vectors of texts with these hashes: stored in this index, in the index a rebuild replaces, or embedded by a run
        that did not publish (killed, failed); all of the same model and graph."""
        ids = self._live_catalog.ids_for_text_hashes(text_hashes)
        vectors = self._vectors.vectors(sorted(set(ids.values()))) if ids else {}
        found = {text_hash: vectors[chunk_id] for text_hash, chunk_id in ids.items() if chunk_id in vectors}
        for more in (self._donor, self._unpublished):
            if more is not None:
                found.update(more.get([text_hash for text_hash in text_hashes if text_hash not in found]))
        return found

    def write(self, items: list[tuple[DocumentRecord, list[ChunkRecord]]],
              embed: Callable[[list[ChunkRecord]], np.ndarray]) -> tuple[int, int]:
        """Put documents with their chunks, replacing earlier versions: one operation. Returns (chunks added, removed).

        `embed` gives the vectors of the chunks that are new to the index. On failure
        nothing of this write stays, and IndexWriteError says so (or the disk is full).
        """
        if self._expected is None:
            raise RuntimeError("write() needs a store opened with the fingerprint it writes with")
        self._start_writing()
        old_ids = set(self._live_catalog.chunk_ids([record.key for record, _ in items]))
        chunks = [chunk for _, document_chunks in items for chunk in document_chunks]
        fresh = list({chunk.id: chunk for chunk in chunks if chunk.id not in old_ids}.values())
        stale = sorted(old_ids - {chunk.id for chunk in chunks})
        vectors = embed(fresh) if fresh else np.zeros((0, 0), np.float32)
        if fresh and self._unpublished is not None:  # _start_writing opened it: this run has a fingerprint
            self._unpublished.put([chunk.text_hash for chunk in fresh], vectors)
        try:
            self._vectors.add(fresh, vectors)
        except Exception as exc:
            if is_disk_full(exc):
                raise
            self._vectors.write_failed(exc)
        embedded = dict(zip([chunk.id for chunk in fresh], vectors, strict=True))
        try:
            self._live_catalog.write(items, self._page_vectors(items, embedded))
        except Exception as exc:
            self._undo([chunk.id for chunk in fresh], exc)
        self._vectors.remove(stale)
        return len(fresh), len(stale)

    def _page_vectors(self, items: list[tuple[DocumentRecord, list[ChunkRecord]]], fresh: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """{document key: the normalised mean of its chunks' vectors}, from the vectors just embedded and, for chunks
        kept from the document's earlier version, those in the index."""
        kept = [chunk.id for _, chunks in items for chunk in chunks if chunk.id not in fresh]
        known = {**(self._vectors.vectors(kept) if kept else {}), **fresh}
        page_vectors: dict[str, np.ndarray] = {}
        for record, chunks in items:
            if found := [known[chunk.id] for chunk in chunks if chunk.id in known]:
                page_vectors[record.key] = page_vector(found)
        return page_vectors

    def remove(self, keys: list[str]) -> int:
        """Remove documents and their chunks; returns the number of chunks removed."""
        if keys:
            self._start_writing()
        ids = self._live_catalog.chunk_ids(keys)
        try:
            self._live_catalog.remove(keys)
        except Exception as exc:
            self._undo([], exc)
        self._vectors.remove(ids)
        return len(ids)

    def touch(self, updates: list[tuple[str, str | None, dict | None, dict | None]]) -> None:
        """New (key, identity, state, metadata of its chunks or None) for documents whose content did not change; the
        vectors take the new metadata too, as far as they hold it."""
        if updates:
            self._start_writing()
            self._live_catalog.touch(updates)
            restamped = [(key, fields) for key, _, _, fields in updates if fields]
            if restamped and self._vectors.holds_any({name for _, fields in restamped for name in fields}):
                self._vectors.restamp([chunk for key, _ in restamped for chunk in self._live_catalog.document_chunks(key)])

    def set_source_state(self, source_id: str, state: dict | None) -> None:
        if state != self._live_catalog.source_state(source_id):
            self._start_writing()
            self._live_catalog.set_source_state(source_id, state)

    def remove_source(self, source_id: str) -> int:
        """Every chunk and the saved state of one source; returns the number of chunks removed."""
        removed = self.remove(list(self._live_catalog.documents(source_id)))
        self.set_source_state(source_id, None)
        return removed

    def _undo(self, added: list[str], exc: Exception) -> NoReturn:
        """The catalog write failed after the vectors were added: delete them again, then raise."""
        if is_disk_full(exc):
            raise exc  # the run stops and its work folder goes: nothing to undo
        try:
            self._vectors.undo(added)
        except Exception as undo:
            raise StoreError(f"writing the {self.name} index failed ({one_line(exc)}) and could not be undone ({one_line(undo)}); "
                             "this run stops and the previous index still serves", hint="rerun the index script") from None
        raise IndexWriteError(f"could not write to the {self.name} index: {one_line(exc)}; nothing of this write was kept") from None

    # --- publishing ---------------------------------------------------------

    def commit(self) -> bool:
        """Verify the work generation and publish it, if this run changed anything; True if published."""
        if self._session is None:
            raise RuntimeError("commit() needs a store opened for writing")
        if not self._live_catalog.changed:
            return False
        try:
            self.verify()
        except RagSearchError:
            raise
        except Exception as exc:
            if is_disk_full(exc):
                raise
            raise StoreError(f"the new {self.name} index could not be verified: {one_line(exc)}; the previous index still serves",
                             hint="rerun the index script") from None
        self._close_local()
        try:
            self._session.publish()
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full(self._session.root, [self._session.name]) from None
            raise StoreError(f"cannot publish the new {self.name} index: {exc.strerror or one_line(exc)}; the previous index "
                             "still serves", hint="rerun the index script") from None
        self._catalog = None
        self._vectors.published()
        if self._unpublished is not None:
            self._unpublished.clear()
            self._unpublished = None
        return True

    @property
    def publishes_in_parts(self) -> bool:
        """Whether checkpoint() can publish: not in a rebuild, which is published only whole, nor on a Chroma server,
        whose removals wait for the end of the run."""
        return not self.replacing and isinstance(self._vectors, CatchesUp)

    def checkpoint(self) -> bool:
        """Publish what this run has written so far and go on writing into the next generation, so that searches see a
        large first index in parts (whole documents, as ever). True if it published."""
        session = self._session
        if not self.publishes_in_parts or session is None or session.folder is None:
            return False
        if not self.commit():
            return False
        if session.published is not None:  # read until the next write, which starts the next generation from it
            self.folder = session.published
            self._attach(lambda: self._open_catalog(writable=False))
        return True

    def verify(self) -> None:
        """Check the work generation before it is published: vectors, catalog and keyword index hold the same chunks,
        and the vectors answer queries. Through the connections this run wrote with: opening the generation again would
        load the whole vector graph a second time, the largest part of a small refresh of a large index."""
        chunks, keyword_rows, shared = self._live_catalog.agreement()
        vector_count = self._vectors.vector_count(chunks)
        if not chunks == keyword_rows == shared == vector_count:
            raise StoreError(f"the new {self.name} index is inconsistent ({vector_count} vectors, {chunks} chunks, "
                             f"{keyword_rows} keyword rows); the previous index still serves", hint=rebuild_hint(self.name))
        problem = self._vectors.verify(self._live_catalog, chunks)
        if problem:
            raise StoreError(f"the new {self.name} index {problem}; the previous index still serves", hint=rebuild_hint(self.name))



def _state(catalog: Catalog, key: str) -> dict | None:
    """A source state of a catalog that may be damaged (None when it cannot be read)."""
    try:
        return catalog.source_state(key)
    except Exception:
        return None


def _chunk_ids(catalog: Catalog | None) -> set[str] | None:
    """The chunk ids of a catalog (None when it cannot be read)."""
    if catalog is None:
        return set()
    try:
        return catalog.all_chunk_ids()
    except Exception:
        return None


def cannot_prepare(root: Path, exc: OSError) -> RagSearchError:
    """The error for a next generation that cannot be set up in `root`: a full disk says how much to free."""
    if is_disk_full(exc):
        return disk_full(root, generations.complete_generations(root))
    return StoreError(f"cannot prepare the next {root.name} index in {root}: {exc.strerror or one_line(exc)}",
                      hint=rebuild_hint(root.name))


def disk_full(root: Path, generation_names: list[str]) -> DiskFull:
    """The error for a full disk, with how much to free: room for a copy of the index and some growth."""

    sizes = [folder_size(root / generations.GENERATIONS / name) for name in generation_names[-1:]]
    needed = (sizes[0] if sizes else 0) + 64 * MB
    stat = os.statvfs(root if root.exists() else root.parent)
    free = stat.f_bavail * stat.f_frsize
    to_free = max(math.ceil((needed - free) / MB), 16)
    return DiskFull(f"the disk is full: free at least {to_free} MB in {root.parent} (an index run there needs about "
                    f"{math.ceil(needed / MB)} MB); the previous index still serves", hint="free disk space and rerun")


