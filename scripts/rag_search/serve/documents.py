"""Reading back what is indexed: a whole document, or one chunk with its neighbours (get.py, the MCP server).

A search result is a passage; an agent often needs the page around it. A
document's text comes from where it was indexed from (the file, the git clone,
a web page's saved markdown), redacted as the index was, when it still has the
content that was indexed; otherwise it is rebuilt from the indexed chunks, so
what comes back is always what the index holds. Bounded (--max-chars), a long
page comes as the part of its text around the passage that matched, with the
headings near it, and says what was left out.
"""

import contextlib
from pathlib import Path

from ..core.errors import UsageError
from ..index.indexer import content_hash
from ..safety import secrets
from ..sources.files import SkipFile, read_text
from ..sources.pages import page_file
from ..store.records import DocumentRecord, StoredChunk
from ..store.store import Store, join_chunks
from ..text.chunking import HEADING_SEPARATOR
from .output import one_line


def get(stores: dict[str, Store], reference: str, context: int | None, data_dir: Path, max_bytes: int,
        section: str | None = None, max_chars: int | None = None) -> dict:
    """A document (by file, path, URL or key) with its text, or a chunk (by id) with `context` chunks either side
    (default 1).

    A document's `section` (a heading, or a heading path as results show it) is read alone, with its subsections, and
    the page's outline, so the next read can ask for the part it needs. `max_chars` bounds the whole answer (_fit): a
    document from its start (or its section), a chunk id the document around that chunk."""
    store, record, chunk_id = find(stores, reference)
    chunks = store.document_chunks(record.key)
    described = {"source": store.name, "file": record.file, **_where(chunks), "indexed_at": record.indexed_at, "chunks": len(chunks)}
    if chunk_id is not None and section:
        raise UsageError("--section reads a document, and this is a chunk id", hint="pass the result's file instead")
    if chunk_id is not None and max_chars is None:
        return {**described, "id": chunk_id, "shown": _neighbours(chunks, chunk_id, 1 if context is None else context)}
    if chunk_id is not None and context is not None:
        raise UsageError("--context reads a chunk with its neighbours, --max-chars the page around it: not both",
                         hint="drop --context to read the page around the chunk, or --max-chars to read the chunks")
    outline = list(dict.fromkeys(chunk.metadata.get("heading", "") for chunk in chunks if chunk.metadata.get("heading")))
    anchor, at = (0, 0), 0  # where the text shown is centred, and the heading the outline kept is centred on
    if section:
        heading = _find_heading(outline, section)
        found = {**described, "from": "index", "section": heading, "outline": outline,
                 "text": join_chunks([chunk for chunk in chunks if _under(chunk.metadata.get("heading", ""), heading)])}
        at = outline.index(heading)
    else:
        text, origin = document_text(record, chunks, data_dir, max_bytes)
        found = {**described, **({"id": chunk_id} if chunk_id else {}), "from": origin, "text": text}
        if chunk_id is not None:
            position = next(number for number, chunk in enumerate(chunks) if chunk.id == chunk_id)
            anchor = _locate(text, chunks[position].text, len(text) * position // len(chunks))
            chunk_heading = chunks[position].metadata.get("heading")
            at = outline.index(chunk_heading) if chunk_heading else 0
    return _fit(found, outline, anchor, at, max_chars) if max_chars else found


def _neighbours(chunks: list[StoredChunk], chunk_id: str, around: int) -> list[dict]:
    position = next(number for number, chunk in enumerate(chunks) if chunk.id == chunk_id)
    return [{"id": chunks[n].id, "index": n, "heading": chunks[n].metadata.get("heading", ""), "text": chunks[n].text}
            for n in range(max(0, position - around), min(len(chunks), position + around + 1))]


def _fit(found: dict, outline: list[str], anchor: tuple[int, int], at: int, max_chars: int) -> dict:
    """`found` in at most `max_chars` characters as printed (one line of JSON, every field counted) when the fields that
    say what it is leave room: the outline cut first, to the headings nearest outline[at] (at most a quarter of the room
    unless the text leaves more), then the text, to a window around text[anchor[0]:anchor[1]]. The answer says what
    was cut: "truncated" with "total_chars", "text_start" and "text_end"; "outline_omitted" {"before", "after"}."""
    if len(one_line(found)) <= max_chars:
        return found
    text, headings = found["text"], len(outline)
    frame = {**found, "text": "", "truncated": True, "total_chars": len(text), "text_start": len(text), "text_end": len(text),
             "outline": [], "outline_omitted": {"before": headings, "after": headings}}
    room = max_chars - len(one_line(frame))
    first_heading, last_heading = _headings_near(outline, at, max(room // 4, room - _printed(text)))
    room -= _printed(outline[first_heading:last_heading]) - len("[]")
    first, last = _window_within(text, anchor, room)
    fitted = {**found, "text": text[first:last]}
    if (first, last) != (0, len(text)):
        fitted.update(truncated=True, total_chars=len(text), text_start=first, text_end=last)
    fitted["outline"] = outline[first_heading:last_heading]
    if last_heading - first_heading < headings:
        fitted["outline_omitted"] = {"before": first_heading, "after": headings - last_heading}
    return fitted


def _printed(value) -> int:
    """Characters of `value` as JSON in the answer (a string's quotes and escapes counted)."""
    return len(one_line(value))


def _headings_near(outline: list[str], at: int, room: int) -> tuple[int, int]:
    """[first, last) of the run of headings around outline[at] (it, then the next after and the next before, in turn)
    whose JSON takes at most `room` characters more than an empty list."""
    first = last = min(at, len(outline))
    used = -len(", ")  # the first heading has no separator
    for distance in range(len(outline)):
        for index in (at + distance, at - distance) if distance else (at,):
            if not 0 <= index < len(outline):
                continue
            used += _printed(outline[index]) + len(", ")
            if used > room:
                return first, last
            first, last = min(first, index), max(last, index + 1)
    return first, last


def _window_within(text: str, anchor: tuple[int, int], room: int) -> tuple[int, int]:
    """_window whose text takes at most `room` characters more than "" as JSON (a newline prints as two, \\n)."""
    limit = room
    while limit > 0:
        first, last = _window(text, *anchor, limit)
        over = _printed(text[first:last]) - len('""') - room
        if over <= 0:
            return first, last
        limit -= over
    return anchor[0], anchor[0]


def _window(text: str, start: int, end: int, limit: int) -> tuple[int, int]:
    """[first, last) of at most `limit` characters of `text` around text[start:end] (its beginning when that is longer).
    Each end moves back to a paragraph, else a line, else a word break within a quarter of `limit`: the end so as not
    to cut a line, the start so as to show the paragraph that a chunk continuing a section starts inside of."""
    if len(text) <= limit:
        return 0, len(text)
    first = max(0, min(start - max(0, limit - (end - start)) // 2, len(text) - limit))
    if first > 0 and (found := _last_break(text, max(0, first - limit // 4, end - limit), first + len("\n\n"))):
        first = sum(found)
    last = min(len(text), first + limit)
    kept = end if end <= last else first  # the chunk whole when it fits
    if last < len(text) and (found := _last_break(text, max(kept, last - limit // 4), last)):
        last = found[0]
    while first < last and text[first].isspace():
        first += 1
    while last > first and text[last - 1].isspace():
        last -= 1
    return first, last


def _last_break(text: str, low: int, high: int) -> tuple[int, int] | None:
    """(where, length) of the last paragraph break in text[low:high], else of its last line break, else its last space."""
    for mark in ("\n\n", "\n", " "):
        found = text.rfind(mark, low, high)
        if found >= 0:
            return found, len(mark)
    return None


def _locate(text: str, passage: str, near: int) -> tuple[int, int]:
    """Where `passage` (a chunk) is in `text`, its occurrence nearest `near`: the whole of it, else by its longest line
    found (a chunk that continues a section, or a JSON record's, is not the file's words verbatim); else at `near`."""
    lines = sorted({line.strip() for line in passage.splitlines() if line.strip()}, key=len, reverse=True)
    for needle in filter(None, (passage.strip(), *lines)):
        found = _nearest(text, needle, near)
        if found is not None:
            start = max(0, found - passage.find(needle))
            return start, min(len(text), start + len(passage))
    return near, near


def _nearest(text: str, needle: str, near: int) -> int | None:
    """Where in `text` the occurrence of `needle` nearest `near` starts (a line may repeat: a table's header, a rule)."""
    best = None
    found = text.find(needle)
    while found >= 0:
        if best is None or abs(found - near) < abs(best - near):
            best = found
        if found > near:  # the next ones are farther
            break
        found = text.find(needle, found + 1)
    return best


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


def _where(chunks: list[StoredChunk]) -> dict:
    """The document's path on disk (files, git clones) and its URL (web pages, git files on a known host), from its chunks."""
    metadata = chunks[0].metadata if chunks else {}
    where = {key: metadata[key] for key in ("path", "url") if metadata.get(key)}
    if "url" in where:
        where["url"] = where["url"].split("#", 1)[0]  # the page, not the section a chunk links to
    return where
