"""A collection's vectors kept locally, in each generation's folder: one of the store's two vector backends.

Readers hold a shared lock on the published generation while they read it
(generations.py). Writers open the vectors of their work folder on first use: a
run that finds nothing to change never loads ChromaDB. In a large index, a run
that added few vectors records them in its generation, so the next run can bring
the generation before the published one up to date (catch_up) instead of copying
the index.
"""

import logging
import os
from pathlib import Path
from typing import NoReturn

import numpy as np

from ..core.atomic import folder_size as size_of
from ..core.config import Settings
from ..core.errors import StoreError, is_disk_full, one_line
from ..safety.isolation import run_isolated
from . import generations
from .catalog import Catalog, PublishedIndex
from .records import CatchUp, ChunkRecord, Filters, StoredChunk
from .vector_file import VectorFile
from .vectors import VectorIndex

log = logging.getLogger("rag_search")

CATALOG = "catalog.sqlite"
CHROMA = "chroma"
FINGERPRINT_STATE = "@fingerprint"  # the vectors' fingerprint, in the catalog ("@" is never in a source id)
FILTER_FIELDS = ("source_id", "date_ts", "type", "tags", "page_kind")  # what filters need, kept beside each vector
# Up to this many chunks added or removed, bringing the generation before the published one up to date costs less
# than copying the index: ChromaDB adds about 700 vectors a second, and a copy at 200k chunks writes a gigabyte.
CATCH_UP_LIMIT = 500
# Only an index this large keeps the generation before the published one to bring up to date. A smaller one is copied
# at each run: a 22 MB copy costs less than catching up (1.39 s against 1.48 s a one-commit refresh), and a kept
# generation doubles the data dir.
KEEP_PREVIOUS_FROM = 64 * 1024 * 1024  # bytes


