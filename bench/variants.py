"""Search settings named on a benchmark's command line: NAME:field=value,field=value (retrieval.SearchOptions fields)."""

import dataclasses

from rag_search.search.retrieval import SearchOptions


def parse_variant(text: str, base: SearchOptions) -> tuple[str, SearchOptions]:
    """NAME:field=value,... -> (NAME, `base` with those fields changed); numbers are read as int or float."""
    name, _, settings = text.partition(":")
    fields = {field.name for field in dataclasses.fields(SearchOptions)}
    values: dict = {}
    for item in filter(None, settings.split(",")):
        key, _, value = item.partition("=")
        if key not in fields:
            raise SystemExit(f"variant {text}: no SearchOptions field {key!r} (fields: {', '.join(sorted(fields))})")
        values[key] = value if key == "mode" else float(value) if any(c in value for c in ".e") else int(value)
    return name, dataclasses.replace(base, **values)
