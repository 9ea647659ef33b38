#!/usr/bin/env python3
"""How the product scales with the docs index: the same measurements at several sizes, in one run (not a test).

Generates realistic markdown documentation (front matter, `##`/`###` sections,
prose, lists, code blocks, tables, links) in 12 local doc sources, each a docs
tree, plus a personal corpus of a few hundred notes. Prose comes from a word
bigram chain over real documentation read in place (../shared/bench/docs-faq by
default), deterministic from --seed, so term statistics look like docs while no
two chunks repeat (the indexer reuses the vector of equal text: repeats would
fake the build speed; the bench checks that they do not happen).

One build serves every size: the corpus grows by new pages and index_docs.py
indexes the added part. At each size, in fresh processes through the scripts:
the build (seconds, chunks/s of the added chunks, peak RSS), disk size and bytes
per chunk, cold search.py p50/p95 and peak RSS, in-process query p50 (Searcher),
refresh with nothing changed (docs and personal), one doc file changed and one
personal note changed (each refresh three times: the median and the range).

    .venv/bin/python bench/bench_scale.py [--sizes 20000,100000,200000] [--work DIR] [--runs 30] [--json FILE]

--work keeps corpus, index and the figures of measured sizes (state.json) for the
next invocation: built pages are not built again, and a size measured before is
reported from the file. Pages per size come from a small sample run (chunks per
page), then from the chunks the last build made.
"""

import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_speed import PROJECT, SCRIPTS, child_peak, in_process_query_ms, warm_and_cold

from rag_search.core.config import load_settings
from rag_search.store.store import Store

VOCABULARY = PROJECT.parent / "shared" / "bench" / "docs-faq"
SOURCES = 12
SAMPLE_PAGES = 48
PERSONAL_NOTES = 300
REFRESH_RUNS = 3  # each refresh is timed this often and the median shown: a single run on a shared machine is noise
QUERIES = [
    "how do I rotate the TLS certificate of the controller",
    "configure retries and timeouts for upstream requests",
    "why does the pod restart after upgrading the chart",
    "set resource limits for the webhook deployment",
    "migrate the configuration from the previous major version",
    "enable metrics and scrape them with Prometheus",
    "debug DNS resolution failures inside the cluster",
    "what does the reconcile interval option do",
]


