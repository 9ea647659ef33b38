"""From documents to stored chunks: redact, parse, chunk, embed, and write in bounded batches.

Sources hand the writer whole documents (SourceDocument) to put, and keys to
keep or remove; the store applies each batch as one operation. A chunk whose
embedded text is already in the collection reuses that vector, so a renamed
file or an edited long note costs only its new chunks. A document with no text
to index (a memory file with no entries left) is put with no chunks: the chunks
of its earlier version go in the same write, and its catalog row stays, so an
unchanged empty file is not read again.

Redaction happens here and nowhere else: the text, the catalog's file and every
field of every chunk's metadata pass through it, so no field a source fills can
carry a secret past it. Documentation keeps a value two of its documents show (a
documented default): the writer counts them per source (secrets.SourceCensus), and
redacts a document again when a later one shows a value it redacted as shown once.
"""

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

import numpy as np

from ..core import dates
from ..core.config import Settings
from ..core.errors import ModelNotFound
from ..model.embedding import ModelInfo, OnnxEmbedder, SentenceTransformerEmbedder, TokenCounter
from ..safety import secrets
from ..safety.injection import looks_like_instructions
from ..store import lexical
from ..store.records import INDEXING, ChunkRecord, DocumentRecord, Filters, settled
from ..store.store import fingerprint
from ..store.store_writer import StoreWriter
from ..text import parsing
from ..text.chunking import Chunk, Chunker
from ..text.page_kind import page_kind
from ..text.sections import ParsedFile, ParseError

log = logging.getLogger("rag_search")

FLUSH_CHUNKS = 512  # chunks buffered before embedding and writing: bounds memory
CHECKPOINT_SECONDS = 60.0  # a doc source's run publishes what it has after its first write and then this often
FIRST_PART_CHUNKS = 128  # the first write of a run published in parts: a new source searchable after a few seconds
DOCS = "docs"  # the collection whose pages have a kind (page_kind.py: guide, reference, changelog, blog); personal files none
HELD_BYTES = 64 * 1024 * 1024  # documentation text kept to redact again (a value it redacted shown later): bounds memory


class Pipeline:
    """The model-dependent parts of an index run.

    Makes sure a checked ONNX export sits beside the index (search needs it) and
    embeds with its settings.embedding graph, without torch. Only the float graph
    falls back to sentence-transformers (the same vectors) when there is no export.
    """

    def __init__(self, model: ModelInfo, settings: Settings):
        from ..model.onnx_export import ensure_export

        self.model = model
        self.chunker = Chunker(TokenCounter(model), model.max_tokens)
        self.max_records = settings.max_records_per_file
        self.max_chunks = settings.max_chunks_per_document
        self.embedding = settings.embedding
        self.fingerprint = fingerprint(model, settings.embedding)
        self._embedder = None
        self._loading: Future | None = None  # expect_embedding()'s load
        try:
            self._export: Path | None = ensure_export(settings.data_dir, model)
        except Exception as exc:  # no torch, no disk space, a model the export does not reproduce…
            if settings.embedding != "float":
                raise ModelNotFound(f"could not make the ONNX export of {model.name} ({exc})",
                                    hint="RAG_SEARCH_EMBEDDING=float indexes without it (with sentence-transformers)") from exc
            log.warning("could not make the ONNX export of %s (%s): indexing with sentence-transformers, "
                        "and search will load it too (slower)", model.name, exc)
            self._export = None

    def expect_embedding(self) -> None:
        """This run is about to embed: load the model now, in a thread, once. ONNX Runtime builds its session outside
        Python's lock (0.07 s), so the work before the first write goes on meanwhile. A failure is raised where the
        model is first used, as without this."""
        if self._embedder is None and self._loading is None:
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="load the model")
            self._loading = pool.submit(self._load)
            pool.shutdown(wait=False)

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = self._loading.result() if self._loading is not None else self._load()
        return self._embedder

    def _load(self):
        if self._export is not None:
            return OnnxEmbedder(self._export, self.embedding)
        log.info("loading embedding model %s", self.model.path)
        return SentenceTransformerEmbedder(self.model)


