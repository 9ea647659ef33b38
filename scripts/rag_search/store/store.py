"""The index of one collection: vectors, catalog (chunk text and metadata), keyword index and source state, as one thing.

The store is the only door to the index: sources, the indexer, retrieval and
the scripts call its methods with our own types (records.py) and never see a
chromadb collection or the catalog's tables.

The catalog always lives in local generations (generations.py); the vectors
live either beside it (local_vectors.py) or on a Chroma server
(server_vectors.py). Those two backends hold every difference between the
modes, behind the contract this module states (VectorBackend: a Protocol the
backends keep by their shape, with frozen dataclasses for what crosses it, in
records.py); vector_backend() is the one place that picks one, and where the
type checker holds both to the contract. What only one backend can do is a
contract of its own that the writer checks for: only vectors kept in
generations can bring the generation before the published one up to date
instead of copying the index (CatchesUp).

This module reads a published index; writing the next generation is
store_writer.py's (StoreWriter.open).
"""

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn, Protocol, runtime_checkable

import numpy as np

from ..core.config import Settings
from ..core.datadir import COLLECTIONS
from ..core.errors import FingerprintMismatch, IndexNotBuilt, RagSearchError, StoreError, one_line
from ..model.embedding import ModelInfo
from ..text.chunking import chunking_settings
from . import generations, lexical
from .catalog import POOL, SCHEMA_VERSION, Catalog, PublishedIndex, capped
from .generations import INDEX_COMMANDS, WriteSession
from .local_vectors import CATALOG, FINGERPRINT_STATE, LocalVectors
from .records import INDEXING, CatchUp, ChunkRecord, DocumentRecord, Filters, Hit, IndexedFiles, StoredChunk
from .reuse import same_vectors
from .server_vectors import ServerVectors
from .vectors import VectorIndex, remove_orphaned_ram_copies

log = logging.getLogger("rag_search")

__all__ = ["COLLECTIONS", "Store", "fingerprint", "open_published", "nothing_built"]


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