class LocalVectors:
    """ChromaDB in a generation folder: opened on first use, closed before the folder is copied or published. A
    store.VectorBackend that also CatchesUp."""

    fresh_at_search_time = True  # whether a search may bring changed personal files in first

    def __init__(self, settings: Settings, name: str):
        self.settings = settings
        self.name = name
        self._index: VectorIndex | None = None
        self._at: tuple[Path, bool] | None = None  # (folder, reading): where to open the vectors on first use
        self._read_lock: int | None = None
        self._added: VectorFile | None = None  # what this run adds, while that is little
        self._added_count = 0

    # --- reading ------------------------------------------------------------

    def open_published(self, expected: dict | None = None) -> PublishedIndex:
        """The published generation, held under a shared lock until close() (whatever fingerprint it has: the store
        checks that). The vectors open on first use: status and get read the catalog alone, and never pay for loading
        ChromaDB."""
        folder, self._read_lock, note = generations.open_for_reading(self.settings.data_dir / self.name)
        held = generations.held_path(self._read_lock, folder)
        catalog = Catalog(held / CATALOG, writable=False)
        try:
            catalog.chunk_count()  # a catalog that is not a database fails here, not half way through a search
        except BaseException:
            catalog.close()
            raise
        self._at = (held, True)
        return PublishedIndex(folder, catalog, (note,) if note else ())

    @property
    def index(self) -> VectorIndex:
        """The vectors, opened on first use."""
        index = self._opened()
        if index is None:
            raise RuntimeError(f"the {self.name} vectors are not open")
        return index

    def _opened(self) -> VectorIndex | None:
        """The vectors, opened now if not yet; None when no folder is set to open them in."""
        if self._index is None and self._at is not None:
            folder, reading = self._at
            self._at = None
            self._index = VectorIndex.open_local(folder / CHROMA, self.name, reading=reading)
            if not reading:  # an index made before EF_SEARCH takes it with the first change written to it
                self._index.widen_search()
        return self._index

    def load(self) -> None:
        self._opened()

    def query(self, vector: np.ndarray, n: int, filters: Filters) -> list[tuple[str, float]]:
        return self.index.query(vector, n, filters)

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        return self.index.vectors(ids)

    def fingerprint(self) -> dict | None:
        """The fingerprint ChromaDB's collection carries (indexes made before the catalog kept it)."""
        index = self._opened()
        return index.fingerprint() if index is not None else None

    def stale(self, folder: Path, catalog: Catalog) -> bool:
        return not generations.still_published(self.settings.data_dir / self.name, self._held_lock())

    def describe(self, folder: Path) -> dict:
        held = generations.held_path(self._held_lock(), folder)
        return {"generation": folder.name, "published": generations.published_at(held),
                "size_bytes": folder_size(held), "disk_bytes": folder_size(self.settings.data_dir / self.name)}

    def _held_lock(self) -> int:
        """The shared lock on the published generation this reader reads."""
        if self._read_lock is None:
            raise RuntimeError(f"the {self.name} index is not open for reading")
        return self._read_lock

    # --- writing ------------------------------------------------------------

    def at(self, folder: Path, reading: bool) -> None:
        """Use the vectors in `folder` from now on (opened on first use)."""
        self.release()
        self._at = (folder, reading)
        if not reading and folder_size(folder) >= KEEP_PREVIOUS_FROM:
            self._added, self._added_count = VectorFile(folder / generations.ADDED), 0

    def connect(self, catalog: Catalog | None, published: set[str] | None, expected: dict | None, fresh: bool) -> None:
        """Nothing to connect to: the vectors are in the generation's folder."""

    def create(self, fingerprint: dict, catalog: Catalog) -> None:
        self.index.create(fingerprint)

    def states(self) -> dict[str, dict]:
        """Nothing about the vectors to keep in the catalog: they are in the same folder."""
        return {}

    def donor_vectors(self, published: Path) -> VectorIndex | None:
        """The published generation's vectors, read while a rebuild takes what it can from them; None if they do not
        answer in a child process first (a damaged index must not crash the rebuild that repairs it)."""
        folder = published / CHROMA

        def probe(_receive) -> bool:
            index = VectorIndex.open_local(folder, self.name, reading=True)
            try:
                return index.answers_queries()
            finally:
                index.close()

        try:
            healthy = run_isolated(probe, lambda: None)
        except Exception as exc:
            log.warning("the %s index being replaced cannot be read (%s): every text is embedded again", self.name, one_line(exc))
            return None
        return VectorIndex.open_local(folder, self.name, reading=True) if healthy else None

    def add(self, chunks: list[ChunkRecord], vectors: np.ndarray) -> None:
        """Ids, vectors and the fields filters need (the catalog has the rest)."""
        ids = [chunk.id for chunk in chunks]
        self.index.add(ids, vectors, [{k: v for k, v in chunk.metadata.items() if k in FILTER_FIELDS} for chunk in chunks])
        self._record_added(ids, vectors)

    def holds_any(self, fields: set[str]) -> bool:
        """Only the fields filters need (a git page's new commit, version and URL are none of them: nothing to open)."""
        return bool(fields & set(FILTER_FIELDS))

    def restamp(self, chunks: list[StoredChunk]) -> None:
        self.index.update_metadata([chunk.id for chunk in chunks],
                                   [{k: v for k, v in chunk.metadata.items() if k in FILTER_FIELDS} for chunk in chunks])

    def remove(self, ids: list[str]) -> None:
        """Delete vectors the catalog no longer has, now."""
        try:
            self.index.delete(ids)
        except Exception as exc:
            if is_disk_full(exc):
                raise
            raise StoreError(f"could not remove old vectors from the {self.name} index: {one_line(exc)}; "
                             "the previous index still serves", hint="rerun the index script") from None

    def undo(self, ids: list[str]) -> None:
        self.index.delete(ids)

    def write_failed(self, exc: Exception) -> NoReturn:
        """Writing vectors failed: the store's state is unknown (ChromaDB can hang if used again), so the run stops."""
        raise StoreError(f"writing vectors to the {self.name} index failed: {one_line(exc)}; this run stops and the previous "
                         "index still serves", hint="rerun the index script") from None

    def vector_count(self, chunks: int) -> int:
        """How many vectors the work generation holds (to compare with the catalog's `chunks`)."""
        return self.index.count()

    def verify(self, catalog: Catalog, chunks: int) -> str | None:
        """Why the work generation cannot be published, or None."""
        if chunks and not self.index.answers_queries():
            return "does not answer queries"
        return None

    def published(self) -> None:
        """Nothing to finish once the generation is published."""

    def _record_added(self, ids: list[str], vectors: np.ndarray) -> None:
        if self._added is None:
            return
        self._added_count += len(ids)
        if self._added_count > CATCH_UP_LIMIT:
            self.forget_added()
        else:
            self._added.put(ids, vectors)

    def forget_added(self) -> None:
        """No record of added vectors for this generation: the next run copies it."""
        if self._added is not None:
            self._added.clear()
            self._added = None

    # --- bringing an older generation up to date ----------------------------

    def catch_up_plan(self, session: generations.WriteSession, catalog: Catalog) -> CatchUp | None:
        """What turns the generation before the published one into the published one, if it is little and the published
        one recorded the vectors its run added."""
        base = session.base
        previous = generations.predecessor(session.root, base.name) if base is not None else None
        if base is None or previous is None:
            return None
        try:
            fingerprint = catalog.source_state(FINGERPRINT_STATE)
            older = Catalog(previous / CATALOG, writable=False)
            try:
                same_vectors = older.source_state(FINGERPRINT_STATE) == fingerprint
            finally:
                older.close()
            keys, removed, added = catalog.difference(previous / CATALOG)
            if fingerprint is None or not same_vectors or len(removed) + len(added) > CATCH_UP_LIMIT:
                return None
            record = VectorFile(base / generations.ADDED, fingerprint["dimension"], writable=False)
            try:
                vectors = record.get(added)
            finally:
                record.close()
        except Exception as exc:  # a damaged older generation: copy the current one
            log.debug("not catching up %s: %s", previous, one_line(exc))
            return None
        return CatchUp(previous, base, keys, removed, vectors) if len(vectors) == len(added) else None

    def catch_up(self, plan: CatchUp, catalog: Catalog) -> None:
        """Apply the published generation's changes to its predecessor, now the work folder: catalog rows, then vectors."""
        catalog.catch_up(plan.published / CATALOG, plan.keys)
        if plan.removed:
            self.index.delete(plan.removed)
        if plan.added:
            ids = sorted(plan.added)
            stored = catalog.stored_chunks(ids)
            self.index.add(ids, np.stack([plan.added[i] for i in ids]),
                           [{k: v for k, v in stored[i].metadata.items() if k in FILTER_FIELDS} for i in ids])

    # --- closing ------------------------------------------------------------

    def release(self) -> None:
        """Close what lives in the current folder (before it is copied, taken or published)."""
        if self._added is not None:
            self._added.close()
            self._added = None
        if self._index is not None:
            self._index.close()
            self._index = None
        self._at = None

    def close(self) -> None:
        self.release()
        if self._read_lock is not None:
            os.close(self._read_lock)
            self._read_lock = None


def folder_size(folder: Path) -> int:
    return size_of(folder) if folder.is_dir() else 0
