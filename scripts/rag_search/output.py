"""Rendering search results: the JSON document agents read, or text for people."""

import json

from .retrieval import SearchResult

# Stored for filtering and bookkeeping, not worth an agent's context.
HIDDEN_METADATA = {"source", "file", "date_ts", "content_hash"}


def result_payload(result: SearchResult, metadata_only: bool = False, explain: bool = False) -> dict:
    """The design's schema (query, results with rank, score, source, file, chunk, metadata,
    searched_collections, total_chunks_searched), extended with mode and truncated."""
    results = []
    for rank, hit in enumerate(result.hits, start=1):
        item = {
            "rank": rank,
            "score": round(hit.score, 4),
            "source": hit.collection,
            "file": hit.metadata.get("file", ""),
            "chunk": None if metadata_only else hit.text,
            "metadata": _public_metadata(hit.metadata),
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
        "truncated": result.truncated,
    }


def to_json(payload: dict) -> str:
    return json.dumps(payload, ensure_ascii=False, indent=2)


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
    return "\n".join(lines)


def _public_metadata(metadata: dict) -> dict:
    return {key: metadata[key] for key in sorted(metadata) if key not in HIDDEN_METADATA}
