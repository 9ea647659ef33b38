"""Applying document changes to one collection: parse, chunk, embed, write.

Every source (personal roots, git, web, local folders) hands the writer whole
documents to put or keys to remove; the writer keeps vectors and catalog in
step. A chunk whose embedded text is already in the collection reuses that
vector, so a renamed file or an edited long note costs only its new chunks.
"""

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np

from . import dates, lexical, parsing, secrets
from .catalog import ChunkRecord, DocumentRecord
from .chunking import Chunk, Chunker
from .embedding import ModelInfo, OnnxEmbedder, SentenceTransformerEmbedder, TokenCounter
from .store import Store, fingerprint, stored_fingerprint

log = logging.getLogger("rag_search")

FLUSH_CHUNKS = 512  # chunks buffered before embedding and writing: bounds memory
CHROMA_BATCH = 1000  # well under ChromaDB's max batch size


class Pipeline:
    """The model-dependent parts of an index run.

    Makes sure the ONNX export sits beside the index (search needs it) and
    embeds with it: same vectors as sentence-transformers, without torch.
    """

    def __init__(self, model: ModelInfo, data_dir: Path):
        from .onnx_export import ensure_export

        self.model = model
        self.chunker = Chunker(TokenCounter(model), model.max_tokens)
        self.fingerprint = fingerprint(model)
        self._embedder = None
        try:
            self._export = ensure_export(data_dir, model)
        except Exception as exc:  # no torch, no disk space, a model the export does not reproduce…
            log.warning("could not make the ONNX export of %s (%s): indexing with sentence-transformers, "
                        "and search will load it too (slower)", model.name, exc)
            self._export = None

    @property
    def embedder(self):
        if self._embedder is None:
            if self._export is not None:
                self._embedder = OnnxEmbedder(self._export)
            else:
                log.info("loading embedding model %s", self.model.path)
                self._embedder = SentenceTransformerEmbedder(self.model)
        return self._embedder


@dataclass
class SourceDocument:
    """One file as a source hands it over."""

    key: str  # stable identity within the collection
    source_id: str
    file: str  # the path users see and cite
    kind: str  # markdown, json, jsonl, text
    text: str
    content_hash: str
    metadata: dict = field(default_factory=dict)  # added to every chunk: root, url, commit…
    fallback_date: tuple[str, float] | None = None  # e.g. the file's mtime
    size: int | None = None
    mtime_ns: int | None = None
    state: dict | None = None  # kept for the source between runs (a page's ETag)


@dataclass
class WriteStats:
    chunks_added: int = 0
    chunks_removed: int = 0
    embedded: int = 0
    reused: int = 0
    redacted: int = 0  # secrets replaced by [REDACTED:<kind>] in the text put


