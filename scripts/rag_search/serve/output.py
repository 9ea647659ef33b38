"""Rendering answers: the JSON document agents read, or text for people (search results; get.py, status.py and
memory.py as text).

Agents pay for every character, so by default each result carries only what an
agent cites or acts on (file, heading, date, url or path, version and commit,
record fields the passage does not already show), and a later result of a file
already in the answer leaves out what its first result said about the file (a
page's chunks come together in the ranking); --verbose brings back every stored
field.

--max-tokens budgets the answer as printed (one line of JSON, every field counted),
so --metadata-only, which prints no chunk text, fits more results in the same budget.
"""

import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # memory.py list renders through here without loading the search libraries
    from ..search.retrieval import SearchResult

CHARS_PER_TOKEN = 4  # the usual estimate for English text, code and JSON

# Kept in the compact answer, in this order: where the passage is and how old, which version of the docs, a record's
# id (what an agent cites or passes on) and the rest of its bookkeeping, which its text never shows (parsing.py); and
# `suspect`, the warning that the passage reads like instructions to an AI (injection.py).
CITED_METADATA = ("heading", "date", "url", "path", "doc_version", "commit", "record_id", "loop_id", "iteration", "confidence",
                  "updated", "suspect")
# Fields of JSON records (and front matter tags), kept unless the passage already shows them.
RECORD_METADATA = ("type", "status", "category", "context", "tags")
# Facts about the file rather than the passage: said once per file in an answer, unless a later passage differs (a
# record's own date, a section's URL).
FILE_METADATA = ("path", "url", "date", "doc_version", "commit", "tags")


def result_payload(result: "SearchResult", metadata_only: bool = False, explain: bool = False, verbose: bool = False) -> dict:
    """The design's schema (query, results with rank, score, source, file, id, chunk, metadata,
    searched_collections, total_chunks_searched), extended with mode and truncated."""
    results = []
    said: dict[tuple, dict] = {}  # page -> what its first result's metadata said
    for rank, hit in enumerate(result.hits, start=1):
        file = hit.metadata.get("file", "")
        if verbose:
            metadata = dict(sorted(hit.metadata.items()))
        else:
            metadata = compact_metadata(hit.metadata, None if metadata_only else hit.text)  # what no printed chunk shows
            first = said.setdefault(hit.page, metadata)
            if first is not metadata:
                metadata = {key: value for key, value in metadata.items() if key not in FILE_METADATA or first.get(key) != value}
        item = {
            "rank": rank,
            "score": round(hit.score, 4 if verbose else 3),
            "source": hit.collection,
            "file": file,
            "id": hit.id,
            **({"kind": hit.metadata["page_kind"]} if "page_kind" in hit.metadata else {}),
            "chunk": None if metadata_only else hit.text,
            "metadata": metadata,
        }
        if explain:
            item["explain"] = hit.explain
        results.append(item)
    return {
        "query": result.query,
        "results": results,
        "searched_collections": result.searched,
        "total_chunks_searched": result.total_chunks,
        "mode": result.mode,
        "truncated": False,  # within_budget sets it
        **({"more": result.more} if result.more else {}),
        **({"reindex": result.reindex} if result.reindex else {}),
        **({"partial": result.partial} if result.partial else {}),
    }


def compact_metadata(metadata: dict, text: str | None) -> dict:
    """What an agent cites: no field that repeats another (root is in path, title in heading, source_id in file), no bookkeeping."""
    kept = {key: metadata[key] for key in CITED_METADATA if key in metadata}
    if "url" in kept:
        kept.pop("path", None)  # a git clone's path: the URL is what to cite
    for key in RECORD_METADATA:
        value = metadata.get(key)
        if value is not None and not (text and _shown(value, text)):
            kept[key] = value
    return kept


def _shown(value, text: str) -> bool:
    """Whether the passage already shows `value` as a field's value (a JSON record's chunk lists its fields as
    `key: value` lines): the type a file's name gave its records is not shown by their `decision: …` lines."""
    rendered = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return f": {rendered}" in text


