#!/usr/bin/env python3
"""How long get.py's --max-chars answers are on the longest page of each docs-faq corpus (not part of the test suite).

`get.py FILE --max-chars 3000` once answered 39,210 characters on a long page (the text was cut, the outline of
every heading was not). For each corpus (../shared/bench/docs-faq, read in place, never copied) its longest page is
indexed alone as a local doc source in a throwaway data dir (eval_docs.index_corpus), then get.py --max-chars N reads
it twice: by its file (the page from its start) and by the id of its middle chunk (the page around that chunk). For
each read: the characters of the answer's JSON text fields (every string: text, outline, file, path…) and of the
whole answer as printed (one line of JSON). The bar: text fields at most 3,600 for --max-chars 3000. With
--baseline, another version's get.py reads the same index (its answer, or its exit code when it refuses the read).

    .venv/bin/python bench/get_bounds.py [--max-chars 3000] [--corpus helm ...] [--baseline DIR] [--json FILE]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "bench"))

from eval_docs import DEFAULT_DATA, SCRIPTS, index_corpus, read_questions  # noqa: E402

from rag_search.core.config import load_settings  # noqa: E402
from rag_search.store.records import StoredChunk  # noqa: E402
from rag_search.store.store import Store  # noqa: E402

BAR = 3600  # for --max-chars 3000


def longest_page(folder: Path) -> Path:
    return max((path for path in folder.rglob("*.md*") if path.is_file()), key=lambda path: path.stat().st_size)


def corpora(data: Path, wanted: list[str]) -> list[str]:
    return sorted({question["corpus"] for question in read_questions(data, "all", set(wanted))})


def page_and_middle_chunk(data: Path) -> tuple[str, StoredChunk, int]:
    """(file, the middle chunk, number of chunks) of the one page indexed in `data`."""
    store = Store.open_for_reading(load_settings(data_dir=str(data)), "docs")
    try:
        [record] = store.documents().values()
        chunks = store.document_chunks(record.key)
        return record.file, chunks[len(chunks) // 2], len(chunks)
    finally:
        store.close()


def text_fields(value) -> int:
    """Characters of every string in a JSON value (keys aside)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(text_fields(item) for item in value.values())
    if isinstance(value, list):
        return sum(text_fields(item) for item in value)
    return 0


def read(scripts: Path, data: Path, reference: str, max_chars: int, passage: str) -> dict:
    """Sizes of get.py's answer: {"text_fields", "json", "text", "outline", "outline_all", "passage"}, or {"exit": code}
    when it fails. "passage": whether the text shown holds the longest line of `passage`."""
    completed = subprocess.run([sys.executable, str(scripts / "get.py"), "--data-dir", str(data), reference,
                                "--max-chars", str(max_chars)], capture_output=True, text=True)
    if completed.returncode != 0:
        return {"exit": completed.returncode}
    answer = json.loads(completed.stdout)
    return {"text_fields": text_fields(answer), "json": len(completed.stdout.strip()), "text": len(answer["text"]),
            "outline": len(answer.get("outline", [])), "outline_all": len(answer.get("outline", []))
            + sum(answer.get("outline_omitted", {}).values()),
            "passage": max(passage.splitlines(), key=len).strip() in answer["text"]}


def shown(sizes: dict) -> str:
    if "exit" in sizes:
        return f"{'exit ' + str(sizes['exit']):>42}"
    return (f"{sizes['text_fields']:7,} {sizes['json']:7,} {sizes['text']:6,} "
            f"{sizes['outline']:4}/{sizes['outline_all']:<4} {'yes' if sizes['passage'] else 'no':>7}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the docs-faq folder (read in place)")
    parser.add_argument("--corpus", nargs="*", default=[], help="only these corpora (default: all)")
    parser.add_argument("--max-chars", type=int, default=3000)
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="another version's checkout: its get.py's answers too")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    rows = []
    print(f"get.py --max-chars {args.max_chars}: characters of the answer's text fields, of its JSON, of its text; "
          "outline headings kept/all; whether the text shows the middle chunk (its longest line)")
    print(f"{'corpus':<15} {'page':>9} {'chunks':>6}  {'read':<6} {'fields':>7} {'json':>7} {'text':>6} outline passage")
    with tempfile.TemporaryDirectory(prefix="rag-get-bounds-") as work:
        os.environ.update(HOME=work, RAG_SEARCH_RESIDENT="0")  # no user config; no searcher left running
        for corpus in corpora(args.data, args.corpus):
            folder = args.data / corpus
            page = longest_page(folder)
            index_corpus(corpus, folder, Path(work), glob=str(page.relative_to(folder)))
            data = Path(work) / corpus / "data"
            file, middle, chunks = page_and_middle_chunk(data)
            for how, reference in (("FILE", file), ("ID", middle.id)):
                sizes = read(SCRIPTS, data, reference, args.max_chars, middle.text)
                before = read(args.baseline / "scripts", data, reference, args.max_chars, middle.text) if args.baseline else None
                rows.append({"corpus": corpus, "page": str(page.relative_to(folder)), "bytes": page.stat().st_size,
                             "chunks": chunks, "read": how, **sizes, **({"baseline": before} if before else {})})
                print(f"{corpus:<15} {page.stat().st_size:9,} {chunks:6}  {how:<6} {shown(sizes)}"
                      + (f"   baseline {shown(before)}" if before else ""), flush=True)
    measured = [row for row in rows if "text_fields" in row]
    worst = max(measured, key=lambda row: row["text_fields"])
    print(f"largest text fields: {worst['text_fields']:,} ({worst['corpus']}, {worst['read']}); "
          f"{sum(row['text_fields'] <= BAR for row in measured)} of {len(rows)} reads within {BAR:,}; "
          f"{sum(row['passage'] for row in measured if row['read'] == 'ID')} of {len(rows) // 2} ID reads show their chunk")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
