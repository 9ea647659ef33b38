"""Vectors by key in a SQLite file beside an index: the store keeps two kinds.

Unpublished vectors (key: the hash of the embedded text), one file per
collection and model. Embedding is the slow part of an index run. An
interrupted run over many files would otherwise leave nothing behind (its
generation is discarded), and the next run would embed everything again. Each
flush therefore also records its new vectors there; the next run takes them
before embedding. A run that publishes empties the file: from then on those
vectors are in the published index.

Added vectors (key: the chunk id), in a generation's folder: what its run put
into ChromaDB, when that was little, so that the next run can bring the
generation before it up to date instead of copying the whole index
(generations.py).
"""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..core.datadir import sqlite_uri

_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors_by_key (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
_BATCH = 500


def unpublished_path(folder: Path, model: str) -> Path:
    """One file per collection and model (`model`: its id and graph): another model's vectors are never offered."""
    return folder / f"unpublished-vectors-{model}.sqlite"


class VectorFile:
    def __init__(self, path: Path, dimension: int | None = None, writable: bool = True):
        """Open (writers: create) the file; a reader never writes, as published generations must not change.
        `dimension` is needed to get() vectors: a blob of another size is never offered."""
        self.path = path
        self._dimension = dimension
        if writable:
            self._db = sqlite3.connect(path)
            self._db.execute(_SCHEMA)
        else:
            self._db = sqlite3.connect(sqlite_uri(path, mode="ro", immutable="1"), uri=True)

    def holds(self, keys: list[str]) -> set[str]:
        """The keys it has a vector for (of the right size), without reading the vectors."""
        return {key for key, in self._select("key", keys)}

    def get(self, keys: list[str]) -> dict[str, np.ndarray]:
        return {key: np.frombuffer(blob, dtype=np.float32) for key, blob in self._select("key, vector", keys)}

    def _select(self, columns: str, keys: list[str]) -> Iterator[tuple]:
        """`columns` of the rows of these keys whose vector has the file's dimension (a blob of another size is never
        offered)."""
        if self._dimension is None:
            raise RuntimeError(f"reading {self.path} needs the dimension of its vectors")
        for start in range(0, len(keys), _BATCH):
            batch = keys[start : start + _BATCH]
            yield from self._db.execute(f"SELECT {columns} FROM vectors_by_key WHERE key IN ({','.join('?' * len(batch))}) "
                                        "AND length(vector) = ?", [*batch, 4 * self._dimension])

    def put(self, keys: list[str], vectors: np.ndarray) -> None:
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO vectors_by_key VALUES (?, ?)",
                                 [(key, np.asarray(vector, dtype=np.float32).tobytes()) for key, vector in
                                  zip(keys, vectors, strict=True)])

    def close(self) -> None:
        self._db.close()

    def clear(self) -> None:
        """Close and delete the file (unpublished vectors after a publish; an added-vectors record grown too big)."""
        self._db.close()
        self.path.unlink(missing_ok=True)
