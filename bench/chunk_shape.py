"""The shape of the chunks a documentation set becomes, before any embedding.

A chunk a reader can use carries the section it comes from, starts where a sentence
starts and holds prose, not the site generator's syntax. For each documentation set
(the three Sphinx trees of ../shared/bench/docs-rst and the 14 sets of docs-faq), the
files are read, parsed and chunked by the product's own loader, parser and chunker (the
redaction step is left out: it replaces values, not structure), and reported:

- headed: of the chunks of pages that have sections in their source (a heading line, by
  markup: `#` or an underlined title), the share whose heading path names more than the
  file (a page read as plain text has only its file name, a markdown page without a title
  its file's stem);
- mid-sentence: the share that continues a section (not its first chunk) and starts inside a
  sentence: after a word or a comma, not after a sentence end, a paragraph break, a line
  that ends one, a table row, a list item or a line of code; and "lower-case", the share that starts with
  a lower-case letter or a `,;:)` (a cruder count, which lower-case names like "pytest" and
  code lines inflate);
- markup: the share with site syntax left in (reStructuredText directives, roles, targets
  and title underlines; MkDocs anchors and includes; Hugo shortcodes; Docusaurus
  admonitions; MDX imports and JSX tags), with the count of each; and "in prose", the share
  with such syntax outside code fences (a code sample may show `.. note::` or `::` rightly);
- largest: the five largest pages' share of the set's chunks, and history: the share of
  chunks of release history (the product's page kind "changelog": changelogs, release
  notes, announcements, upgrade notes, by path or by a run of version headings);
- parse+chunk time and chunks per second; with --model-chunks N, the model's chunks per
  second on the set's first N chunks too (the ONNX graph an index uses), to set the parser's
  time beside the model's for the same chunks.

    .venv/bin/python bench/chunk_shape.py [--sets flask requests ...] [--model-chunks 500] [--json out.json]
"""

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path, PurePosixPath

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT / "scripts"))

from rag_search.model.embedding import TokenCounter, find_model  # noqa: E402
from rag_search.sources.files import folder_listing, walk_root  # noqa: E402
from rag_search.sources.specs import Selection  # noqa: E402
from rag_search.text import parsing  # noqa: E402
from rag_search.text.chunking import Chunker  # noqa: E402
from rag_search.text.page_kind import page_kind  # noqa: E402

SHARED = PROJECT.parent / "shared" / "bench"
RST_TREES = {"flask": "flask/docs", "requests": "requests/docs", "pytest": "pytest/doc/en"}
MAX_BYTES = 4 * 1024 * 1024

MARKUP = {
    "rst directive": re.compile(r"^\s*\.\. [\w:-]+::", re.MULTILINE),
    "rst role": re.compile(r":[\w+-]+(?::[\w+-]+)*:`"),
    "rst target or comment": re.compile(r"^\s*\.\. (?:_[^:]*:|\|[^|]+\|)", re.MULTILINE),
    "title underline": re.compile(r"^[ \t]*\S[^\n]*\n([=\-~^\"'`#*+])\1{3,}[ \t]*$", re.MULTILINE),  # under a text line
    "mkdocs anchor": re.compile(r"\{\s*#[\w-]+[^}]*\}"),
    "code include": re.compile(r"\{\*.*?\*\}|^\s*--8<--", re.MULTILINE),
    "hugo shortcode": re.compile(r"\{\{[<%].*?[%>]\}\}"),
    "admonition fence": re.compile(r"^:::", re.MULTILINE),
    "mdx import": re.compile(r"^import\s+[\w{},\s*]+\s+from\s+['\"]", re.MULTILINE),
    "jsx tag": re.compile(r"^\s*</?[A-Z]\w*[\s/>]", re.MULTILINE),
}
HEADING_LINE = re.compile(r"^#{1,6}\s+\S|^(\S.*)\n([=\-~^\"'`#*+])\2{2,}\s*$", re.MULTILINE)
LOWER_CASE = re.compile(r"^\s*[a-z,;:)]")
STARTS_WORDS = re.compile(r"[\w,;:)]")
SENTENCE_END = re.compile(r"[.!?][\"')\]*]*$")  # a sentence's end, and the quotes or brackets that close on it
CODE_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,}).*?^\1\2", re.MULTILINE | re.DOTALL)


