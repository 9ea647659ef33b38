#!/usr/bin/env python3
"""What a doc source's daily refresh costs against what changed: a no-op refresh beside a commit that edits one page,
removes one and adds one, alternated, and how the data dir and the clone grow.

Builds a git repository in a temporary folder from a documentation tree (default: docs-faq's
cert-manager, 200 pages), registers it as a git source (over file://, the path docs/) in a
throwaway registry and data dir (with --type local: the repository's folder as a local source;
with --type web: its pages rendered as HTML, with a sitemap, served on 127.0.0.1 as files whose
Last-Modified answers a conditional GET, and registered as a web source),
and runs index_docs.py as a subprocess, the way the daily timer does: the first index (and when it
first became searchable), then --rounds rounds of a refresh with nothing new followed by a refresh after one such commit.
Reports each run's seconds and summary, the medians and their ratio, the data dir's growth per
commit beside the size of the change, and the clone's size beside the tree's.

    .venv/bin/python bench/bench_docs_refresh.py [--docs DIR] [--rounds 5] [--type local|web] [--json FILE]
"""

import argparse
import functools
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from markdown_it import MarkdownIt

PROJECT = Path(__file__).resolve().parents[1]
DEFAULT_DOCS = PROJECT.parent / "shared" / "bench" / "docs-faq" / "cert-manager"
SUFFIXES = (".md", ".mdx", ".markdown", ".rst")  # what a source indexes without --glob
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def build_repo(repo: Path, folder: Path) -> list[Path]:
    """The tree's documentation pages under repo/docs/, one commit; returns the pages."""
    for source in sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
        target = repo / "docs" / source.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "uploadpack.allowFilter", "true")  # as the forges serve partial clones
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "docs")
    return sorted((repo / "docs").rglob("*.*"))