class VectorBackend(Protocol):
    """One collection's vectors, for the store that reads them and the writer of its next generation."""

    fresh_at_search_time: bool  # whether a search may bring changed personal files in first

    # --- reading ------------------------------------------------------------

    def open_published(self, expected: dict | None = None) -> PublishedIndex:
        """The published index, held until close() (on a server: the collection for the fingerprint `expected`)."""
        ...

    def load(self) -> None:
        """Open the vectors now rather than at the first query."""
        ...

    def query(self, vector: np.ndarray, n: int, filters: Filters) -> list[tuple[str, float]]:
        """The `n` nearest chunks that pass `filters`: (id, cosine similarity), nearest first."""
        ...

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks (a chunk without one is left out)."""
        ...

    def fingerprint(self) -> dict | None:
        """The fingerprint the vectors were made with, where they keep one (indexes older than the catalog's)."""
        ...

    def stale(self, folder: Path, catalog: Catalog) -> bool:
        """Whether an index run has published since this index was opened."""
        ...

    def describe(self, folder: Path) -> dict:
        """Where the vectors are and what they take on disk, for status."""
        ...

    def close(self) -> None: ...

    # --- writing the next generation ----------------------------------------

    def at(self, folder: Path, reading: bool) -> None:
        """The catalog moved to `folder` (a work folder, or the published generation while nothing is written)."""
        ...

    def connect(self, catalog: Catalog | None, published: set[str] | None, expected: dict | None, fresh: bool) -> None:
        """Before writing: what the published `catalog` (None: nothing published) with chunk ids `published` (None: they
        cannot be read) needs the vectors to be; `fresh`: a rebuild."""
        ...

    def create(self, fingerprint: dict, catalog: Catalog) -> None:
        """A first index or a rebuild: vectors for the fingerprint, empty (or shared, on a server)."""
        ...

    def states(self) -> dict[str, dict]:
        """What the writer's catalog keeps about the vectors, by state key."""
        ...

    def donor_vectors(self, published: Path) -> VectorIndex | None:
        """The vectors of the published generation `published`, which a rebuild takes what it can from (None: they do not
        answer)."""
        ...

    def add(self, chunks: list[ChunkRecord], vectors: np.ndarray) -> None: ...

    def holds_any(self, fields: set[str]) -> bool:
        """Whether the vectors keep a copy of any of these metadata fields (then restamp() must follow a change)."""
        ...

    def restamp(self, chunks: list[StoredChunk]) -> None:
        """Stored chunks with new metadata (their text and vectors did not change)."""
        ...

    def remove(self, ids: list[str]) -> None:
        """Vectors the catalog no longer has (a server waits until the run has published)."""
        ...

    def undo(self, ids: list[str]) -> None:
        """Delete vectors just added, now: the catalog write they belong to failed."""
        ...

    def write_failed(self, exc: Exception) -> NoReturn:
        """Raise the error for a failed write of vectors."""
        ...

    def vector_count(self, chunks: int) -> int:
        """How many vectors the work generation holds, to compare with the catalog's `chunks`."""
        ...

    def verify(self, catalog: Catalog, chunks: int) -> str | None:
        """Why the work generation cannot be published, or None."""
        ...

    def published(self) -> None:
        """The work generation was published: what waited for that happens now."""
        ...

    def release(self) -> None:
        """Close what lives in the catalog's folder, before it is copied, taken or published."""
        ...


@runtime_checkable
class CatchesUp(Protocol):
    """Vectors kept in generations (local_vectors.py), which a run can bring from the generation before the published
    one to the published one when little changed, instead of copying the index."""

    def catch_up_plan(self, session: WriteSession, catalog: Catalog) -> CatchUp | None:
        """What to apply to the generation before the published one (None: copy the published one)."""
        ...

    def catch_up(self, plan: CatchUp, catalog: Catalog) -> None:
        """Apply `plan` to the older generation, now the work folder holding `catalog`."""
        ...


def vector_backend(settings: Settings, name: str) -> VectorBackend:
    """Where the collection's vectors live: beside the catalog, or on the Chroma server of --chroma-url."""
    return LocalVectors(settings, name) if settings.server is None else ServerVectors(settings, settings.server, name)


def rebuild_hint(name: str) -> str:
    return f"rebuild it from scratch: {INDEX_COMMANDS[name]} --full"


class Store:
    """One collection's index in one generation, its vectors local or on a server."""

    def __init__(self, name: str, folder: Path, settings: Settings, vectors: VectorBackend):
        self.name = name
        self.folder = folder
        self.settings = settings
        self.notes: list[str] = []  # for the caller to log: e.g. CURRENT was unreadable
        self.reindex: str | None = None  # why to rebuild an index that still answers (retrieval.open_store)
        self._vectors = vectors
        self._catalog: Catalog | None = None

    # --- opening and closing ------------------------------------------------

    @classmethod
    def open_for_reading(cls, settings: Settings, name: str, expected: dict | None = None) -> "Store":
        """The published index of `name`, held until close() (on a server: the collection for `expected`)."""
        store = cls(name, settings.data_dir / name, settings, vector_backend(settings, name))

        def open_parts() -> None:
            opened = store._vectors.open_published(expected)
            store.folder, store._catalog, store.notes = opened.folder, opened.catalog, list(opened.notes)

        return store._attach(open_parts)

    def _attach(self, open_parts: Callable[[], None]) -> "Store":
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
        """Release everything."""
        for handle in (self._catalog, self._vectors):
            if handle is not None:
                handle.close()
        self._catalog = None

    @staticmethod
    def indexed_files(settings: Settings, name: str, source_id: str | None) -> IndexedFiles | None:
        """The documents of `source_id` (None: every source) in the published index of `name`, and the source's state;
        None if it was never built. Reads only the catalog (milliseconds), under the readers' shared lock, whatever its
        schema."""
        root = settings.data_dir / name
        if not root.is_dir() or generations.published(root)[0] is None:
            return None  # never built (or the data dir is unusable, which the caller's own use reports)
        folder, lock, _ = generations.open_for_reading(root)
        try:
            held = generations.held_path(lock, folder)
            catalog = Catalog(held / CATALOG, writable=False, any_schema=True)
            try:
                documents = catalog.documents(source_id)
                state = catalog.source_state(source_id) if source_id is not None else None
            finally:
                catalog.close()
            published = generations.published_at(held)
        except RagSearchError:
            raise
        except Exception as exc:
            raise StoreError(f"the {name} index in {folder} cannot be read: {one_line(exc)}", hint=rebuild_hint(name)) from None
        finally:
            os.close(lock)
        return IndexedFiles(documents, state, published)

    @staticmethod
    def fresh_at_search_time(settings: Settings) -> bool:
        """Whether a search brings changed personal files in first (not when the vectors are on a server)."""
        return vector_backend(settings, "personal").fresh_at_search_time

    @staticmethod
    def is_built(settings: Settings, name: str) -> bool:
        """Whether `name` has a published index (in server mode: this machine's catalog of it)."""
        return generations.published(settings.data_dir / name)[0] is not None

    @staticmethod
    def remove_orphaned_copies() -> None:
        """Remove the copies of an index in memory (a reader's on a full disk) that killed processes of ours left."""
        remove_orphaned_ram_copies()

    @property
    def _live_catalog(self) -> Catalog:
        """The catalog this store has open (a closed store has none)."""
        if self._catalog is None:
            raise RuntimeError(f"the {self.name} index is closed")
        return self._catalog

    # --- what is indexed ----------------------------------------------------

    def built_as(self) -> dict | None:
        """The fingerprint the index was built with (None if unknown)."""
        with self._reading():
            return self._live_catalog.source_state(FINGERPRINT_STATE) or self._vectors.fingerprint()

    def load_vectors(self) -> None:
        """Open the vectors now rather than at the first query: a search's child process loads them while its parent
        embeds the query."""
        with self._reading():
            self._vectors.load()

    def check_built_as(self, expected: dict) -> str | None:
        """None if the index was built as `expected` says; a note saying to reindex if only the chunking differs (its
        vectors still answer this install's queries); FingerprintMismatch if the vectors do not."""
        stored = self.built_as()
        if stored == expected:
            return None
        described = f"the {self.name} index was built with {describe(stored)}, but this install uses {describe(expected)}"
        if same_vectors(stored, expected):
            return f"{described}; it answers until rebuilt (reindex: {INDEX_COMMANDS[self.name]})"
        raise FingerprintMismatch(described, hint=f"reindex: {INDEX_COMMANDS[self.name]} --full")

    def documents(self, source_id: str | None = None, key_prefix: str | None = None, min_chunks: int = 0) -> dict[str, DocumentRecord]:
        return self._live_catalog.documents(source_id, key_prefix, min_chunks)

    def source_ids(self) -> set[str]:
        return self._live_catalog.source_ids()

    def source_state(self, source_id: str) -> dict | None:
        return self._live_catalog.source_state(source_id)

    @functools.cached_property
    def in_parts(self) -> dict[str, str]:
        """{source id: how far it got} for the sources whose index run is published in parts and not done yet (a run
        that goes on, or was killed: the next one goes on). Read once: a published generation does not change."""
        return {source_id: f"{state[INDEXING]['documents']} of {state[INDEXING]['of']} documents indexed so far"
                for source_id, state in self._live_catalog.source_states().items() if INDEXING in state}

    def chunk_count(self, source_id: str | None = None) -> int:
        with self._reading():
            return self._live_catalog.chunk_count(source_id)

    def document_count(self, source_id: str | None = None) -> int:
        with self._reading():
            return self._live_catalog.document_count(source_id)

    def find_documents(self, reference: str) -> list[DocumentRecord]:
        """The documents a reference names: the file a result shows, a path on disk, a page URL, or a document key."""
        with self._reading():
            return self._live_catalog.find_documents(reference)

    def document_of_chunk(self, chunk_id: str) -> DocumentRecord | None:
        """The document holding the chunk `chunk_id`, or None if this index has no such chunk."""
        with self._reading():
            key = self._live_catalog.document_of_chunk(chunk_id)
            return self._live_catalog.documents(key_prefix=key).get(key) if key else None

    def document_chunks(self, key: str, first: int = 0, last: int = -1) -> list[StoredChunk]:
        """One document's chunks, in the document's order (only its `first` to `last` when `last` is not -1)."""
        with self._reading():
            return self._live_catalog.document_chunks(key, first, last)

    def is_stale(self) -> bool:
        """Whether the published index is no longer the one this store reads: an index run published since it was
        opened, or the collection was deleted, built again or restored from a copy."""
        with self._reading():
            return self._vectors.stale(self.folder, self._live_catalog)

    def generation(self) -> dict:
        """What this store reads: the generation's name, when it was published and its size on disk (locally); and
        what the collection takes on disk, with the generation kept for the next small change."""
        return self._vectors.describe(self.folder)

    def keyword_ids(self) -> set[str]:
        """Ids of the chunks in the keyword index (to check it agrees with the vectors)."""
        return self._live_catalog.keyword_index_ids()

    def all_chunks(self) -> list[StoredChunk]:
        with self._reading():
            return self._live_catalog.all_chunks()

    # --- searching ----------------------------------------------------------

    def dense(self, vector: np.ndarray, depth: int, filters: Filters, per_document: int = 0) -> list[Hit]:
        """The `depth` nearest chunks by cosine similarity, nearest first, at most `per_document` of one document
        (0: no limit)."""
        with self._reading():
            found = self._vectors.query(vector, depth * POOL if per_document else depth, filters)
            if per_document:
                documents = self._live_catalog.document_keys([chunk_id for chunk_id, _ in found])
                found = capped([(chunk_id, cosine, documents.get(chunk_id, "")) for chunk_id, cosine in found],
                               per_document)[:depth]
            stored = self._live_catalog.stored_chunks([chunk_id for chunk_id, _ in found])
        return [Hit(chunk_id, self.name, _clip(cosine), chunk.text, chunk.metadata, document=chunk.document)
                for chunk_id, cosine in found if (chunk := stored.get(chunk_id)) is not None]

    def matching(self, filters: Filters, limit: int = 10_000) -> list[StoredChunk]:
        """Up to `limit` chunks that pass `filters`, oldest written first: records listed by their fields, without a query."""
        with self._reading():
            return self._live_catalog.matching(filters, limit)

    def keyword(self, match: str, depth: int, filters: Filters, per_document: int = 0) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) of the best keyword matches, best first, at most `per_document` of one document."""
        with self._reading():
            return self._live_catalog.keyword_search(match, depth, filters, per_document)

    def sole_holder(self, term: str, filters: Filters) -> str | None:
        """The chunk that best matches the index term `term` when one document alone holds it (among the chunks that pass
        `filters`); None when none or several do."""
        match = lexical.phrase(term)
        with self._reading():
            if len(self._live_catalog.documents_matching(match, filters, 2)) != 1:
                return None
            return self._live_catalog.keyword_search(match, 1, filters)[0][0]

    def common_terms(self, terms: list[str], budget: int) -> frozenset[str]:
        """The most common of `terms`, as few as leave the others in at most `budget` of the collection's chunks."""
        with self._reading():
            return self._live_catalog.common_terms(terms, budget)

    def fill_text(self, hits: list[Hit]) -> list[Hit]:
        """Text and metadata for hits found by keyword only; hits the catalog lacks are dropped."""
        with self._reading():
            stored = self._live_catalog.stored_chunks([hit.id for hit in hits])
        for hit in hits:
            if hit.id in stored:
                hit.text, hit.metadata, hit.document = stored[hit.id].text, stored[hit.id].metadata, stored[hit.id].document
        return [hit for hit in hits if hit.id in stored]

    def page_closeness(self, keys: list[str], vector: np.ndarray) -> dict[str, float]:
        """{document key: the cosine of its page vector and `vector`}: how close each page is as a whole (a document
        of an index built before page vectors has none)."""
        with self._reading():
            return {key: float(np.dot(page, vector)) for key, page in self._live_catalog.page_vectors(keys).items()}

    def fill_scores(self, hits: list[Hit], vector: np.ndarray) -> list[Hit]:
        """The cosine score of hits found by keyword only; hits without a stored vector are dropped."""
        with self._reading():
            vectors = self._vectors.vectors([hit.id for hit in hits])
        for hit in hits:
            if hit.id in vectors:
                hit.score = _clip(float(np.dot(vectors[hit.id], vector)))
        return [hit for hit in hits if hit.id in vectors]

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except RagSearchError:
            raise
        except Exception as exc:
            raise StoreError(f"the {self.name} index cannot be read: {one_line(exc)}", hint=rebuild_hint(self.name)) from None

