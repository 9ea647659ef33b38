"""The catalog: which files are indexed, from what content, as which chunks.

A small SQLite file beside the ChromaDB store. It makes refreshes incremental
(a file whose size, mtime and content hash are unchanged is not read again or
re-embedded), lets a new chunk reuse the vector of an identical old one, and
holds the keyword index (FTS5, BM25) over the same chunks, written in the same
transactions so that keyword and vector search always see the same chunks.
"""

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from .errors import FingerprintMismatch

# Part of the index fingerprint: a store with another schema is rebuilt, not migrated.
SCHEMA_VERSION = 3
TABLES = ("documents", "chunks", "sources", "chunk_terms")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    collection   TEXT NOT NULL,
    key          TEXT NOT NULL,      -- stable identity of the file within its collection
    source_id    TEXT NOT NULL,
    file         TEXT NOT NULL,      -- the path users see
    size         INTEGER,
    mtime_ns     INTEGER,
    content_hash TEXT NOT NULL,
    chunk_count  INTEGER NOT NULL,
    indexed_at   TEXT NOT NULL,
    state        TEXT,               -- JSON kept by the source between runs (a page's ETag…)
    PRIMARY KEY (collection, key)
);
CREATE TABLE IF NOT EXISTS chunks (
    num         INTEGER PRIMARY KEY, -- the chunk's row in chunk_terms
    id          TEXT UNIQUE NOT NULL, -- the same id as in ChromaDB
    collection  TEXT NOT NULL,
    doc_key     TEXT NOT NULL,
    ord         INTEGER NOT NULL,
    text_hash   TEXT NOT NULL,       -- hash of the embedded text: identical text, identical vector
    source_id   TEXT NOT NULL,       -- for filters
    date_ts     REAL                 -- for filters and recency
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (collection, doc_key);
CREATE INDEX IF NOT EXISTS chunks_by_text ON chunks (collection, text_hash);
CREATE TABLE IF NOT EXISTS sources (
    collection  TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    state       TEXT NOT NULL,       -- JSON: what the last complete run indexed (a git commit…)
    PRIMARY KEY (collection, source_id)
);
-- The keyword index: lexical.terms() of each chunk's embedded text, rowid = chunks.num.
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_terms USING fts5(terms, tokenize = 'porter unicode61 remove_diacritics 2');
"""


@dataclass
class DocumentRecord:
    key: str
    source_id: str
    file: str
    size: int | None
    mtime_ns: int | None
    content_hash: str
    chunk_count: int
    indexed_at: str
    state: dict | None = None


@dataclass
class ChunkRecord:
    id: str
    ord: int
    text_hash: str
    terms: str  # space-separated lexical.terms() of the embedded text
    source_id: str
    date_ts: float | None


class Catalog:
    def __init__(self, path: Path, writable: bool = True):
        """Open (and for writers create) the catalog; an older schema is rebuilt by writers, refused to readers."""
        self.path = path
        self._db = sqlite3.connect(path, timeout=30)
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION and self._has_tables():
            if not writable:
                self._db.close()
                raise FingerprintMismatch(
                    f"the index in {path.parent} was built by another version of rag-search", hint="reindex with --full"
                )
            with self._db:
                for table in TABLES:
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")
        if writable:
            # A rollback journal, not WAL: a published generation must read without creating files.
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self.changed = False  # whether this run wrote anything: no change, no new generation

    def _has_tables(self) -> bool:
        return self._db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'documents'").fetchone()[0] > 0

    def close(self) -> None:
        self._db.close()

    def documents(self, collection: str, source_id: str | None = None) -> dict[str, DocumentRecord]:
        """The indexed documents of a collection, or of one source in it, by key."""
        query = (
            "SELECT key, source_id, file, size, mtime_ns, content_hash, chunk_count, indexed_at, state"
            " FROM documents WHERE collection = ?"
        )
        params: tuple = (collection,)
        if source_id is not None:
            query += " AND source_id = ?"
            params += (source_id,)
        return {row[0]: DocumentRecord(*row[:8], json.loads(row[8]) if row[8] else None) for row in self._db.execute(query, params)}

    def source_ids(self, collection: str) -> set[str]:
        """Every source with documents or saved state in the collection."""
        rows = self._db.execute(
            "SELECT source_id FROM documents WHERE collection = ? UNION SELECT source_id FROM sources WHERE collection = ?",
            (collection, collection),
        )
        return {row[0] for row in rows}

    def chunk_ids(self, collection: str, doc_key: str) -> list[str]:
        rows = self._db.execute("SELECT id FROM chunks WHERE collection = ? AND doc_key = ? ORDER BY ord", (collection, doc_key))
        return [row[0] for row in rows]

    def ids_for_text_hashes(self, collection: str, hashes: list[str]) -> dict[str, str]:
        """Some existing chunk id for each known text hash."""
        found: dict[str, str] = {}
        for start in range(0, len(hashes), 500):
            batch = hashes[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT text_hash, MIN(id) FROM chunks WHERE collection = ? AND text_hash IN ({marks}) GROUP BY text_hash",
                (collection, *batch),
            )
            found.update(dict(rows))
        return found

    def replace_documents(self, collection: str, items: list[tuple[DocumentRecord, list[ChunkRecord]]]) -> None:
        """Write documents with their chunks, replacing earlier versions, in one transaction."""
        self.changed = True
        with self._db:
            for record, chunks in items:
                self._delete(collection, record.key)
                self._db.execute(
                    "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (collection, record.key, record.source_id, record.file, record.size, record.mtime_ns,
                     record.content_hash, record.chunk_count, record.indexed_at, json.dumps(record.state) if record.state else None),
                )
                for chunk in chunks:
                    num = self._db.execute(
                        "INSERT INTO chunks (id, collection, doc_key, ord, text_hash, source_id, date_ts) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (chunk.id, collection, record.key, chunk.ord, chunk.text_hash, chunk.source_id, chunk.date_ts),
                    ).lastrowid
                    self._db.execute("INSERT INTO chunk_terms (rowid, terms) VALUES (?, ?)", (num, chunk.terms))

    def touch_documents(self, collection: str, stats: list[tuple[str, int, int]]) -> None:
        """Record new (key, size, mtime_ns) for files whose content did not change."""
        if not stats:
            return
        self.changed = True
        with self._db:
            self._db.executemany(
                "UPDATE documents SET size = ?, mtime_ns = ? WHERE collection = ? AND key = ?",
                [(size, mtime_ns, collection, key) for key, size, mtime_ns in stats],
            )

    def delete_documents(self, collection: str, keys: list[str]) -> None:
        if not keys:
            return
        self.changed = True
        with self._db:
            for key in keys:
                self._delete(collection, key)

    def set_document_state(self, collection: str, key: str, state: dict | None) -> None:
        """New source state (a page's ETag) for a document whose content did not change."""
        self.changed = True
        with self._db:
            self._db.execute(
                "UPDATE documents SET state = ? WHERE collection = ? AND key = ?",
                (json.dumps(state) if state else None, collection, key),
            )

    def source_state(self, collection: str, source_id: str) -> dict | None:
        row = self._db.execute("SELECT state FROM sources WHERE collection = ? AND source_id = ?", (collection, source_id)).fetchone()
        return json.loads(row[0]) if row else None

    def set_source_state(self, collection: str, source_id: str, state: dict | None) -> None:
        if state == self.source_state(collection, source_id):
            return
        self.changed = True
        with self._db:
            if state is None:
                self._db.execute("DELETE FROM sources WHERE collection = ? AND source_id = ?", (collection, source_id))
            else:
                self._db.execute("INSERT OR REPLACE INTO sources VALUES (?, ?, ?)", (collection, source_id, json.dumps(state)))

    def delete_collection(self, collection: str) -> None:
        self.changed = True
        with self._db:
            self._db.execute("DELETE FROM chunk_terms WHERE rowid IN (SELECT num FROM chunks WHERE collection = ?)", (collection,))
            self._db.execute("DELETE FROM chunks WHERE collection = ?", (collection,))
            self._db.execute("DELETE FROM documents WHERE collection = ?", (collection,))
            self._db.execute("DELETE FROM sources WHERE collection = ?", (collection,))

    def chunk_count(self, collection: str, source_id: str | None = None) -> int:
        if source_id is None:
            return self._db.execute("SELECT COUNT(*) FROM chunks WHERE collection = ?", (collection,)).fetchone()[0]
        return self._db.execute(
            "SELECT COALESCE(SUM(chunk_count), 0) FROM documents WHERE collection = ? AND source_id = ?", (collection, source_id)
        ).fetchone()[0]

    def keyword_search(
        self,
        match: str,
        collections: list[str],
        limit: int,
        source_ids: list[str] | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[tuple[str, str, float]]:
        """(chunk id, collection, BM25 score, higher is better), best first, for an FTS5 `match` expression."""
        sql = (
            "SELECT c.id, c.collection, -bm25(chunk_terms) FROM chunk_terms JOIN chunks c ON c.num = chunk_terms.rowid"
            f" WHERE chunk_terms MATCH ? AND c.collection IN ({','.join('?' * len(collections))})"
        )
        params: list = [match, *collections]
        if source_ids:
            sql += f" AND c.source_id IN ({','.join('?' * len(source_ids))})"
            params += source_ids
        if since is not None:
            sql += " AND c.date_ts >= ?"
            params.append(since)
        if until is not None:
            sql += " AND c.date_ts <= ?"
            params.append(until)
        sql += " ORDER BY bm25(chunk_terms) LIMIT ?"
        params.append(limit)
        return [(row[0], row[1], float(row[2])) for row in self._db.execute(sql, params)]

    def keyword_index_ids(self, collection: str) -> set[str]:
        """Ids of the chunks that are in the keyword index (to check it agrees with the vectors)."""
        rows = self._db.execute(
            "SELECT c.id FROM chunk_terms JOIN chunks c ON c.num = chunk_terms.rowid WHERE c.collection = ?", (collection,)
        )
        return {row[0] for row in rows}

    def _delete(self, collection: str, key: str) -> None:
        self._db.execute(
            "DELETE FROM chunk_terms WHERE rowid IN (SELECT num FROM chunks WHERE collection = ? AND doc_key = ?)", (collection, key)
        )
        self._db.execute("DELETE FROM chunks WHERE collection = ? AND doc_key = ?", (collection, key))
        self._db.execute("DELETE FROM documents WHERE collection = ? AND key = ?", (collection, key))