def log(message: str) -> None:
    print(f"[bench_scale {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Prose:
    """Sentences from a word bigram chain over real documentation: the words of real docs and their neighbours, in new
    sentences."""

    WORD = re.compile(r"[A-Za-z][A-Za-z0-9'/.-]*[A-Za-z0-9]|[A-Za-z]")

    def __init__(self, folder: Path):
        self.successors: dict[str, list[str | None]] = {}
        self.starts: list[str] = []
        for path in sorted([*folder.rglob("*.md"), *folder.rglob("*.mdx")]):
            for sentence in re.split(r"(?<=[.!?])\s+", prose_of(path.read_text(errors="replace"))):
                words = self.WORD.findall(sentence)
                if len(words) < 4:
                    continue
                self.starts.append(words[0])
                for word, following in zip(words, [*words[1:], None], strict=True):
                    self.successors.setdefault(word, []).append(following)
        if len(self.starts) < 1000:
            sys.exit(f"too little prose under {folder} to build a vocabulary (--vocabulary: a folder of markdown docs)")
        self.words = sorted({w.lower() for w in self.successors if w.isalpha() and 4 <= len(w) <= 12})

    def sentence(self, rng: random.Random, longest: int = 26) -> str:
        words = [rng.choice(self.starts)]
        while len(words) < longest:
            following = rng.choice(self.successors[words[-1]])
            if following is None:
                if len(words) >= 7:
                    break
                following = rng.choice(self.starts)
            words.append(following)
        return words[0][:1].upper() + " ".join(words)[1:] + "."

    def paragraph(self, rng: random.Random, fewest: int = 2, most: int = 5) -> str:
        return " ".join(self.sentence(rng) for _ in range(rng.randint(fewest, most)))

    def title(self, rng: random.Random) -> str:
        return self.sentence(rng, longest=rng.randint(2, 6)).rstrip(".")

    def name(self, rng: random.Random, parts: int = 2, joiner: str = "-") -> str:
        return joiner.join(rng.choice(self.words) for _ in range(parts))


def prose_of(text: str) -> str:
    """The running text of a markdown file: no front matter, code, tables, HTML or link targets."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(("|", "<", "{{", "#", "import ", "    "))]
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", "\n".join(lines))
    return re.sub(r"[`*_>]", "", text)


class Corpus:
    """The generated documentation: page `number` is a function of the seed and the number alone, so the corpus
    grows by pages and a rerun writes the same text."""

    def __init__(self, prose: Prose, seed: int, root: Path):
        self.prose, self.seed, self.root = prose, seed, root
        self.areas = []  # per source: {area: [topics]}
        for source in range(SOURCES):
            rng = random.Random(f"{seed}:source:{source}")
            self.areas.append({prose.name(rng, 1): [prose.name(rng, 1) for _ in range(5)] for _ in range(6)})

    def source_folder(self, source: int) -> Path:
        return self.root / f"docs-{source:02d}"

    def page_path(self, number: int) -> Path:
        """The page's path inside its source (source = number % SOURCES)."""
        rng = random.Random(f"{self.seed}:path:{number}")
        area, topics = rng.choice(sorted(self.areas[number % SOURCES].items()))
        return Path("docs", area, rng.choice(topics), f"{self.prose.name(rng)}-{number // SOURCES}.md")

    def write_pages(self, start: int, stop: int, root: Path | None = None) -> None:
        for number in range(start, stop):
            path = (root or self.source_folder(number % SOURCES)) / self.page_path(number)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.page(number))

    def page(self, number: int) -> str:
        prose, rng = self.prose, random.Random(f"{self.seed}:page:{number}")
        tool = prose.name(random.Random(f"{self.seed}:tool:{number % SOURCES}"), 1)
        parts = [f'---\ntitle: "{prose.title(rng)}"\ndescription: "{prose.sentence(rng)}"\nweight: {rng.randint(1, 90)}\n---',
                 self.linked(prose.paragraph(rng), number, rng)]
        for _ in range(rng.randint(3, 7)):
            parts.append(f"## {prose.title(rng)}\n\n{self.section(number, rng, tool)}")
            for _ in range(rng.choice((0, 0, 1, 2))):
                parts.append(f"### {prose.title(rng)}\n\n{self.section(number, rng, tool)}")
        return "\n\n".join(parts) + "\n"

    def section(self, number: int, rng: random.Random, tool: str) -> str:
        blocks = [self.linked(self.prose.paragraph(rng), number, rng)]
        for kind in rng.sample(["list", "code", "table", "prose"], k=rng.choice((0, 1, 1, 2))):
            if kind == "list":
                blocks.append("\n".join(f"- {self.prose.sentence(rng, longest=12)}" for _ in range(rng.randint(2, 6))))
            elif kind == "code":
                blocks.append(code_block(self.prose, rng, tool))
            elif kind == "table":
                blocks.append(table(self.prose, rng))
            else:
                blocks.append(self.prose.paragraph(rng, 1, 3))
        return "\n\n".join(blocks)

    def linked(self, paragraph: str, number: int, rng: random.Random) -> str:
        """The paragraph, sometimes with a sentence that links to an earlier page of the same source or to a site."""
        if number >= SOURCES and rng.random() < 0.5:
            target = number - SOURCES * rng.randint(1, min(number // SOURCES, 200))
            here = self.page_path(number).parent
            link = os.path.relpath(self.page_path(target), here) + (f"#{self.prose.name(rng)}" if rng.random() < 0.3 else "")
            paragraph += f" See [{self.prose.title(rng).lower()}]({link}) for details."
        elif rng.random() < 0.2:
            site = f"https://{self.prose.name(rng, 1)}.example.org/{self.prose.name(rng)}/"
            paragraph += f" The [{self.prose.title(rng).lower()}]({site}) guide covers it."
        return paragraph


def code_block(prose: Prose, rng: random.Random, tool: str) -> str:
    kind = rng.choice(["yaml", "shell", "json"])
    if kind == "yaml":
        keys = "\n".join(f"  {prose.name(rng, 2, '')}: {rng.choice([prose.name(rng), str(rng.randint(1, 600)), 'true'])}"
                         for _ in range(rng.randint(2, 6)))
        body = (f"apiVersion: {prose.name(rng, 1)}.example.io/v1\nkind: {prose.name(rng, 1).title()}\n"
                f"metadata:\n  name: {prose.name(rng)}\nspec:\n{keys}")
    elif kind == "shell":
        body = "\n".join(f"{tool} {prose.name(rng, 1)} {prose.name(rng)} --{prose.name(rng)}={prose.name(rng, 1)}"
                         for _ in range(rng.randint(1, 4)))
    else:
        body = json.dumps({prose.name(rng, 2, "_"): prose.name(rng) for _ in range(rng.randint(2, 5))}, indent=2)
    return f"```{kind}\n{body}\n```"


def table(prose: Prose, rng: random.Random) -> str:
    rows = [f"| `{prose.name(rng, 2, '')}` | {rng.choice(['string', 'bool', 'int', 'duration', 'list'])} | `{prose.name(rng, 1)}` | "
            f"{prose.sentence(rng, longest=14)} |" for _ in range(rng.randint(3, 7))]
    return "\n".join(["| Field | Type | Default | Description |", "|---|---|---|---|", *rows])


def personal_notes(prose: Prose, seed: int, root: Path) -> None:
    """A few hundred dated, tagged notes: the personal corpus whose refreshes are measured beside the docs."""
    for number in range(PERSONAL_NOTES):
        rng = random.Random(f"{seed}:note:{number}")
        tags = ", ".join(prose.name(rng, 1) for _ in range(rng.randint(1, 3)))
        sections = "\n\n".join(f"## {prose.title(rng)}\n\n{prose.paragraph(rng, 1, 4)}" for _ in range(rng.randint(1, 4)))
        path = root / f"topic-{number % 20:02d}" / f"note-{number:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: {prose.title(rng)}\ndate: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}\n"
                        f"tags: [{tags}]\n---\n\n{prose.paragraph(rng)}\n\n{sections}\n")


class Bench:
    """The work folder: corpus, registry, data dir and state.json (pages written, chunks per page, each size's figures)."""

    def __init__(self, work: Path, seed: int, vocabulary: Path):
        self.work, self.data, self.registry = work, work / "data", work / "sources.json"
        self.notes = work / "notes"
        self.state_file = work / "state.json"
        self.state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {
            "seed": seed, "pages": 0, "chunks": 0, "changes": 0, "built": 0, "builds": {}, "results": {}}
        if self.state["seed"] != seed:
            sys.exit(f"{work} holds a corpus of seed {self.state['seed']}, not {seed}: pass that seed or another --work")
        log(f"reading the vocabulary from {vocabulary}")
        self.prose = Prose(vocabulary)
        self.corpus = Corpus(self.prose, seed, work / "corpus")
        self.env = environment(work, self.data, self.registry)

    def save(self) -> None:
        self.state_file.write_text(json.dumps(self.state, indent=2))

    def script(self, name: str, *args: str) -> list[str]:
        return [sys.executable, str(SCRIPTS / name), *args]

    def prepare(self) -> None:
        """Chunks per page from a sample run, the doc sources registered, the personal notes indexed: once per work folder."""
        if "chunks_per_page" not in self.state:
            self.state["chunks_per_page"] = self.sample_chunks_per_page()
            self.save()
        if not self.registry.exists():
            for source in range(SOURCES):
                folder = self.corpus.source_folder(source)
                folder.mkdir(parents=True, exist_ok=True)
                subprocess.run(self.script("add_doc_source.py", "--id", folder.name, "--name", f"Generated docs {source:02d}",
                                           "--type", "local", "--path", str(folder), "--quiet"),
                               env=self.env, check=True, stdout=subprocess.DEVNULL)
        if "personal" not in self.state:
            personal_notes(self.prose, self.state["seed"], self.notes)
            seconds, _, output = child_peak(self.script("index_personal.py", "--quiet", str(self.notes)), self.env)
            self.state["personal"] = {"notes": PERSONAL_NOTES, "chunks": json.loads(output)["chunks"], "build_s": round(seconds, 1)}
            log(f"personal corpus: {self.state['personal']}")
            self.save()

    def sample_chunks_per_page(self) -> float:
        """Index the first pages in a throwaway data dir: how many chunks a generated page makes."""
        sample = self.work / "sample"
        shutil.rmtree(sample, ignore_errors=True)
        self.corpus.write_pages(0, SAMPLE_PAGES, root=sample / "docs")
        env = environment(sample, sample / "data", sample / "sources.json")
        subprocess.run(self.script("add_doc_source.py", "--id", "sample", "--name", "Sample", "--type", "local",
                                   "--path", str(sample / "docs"), "--quiet"), env=env, check=True, stdout=subprocess.DEVNULL)
        _, _, output = child_peak(self.script("index_docs.py", "--all", "--quiet"), env)
        chunks = sum(summary["chunks"] for summary in json.loads(output)["sources"])
        shutil.rmtree(sample)
        log(f"sample run: {SAMPLE_PAGES} pages made {chunks} chunks")
        return chunks / SAMPLE_PAGES

    def grow(self, target: int) -> dict:
        """Add pages until the docs index holds about `target` chunks and index them: the build's figures. Pages an
        interrupted invocation wrote are counted, not written again."""
        state = self.state
        built_pages = state["builds"][str(state["built"])]["pages"] if state["built"] else 0
        pages = built_pages + max(0, math.ceil((target - state["chunks"]) / state["chunks_per_page"]))
        if pages > state["pages"]:
            log(f"writing pages {state['pages']} to {pages - 1}")
            self.corpus.write_pages(state["pages"], pages)
            state["pages"] = pages
            self.save()
        pages = state["pages"]
        log(f"indexing to about {target} chunks (index_docs.py --all)")
        seconds, peak, output = child_peak(self.script("index_docs.py", "--all", "--quiet"), self.env)
        summaries = json.loads(output)["sources"]
        added, embedded = sum(s["chunks_added"] for s in summaries), sum(s["embedded"] for s in summaries)
        if embedded < 0.98 * added:
            sys.exit(f"only {embedded} of {added} new chunks were embedded: the generated text repeats, so the build speed would be fake")
        state["chunks"] = sum(s["chunks"] for s in summaries)
        state["chunks_per_page"] = state["chunks"] / pages
        build = {"pages": pages, "chunks": state["chunks"], "added_chunks": added, "build_s": round(seconds, 1),
                 "chunks_per_second": round(added / seconds, 1), "build_peak_rss_mb": round(peak), "load_after_build": load()}
        log(f"built: {build}")
        return build

    def change(self, path: Path) -> None:
        """Append a section no run has seen to a file."""
        self.state["changes"] += 1
        rng = random.Random(f"{self.state['seed']}:change:{self.state['changes']}")
        with path.open("a") as handle:
            handle.write(f"\n## {self.prose.title(rng)}\n\n{self.prose.paragraph(rng)}\n")
        self.save()

    def timed(self, command: list[str]) -> tuple[float, dict]:
        seconds, _, output = child_peak(command, self.env)
        return round(seconds, 2), json.loads(output)

    def refreshes(self, row: dict, name: str, command: list[str], changed: Path | None = None) -> dict:
        """Time `command` REFRESH_RUNS times, each after a change to `changed` if given: the median and every run go
        into `row`; returns the last run's summary."""
        seconds, summary = [], {}
        for _ in range(REFRESH_RUNS):
            if changed is not None:
                self.change(changed)
            took, summary = self.timed(command)
            seconds.append(took)
        row[f"{name}_s"], row[f"{name}_runs"] = statistics.median(seconds), seconds
        return summary

    def measure(self, runs: int) -> dict:
        """Disk, refreshes and searches of the index as it is now."""
        row = {"distinct_chunk_texts": distinct_chunk_texts(self.data)}
        if row["distinct_chunk_texts"] < 0.98 * self.state["chunks"]:
            sys.exit(f"{row['distinct_chunk_texts']} distinct texts among {self.state['chunks']} chunks: the generated text repeats")
        log("refreshes: nothing changed, one doc file changed, one note changed")
        docs, personal = self.script("index_docs.py", "--all", "--quiet"), self.script("index_personal.py", "--quiet")
        summary = self.refreshes(row, "noop_docs", docs)
        row["noop_docs_published"] = summary["published"]
        summary = self.refreshes(row, "noop_personal", personal)
        row["noop_personal_published"] = summary["published"]
        page = self.state["pages"] // 2
        summary = self.refreshes(row, "one_doc_changed", docs, self.corpus.source_folder(page % SOURCES) / self.corpus.page_path(page))
        row["one_doc_embedded"] = sum(s["embedded"] for s in summary["sources"])
        summary = self.refreshes(row, "one_note_changed", personal, self.notes / "topic-07" / "note-107.md")
        row["one_note_embedded"] = summary["embedded"]
        log(f"search.py with the resident searcher and cold, {runs} fresh processes each")
        row["warm_search"], row["cold_search"] = warm_and_cold(self.script("search.py", QUERIES[0]), self.env, runs)
        log("in-process queries")
        row["in_process_query_ms"] = in_process_query_ms(self.data, "all", QUERIES)
        row.update(disk(self.data, self.state["chunks"]))  # after the refreshes: at rest, as a user's index is
        row["load_after_measuring"] = load()
        return row


def environment(home: Path, data: Path, registry: Path) -> dict:
    """This process's environment without the user's rag-search settings, pointed at the bench's folders."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAG_SEARCH_")}
    return {**env, "HOME": str(home), "RAG_SEARCH_HOME": str(data), "RAG_SEARCH_SOURCES": str(registry)}


def load() -> float:
    """The 1-minute load average: on a shared machine, how much the figures just taken had to share the 2 cores."""
    return round(os.getloadavg()[0], 1)


def distinct_chunk_texts(data: Path) -> int:
    store = Store.open_for_reading(load_settings(data_dir=str(data)), "docs")
    try:
        return len({chunk.text for chunk in store.all_chunks()})
    finally:
        store.close()


def disk(data: Path, chunks: int) -> dict:
    """Bytes on disk (allocated blocks, hard links once): the current docs generation (per chunk), the docs folder (with
    the generation kept for the next small refresh, and files of unpublished runs) and the whole data dir."""
    docs = data / "docs"
    current = docs / "generations" / (docs / "CURRENT").read_text().strip()
    seen: set[tuple[int, int]] = set()
    sizes = {"current": 0, "docs": 0, "all": 0}
    for path in data.rglob("*"):
        status = path.lstat()
        if (status.st_dev, status.st_ino) in seen:
            continue
        seen.add((status.st_dev, status.st_ino))
        sizes["all"] += status.st_blocks * 512
        sizes["docs"] += status.st_blocks * 512 if path.is_relative_to(docs) else 0
        sizes["current"] += status.st_blocks * 512 if path.is_relative_to(current) else 0
    return {"docs_index_mb": round(sizes["current"] / 1e6, 1), "bytes_per_chunk": round(sizes["current"] / chunks),
            "docs_folder_mb": round(sizes["docs"] / 1e6, 1), "data_dir_mb": round(sizes["all"] / 1e6, 1)}


ROWS = [  # (what, goal at 200k, the cell from a size's figures)
    ("pages / chunks", "", lambda r: f"{r['pages']:,} / {r['chunks']:,}"),
    ("build of the added chunks: time, chunks/s", "≥ 90 chunks/s",
     lambda r: f"{r['build_s']} s for {r['added_chunks']:,}, {r['chunks_per_second']}/s"),
    ("build peak RSS", "≤ 1 GB", lambda r: f"{r['build_peak_rss_mb']} MB"),
    ("docs index on disk, bytes per chunk; docs folder at rest", "report",
     lambda r: f"{r['docs_index_mb']} MB, {r['bytes_per_chunk']:,} B" + (f"; {r['docs_folder_mb']} MB" if "docs_folder_mb" in r else "")),
    ("warm `search.py` p50 / p95 (resident searcher)", "p50 ≤ 150 ms",
     lambda r: f"{r['warm_search']['p50_s']} / {r['warm_search']['p95_s']} s" if "warm_search" in r else "not measured"),
    ("cold `search.py` p50 / p95", "p50 ≤ 0.8 s", lambda r: f"{r['cold_search']['p50_s']} / {r['cold_search']['p95_s']} s"),
    ("cold `search.py` peak RSS", "≤ 400 MB", lambda r: f"{r['cold_search']['peak_rss_mb']} MB"),
    ("in-process query p50 / p95", "", lambda r: f"{r['in_process_query_ms']['p50']} / {r['in_process_query_ms']['p95']} ms"),
    ("no-op refresh, docs (`index_docs.py --all`)", "≤ 1 s", lambda r: refresh(r, "noop_docs") + published(r["noop_docs_published"])),
    ("no-op refresh, personal", "≤ 1 s", lambda r: refresh(r, "noop_personal") + published(r["noop_personal_published"])),
    ("one doc file changed", "≤ 3 s", lambda r: refresh(r, "one_doc_changed")),
    ("one personal note changed", "≤ 2 s", lambda r: refresh(r, "one_note_changed")),
    ("load average (1 min) after the build / after measuring", "", lambda r: f"{r['load_after_build']} / {r['load_after_measuring']}"),
]


def refresh(row: dict, name: str) -> str:
    """The median of a refresh's runs and their range (rows of earlier versions of this bench have one run)."""
    runs = row.get(f"{name}_runs")
    return f"{row[f'{name}_s']} s" + (f" ({min(runs)}–{max(runs)})" if runs else "")


def published(flag: bool) -> str:
    return " (published)" if flag else ""


def markdown_table(rows: list[dict]) -> str:
    heads = [f"{row['target']:,} chunks" + (" (earlier run)" if row.get("from_earlier_run") else "") for row in rows]
    lines = ["| | " + " | ".join(heads) + " | goal at 200k |", "|---|" + "---|" * (len(rows) + 1)]
    lines += [f"| {what} | " + " | ".join(cell(row) for row in rows) + f" | {goal} |" for what, goal, cell in ROWS]
    return "\n".join(lines)


def run(bench: Bench, sizes: list[int], runs: int) -> list[dict]:
    """Each size in turn on the one growing index; a size measured before and already outgrown comes from state.json."""
    state, rows = bench.state, []
    for target in sorted(sizes):
        key = str(target)
        if key in state["results"] and state["built"] != target:
            rows.append({**state["results"][key], "from_earlier_run": True})
            continue
        if state["built"] > target:
            sys.exit(f"the index in {bench.work} is already past {target} chunks and that size was never measured: use another --work")
        if state["built"] != target:
            state["builds"][key] = bench.grow(target)
            state["built"] = target
            bench.save()
        log(f"measuring at {state['chunks']} chunks")
        row = {"target": target, "personal_chunks": state["personal"]["chunks"], **state["builds"][key], **bench.measure(runs)}
        state["results"][key] = row
        bench.save()
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20000,100000,200000",
                        help="docs chunks to measure at, comma-separated (default 20k, 100k, 200k)")
    parser.add_argument("--work", type=Path, help="keep corpus, index and figures here, and reuse them")
    parser.add_argument("--runs", type=int, default=30, help="fresh processes per search measurement, warm and cold (default 30)")
    parser.add_argument("--seed", type=int, default=14, help="the generated corpus is a function of this (default 14)")
    parser.add_argument("--vocabulary", type=Path, default=VOCABULARY,
                        help="markdown docs whose prose the generator learns from, read in place (default: docs-faq)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    work = args.work or Path(tempfile.mkdtemp(prefix="rag-bench-scale-"))
    try:
        work.mkdir(parents=True, exist_ok=True)
        bench = Bench(work, args.seed, args.vocabulary)
        bench.prepare()
        rows = run(bench, sizes, args.runs)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{SOURCES} local doc sources of generated pages; personal: {bench.state['personal']['notes']} notes, "
          f"{bench.state['personal']['chunks']} chunks; search.py over {args.runs} fresh processes each, warm and cold\n")
    print(markdown_table(rows))
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "sources": SOURCES, "sizes": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