def estimate_tokens(text: str) -> int:
    """About 4 characters a token for ASCII text (English, code, JSON); a token for any other character, which is what
    a tokenizer takes for CJK text and more than it takes for an accented letter (the budget errs on the short side)."""
    return math.ceil(_weight(text) / CHARS_PER_TOKEN)


def _weight(text: str) -> int:
    """`text` in quarter tokens: 1 for an ASCII character, 4 for any other; additive, so parts can be summed."""
    return len(text) if text.isascii() else len(text) + 3 * sum(1 for char in text if not char.isascii())


def one_line(payload) -> str:
    """JSON as an agent receives it (cli.to_json without a terminal, the MCP tools)."""
    return json.dumps(payload, ensure_ascii=False)


def answer_tokens(payload: dict) -> int:
    return estimate_tokens(one_line(payload))


def within_budget(payload: dict, max_tokens: int | None) -> dict:
    """The answer in about `max_tokens` tokens as printed: the leading results that fit, with "truncated" true; a first
    result too long alone keeps the beginning of its chunk that fits (it is always kept, even if its metadata alone
    overflows a tiny budget). The payload given is not changed."""
    if not max_tokens or not payload["results"] or answer_tokens(payload) <= max_tokens:
        return payload
    room = max_tokens * CHARS_PER_TOKEN - _weight(one_line({**payload, "results": [], "truncated": True}))
    kept: list[dict] = []
    for item in payload["results"]:
        cost = _weight(one_line(item)) + (2 if kept else 0)  # ", " between results
        if cost > room:
            break
        kept.append(item)
        room -= cost
    return {**payload, "results": kept or [_cut(payload["results"][0], room)], "truncated": True}


def _cut(item: dict, room: int) -> dict:
    """`item` with the longest beginning of its chunk that keeps it within `room` (quarter tokens), marked cut_to_budget
    in its explain."""
    if not item["chunk"]:
        return item
    cut = {**item, **({"explain": {**item["explain"], "cut_to_budget": True}} if "explain" in item else {})}
    low, high = 0, len(item["chunk"])
    while low < high:
        middle = (low + high + 1) // 2
        if _weight(one_line({**cut, "chunk": item["chunk"][:middle]})) <= room:
            low = middle
        else:
            high = middle - 1
    return {**cut, "chunk": item["chunk"][:low]}


def to_text(payload: dict) -> str:
    lines = []
    for item in payload["results"]:
        metadata = item["metadata"]
        where = " · ".join(
            part for part in (item["source"], metadata.get("url") or item["file"], metadata.get("heading"), metadata.get("date")) if part
        )
        lines.append(f"{item['rank']}. [{item['score']:.3f}] {where}")
        if "explain" in item:
            lines.append("   (" + ", ".join(f"{key} {value}" for key, value in item["explain"].items()) + ")")
        lines.extend("   " + line for line in (item["chunk"] or "").splitlines())
        lines.append("")
    if not payload["results"]:
        lines.append("no results")
    lines.append(f"searched {', '.join(payload['searched_collections'])}: {payload['total_chunks_searched']} chunks, {payload['mode']}")
    if payload["truncated"]:
        lines.append("(more results did not fit in --max-tokens)")
    if unseen := {name: count for name, count in payload.get("more", {}).items() if count}:
        lines.append("likely answers not shown: " + ", ".join(f"{name} {count} (--index {name})" for name, count in unseen.items()))
    return "\n".join(lines)


def document_text(found: dict) -> str:
    """get.py --format text."""
    where = found.get("url") or found.get("path") or found["file"]
    if "text" in found:
        part = f" · {found['section']}" if "section" in found else ""
        cut = (f"\n\n[characters {found['text_start']:,} to {found['text_end']:,} of {found['total_chars']:,}]"
               if found.get("truncated") else "")
        return f"{where}{part} ({found['from']})\n\n{found['text']}{cut}"
    return "\n\n".join(f"--- {where} · {item['heading']} [{item['index'] + 1}/{found['chunks']}]\n{item['text']}"
                       for item in found["shown"])


