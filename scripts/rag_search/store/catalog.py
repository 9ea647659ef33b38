"""The catalog: which documents are indexed, from what content, as which chunks; their text; the keyword index.

A SQLite file beside the ChromaDB store in each generation, private to
store.py. It makes refreshes incremental (a document whose identity or content
hash is unchanged is not re-embedded), lets a new chunk reuse the vector of an
identical old one, keeps each source's state, holds each chunk's text and
metadata, and the keyword index (FTS5, BM25) over the same chunks, written in
the same transactions.

ChromaDB keeps only ids, vectors and the fields filters need. Given the text
and metadata too, it stored each chunk about three times over (its own trigram
full-text index and a row per metadata field): half of an index's size, copied
by every run that writes, and read back by every search.
"""

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.datadir import sqlite_uri
from ..core.errors import FingerprintMismatch
from . import lexical
from .records import ChunkRecord, DocumentRecord, Filters, StoredChunk

# Part of the index fingerprint: a store with another schema is rebuilt, not migrated.
SCHEMA_VERSION = 7  # 7: each document's page vector; 6: chunk text and metadata in the catalog, not in ChromaDB
ANSWERS_FROM = (6,)  # older schemas a reader still answers from, until the next complete run rebuilds (no page vectors)
TABLES = ("documents", "chunks", "chunk_texts", "sources", "chunk_terms")
_BATCH = 500  # SQLite's host parameters per statement stay well under its limit
POOL = 2  # with a cap per document, the best POOL * depth matches are looked at to keep `depth` of them
_STORED = "SELECT c.id, t.text, t.metadata, c.doc_key FROM chunks c JOIN chunk_texts t ON t.num = c.num"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    key          TEXT PRIMARY KEY,   -- stable identity of the document within its collection
    source_id    TEXT NOT NULL,
    file         TEXT NOT NULL,      -- the path users see
    identity     TEXT,               -- cheap sign of change: "size:mtime_ns", a git blob id
    content_hash TEXT NOT NULL,
    chunk_count  INTEGER NOT NULL,
    indexed_at   TEXT NOT NULL,
    state        TEXT,               -- JSON kept by the source between runs (a page's ETag…)
    vector       BLOB                -- float32: the normalised mean of its chunks' vectors (its closeness as a whole)
);
CREATE INDEX IF NOT EXISTS documents_by_source ON documents (source_id);
CREATE TABLE IF NOT EXISTS chunks (
    num         INTEGER PRIMARY KEY, -- the chunk's row in chunk_terms
    id          TEXT UNIQUE NOT NULL, -- the same id as in ChromaDB
    doc_key     TEXT NOT NULL,
    ord         INTEGER NOT NULL,
    text_hash   TEXT NOT NULL,       -- hash of the embedded text: identical text, identical vector
    source_id   TEXT NOT NULL,       -- for filters
    date_ts     REAL,                -- for filters and recency
    type        TEXT,                -- a record's type, for filters
    tags        TEXT                 -- a record's or page's tags as ",a,b,", so a filter matches whole tags
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (doc_key);
CREATE INDEX IF NOT EXISTS chunks_by_text ON chunks (text_hash);
-- What results show, apart from `chunks`: a keyword search joins thousands of matches to `chunks`, which stays narrow.
CREATE TABLE IF NOT EXISTS chunk_texts (
    num         INTEGER PRIMARY KEY, -- chunks.num
    text        TEXT NOT NULL,       -- the passage shown to readers
    metadata    TEXT NOT NULL        -- JSON: file, heading, url, date…
);
CREATE TABLE IF NOT EXISTS sources (
    source_id   TEXT PRIMARY KEY,
    state       TEXT NOT NULL        -- JSON: what the last complete run indexed (a git commit…)
);
-- The keyword index: lexical.terms() of each chunk's embedded text, rowid = chunks.num.
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_terms USING fts5(terms, tokenize = 'porter unicode61 remove_diacritics 2');
"""


# Catalog.catch_up's statements. A document of `restamped` has the same chunk rows (id and row number) in both catalogs.
_SAME_CHUNKS = ("key IN (SELECT key FROM main.documents) AND key IN (SELECT key FROM other.documents) AND NOT EXISTS ("
                "SELECT id, num FROM main.chunks WHERE doc_key = changed.key EXCEPT SELECT id, num FROM other.chunks "
                "WHERE doc_key = changed.key) AND NOT EXISTS (SELECT id, num FROM other.chunks WHERE doc_key = changed.key "
                "EXCEPT SELECT id, num FROM main.chunks WHERE doc_key = changed.key)")
_MINE = "SELECT num FROM main.chunks WHERE doc_key IN (SELECT key FROM changed)"
_THEIRS = "SELECT num FROM other.chunks WHERE doc_key IN (SELECT key FROM changed)"
_REPLACE_CHANGED = (
    f"DELETE FROM main.chunk_terms WHERE rowid IN ({_MINE})",
    f"DELETE FROM main.chunk_texts WHERE num IN ({_MINE})",
    "DELETE FROM main.chunks WHERE doc_key IN (SELECT key FROM changed)",
    "DELETE FROM main.documents WHERE key IN (SELECT key FROM changed)",
    "INSERT INTO main.documents SELECT * FROM other.documents WHERE key IN (SELECT key FROM changed)",
    "INSERT INTO main.chunks SELECT * FROM other.chunks WHERE doc_key IN (SELECT key FROM changed)",
    f"INSERT INTO main.chunk_texts SELECT * FROM other.chunk_texts WHERE num IN ({_THEIRS})",
    f"INSERT INTO main.chunk_terms (rowid, terms) SELECT rowid, terms FROM other.chunk_terms WHERE rowid IN ({_THEIRS})",
    "DELETE FROM main.sources",
    "INSERT INTO main.sources SELECT * FROM other.sources",
    "DROP TABLE temp.changed",
)
_DOCUMENT_FIELDS = "source_id, file, identity, content_hash, chunk_count, indexed_at, state, vector"
_RESTAMPED_NUMS = "SELECT num FROM main.chunks WHERE doc_key IN (SELECT key FROM restamped)"
_UPDATE_RESTAMPED = (  # rows rewritten where they are (same row numbers, same keyword terms: the same embedded text)
    f"UPDATE main.documents SET ({_DOCUMENT_FIELDS}) = (SELECT {_DOCUMENT_FIELDS} FROM other.documents o "
    "WHERE o.key = main.documents.key) WHERE key IN (SELECT key FROM restamped)",
    f"INSERT OR REPLACE INTO main.chunks SELECT * FROM other.chunks WHERE num IN ({_RESTAMPED_NUMS})",
    f"INSERT OR REPLACE INTO main.chunk_texts SELECT * FROM other.chunk_texts WHERE num IN ({_RESTAMPED_NUMS})",
    "DROP TABLE temp.restamped",
)


class Catalog:
    def __init__(self, path: Path, writable: bool = True, any_schema: bool = False, cache: bool = False):
        """Open (and for writers create) the catalog.

        A catalog of another schema is refused (FingerprintMismatch): only a rebuild, into a new catalog, replaces it.
        Except: `any_schema` reads it anyway (for what every schema has: a rebuild's reusable vectors), a reader answers
        from a schema of ANSWERS_FROM, and a `cache` (a server's keyword copy, made again from the server) starts afresh.
        A reader opens the file read-only and immutable: published generations never change.
        """
        self.path = path
        if writable:
            self._db = sqlite3.connect(path, timeout=30)
        else:
            self._db = sqlite3.connect(sqlite_uri(path, mode="ro", immutable="1"), uri=True)
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION and self._has_tables() and not any_schema and (writable or version not in ANSWERS_FROM):
            if not cache:
                self._db.close()  # the folder resolved: a reader opens it as /proc/self/fd/N (generations.held_path)
                raise FingerprintMismatch(f"the index in {path.parent.resolve()} was built by another version of rag-search",
                                          hint="reindex with --full")
            with self._db:
                for table in TABLES:
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")
        if writable:
            # A rollback journal, not WAL: a published generation must read without creating files.
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._page_vectors = writable or version == SCHEMA_VERSION  # schema 6 has none
        self.changed = False  # whether this run wrote anything: no change, no new generation
        self._writable = writable
        self._term_rows: dict[str, int] = {}  # {term: chunks holding it}, for common_terms
        self._chunks: int | None = None  # chunk_count, remembered by a reader

    def _has_tables(self) -> bool:
        return self._db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'documents'").fetchone()[0] > 0

    def close(self) -> None:
        self._db.close()

    def documents(self, source_id: str | None = None, key_prefix: str | None = None, min_chunks: int = 0) -> dict[str, DocumentRecord]:
        """The indexed documents, or those of one source and/or under a key prefix and/or of more than `min_chunks`
        chunks, by key."""
        query = "SELECT key, source_id, file, identity, content_hash, chunk_count, indexed_at, state FROM documents WHERE 1"
        params: list = []
        if min_chunks:
            query += " AND chunk_count > ?"
            params.append(min_chunks)
        if source_id is not None:
            query += " AND source_id = ?"
            params.append(source_id)
        if key_prefix is not None:
            query += " AND substr(key, 1, ?) = ?"
            params += [len(key_prefix), key_prefix]
        return {row[0]: _document_record(row) for row in self._db.execute(query, params)}

    def find_documents(self, reference: str) -> list[DocumentRecord]:
        """Documents whose file (as results show it), key, or key without its source prefix (a path, a URL) is `reference`."""
        rows = self._db.execute(
            "SELECT key, source_id, file, identity, content_hash, chunk_count, indexed_at, state FROM documents "
            "WHERE file = ? OR key = ? OR substr(key, instr(key, ':') + 1) = ? ORDER BY key", (reference, reference, reference))
        return [_document_record(row) for row in rows]

    def stored_chunks(self, ids: list[str]) -> dict[str, StoredChunk]:
        """The chunks with these ids (those the catalog has), by id."""
        found: dict[str, StoredChunk] = {}
        for start in range(0, len(ids), _BATCH):
            batch = ids[start : start + _BATCH]
            rows = self._db.execute(f"{_STORED} WHERE c.id IN ({','.join('?' * len(batch))})", batch)
            found.update((row[0], _stored(row)) for row in rows)
        return found

    def document_chunks(self, key: str, first: int = 0, last: int = -1) -> list[StoredChunk]:
        """One document's chunks, in the document's order (only its `first` to `last` when `last` is not -1)."""
        rows = self._db.execute(f"{_STORED} WHERE c.doc_key = ? AND c.ord >= ? AND (? < 0 OR c.ord <= ?) ORDER BY c.ord",
                                (key, first, last, last))
        return [_stored(row) for row in rows]

    def all_chunks(self) -> list[StoredChunk]:
        return [_stored(row) for row in self._db.execute(f"{_STORED} ORDER BY c.num")]

    def matching(self, filters: Filters, limit: int) -> list[StoredChunk]:
        """Up to `limit` chunks that pass `filters`, in the order they were written."""
        where, params = _filter_sql(filters)
        rows = self._db.execute(f"{_STORED} WHERE 1{where} ORDER BY c.num LIMIT ?", [*params, limit])
        return [_stored(row) for row in rows]

    def document_of_chunk(self, chunk_id: str) -> str | None:
        row = self._db.execute("SELECT doc_key FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
        return row[0] if row else None

    def document_count(self, source_id: str | None = None) -> int:
        if source_id is None:
            return self._db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        return self._db.execute("SELECT COUNT(*) FROM documents WHERE source_id = ?", (source_id,)).fetchone()[0]

    def source_ids(self) -> set[str]:
        """Every source with documents or saved state (the index's own entries start with "@")."""
        rows = self._db.execute("SELECT source_id FROM documents UNION SELECT source_id FROM sources WHERE source_id NOT LIKE '@%'")
        return {row[0] for row in rows}

    def chunk_ids(self, keys: list[str], schema: str = "main") -> list[str]:
        """Ids of the chunks of these documents (in an attached catalog if `schema` names it)."""
        ids: list[str] = []
        for start in range(0, len(keys), _BATCH):
            batch = keys[start : start + _BATCH]
            rows = self._db.execute(f"SELECT id FROM {schema}.chunks WHERE doc_key IN ({','.join('?' * len(batch))})", batch)
            ids.extend(row[0] for row in rows)
        return ids

    def all_chunk_ids(self) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT id FROM chunks")}

    def difference(self, other: Path) -> tuple[list[str], list[str], list[str]]:
        """What turns the catalog at `other` into this one: (keys of the documents that differ, ids of the chunks only
        there, ids of the chunks only here). Whole document rows are compared: a run that writes a document's chunks
        rewrites its row too. On a catalog opened for reading (its connection takes the URI that opens `other` read-only)."""
        self._db.execute("ATTACH DATABASE ? AS other", (sqlite_uri(other, mode="ro", immutable="1"),))
        try:
            keys = [row[0] for row in self._db.execute(
                "SELECT key FROM (SELECT * FROM main.documents EXCEPT SELECT * FROM other.documents) "
                "UNION SELECT key FROM (SELECT * FROM other.documents EXCEPT SELECT * FROM main.documents)")]
            here, there = set(self.chunk_ids(keys)), set(self.chunk_ids(keys, schema="other"))
        finally:
            self._db.execute("DETACH DATABASE other")
        return keys, sorted(there - here), sorted(here - there)

    def catch_up(self, other: Path, keys: list[str]) -> None:
        """Make this catalog equal to the one at `other`, given the keys of the documents that differ (difference()):
        their rows are replaced by those there, row numbers included, and the source states copied. A document whose
        chunks are the same rows there (a git page whose commit and URL alone moved) is updated in place, its keyword
        rows kept: rewriting every page's rows at each commit grew the file by up to 1.6 MB."""
        self._db.execute("ATTACH DATABASE ? AS other", (str(other),))
        try:
            with self._db:
                self._db.execute("CREATE TEMP TABLE changed (key TEXT PRIMARY KEY)")
                self._db.executemany("INSERT INTO changed VALUES (?)", [(key,) for key in keys])
                self._db.execute(f"CREATE TEMP TABLE restamped AS SELECT key FROM changed WHERE {_SAME_CHUNKS}")
                self._db.execute("DELETE FROM changed WHERE key IN (SELECT key FROM restamped)")
                for statement in (*_REPLACE_CHANGED, *_UPDATE_RESTAMPED):
                    self._db.execute(statement)
        finally:
            self._db.execute("DETACH DATABASE other")

    def ids_for_text_hashes(self, hashes: list[str]) -> dict[str, str]:
        """Some existing chunk id for each known text hash."""
        found: dict[str, str] = {}
        for start in range(0, len(hashes), _BATCH):
            batch = hashes[start : start + _BATCH]
            rows = self._db.execute(
                f"SELECT text_hash, MIN(id) FROM chunks WHERE text_hash IN ({','.join('?' * len(batch))}) GROUP BY text_hash", batch
            )
            found.update(dict(rows))
        return found

    def write(self, items: list[tuple[DocumentRecord, list[ChunkRecord]]], page_vectors: dict[str, np.ndarray] | None = None) -> None:
        """Write documents with their chunks and keyword terms, replacing earlier versions, in one transaction; with
        each document's page vector where `page_vectors` has one (a server's keyword copy has none)."""
        self.changed = True
        page_vectors = page_vectors or {}
        with self._db:
            for record, chunks in items:
                self._delete(record.key)
                vector = page_vectors.get(record.key)
                self._db.execute(
                    "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (record.key, record.source_id, record.file, record.identity, record.content_hash, record.chunk_count,
                     record.indexed_at, json.dumps(record.state) if record.state else None,
                     None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()),
                )
                for chunk in chunks:
                    num = self._db.execute(
                        "INSERT INTO chunks (id, doc_key, ord, text_hash, source_id, date_ts, type, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (chunk.id, record.key, chunk.ord, chunk.text_hash, chunk.source_id, chunk.date_ts,
                         *_filter_columns(chunk.metadata)),
                    ).lastrowid
                    self._db.execute("INSERT INTO chunk_texts VALUES (?, ?, ?)",
                                     (num, chunk.text, json.dumps(chunk.metadata, ensure_ascii=False)))
                    terms = " ".join(lexical.terms(chunk.embed_text))
                    self._db.execute("INSERT INTO chunk_terms (rowid, terms) VALUES (?, ?)", (num, terms))

    def touch(self, updates: list[tuple[str, str | None, dict | None, dict | None]]) -> None:
        """New (key, identity, state, fields) for documents whose content did not change: `fields` (or None) set in
        each of its chunks' metadata, a None value removing the field (none of them is a filter column)."""
        if not updates:
            return
        self.changed = True
        with self._db:
            self._db.executemany(
                "UPDATE documents SET identity = ?, state = ? WHERE key = ?",
                [(identity, json.dumps(state) if state else None, key) for key, identity, state, _ in updates],
            )
            # In SQLite (json_patch: a null removes the field): a git commit restamps every page of the source, and
            # decoding and encoding each chunk's metadata in Python took 0.07 s of a one-page refresh of 4,000 chunks.
            self._db.executemany(
                "UPDATE chunk_texts SET metadata = json_patch(metadata, ?) WHERE num IN (SELECT num FROM chunks WHERE doc_key = ?)",
                [(json.dumps(fields, ensure_ascii=False), key) for key, _, _, fields in updates if fields],
            )

    def remove(self, keys: list[str]) -> None:
        if not keys:
            return
        self.changed = True
        with self._db:
            for key in keys:
                self._delete(key)

    def source_states(self) -> dict[str, dict]:
        """Every source's saved state (the index's own entries, "@…", left out)."""
        rows = self._db.execute("SELECT source_id, state FROM sources WHERE source_id NOT LIKE '@%'")
        return {source_id: json.loads(state) for source_id, state in rows}

    def source_state(self, source_id: str) -> dict | None:
        row = self._db.execute("SELECT state FROM sources WHERE source_id = ?", (source_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_source_state(self, source_id: str, state: dict | None) -> None:
        if state == self.source_state(source_id):
            return
        self.changed = True
        with self._db:
            if state is None:
                self._db.execute("DELETE FROM sources WHERE source_id = ?", (source_id,))
            else:
                self._db.execute("INSERT OR REPLACE INTO sources VALUES (?, ?)", (source_id, json.dumps(state)))

    def clear(self) -> None:
        """Remove everything (the server-mode keyword copy is rebuilt this way)."""
        self.changed = True
        with self._db:
            for table in TABLES:
                self._db.execute(f"DELETE FROM {table}")

    def chunk_count(self, source_id: str | None = None) -> int:
        """The collection's chunks (a reader counts once: every search asks, and at 200k chunks a count takes 2 ms), or
        those of one source."""
        if source_id is None:
            if self._chunks is None or self._writable:
                self._chunks = self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            return self._chunks
        return self._db.execute("SELECT COALESCE(SUM(chunk_count), 0) FROM documents WHERE source_id = ?", (source_id,)).fetchone()[0]

    def keyword_search(self, match: str, limit: int, filters: Filters, per_document: int = 0) -> list[tuple[str, float]]:
        """(chunk id, BM25 score, higher is better), best first, for an FTS5 `match` expression; at most `per_document`
        chunks of one document (0: no limit) among the best `limit`, picked from the best POOL * `limit` matches.

        Without filters the matches are ranked alone and only the best are looked up in `chunks`: when a query's words
        match half of a 200k-chunk index, a join per match cost a fifth of the search.
        """
        where, params = _filter_sql(filters)
        pool = limit * POOL if per_document else limit
        if where:
            sql = ("SELECT c.id, -bm25(chunk_terms) AS score, c.num, c.doc_key FROM chunk_terms JOIN chunks c "
                   f"ON c.num = chunk_terms.rowid WHERE chunk_terms MATCH ?{where} ORDER BY bm25(chunk_terms) LIMIT ?")
        else:
            sql = ("SELECT c.id, m.score, m.num, c.doc_key FROM (SELECT rowid AS num, -bm25(chunk_terms) AS score "
                   "FROM chunk_terms WHERE chunk_terms MATCH ? ORDER BY bm25(chunk_terms) LIMIT ?) m "
                   "JOIN chunks c ON c.num = m.num")
        rows = sorted(self._db.execute(sql, [match, *params, pool]), key=lambda row: (-row[1], row[2]))
        return [(chunk_id, float(score)) for chunk_id, score in
                capped([(row[0], row[1], row[3]) for row in rows], per_document)[:limit]]

    def documents_matching(self, match: str, filters: Filters, limit: int) -> list[str]:
        """Keys of up to `limit` documents with a chunk that passes `filters` and matches `match` (an FTS5 expression)."""
        where, params = _filter_sql(filters)
        sql = ("SELECT DISTINCT c.doc_key FROM chunk_terms JOIN chunks c ON c.num = chunk_terms.rowid "
               f"WHERE chunk_terms MATCH ?{where} LIMIT ?")
        return [key for (key,) in self._db.execute(sql, [match, *params, limit])]

    def common_terms(self, terms: list[str], budget: int) -> frozenset[str]:
        """The most common of `terms`, as few as leave the others in at most `budget` chunks (never all of them): a
        keyword search scores every chunk holding a term it matches on, and in a large index that is most of its time.
        A reader remembers each term's count (its generation never changes)."""
        if self.chunk_count() <= budget:
            return frozenset()
        if self._writable:
            self._term_rows = {}
        for term in terms:
            if term not in self._term_rows:
                self._term_rows[term] = self._db.execute("SELECT COUNT(*) FROM chunk_terms WHERE chunk_terms MATCH ?",
                                                         (lexical.phrase(term),)).fetchone()[0]
        kept = sorted(terms, key=lambda term: self._term_rows[term])
        while len(kept) > 1 and sum(self._term_rows[term] for term in kept) > budget:
            kept.pop()
        return frozenset(terms) - set(kept)

    def page_vectors(self, keys: list[str]) -> dict[str, np.ndarray]:
        """{document key: its page vector} for those of `keys` that have one (none in an index of schema 6)."""
        found: dict[str, np.ndarray] = {}
        if not self._page_vectors:
            return found
        for start in range(0, len(keys), _BATCH):
            batch = keys[start : start + _BATCH]
            rows = self._db.execute(
                f"SELECT key, vector FROM documents WHERE vector IS NOT NULL AND key IN ({','.join('?' * len(batch))})", batch)
            found.update((key, np.frombuffer(blob, dtype=np.float32)) for key, blob in rows)
        return found

    def document_keys(self, ids: list[str]) -> dict[str, str]:
        """{chunk id: its document's key} for the chunks the catalog has."""
        found: dict[str, str] = {}
        for start in range(0, len(ids), _BATCH):
            batch = ids[start : start + _BATCH]
            found.update(self._db.execute(f"SELECT id, doc_key FROM chunks WHERE id IN ({','.join('?' * len(batch))})", batch))
        return found

    def agreement(self) -> tuple[int, int, int]:
        """(chunks, keyword rows, keyword rows of a chunk): all equal when the keyword index holds exactly the chunks.

        Counted in SQL on the keyword index's row-size table (one narrow row per indexed chunk): a tenth of the time
        of comparing id sets in Python, which at 100k chunks took 0.14 s of every run that writes.
        """
        def count(sql: str) -> int:
            return self._db.execute(sql).fetchone()[0]

        return (count("SELECT COUNT(*) FROM chunks"), count("SELECT COUNT(*) FROM chunk_terms_docsize"),
                count("SELECT COUNT(*) FROM chunk_terms_docsize d JOIN chunks c ON c.num = d.id"))

    def keyword_index_ids(self) -> set[str]:
        """Ids of the chunks that are in the keyword index (to check it agrees with the vectors)."""
        return {row[0] for row in self._db.execute("SELECT c.id FROM chunk_terms JOIN chunks c ON c.num = chunk_terms.rowid")}

    def _delete(self, key: str) -> None:
        self._db.execute("DELETE FROM chunk_terms WHERE rowid IN (SELECT num FROM chunks WHERE doc_key = ?)", (key,))
        self._db.execute("DELETE FROM chunk_texts WHERE num IN (SELECT num FROM chunks WHERE doc_key = ?)", (key,))
        self._db.execute("DELETE FROM chunks WHERE doc_key = ?", (key,))
        self._db.execute("DELETE FROM documents WHERE key = ?", (key,))


def capped(rows: list[tuple[str, float, str]], per_document: int) -> list[tuple[str, float]]:
    """(id, score) of `rows` (id, score, document key; best first), at most `per_document` of one document (0: all).
    One long homogeneous file (a transcript) must not fill a retriever's candidates and leave the rest unseen."""
    seen: dict[str, int] = {}
    kept = []
    for chunk_id, score, document in rows:
        seen[document] = seen.get(document, 0) + 1
        if not per_document or seen[document] <= per_document:
            kept.append((chunk_id, score))
    return kept


def _document_record(row: tuple) -> DocumentRecord:
    """A row of (key, source_id, file, identity, content_hash, chunk_count, indexed_at, state) from the documents table."""
    key, source_id, file, identity, content_hash, chunk_count, indexed_at, state = row
    return DocumentRecord(key, source_id, file, identity, content_hash, chunk_count, indexed_at, json.loads(state) if state else None)


def _filter_sql(filters: Filters) -> tuple[str, list[str | float]]:
    """SQL conditions on the chunks table `c` (each starting with AND) for sources, dates, record types, tags and page
    kinds (read from the chunk's metadata: a kind filter is rare, and a column would have cost a schema change)."""
    sql = ""
    params: list[str | float] = []
    if filters.sources:
        sql += f" AND c.source_id IN ({','.join('?' * len(filters.sources))})"
        params += filters.sources
    if filters.since is not None:
        sql += " AND c.date_ts >= ?"
        params.append(filters.since)
    if filters.until is not None:
        sql += " AND c.date_ts <= ?"
        params.append(filters.until)
    if filters.types:
        sql += f" AND c.type IN ({','.join('?' * len(filters.types))})"
        params += filters.types
    for tag in filters.tags:
        sql += " AND instr(c.tags, ?) > 0"
        params.append(f",{tag},")
    if filters.kinds:
        sql += (" AND json_extract((SELECT t.metadata FROM chunk_texts t WHERE t.num = c.num), '$.page_kind') "
                f"IN ({','.join('?' * len(filters.kinds))})")
        params += filters.kinds
    return sql, params


def _stored(row: tuple) -> StoredChunk:
    return StoredChunk(row[0], row[1], json.loads(row[2]), row[3])


def _filter_columns(metadata: dict) -> tuple[str | None, str | None]:
    """A chunk's record type, and its tags as ",a,b," (a filter then matches ",tag," and never part of a tag)."""
    tags = metadata.get("tags")
    kind = metadata.get("type")
    return (kind if isinstance(kind, str) else None), ("," + ",".join(tags) + "," if isinstance(tags, list) and tags else None)


@dataclass(frozen=True)
class PublishedIndex:
    """A published index opened for reading: the folder its catalog is in, the catalog, and notes for the caller."""

    folder: Path
    catalog: Catalog
    notes: tuple[str, ...] = ()  # e.g. CURRENT was unreadable