def doc_sets(names: list[str] | None) -> dict[str, tuple[Path, str]]:
    """{name: (folder, glob)}: the docs-rst trees and the docs-faq sets, as eval_docs.py indexes the latter."""
    found = {name: (SHARED / "docs-rst" / tree, "**/*.rst") for name, tree in RST_TREES.items()}
    faq = SHARED / "docs-faq"
    corpora = sorted({json.loads(line)["corpus"] for line in (faq / "questions.jsonl").read_text().splitlines() if line})
    found |= {corpus: (faq / corpus, "**/*.md*") for corpus in corpora}
    return {name: found[name] for name in (names or found)}


def shape(folder: Path, glob: str, chunker: Chunker) -> tuple[dict, list]:
    """The set's figures, and its chunks."""
    walk = walk_root(folder, [], Selection((glob,)).selects)
    listing = folder_listing(walk, "shape", MAX_BYTES, quiet=True)
    chunks_of: dict[str, list] = {}
    prose: list[str] = []
    mid_sentence = 0
    headed_pages: set[str] = set()
    history_pages: set[str] = set()
    seconds = 0.0
    for listed in listing.documents:
        document = listed.load(None)
        started = time.perf_counter()
        parsed = parsing.parse(document.kind, document.text, PurePosixPath(document.file).name)
        pieces = [(section, chunker.chunk([section])) for section in parsed.sections]  # what chunk() does, by section
        seconds += time.perf_counter() - started
        chunks_of[document.file] = [chunk for _, chunks in pieces for chunk in chunks]
        prose.extend(text for section, chunks in pieces for text in _prose(section.text, chunks))
        mid_sentence += sum(_starts_mid_sentence(section.text, chunks) for section, chunks in pieces)
        if HEADING_LINE.search(CODE_FENCE.sub("", document.text)):
            headed_pages.add(document.file)
        if page_kind(document.file.removeprefix("shape/"), parsed, document.text) == "changelog":
            history_pages.add(document.file)
    report = _report(chunks_of, prose, mid_sentence, headed_pages, history_pages, seconds)
    return report, [chunk for chunks in chunks_of.values() for chunk in chunks]


def _starts_mid_sentence(section: str, chunks: list) -> int:
    """How many of a section's continuation chunks start inside a sentence (by what precedes them in the section)."""
    section, fences = section.strip(), [match.span() for match in CODE_FENCE.finditer(section.strip())]
    count, at = 0, 0
    for chunk in chunks[1:]:
        start = section.find(chunk.text, at)
        if start < 0:
            continue
        at = start + 1
        before = section[:start].rstrip(" \t")
        in_code = any(a < start < b for a, b in fences)
        if before.endswith("\n"):
            line_before = before.rstrip().rsplit("\n", 1)[-1]
            if in_code or not chunk.text[0].islower() or before.endswith("\n\n") or line_before[-1:] in ".!?:" \
                    or "|" in line_before:  # a table's next row
                continue
        elif SENTENCE_END.search(before) or in_code or not STARTS_WORDS.match(chunk.text):  # e.g. a table's `|---|`
            continue
        count += 1
    return count


def _prose(section: str, chunks: list) -> list[str]:
    """Each chunk's text outside the code fences of its section (a chunk may start or end inside one)."""
    section = section.strip()
    fences = [match.span() for match in CODE_FENCE.finditer(section)]
    texts, at = [], 0
    for chunk in chunks:
        start = section.find(chunk.text, at)
        if start < 0:  # not the section's text verbatim: less its own fences
            texts.append(CODE_FENCE.sub("", chunk.text))
            continue
        at, end, kept = start + 1, start + len(chunk.text), []
        for fence_start, fence_end in fences:
            if fence_start < end and fence_end > start:
                kept.append(section[start:fence_start])
                start = fence_end
        texts.append("".join(kept) + section[start:end])
    return texts


