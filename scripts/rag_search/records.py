"""The values that cross module boundaries: documents and chunks as stored, hits, filters.

Sources, the indexer, the store and retrieval pass these, never a chromadb
result or a raw dict, so each module can change its insides on its own.
"""

from dataclasses import dataclass, field


@dataclass
class DocumentRecord:
    """One indexed document (a file, a page) as the catalog remembers it."""

    key: str  # stable identity within the collection, e.g. "k0s:docs/upgrade.md"
    source_id: str
    file: str  # the path users see and cite
    identity: str | None  # cheap sign of change known without reading: "size:mtime_ns", a git blob id
    content_hash: str  # sha256 of the text: equal text, nothing to do
    chunk_count: int
    indexed_at: str
    state: dict | None = None  # what the source keeps between runs (a page's ETag)


@dataclass
class IndexedFiles:
    """What a published index holds of one source: its documents, the source's state, and when it was published. Read
    from the catalog alone, for checks that must not pay for opening the vectors (freshness, roots, coverage)."""

    documents: dict[str, DocumentRecord]  # by key
    state: dict | None
    published: str  # ISO time the generation was published


@dataclass
class ChunkRecord:
    """One chunk as written: its id, text, what was embedded, and its metadata."""

    id: str
    ord: int
    text: str  # the passage shown to readers
    embed_text: str  # what the model and the keyword index see (heading path + passage)
    text_hash: str  # hash of embed_text: equal text, equal vector
    metadata: dict

    @property
    def date_ts(self) -> float | None:
        return self.metadata.get("date_ts")

    @property
    def source_id(self) -> str:
        return self.metadata.get("source_id", "")


@dataclass
class StoredChunk:
    """A chunk read back from the index."""

    id: str
    text: str
    metadata: dict
    document: str = ""  # its document's key


@dataclass
class Hit:
    """A chunk found by a search, with how it was found."""

    id: str
    collection: str
    score: float  # cosine similarity of chunk and query, clipped to 0..1
    text: str
    metadata: dict
    explain: dict = field(default_factory=dict)  # ranks and scores of each stage
    document: str = ""  # the key of its document: two roots' notes/todo.md are two documents with one file name

    @property
    def page(self) -> tuple:
        """What --per-file and page ranking count as one page."""
        return self.collection, self.document or self.metadata.get("file")


@dataclass(frozen=True)
class Filters:
    """What a search may return: these sources, dated within these bounds, records of these types carrying these tags."""

    sources: tuple[str, ...] = ()
    since: float | None = None  # epoch seconds, on the chunk's date
    until: float | None = None
    types: tuple[str, ...] = ()  # any of these record types
    tags: tuple[str, ...] = ()  # every one of these tags (normalised: parsing.normalize_tag)

    def __bool__(self) -> bool:
        return bool(self.sources or self.types or self.tags) or self.since is not None or self.until is not None
