"""Vectors embedded by index runs that have not published yet, kept so that a killed run's work is not lost.

Embedding is the slow part of an index run. An interrupted run over many files
would otherwise leave nothing behind (its generation is discarded), and the
next run would embed everything again. Each flush therefore also records its
new vectors here, by the hash of the embedded text; the next run takes them
from here before embedding. A run that publishes empties the file: from then
on those vectors are in the published index.
"""

import sqlite3
from pathlib import Path

import numpy as np

_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (text_hash TEXT PRIMARY KEY, vector BLOB NOT NULL)"
_BATCH = 500


class UnpublishedVectors:
    def __init__(self, folder: Path, model: str, dimension: int):
        """One file per collection and model (`model`: its id and graph): another model's vectors are never offered."""
        self.path = folder / f"unpublished-vectors-{model}.sqlite"
        self._dimension = dimension
        self._db = sqlite3.connect(self.path)
        self._db.execute(_SCHEMA)

    def get(self, text_hashes: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(text_hashes), _BATCH):
            batch = text_hashes[start : start + _BATCH]
            rows = self._db.execute(f"SELECT text_hash, vector FROM vectors WHERE text_hash IN ({','.join('?' * len(batch))})", batch)
            found.update((text_hash, np.frombuffer(blob, dtype=np.float32)) for text_hash, blob in rows
                         if len(blob) == 4 * self._dimension)
        return found

    def put(self, text_hashes: list[str], vectors: np.ndarray) -> None:
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)",
                                 [(text_hash, np.asarray(vector, dtype=np.float32).tobytes()) for text_hash, vector in
                                  zip(text_hashes, vectors, strict=True)])

    def close(self) -> None:
        self._db.close()

    def clear(self) -> None:
        """After a publish: every vector here is in the published index now."""
        self._db.close()
        self.path.unlink(missing_ok=True)