@dataclass
class SourceDocument:
    """One document as a source hands it over."""

    key: str  # stable identity within the collection
    source_id: str
    file: str  # the path users see and cite
    kind: str  # markdown, json, jsonl, text
    text: str
    content_hash: str
    identity: str | None = None  # the cheap identity the source listed it with
    metadata: dict = field(default_factory=dict)  # added to every chunk: root, url, commit…
    fallback_date: tuple[str, float] | None = None  # e.g. the file's mtime
    state: dict | None = None  # kept for the source between runs (a page's ETag)
    documentation: bool = False  # published documentation (git, web): credential-shaped values it calls examples are kept
    warnings: list[str] = field(default_factory=list)  # the loader's, for the run's log (an include stub not found)
    section_metadata: Callable[[str], dict] | None = None  # metadata of the chunks under a heading (a web section's URL)
    depends: list[str] = field(default_factory=list)  # files its text includes (paths the listing's `dependency` knows)
    keep_indexed: Callable[[str], None] | None = None  # given the text as indexed, secrets redacted (a page's copy for get.py)


@dataclass
class Queued:
    """What put() made of a document."""

    warnings: list[str]  # the loader's and the parser's, for the run's log
    chunks: int  # 0: an empty document (no text to index), whose earlier chunks go


@dataclass
class WriteStats:
    chunks_added: int = 0
    chunks_removed: int = 0
    embedded: int = 0
    reused: int = 0
    redacted: int = 0  # secrets replaced by [REDACTED:<kind>] in the text put


