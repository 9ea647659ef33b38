"""The values that cross module boundaries: documents and chunks as stored, hits, filters, what a vector backend
gives the store.

Sources, the indexer, the store and retrieval pass these, never a chromadb
result or a raw dict, so each module can change its insides on its own.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only for annotations: output.py renders records without loading numpy
    import numpy as np


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


INDEXING = "indexing"  # in a source's state while a run published in parts is not done: {"documents": N, "of": M}


def settled(state: dict | None) -> dict:
    """A source's state without INDEXING: what it was before a run published in parts."""
    return {key: value for key, value in (state or {}).items() if key != INDEXING}


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


# What ranking.py adds to a candidate's evidence, and rerank.py after it, in the order --explain shows them.
RANKING_FIELDS = ("page_cosine", "rrf", "lead", "recency", "history", "page_score", "page_bonus", "page_chunks",
                  "page_closeness", "relevance", "rerank")


@dataclass
class Evidence:
    """What a search knows of one candidate: what retrieval gathered (its rank and score in its collection's lists, an
    identifier of the question that its page alone holds, its page's closeness) and what ranking made of it. Ranking
    reads the gathered fields and writes the rest; --explain shows all of them (`shown`). Scores are kept rounded as
    shown (cosine, BM25 and page_cosine to 4 places, lead to 6), and ranking reads these same values."""

    # retrieval.py
    dense_rank: int | None = None  # rank in its collection's dense list
    cosine: float | None = None  # cosine with the question
    lexical_rank: int | None = None  # rank in its collection's keyword list
    bm25: float | None = None
    identifier: str | None = None  # an identifier of the question that its page alone holds in its collection
    page_cosine: float | None = None  # its page's closeness as a whole (documentation)
    cosine_after_ranking: bool = False  # the cosine was looked up for the answer only, after ranking
    # ranking.py: what the order was made of
    rrf: float | None = None  # reciprocal rank fusion of its two ranks
    lead: float | None = None  # how far it stands above its collection's runner-up in a list
    recency: float | None = None  # the boost of a recent personal chunk
    history: float | None = None  # the weight of a chunk of release history (SearchOptions.history_penalty)
    page_score: float | None = None  # its page's best section plus the page's bonus and closeness
    page_bonus: float | None = None
    page_chunks: int | None = None  # its page's candidates
    page_closeness: float | None = None  # what its page's closeness as a whole earned it
    relevance: float | None = None  # its chance of answering, by which the collections take turns (relevance.py)
    # rerank.py
    rerank: float | None = None  # the cross-encoder's score

    def shown(self) -> dict[str, int | float | str]:
        """The fields set, as --explain prints them: in the order the stages set them (a cosine looked up after ranking
        comes last)."""
        names = ["dense_rank", "lexical_rank", "bm25", "identifier", *RANKING_FIELDS]
        names.insert(1 if self.dense_rank is not None else len(names) if self.cosine_after_ranking else 4, "cosine")
        return {name: value for name in names if (value := getattr(self, name)) is not None}


@dataclass
class Hit:
    """A chunk found by a search, with how it was found."""

    id: str
    collection: str
    score: float  # cosine similarity of chunk and query, clipped to 0..1
    text: str
    metadata: dict
    evidence: Evidence = field(default_factory=Evidence)  # ranks and scores of each stage
    document: str = ""  # the key of its document: two roots' notes/todo.md are two documents with one file name
    span: tuple[int, int] | None = None  # the chunks (first, last) its text runs over, when neighbours were joined to it

    @property
    def explain(self) -> dict[str, int | float | str]:
        """Its evidence as --explain prints it (a copy: ranking reads and writes `evidence`)."""
        return self.evidence.shown()

    @property
    def page(self) -> tuple:
        """What --per-file and page ranking count as one page."""
        return self.collection, self.document or self.metadata.get("file")


@dataclass(frozen=True)
class Filters:
    """What a search may return: these sources, dated within these bounds, records of these types carrying these tags,
    documentation pages of these kinds (page_kind.py; a chunk of no kind, the user's own or of an index built before
    kinds, matches none)."""

    sources: tuple[str, ...] = ()
    since: float | None = None  # epoch seconds, on the chunk's date
    until: float | None = None
    types: tuple[str, ...] = ()  # any of these record types
    tags: tuple[str, ...] = ()  # every one of these tags (normalised: sections.normalize_tag)
    kinds: tuple[str, ...] = ()  # any of these page kinds

    def __bool__(self) -> bool:
        return bool(self.sources or self.types or self.tags or self.kinds) or self.since is not None or self.until is not None


@dataclass(frozen=True)
class CatchUp:
    """What turns the generation before the published one into the published one."""

    previous: Path  # the older generation's folder
    published: Path  # the published generation's folder
    keys: list[str]  # the documents that differ
    removed: list[str]  # ids of the chunks only the older one has
    added: "dict[str, np.ndarray]"  # the chunks only the published one has: id -> vector
