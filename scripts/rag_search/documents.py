"""Reading back what is indexed: a whole document, or one chunk with its neighbours (get.py, the MCP server).

A search result is a passage; an agent often needs the page around it. A
document's text comes from where it was indexed from (the file, the git clone,
a web page's saved markdown), redacted as the index was, when it still has the
content that was indexed; otherwise it is rebuilt from the indexed chunks, so
what comes back is always what the index holds.
"""

import contextlib
from pathlib import Path

from . import secrets
from .chunking import HEADING_SEPARATOR
from .errors import UsageError
from .indexer import content_hash
from .records import DocumentRecord, StoredChunk
from .sources.files import SkipFile, read_text
from .sources.pages import page_file
from .store import Store


def get(stores: dict[str, Store], reference: str, context: int | None, data_dir: Path, max_bytes: int,
        section: str | None = None, max_chars: int | None = None) -> dict:
    """A document (by file, path, URL or key) with its text, or a chunk (by id) with `context` chunks either side.

    A document's `section` (a heading, or a heading path as results show it) is read alone, with its subsections;
    `max_chars` cuts a long text. Either adds the page's outline, so the next read can ask for the part it needs."""
    store, record, chunk_id = find(stores, reference)
    chunks = store.document_chunks(record.key)
    described = {"source": store.name, "file": record.file, **_where(chunks), "indexed_at": record.indexed_at, "chunks": len(chunks)}
    if chunk_id is not None and (section or max_chars):
        raise UsageError("--section and --max-chars read a document, and this is a chunk id", hint="pass the result's file instead")
    if chunk_id is None:
        outline = list(dict.fromkeys(chunk.metadata.get("heading", "") for chunk in chunks if chunk.metadata.get("heading")))
        if section:
            heading = _find_heading(outline, section)
            found = {**described, "from": "index", "section": heading, "outline": outline,
                     "text": join_chunks([chunk for chunk in chunks if _under(chunk.metadata.get("heading", ""), heading)])}
        else:
            text, origin = document_text(record, chunks, data_dir, max_bytes)
            found = {**described, "from": origin, "text": text}
        if max_chars and len(found["text"]) > max_chars:
            found.update(text=_cut(found["text"], max_chars), truncated=True, total_chars=len(found["text"]), outline=outline)
        return found
    position = next(number for number, chunk in enumerate(chunks) if chunk.id == chunk_id)
    around = context or 0
    shown = range(max(0, position - around), min(len(chunks), position + around + 1))
    return {**described, "id": chunk_id,
            "shown": [{"id": chunks[n].id, "index": n, "heading": chunks[n].metadata.get("heading", ""), "text": chunks[n].text}
                      for n in shown]}


def _find_heading(outline: list[str], wanted: str) -> str:
    """The first heading path of `outline` that is `wanted` or ends with it (case and spacing aside)."""
    key = " ".join(wanted.split()).casefold()
    for heading in outline:
        folded = heading.casefold()
        if folded == key or folded.endswith(HEADING_SEPARATOR.casefold() + key):
            return heading
    shown = "; ".join(outline[:20]) + (" …" if len(outline) > 20 else "")
    raise UsageError(f"no section {wanted!r} in this document; its headings: {shown or 'none'}",
                     hint="pass one of its headings (the last part of a result's heading is enough)")


def _under(heading: str, section: str) -> bool:
    return heading == section or heading.startswith(section + HEADING_SEPARATOR)


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, ending at a paragraph, else a line, else a word break when one is near."""
    head = text[:limit]
    for mark in ("\n\n", "\n", " "):
        end = head.rfind(mark)
        if end >= limit // 2:
            return head[:end].rstrip()
    return head


def find(stores: dict[str, Store], reference: str) -> tuple[Store, DocumentRecord, str | None]:
    """(store, document, chunk id or None) that `reference` names: a chunk id, or a document's file, path, URL or key."""
    for store in stores.values():
        record = store.document_of_chunk(reference)
        if record is not None:
            return store, record, reference
    matches = [(store, record) for store in stores.values() for record in store.find_documents(reference)]
    if not matches:
        raise UsageError(f"{reference!r} is neither an indexed file nor a chunk id",
                         hint="pass a result's file, metadata.path, metadata.url or id")
    if len(matches) > 1:
        keys = ", ".join(record.key.split(":", 1)[1] for _, record in matches[:5])
        raise UsageError(f"{reference!r} names {len(matches)} documents: {keys}", hint="pass the path or URL instead")
    return matches[0][0], matches[0][1], None


def document_text(record: DocumentRecord, chunks: list[StoredChunk], data_dir: Path, max_bytes: int) -> tuple[str, str]:
    """(text, where it came from): a web page's saved markdown, or the source file redacted as the indexer redacted it,
    when it is the version indexed; else the indexed chunks joined."""
    where = _where(chunks)
    if "path" not in where and "url" in where:  # a web page: its key is "<source id>:<page URL>"
        saved = page_file(data_dir, record.source_id, record.key.split(":", 1)[1], record.content_hash)
        with contextlib.suppress(OSError, UnicodeDecodeError):
            return saved.read_text(encoding="utf-8"), "saved page"
    elif "path" in where:
        try:
            text = read_text(Path(where["path"]), max_bytes)[0]
        except SkipFile:
            text = None
        if text is not None and content_hash(text.encode("utf-8")) == record.content_hash:
            metadata = chunks[0].metadata
            # Git files are published documentation, whose example credentials the indexer keeps (secrets.py); a
            # documented default (a value other documents show too) it kept is in this document's chunks.
            return secrets.redact_document(metadata.get("kind", "text"), text, documentation="repo_path" in metadata,
                                           documented=lambda value: any(value in chunk.text for chunk in chunks))[0], "file"
    return join_chunks(chunks), "index"


def join_chunks(chunks: list[StoredChunk]) -> str:
    """The chunks in order, each heading once, without the overlap of a section that was cut in several chunks."""
    parts: list[str] = []
    heading, previous = None, ""
    for chunk in chunks:
        text = chunk.text
        if chunk.metadata.get("heading") != heading:
            heading = chunk.metadata.get("heading")
            if heading:
                parts.append(f"## {heading}")
        else:
            text = text[_overlap(previous, text):].lstrip()
        parts.append(text)
        previous = chunk.text
    return "\n\n".join(part for part in parts if part)


def _overlap(before: str, after: str) -> int:
    """Length of the longest end of `before` that `after` starts with (chunks of one section overlap a little)."""
    for size in range(min(len(before), len(after)), 0, -1):
        if before.endswith(after[:size]):
            return size
    return 0


def _where(chunks: list[StoredChunk]) -> dict:
    """The document's path on disk (files, git clones) and its URL (web pages, git files on a known host), from its chunks."""
    metadata = chunks[0].metadata if chunks else {}
    where = {key: metadata[key] for key in ("path", "url") if metadata.get(key)}
    if "url" in where:
        where["url"] = where["url"].split("#", 1)[0]  # the page, not the section a chunk links to
    return where