def one_commit(repo: Path, pages: list[Path], round_: int) -> int:
    """Edit one page, remove one and add one; returns the bytes the commit adds."""
    edited, removed = pages[(7 * round_) % len(pages)], pages[(7 * round_ + 3) % len(pages)]
    addendum = f"\n\n## Addendum {round_}\n\nOne more paragraph on round {round_}, to change one page.\n"
    with edited.open("a") as handle:
        handle.write(addendum)
    added = repo / "docs" / f"new-page-{round_}.md"
    added.write_text(f"# New page {round_}\n\n" + removed.read_text(errors="replace")[:4000])
    removed.unlink()
    pages.remove(removed)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"round {round_}")
    return len(addendum) + added.stat().st_size


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class Site:
    """The repository's pages as a web site on 127.0.0.1 (`render` after each commit): one HTML page per page and a
    sitemap. A page written only when it changed keeps its mtime, so the server's Last-Modified answers a conditional
    GET with 304."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietFiles, directory=str(folder)))
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.origin = f"http://127.0.0.1:{self.server.server_port}"

    def render(self, repo: Path) -> None:
        pages = {page.relative_to(repo).with_suffix(".html"): page for page in sorted((repo / "docs").rglob("*.*"))}
        for name, page in pages.items():
            text = page.read_text(errors="replace")
            html = f"<html><head><title>{name.stem}</title></head><body><main>{MarkdownIt().render(text)}</main></body></html>"
            self._write(self.folder / name, html)
        for stale in set((self.folder / "docs").rglob("*.html")) - {self.folder / name for name in pages}:
            stale.unlink()
        urls = "".join(f"<url><loc>{self.origin}/{name.as_posix()}</loc></url>" for name in pages)
        self._write(self.folder / "sitemap.xml", f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>')

    @staticmethod
    def _write(path: Path, text: str) -> None:
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def timed_index(env: dict, data: Path, first: list | None = None) -> tuple[float, dict]:
    """Seconds of one index run and its summary; `first` gets the seconds until it first published the docs index (a
    new source's first index publishes in parts: what searches can answer from)."""
    started = time.monotonic()
    run = subprocess.Popen(
        [sys.executable, str(PROJECT / "scripts" / "index_docs.py"), "--data-dir", str(data), "--source", "bench", "--quiet"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    while first is not None and not first and run.poll() is None:
        if (data / "docs" / "CURRENT").is_file():
            first.append(time.monotonic() - started)
        time.sleep(0.05)
    stdout, stderr = run.communicate()
    seconds = time.monotonic() - started
    if run.returncode != 0:
        sys.exit(f"index_docs.py failed ({run.returncode}):\n{stderr}")
    return seconds, json.loads(stdout)["sources"][0]


def size_of(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def row(name: str, seconds: float, summary: dict, data: Path) -> dict:
    return {"run": name, "seconds": round(seconds, 2), "added": summary["added"], "updated": summary["updated"],
            "deleted": summary["deleted"], "embedded": summary["embedded"], "chunks": summary["chunks"],
            "data_bytes": size_of(data)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS, help="the documentation tree the repository holds")
    parser.add_argument("--rounds", type=int, default=5, help="no-op and one-commit refreshes, alternated")
    parser.add_argument("--type", choices=["git", "local", "web"], default="git", help="how the source is registered")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rag-bench-docs-") as temp:
        temp = Path(temp)
        repo = temp / "origin"
        repo.mkdir()
        pages = build_repo(repo, args.docs)
        page_count = len(pages)
        tree_bytes = sum(page.stat().st_size for page in pages)
        registry = temp / "sources.json"
        site = Site(temp / "site") if args.type == "web" else None
        where = {"git": {"url": f"file://{repo}", "path": "docs"}, "local": {"path": str(repo / "docs")},
                 "web": {"base_url": f"{site.origin}/docs/", "sitemap": f"{site.origin}/sitemap.xml"} if site else {}}[args.type]
        registry.write_text(json.dumps({"sources": [{"id": "bench", "name": "Benchmark docs", "type": args.type, **where}]}))
        env = {**os.environ, "HOME": str(temp), "RAG_SEARCH_SOURCES": str(registry), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        data = temp / "data"
        first: list[float] = []
        if site:
            site.render(repo)
        rows = [row("first index", *timed_index(env, data, first), data)]
        changes = []
        for round_ in range(args.rounds):
            rows.append(row("refresh, nothing new", *timed_index(env, data), data))
            changes.append(one_commit(repo, pages, round_))
            if site:
                site.render(repo)
            rows.append(row("refresh, one commit", *timed_index(env, data), data))
        clone = next((data / "sources").glob("*/repo"), temp / "no clone")
        noop = statistics.median(r["seconds"] for r in rows if r["run"] == "refresh, nothing new")
        commit = statistics.median(r["seconds"] for r in rows if r["run"] == "refresh, one commit")
        after_commits = [r["data_bytes"] for r in rows if r["run"] == "refresh, one commit"]
        growth = [b - a for a, b in zip([rows[0]["data_bytes"]] + after_commits, after_commits, strict=False)]
        result = {"pages": page_count, "tree_bytes": tree_bytes, "runs": rows, "median_noop_seconds": noop,
                  "median_commit_seconds": commit, "first_answer_seconds": first[0] if first else None,
                  "ratio": round(commit / noop, 2), "growth_per_commit": growth,
                  "change_bytes": changes, "clone_bytes": size_of(clone / ".git") if clone.exists() else 0}
    print(f"{page_count} pages, {tree_bytes / 1e6:.1f} MB, cold subprocess runs of index_docs.py")
    print(f"{'run':24} {'seconds':>8} {'added':>6} {'updated':>8} {'deleted':>8} {'embedded':>9} {'chunks':>7} {'data MB':>8}")
    for r in rows:
        print(f"{r['run']:24} {r['seconds']:8.2f} {r['added']:6} {r['updated']:8} {r['deleted']:8} {r['embedded']:9} "
              f"{r['chunks']:7} {r['data_bytes'] / 1e6:8.2f}")
    if first:
        print(f"first index: searchable after {first[0]:.1f} s of {rows[0]['seconds']:.1f} s "
              f"({first[0] / rows[0]['seconds']:.0%}; published in parts)")
    print(f"median: nothing new {noop:.2f} s, one commit {commit:.2f} s, ratio {commit / noop:.2f}")
    print(f"data dir growth per commit (bytes): {growth}; the commits added {changes} bytes")
    if result["clone_bytes"]:
        print(f"clone: .git {result['clone_bytes'] / 1e6:.2f} MB for a tree of {tree_bytes / 1e6:.2f} MB")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
