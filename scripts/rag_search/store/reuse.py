"""Vectors a rebuild may take from the index it replaces: by the hash of the text they embed, for the same model and graph.

A text's vector depends on the text, the model and the graph alone; chunking
and the catalog's layout only decide which texts there are. So a rebuild after
an upgrade that changed those (or a --full run) embeds only the texts that are
new, and the published index keeps serving, untouched, until the rebuild is
published.
"""

import logging

import numpy as np

from ..core.errors import one_line
from .catalog import Catalog

log = logging.getLogger("rag_search")

# Fingerprint keys that decide a text's vector.
SAME_VECTORS = ("model_id", "embedding", "dimension")


def same_vectors(stored: dict | None, expected: dict | None) -> bool:
    """Whether an index built as `stored` gives each text the vector `expected` would."""
    if not stored or not expected:
        return False
    return all(stored.get(key) == expected.get(key) for key in SAME_VECTORS)


class Donor:
    """The published index of a collection being rebuilt, read for its vectors."""

    def __init__(self, catalog: Catalog, vectors):
        self._catalog = catalog
        self._vectors = vectors  # a VectorIndex

    @classmethod
    def open(cls, catalog: Catalog, open_vectors) -> "Donor | None":
        """The donor of `catalog` with the vectors `open_vectors()` gives (None: they cannot be read); None without them.
        Takes `catalog` over: the donor closes it."""
        try:
            vectors = open_vectors()
        except Exception as exc:
            log.warning("the index being replaced cannot be read (%s): every text is embedded again", one_line(exc))
            vectors = None
        if vectors is None:
            catalog.close()
            return None
        return cls(catalog, vectors)

    def holds(self, text_hashes: list[str]) -> set[str]:
        """The hashes its catalog has (get() may still find a vector unreadable)."""
        try:
            return set(self._catalog.ids_for_text_hashes(text_hashes))
        except Exception as exc:  # as get(): a damaged donor costs embedding time, never the rebuild
            log.debug("no vectors from the index being replaced: %s", one_line(exc))
            return set()

    def get(self, text_hashes: list[str]) -> dict[str, np.ndarray]:
        """text hash -> vector, for the hashes the donor has."""
        try:
            ids = self._catalog.ids_for_text_hashes(text_hashes)
            stored = self._vectors.vectors(sorted(set(ids.values()))) if ids else {}
        except Exception as exc:  # a damaged donor costs embedding time, never the rebuild
            log.debug("no vectors from the index being replaced: %s", one_line(exc))
            return {}
        return {text_hash: stored[chunk_id] for text_hash, chunk_id in ids.items() if chunk_id in stored}

    def close(self) -> None:
        self._catalog.close()
        self._vectors.close()
