"""Finding the chunks that answer a query, across the personal and docs collections."""

from dataclasses import dataclass, field

import numpy as np

from .errors import IndexNotBuilt
from .store import COLLECTIONS, INDEX_COMMANDS, Store


@dataclass
class Hit:
    id: str
    collection: str
    score: float  # cosine similarity of chunk and query, clipped to 0..1
    text: str
    metadata: dict


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    searched: list[str]
    total_chunks: int
    notes: list[str] = field(default_factory=list)  # for stderr: e.g. an index not built yet


def open_collections(store: Store, index: str, expected: dict) -> tuple[dict, list[str]]:
    """The collections to search for --index personal|docs|all, and notes about missing ones.

    Asking for one index that was never built is an error; with `all`, a
    missing one is skipped with a note, and it is an error only if none exists.
    """
    names = COLLECTIONS if index == "all" else (index,)
    opened, notes = {}, []
    for name in names:
        try:
            opened[name] = store.collection_for_search(name, expected)
        except IndexNotBuilt as exc:
            if index != "all":
                raise
            notes.append(str(exc))
    if not opened:
        raise IndexNotBuilt(
            "no index has been built yet",
            hint=f"run {INDEX_COMMANDS['personal']} and/or {INDEX_COMMANDS['docs']}",
        )
    return opened, notes


def dense_search(collections: dict, query: str, vector: np.ndarray, top_k: int) -> SearchResult:
    """Nearest chunks by cosine similarity; results of several collections merged by score."""
    hits: list[Hit] = []
    total = 0
    for name, collection in collections.items():
        count = collection.count()
        total += count
        if count == 0:
            continue
        found = collection.query(
            query_embeddings=[vector.tolist()],
            n_results=min(top_k, count),
            include=["documents", "metadatas", "distances"],
        )
        for chunk_id, text, metadata, distance in zip(
            found["ids"][0], found["documents"][0], found["metadatas"][0], found["distances"][0], strict=True
        ):
            hits.append(Hit(chunk_id, name, _similarity(distance), text or "", dict(metadata or {})))
    hits.sort(key=lambda hit: hit.score, reverse=True)
    return SearchResult(query, hits[:top_k], list(collections), total)


def _similarity(cosine_distance: float) -> float:
    return float(min(1.0, max(0.0, 1.0 - cosine_distance)))
