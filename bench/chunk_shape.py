"""The shape of the chunks a documentation set becomes, before any embedding.

A chunk a reader can use carries the section it comes from, starts where a sentence
starts and holds prose, not the site generator's syntax. For each documentation set
(the three Sphinx trees of ../shared/bench/docs-rst and the 14 sets of docs-faq), the
files are read, parsed and chunked by the product's own loader, parser and chunker (the
redaction step is left out: it replaces values, not structure), and reported:

- headed: of the chunks of pages that have sections in their source (a heading line, by
  markup: `#` or an underlined title), the share whose heading path names more than the
  file (a page read as plain text has only its file name);
- mid-sentence: the share that starts with a lower-case letter or a `,;:)`;
- markup: the share with site syntax left in its prose, code blocks aside (reStructuredText directives, roles, targets
  and title underlines; MkDocs anchors and includes; Hugo shortcodes; Docusaurus
  admonitions; MDX imports and JSX tags), with the count of each;
- largest: the five largest pages' share of the set's chunks, and history: the share of
  pages about releases (changelog, release notes, history, announcements, news);
- parse+chunk time and chunks per second (no model runs here).

    .venv/bin/python bench/chunk_shape.py [--sets flask requests ...] [--json out.json]
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
from rag_search.sources.specs import glob_spec  # noqa: E402
from rag_search.text import parsing  # noqa: E402
from rag_search.text.chunking import Chunker  # noqa: E402

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
MID_SENTENCE = re.compile(r"^\s*[a-z,;:)]")
HISTORY = re.compile(r"changelog|change-log|changes|release|history|announce|news|whatsnew|what-s-new", re.IGNORECASE)
FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
CODE_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1", re.MULTILINE | re.DOTALL)


def doc_sets(names: list[str] | None) -> dict[str, tuple[Path, str]]:
    """{name: (folder, glob)}: the docs-rst trees and the docs-faq sets, as eval_docs.py indexes the latter."""
    found = {name: (SHARED / "docs-rst" / tree, "**/*.rst") for name, tree in RST_TREES.items()}
    faq = SHARED / "docs-faq"
    corpora = sorted({json.loads(line)["corpus"] for line in (faq / "questions.jsonl").read_text().splitlines() if line})
    found |= {corpus: (faq / corpus, "**/*.md*") for corpus in corpora}
    return {name: found[name] for name in (names or found)}


def shape(folder: Path, glob: str, chunker: Chunker) -> dict:
    walk = walk_root(folder, [], glob_spec(glob))
    listing = folder_listing(walk, "shape", MAX_BYTES, quiet=True)
    chunks_of: dict[str, list] = {}
    headed_pages: set[str] = set()
    seconds = 0.0
    for listed in listing.documents:
        document = listed.load(None)
        started = time.perf_counter()
        parsed = parsing.parse(document.kind, document.text, PurePosixPath(document.file).name)
        chunks_of[document.file] = chunker.chunk(parsed.sections)
        seconds += time.perf_counter() - started
        if HEADING_LINE.search(CODE_FENCE.sub("", document.text)):
            headed_pages.add(document.file)
    return _report(chunks_of, headed_pages, seconds)


def _report(chunks_of: dict[str, list], headed_pages: set[str], seconds: float) -> dict:
    every = [(file, chunk) for file, chunks in chunks_of.items() for chunk in chunks]
    in_headed = [(file, chunk) for file, chunk in every if file in headed_pages]
    headed = sum(chunk.heading not in ("", PurePosixPath(file).name) for file, chunk in in_headed)
    prose = [_prose(chunk.text) for _, chunk in every]
    markup = Counter(name for text in prose for name, pattern in MARKUP.items() if pattern.search(text))
    with_markup = sum(any(pattern.search(text) for pattern in MARKUP.values()) for text in prose)
    sizes = sorted((len(chunks) for chunks in chunks_of.values()), reverse=True)
    history = sum(len(chunks) for file, chunks in chunks_of.items() if HISTORY.search(file))
    total = max(1, len(every))
    return {
        "pages": len(chunks_of), "chunks": len(every),
        "headed": round(headed / max(1, len(in_headed)), 3),
        "mid_sentence": round(sum(bool(MID_SENTENCE.match(chunk.text)) for _, chunk in every) / total, 3),
        "markup": round(with_markup / total, 3), "markup_kinds": dict(markup.most_common()),
        "largest_5": round(sum(sizes[:5]) / total, 3), "history": round(history / total, 3),
        "seconds": round(seconds, 2), "chunks_per_second": round(len(every) / max(seconds, 1e-9)),
    }


def _prose(text: str) -> str:
    """A chunk less its code: fenced blocks, and a fence the chunk ends inside. Code is no markup left in prose."""
    kept, fence = [], None
    for line in text.split("\n"):
        opening = FENCE_LINE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
        elif fence is None:
            kept.append(line)
    return "\n".join(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="*", help="doc sets by name (default: all 17)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    chunker = Chunker(TokenCounter(find_model()))
    figures = {name: shape(folder, glob, chunker) for name, (folder, glob) in doc_sets(args.sets).items()}
    print("| set | pages | chunks | headed | mid-sentence | markup | largest 5 | history | chunks/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, row in figures.items():
        print(f"| {name} | {row['pages']} | {row['chunks']} | {row['headed']:.1%} | {row['mid_sentence']:.1%} | {row['markup']:.1%} "
              f"| {row['largest_5']:.1%} | {row['history']:.1%} | {row['chunks_per_second']} |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