def status_text(report: dict) -> str:
    """status.py --format text."""
    lines = [f"data dir {report['data_dir']}"]
    for name, collection in report["collections"].items():
        if not collection["built"]:
            lines.append(f"{name}: not built ({collection['hint']})")
            continue
        age = collection["age_seconds"]
        where = collection.get("generation") or collection.get("server")
        lines.append(f"{name}: {collection['documents']} documents, {collection['chunks']} chunks, {where}"
                     + (f", published {age // 3600} h {age % 3600 // 60} min ago" if age is not None else "")
                     + (f", {collection['size_bytes'] / 1e6:.1f} MB ({collection['disk_bytes'] / 1e6:.1f} MB on disk)"
                        if collection.get("disk_bytes") is not None else ""))
        lines += [f"  large file {large['file']}: {large['chunks']} chunks, {large['share']:.0%} of them"
                  for large in collection.get("large_files", [])]
    for root in report["personal_roots"]:
        changes = root["changed_since_index"]
        changed = changes if isinstance(changes, str) else ", ".join(f"{count} {what.replace('_', ' ')}" for what, count in changes.items()
                                                                      if what != "examples")
        lines.append(f"root {root['root']}: {root['documents']} documents, last indexed {root['last_indexed'] or 'never'}"
                     + (f", last error: {root['last_error']}" if root["last_error"] else "")
                     + (f", {root['skipped_count']} skipped (e.g. {root['skipped'][0]['file']}: {root['skipped'][0]['reason']})"
                        if root["skipped"] else "")
                     + (f", {root['empty_count']} empty (e.g. {root['empty'][0]})" if root["empty"] else "")
                     + f"; on disk since: {changed}")
    sources = report["doc_sources"]
    if isinstance(sources, dict):  # the registry cannot be read
        lines.append(f"registry {sources['registry']}: {sources['error']} (hint: {sources['hint']})")
        sources = sources["indexed"]
    for source in sources:
        lines.append(f"source {source['id']}: {source['documents']} documents, last indexed {source.get('last_indexed') or 'never'}"
                     + (f", last run: {source['last_status']}" if source.get("last_status") not in (None, "ok") else "")
                     + (f", last error: {source['last_error']}" if source.get("last_error") else ""))
    searcher = report["resident"]
    lines.append(f"resident searcher: pid {searcher['pid']} since {searcher['since']}, {searcher['answers']} answers, "
                 f"{(searcher['rss_bytes'] or 0) / 1e6:.0f} MB" if searcher else "resident searcher: none running")
    timer = report["timer"]
    lines.append(f"timer: installed {timer['installed']}, last run {timer['last_run'] or 'never'}, next {timer['next_run'] or 'none'}")
    return "\n".join(lines)


MEMORY_PREVIEWS = {"removed": "would_remove", "updated": "would_update", "deleted": "would_delete"}


def memory_text(payload: dict) -> str:
    """memory.py --format text: the entries as a table, then what the command did."""
    rows = [row.get("after", row) for row in payload.get("entries") or ([payload["added"]] if "added" in payload else [])]
    lines = [f"{len(rows)} entries · {payload.get('memory_file', '')}",
             f"{'ID':<18} {'Type':<16} {'Loop':<10} {'Iter':>4}  {'Date':<10}  Lesson"]
    lines += [f"{str(row.get('id', '')):<18} {str(row.get('type', '')):<16} {str(row.get('loopId', '')):<10} "
              f"{str(row.get('iteration', '')):>4}  {str(row.get('createdAt', ''))[:10]:<10}  {row.get('lesson', '')}" for row in rows]
    lines += [f"{key}: {payload[key]}" for key in ("created", *MEMORY_PREVIEWS, *MEMORY_PREVIEWS.values(), "remaining", "backup",
                                                   "indexed", "reindex") if key in payload]
    lines += [f"{change['action']}: {change['file']}" + (f" (backup {change['backup']})" if change["backup"] else "")
              for change in payload.get("files", [])]
    return "\n".join(lines)