def nothing_built() -> IndexNotBuilt:
    return IndexNotBuilt("no index has been built yet", hint=f"run {INDEX_COMMANDS['personal']} and/or {INDEX_COMMANDS['docs']}")


def open_published(settings: Settings, expected: dict | None = None) -> dict[str, Store]:
    """Every collection that has a published index, open for reading (no model needed); the caller closes them."""
    stores: dict[str, Store] = {}
    try:
        for name in COLLECTIONS:
            try:
                stores[name] = Store.open_for_reading(settings, name, expected)
            except IndexNotBuilt:
                continue
    except BaseException:
        for store in stores.values():
            store.close()
        raise
    return stores


def describe(value: dict | None) -> str:
    if not value:
        return "an unknown model and chunking"
    graph = value.get("embedding") or "float"  # indexes made before the int8 graph existed used the float one
    return (f"model {value.get('model')} ({value.get('model_id')}, {graph} graph, {value.get('dimension')} dims), "
            f"chunking {value.get('chunking')}, schema {value.get('schema')}")


def _clip(similarity: float) -> float:
    return float(min(1.0, max(0.0, similarity)))


def join_chunks(chunks: list[StoredChunk], first_heading: bool = True) -> str:
    """The chunks in order, each heading once (the first one's too unless not `first_heading`: a passage the chunk's
    heading already names), without the overlap of a section that was cut in several chunks."""
    parts: list[str] = []
    heading = chunks[0].metadata.get("heading") if chunks and not first_heading else None
    previous = ""
    for chunk in chunks:
        text = chunk.text
        if chunk.metadata.get("heading") != heading:
            heading = chunk.metadata.get("heading")
            if heading:
                parts.append(f"## {heading}")
        else:
            text = text[_overlap(previous, text):].lstrip()
        parts.append(text)
        previous = chunk.text
    return "\n\n".join(part for part in parts if part)


def _overlap(before: str, after: str) -> int:
    """Length of the longest end of `before` that `after` starts with (chunks of one section overlap a little)."""
    for size in range(min(len(before), len(after)), 0, -1):
        if before.endswith(after[:size]):
            return size
    return 0