class IndexWriter:
    """Buffered writes to one collection; call flush() (or use as a context manager) to finish."""

    def __init__(self, store: Store, name: str, pipeline: Pipeline, full: bool = False):
        self.store = store
        self.name = name
        self.pipeline = pipeline
        self.stats = WriteStats()
        self.rebuilt = False
        collection = store.collection(name)
        if collection is None or full or stored_fingerprint(collection) != pipeline.fingerprint:
            if collection is not None and not full:
                log.warning("%s index was built with another model or chunking: rebuilding it", name)
            collection = store.reset_collection(name, pipeline.fingerprint)
            self.rebuilt = True
        self.collection = collection
        self._pending: list[tuple[SourceDocument, list[Chunk], dict]] = []
        self._pending_chunks = 0
        self._removals: list[str] = []
        self._indexed_at = dates.now_iso()

    def __enter__(self) -> "IndexWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.flush()

    def known_documents(self, source_id: str | None = None):
        """What is indexed now (after any rebuild), by key: the baseline to compare a source against."""
        return self.store.catalog.documents(self.name, source_id)

    def put(self, document: SourceDocument) -> list[str]:
        """Queue a document for (re)indexing; returns parse warnings. Raises parsing.ParseError.

        Secrets in the text are redacted first; `content_hash` stays that of the raw file.
        """
        text, found = secrets.redact(document.text)
        parsed = parsing.parse(document.kind, text, PurePosixPath(document.file).name)
        chunks = self.pipeline.chunker.chunk(parsed.sections)
        if found:
            log.info("%s: redacted %s", document.file, ", ".join(f"{count} {kind}" for kind, count in sorted(found.items())))
            self.stats.redacted += sum(found.values())
        self._pending.append((document, chunks, parsed.metadata))
        self._pending_chunks += len(chunks)
        if self._pending_chunks >= FLUSH_CHUNKS:
            self.flush()
        return parsed.warnings

    def remove(self, key: str) -> None:
        self._removals.append(key)

    def touch(self, stats: list[tuple[str, int, int]]) -> None:
        """Files whose size or mtime changed but whose content did not."""
        self.store.catalog.touch_documents(self.name, stats)

    def flush(self) -> None:
        if self._pending:
            self._write_pending()
        if self._removals:
            catalog = self.store.catalog
            ids = [chunk_id for key in self._removals for chunk_id in catalog.chunk_ids(self.name, key)]
            _delete_vectors(self.collection, ids)
            catalog.delete_documents(self.name, self._removals)
            self.stats.chunks_removed += len(ids)
            self._removals = []

    def _write_pending(self) -> None:
        catalog = self.store.catalog
        rows, items, stale = [], [], []
        for document, chunks, file_metadata in self._pending:
            old_ids = set(catalog.chunk_ids(self.name, document.key))
            chunk_records = []
            for ord_, chunk in enumerate(chunks):
                chunk_id = f"{_short_hash(self.name + chr(0) + document.key)}:{ord_}"
                text = chunk.embed_text
                text_hash = _text_hash(text)
                metadata = self._chunk_metadata(document, file_metadata, chunk, ord_)
                rows.append((chunk_id, text, text_hash, chunk.text, metadata))
                terms = " ".join(lexical.terms(text))
                chunk_records.append(ChunkRecord(chunk_id, ord_, text_hash, terms, document.source_id, metadata.get("date_ts")))
            new_ids = {record.id for record in chunk_records}
            stale.extend(old_ids - new_ids)
            record = DocumentRecord(
                key=document.key,
                source_id=document.source_id,
                file=document.file,
                size=document.size,
                mtime_ns=document.mtime_ns,
                content_hash=document.content_hash,
                chunk_count=len(chunks),
                indexed_at=self._indexed_at,
                state=document.state,
            )
            items.append((record, chunk_records))

        vectors = self._vectors_for([row[1] for row in rows], [row[2] for row in rows])
        for start in range(0, len(rows), CHROMA_BATCH):
            batch = rows[start : start + CHROMA_BATCH]
            self.collection.upsert(
                ids=[row[0] for row in batch],
                embeddings=vectors[start : start + CHROMA_BATCH],
                documents=[row[3] for row in batch],
                metadatas=[row[4] for row in batch],
            )
        _delete_vectors(self.collection, stale)
        catalog.replace_documents(self.name, items)
        self.stats.chunks_added += len(rows)
        self.stats.chunks_removed += len(stale)
        self._pending = []
        self._pending_chunks = 0

    def _vectors_for(self, texts: list[str], hashes: list[str]) -> np.ndarray:
        """Reuse stored vectors for text already in the collection; embed the rest."""
        vectors = np.zeros((len(texts), self.pipeline.model.dimension), dtype=np.float32)
        known = self.store.catalog.ids_for_text_hashes(self.name, sorted(set(hashes)))
        if known:
            found = self.collection.get(ids=sorted(set(known.values())), include=["embeddings"])
            by_id = dict(zip(found["ids"], found["embeddings"], strict=True))
            by_hash = {h: by_id[i] for h, i in known.items() if i in by_id}
        else:
            by_hash = {}
        missing = []
        for i, text_hash in enumerate(hashes):
            if text_hash in by_hash:
                vectors[i] = by_hash[text_hash]
            else:
                missing.append(i)
        if missing:
            vectors[missing] = self.pipeline.embedder.embed([texts[i] for i in missing])
        self.stats.embedded += len(missing)
        self.stats.reused += len(texts) - len(missing)
        return vectors

    def _chunk_metadata(self, document: SourceDocument, file_metadata: dict, chunk: Chunk, ord_: int) -> dict:
        metadata = {
            "source": self.name,
            "source_id": document.source_id,
            "file": document.file,
            "kind": document.kind,
            "heading": chunk.heading,
            "chunk_index": ord_,
            "content_hash": document.content_hash,
            "indexed_at": self._indexed_at,
            **document.metadata,
            **file_metadata,
            **chunk.metadata,
        }
        if "date" not in metadata and document.fallback_date:
            metadata["date"], metadata["date_ts"] = document.fallback_date
        # ChromaDB takes str, int, float, bool and non-empty lists of those; nothing else.
        return {k: v for k, v in metadata.items() if v is not None and v != [] and v != ""}


def remove_source(store: Store, collection_name: str, source_id: str) -> int:
    """Delete every chunk and the saved state of one source; returns the number of chunks removed.

    Needs no model: removing a source must work even where nothing can be embedded.
    """
    catalog = store.catalog
    keys = list(catalog.documents(collection_name, source_id))
    ids = [chunk_id for key in keys for chunk_id in catalog.chunk_ids(collection_name, key)]
    collection = store.collection(collection_name)
    if collection is not None:
        _delete_vectors(collection, ids)
    catalog.delete_documents(collection_name, keys)
    catalog.set_source_state(collection_name, source_id, None)
    return len(ids)


def _delete_vectors(collection, ids: list[str]) -> None:
    for start in range(0, len(ids), CHROMA_BATCH):
        collection.delete(ids=ids[start : start + CHROMA_BATCH])


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=10).hexdigest()