def _report(chunks_of: dict[str, list], prose: list[str], mid_sentence: int, headed_pages: set[str], history_pages: set[str],
            seconds: float) -> dict:
    every = [(file, chunk) for file, chunks in chunks_of.items() for chunk in chunks]
    in_headed = [(file, chunk) for file, chunk in every if file in headed_pages]
    headed = sum(chunk.heading not in ("", PurePosixPath(file).name, PurePosixPath(file).stem) for file, chunk in in_headed)
    markup = Counter(name for _, chunk in every for name, pattern in MARKUP.items() if pattern.search(chunk.text))
    with_markup = sum(any(pattern.search(chunk.text) for pattern in MARKUP.values()) for _, chunk in every)
    in_prose = Counter(name for text in prose for name, pattern in MARKUP.items() if pattern.search(text))
    with_markup_in_prose = sum(any(pattern.search(text) for pattern in MARKUP.values()) for text in prose)
    sizes = sorted((len(chunks) for chunks in chunks_of.values()), reverse=True)
    history = sum(len(chunks_of[file]) for file in history_pages)
    total = max(1, len(every))
    return {
        "pages": len(chunks_of), "chunks": len(every),
        "headed": round(headed / max(1, len(in_headed)), 3),
        "mid_sentence": round(mid_sentence / total, 3),
        "lower_case": round(sum(bool(LOWER_CASE.match(chunk.text)) for _, chunk in every) / total, 3),
        "markup": round(with_markup / total, 3), "markup_kinds": dict(markup.most_common()),
        "markup_in_prose": round(with_markup_in_prose / total, 3), "markup_in_prose_kinds": dict(in_prose.most_common()),
        "largest_5": round(sum(sizes[:5]) / total, 3), "history": round(history / total, 3),
        "seconds": round(seconds, 2), "chunks_per_second": round(len(every) / max(seconds, 1e-9)),
    }


def model_speed(chunks: list, embedding: str) -> float:
    """The model's chunks per second on these chunks, as an index run embeds them (the ONNX graph, in batches)."""
    import tempfile

    from rag_search.model.embedding import OnnxEmbedder
    from rag_search.model.onnx_export import ensure_export

    with tempfile.TemporaryDirectory() as data_dir:
        embedder = OnnxEmbedder(ensure_export(Path(data_dir), find_model()), embedding)
        embedder.embed([chunk.embed_text for chunk in chunks[:16]])  # the first call sets the session up
        started = time.perf_counter()
        embedder.embed([chunk.embed_text for chunk in chunks])
        return len(chunks) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="*", help="doc sets by name (default: all 17)")
    parser.add_argument("--model-chunks", type=int, default=0, metavar="N",
                        help="also time the model on each set's first N chunks (0: no model)")
    parser.add_argument("--embedding", choices=["int8", "float"], default="int8", help="the graph --model-chunks runs")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    chunker = Chunker(TokenCounter(find_model()))
    figures = {}
    for name, (folder, glob) in doc_sets(args.sets).items():
        figures[name], chunks = shape(folder, glob, chunker)
        if args.model_chunks:
            figures[name]["model_chunks_per_second"] = round(model_speed(chunks[: args.model_chunks], args.embedding))
    print("| set | pages | chunks | headed | mid-sentence | lower-case | markup | in prose | largest 5 | history "
          "| parse+chunk s | chunks/s | model chunks/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, row in figures.items():
        print(f"| {name} | {row['pages']} | {row['chunks']} | {row['headed']:.1%} | {row['mid_sentence']:.1%} | {row['lower_case']:.1%} "
              f"| {row['markup']:.1%} "
              f"| {row['markup_in_prose']:.1%} | {row['largest_5']:.1%} | {row['history']:.1%} | {row['seconds']} "
              f"| {row['chunks_per_second']} | {row.get('model_chunks_per_second', '')} |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