class IndexWriter:
    """Buffered writes to one collection; call flush() when done."""

    def __init__(self, store: StoreWriter, pipeline: Pipeline):
        self.store = store
        self.pipeline = pipeline
        self.stats = WriteStats()
        self.rebuilt = store.rebuilt
        self._pending: list[tuple[SourceDocument, list[Chunk], dict]] = []
        self._pending_chunks = 0
        self._touched: list[tuple[str, str | None, dict | None, dict | None]] = []
        self._removals: list[str] = []
        self._indexed_at = dates.now_iso()
        self._census = secrets.SourceCensus(self._shown_before)
        self._held: dict[str, SourceDocument] = {}  # documentation that redacted a value shown once, by key
        self._held_bytes = 0
        self._redactions: dict[str, int] = {}  # by key: what a document counted, replaced when it is redacted again
        self._in_parts: dict | None = None  # a run published as it goes: source, documents to load and written, state
        self._checkpointed: float | None = None  # when it last published

    def put(self, document: SourceDocument) -> Queued:
        """Queue a document for (re)indexing. Raises ParseError (a file that does not parse, or over a cap).

        Secrets in the text, the file and the source's metadata are redacted first; `content_hash` stays that of the
        raw text.
        """
        queued = self._queue(document)
        first_part = self._in_parts is not None and self._checkpointed is None
        if self._pending_chunks >= (FIRST_PART_CHUNKS if first_part else FLUSH_CHUNKS):
            self.flush()
        return queued

    def _queue(self, document: SourceDocument) -> Queued:
        documented = self._census.documented(document.key) if document.documentation else None
        text, found = secrets.redact_document(document.kind, document.text, document.documentation, documented)
        if document.keep_indexed is not None:
            document.keep_indexed(text)
        file, found_in_file = secrets.redact_field(document.file)
        metadata, found_in_metadata = secrets.redact_metadata(document.metadata)
        found = Counter(found) + Counter(dict(found_in_file)) + Counter(found_in_metadata)
        parsed = parsing.parse(document.kind, text, PurePosixPath(file).name)
        chunks = self._chunks(parsed)
        if self.store.name == DOCS:
            parsed.metadata["page_kind"] = page_kind(file.removeprefix(f"{document.source_id}/"), parsed, text)
        if found:
            log.info("%s: redacted %s", file, ", ".join(f"{count} {kind}" for kind, count in sorted(found.items())))
        self.stats.redacted += sum(found.values()) - self._redactions.get(document.key, 0)
        self._redactions[document.key] = sum(found.values())
        self._hold(document)
        self._pending.append((replace(document, file=file, metadata=metadata), chunks, parsed.metadata))
        self._pending_chunks += len(chunks)
        return Queued([*document.warnings, *parsed.warnings], len(chunks))

    def _hold(self, document: SourceDocument) -> None:
        """Keep documentation that redacted a value shown once, in case a later document shows it too."""
        previous = self._held.pop(document.key, None)
        self._held_bytes -= len(previous.text) if previous else 0
        if self._census.lonely(document.key):
            if self._held_bytes + len(document.text) <= HELD_BYTES:  # beyond: it stays redacted (the safe side)
                self._held[document.key] = document
                self._held_bytes += len(document.text)

    def _redact_flipped(self) -> None:
        """Redact again the documents that redacted a value another document has shown since (a documented default)."""
        for key in self._census.flipped():
            document = self._held.get(key)
            if document is None:
                continue
            kept = [entry for entry in self._pending if entry[0].key != key]
            self._pending_chunks -= sum(len(entry[1]) for entry in self._pending if entry[0].key == key)
            self._pending = kept
            self._queue(document)

    def _shown_before(self, value: str, key: str) -> bool:
        """Whether another document of the source already shows `value` in the index (an earlier run kept it)."""
        terms = list(dict.fromkeys(lexical.terms(value)))
        if not terms:
            return False
        match = " AND ".join(lexical.phrase(term) for term in terms)
        source_id = key.split(":", 1)[0]
        for chunk_id, _ in self.store.keyword(match, 20, Filters(sources=(source_id,))):
            record = self.store.document_of_chunk(chunk_id)
            if record is not None and record.key != key:
                return True
        return False

    def _chunks(self, parsed: ParsedFile) -> list[Chunk]:
        """The document's chunks (none for a document with no text), within the caps that bound a run's time (ParseError
        beyond them); max_file_bytes bounds memory."""
        pipeline = self.pipeline
        if len(parsed.sections) > pipeline.max_records:
            raise ParseError(f"{len(parsed.sections)} records, more than the {pipeline.max_records} a file may have "
                                     "(max_records_per_file)")
        chunks = pipeline.chunker.chunk(parsed.sections)
        if len(chunks) > pipeline.max_chunks:
            raise ParseError(f"{len(chunks)} chunks, more than the {pipeline.max_chunks} a document may have "
                                     "(max_chunks_per_document)")
        return chunks

    def publish_in_parts(self, source_id: str, state: dict | None, new: bool) -> None:
        """Publish this run of `source_id` in parts, the source's `state` saying how far it got (`expect`): every
        CHECKPOINT_SECONDS, and for a `new` source after its first write too (FIRST_PART_CHUNKS). A new source answers
        searches within seconds, a large update shows its new pages minute by minute, and a killed run keeps what it
        published. A run shorter than a minute publishes only at its end, as any run does."""
        self._in_parts = {"source": source_id, "of": 0, "documents": 0, "state": settled(state)}
        self._checkpointed = None if new else time.monotonic()

    def expect_writes(self) -> None:
        """This run is about to write (a git source moved): load the vectors' library and the model now, each in a
        thread of its own, beside git's checkout and the parsing."""
        self.store.expect_writes()
        self.pipeline.expect_embedding()

    def expect(self, documents: int) -> None:
        """The documents this run loads: what a part published in parts says it got through."""
        if self._in_parts is not None:
            self._in_parts["of"] = documents

    def keep(self, key: str, identity: str | None, state: dict | None, metadata: dict | None = None) -> None:
        """A document whose content did not change, with its new identity and state, and the `metadata` its chunks take
        from a moved context (redacted as every field is; a None value removes the field)."""
        self._touched.append((key, identity, state, secrets.redact_metadata(metadata)[0] if metadata else None))

    def remove(self, key: str) -> None:
        self._removals.append(key)

    def flush(self) -> None:
        """Write what is queued: new documents first (their chunks may reuse vectors of removed ones), then removals."""
        self._redact_flipped()
        pending, self._pending, self._pending_chunks = self._pending, [], 0
        if pending:
            added, removed = self.store.write([self._records(*entry) for entry in pending], self._embed)
            self.stats.chunks_added += added
            self.stats.chunks_removed += removed
            self._checkpoint(len(pending))
        touched, self._touched = self._touched, []
        self.store.touch(touched)
        removals, self._removals = self._removals, []
        if removals:
            self.stats.chunks_removed += self.store.remove(removals)

    def _checkpoint(self, written: int) -> None:
        """Publish the documents written so far, if the run is published in parts and its time has come."""
        if self._in_parts is None:
            return
        self._in_parts["documents"] += written
        if self._in_parts["documents"] >= self._in_parts["of"]:
            return  # all of it is written: the run's own commit publishes it
        if self._checkpointed is not None and time.monotonic() - self._checkpointed < CHECKPOINT_SECONDS:
            return
        progress = {key: self._in_parts[key] for key in ("documents", "of")}
        self.store.set_source_state(self._in_parts["source"], {**self._in_parts["state"], INDEXING: progress})
        if self.store.checkpoint():
            self._checkpointed = time.monotonic()
            log.info("%s: %d of %d documents published; indexing goes on", self._in_parts["source"], *progress.values())

    def _records(self, document: SourceDocument, chunks: list[Chunk], file_metadata: dict) -> tuple[DocumentRecord, list[ChunkRecord]]:
        records = []
        for ord_, chunk in enumerate(chunks):
            text_hash = chunk.text_hash
            metadata = self._chunk_metadata(document, file_metadata, chunk, ord_)
            own = {key: value for key, value in metadata.items() if key not in document.metadata}
            records.append(ChunkRecord(chunk_id(document.key, ord_, text_hash, own), ord_, chunk.text, chunk.embed_text,
                                       text_hash, metadata))
        record = DocumentRecord(document.key, document.source_id, document.file, document.identity, document.content_hash,
                                len(records), self._indexed_at, document.state)
        return record, records

    def _embed(self, chunks: list[ChunkRecord]) -> np.ndarray:
        """Vectors for chunks new to the index: reused where equal text is stored, embedded otherwise.

        The texts nothing holds are embedded first: the model runs outside Python's lock, so the vectors' library
        goes on loading meanwhile (store.expect_writes), and reading the reused vectors waits for it less."""
        texts = {chunk.text_hash: chunk.embed_text for chunk in chunks}  # each text once
        held = self.store.holds(sorted(texts))
        new = {text_hash: text for text_hash, text in texts.items() if text_hash not in held}
        known = self._embedded(new)
        known.update(self.store.reusable_vectors(sorted(held)))
        lost = {text_hash: text for text_hash, text in texts.items() if text_hash not in known}  # held, yet unreadable
        known.update(self._embedded(lost))
        self.stats.embedded += len(new) + len(lost)
        self.stats.reused += len(chunks) - len(new) - len(lost)
        return np.stack([known[chunk.text_hash] for chunk in chunks]).astype(np.float32, copy=False)

    def _embedded(self, texts: dict[str, str]) -> dict[str, np.ndarray]:
        """text hash -> vector, embedded now."""
        return dict(zip(texts, self.pipeline.embedder.embed(list(texts.values())), strict=True)) if texts else {}

    def _chunk_metadata(self, document: SourceDocument, file_metadata: dict, chunk: Chunk, ord_: int) -> dict:
        metadata = {
            "source": self.store.name,
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
            **(document.section_metadata(chunk.heading) if document.section_metadata else {}),
        }
        if "date" not in metadata and document.fallback_date:
            metadata["date"], metadata["date_ts"] = document.fallback_date
        if looks_like_instructions(chunk.embed_text):  # quoted material that talks to the AI reading it
            metadata["suspect"] = "instructions"
        # ChromaDB takes str, int, float, bool and non-empty lists of those; nothing else. Every field is redacted.
        return secrets.redact_metadata({k: v for k, v in metadata.items() if v is not None and v != [] and v != ""})[0]


def chunk_id(key: str, ord_: int, text_hash: str, metadata: dict) -> str:
    """An id that names its content: the document, the position, what was embedded and the chunk's own metadata; not
    when it was indexed, nor the raw file's hash, nor where the document came from (`metadata` holds none of the
    source's provenance: a git commit and URL move while the text stays, and the chunk keeps its id and vector)."""
    stable = json.dumps({k: v for k, v in metadata.items() if k not in ("indexed_at", "content_hash")}, sort_keys=True,
                        ensure_ascii=False)
    return _digest(f"{key}\0{ord_}\0{text_hash}\0{stable}", 12)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest(text: str, size: int) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=size).hexdigest()
