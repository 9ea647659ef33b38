#!/usr/bin/env python3
"""How much disk a git doc source's clone takes when its docs are a small part of a large repository.

Builds, with `git fast-import`, a repository whose docs/ folder is a documentation tree (default:
docs-faq's cert-manager, 200 pages) beside a code tree many times its size, with a long history
(default 4,000 commits, each editing three code files; one in twenty also edits a page). Registers
it as a git source with --path docs (over file://, the origin allowing partial clones as the forges
do), indexes it with index_docs.py, then refreshes it after one more commit; reports the clone's
.git beside the docs subtree it serves, after each run.

    .venv/bin/python bench/bench_clone_size.py [--docs DIR] [--commits 4000] [--code-files 6000]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_docs_refresh import DEFAULT_DOCS, PROJECT, SUFFIXES, size_of

WHEN = 1_600_000_000  # the history's first commit time
CODE_LINE = "def handler_{0}(request):\n    return respond(request, status={1}, body=render('{2}'))\n"


def _blob(text: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(text), text)


def _code_file(rng: random.Random, n: int) -> bytes:
    return "".join(CODE_LINE.format(n, rng.randrange(100, 600), rng.getrandbits(64)) for _ in range(30)).encode()


def history(docs: dict[str, bytes], code_files: int, commits: int, seed: int = 7):
    """A fast-import stream: the first commit holds the docs and the code, each later one edits three code files (and
    one in twenty a page)."""
    rng = random.Random(seed)
    code = [f"src/pkg{n % 40}/mod{n % 13}/file{n}.py" for n in range(code_files)]
    pages = sorted(docs)
    for n in range(commits):
        when = WHEN + n * 3600
        yield b"commit refs/heads/main\ncommitter Bench <bench@example.org> %d +0000\n" % when
        yield _blob(b"change %d" % n)  # the message; fast-import chains a branch's commits by itself
        changed = [(path, _code_file(rng, i)) for i, path in enumerate(code)] if n == 0 else [
            (path, _code_file(rng, n)) for path in rng.sample(code, 3)]
        if n == 0:
            changed += [(f"docs/{page}", docs[page]) for page in pages]
        elif n % 20 == 0:
            page = rng.choice(pages)
            changed.append((f"docs/{page}", docs[page] + b"\nRevised in change %d.\n" % n))
        for path, text in changed:
            yield b"M 100644 inline %s\n" % path.encode()
            yield _blob(text)


def index(env: dict, data: Path) -> float:
    started = time.monotonic()
    run = subprocess.run([sys.executable, str(PROJECT / "scripts" / "index_docs.py"), "--data-dir", str(data), "--all", "--quiet"],
                         env=env, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"index_docs.py failed ({run.returncode}):\n{run.stderr}")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS, help="the documentation tree under docs/")
    parser.add_argument("--commits", type=int, default=4000)
    parser.add_argument("--code-files", type=int, default=6000)
    args = parser.parse_args()
    docs = {source.relative_to(args.docs).as_posix(): source.read_bytes()
            for source in sorted(args.docs.rglob("*")) if source.suffix in SUFFIXES and source.is_file()}
    with tempfile.TemporaryDirectory(prefix="rag-bench-clone-") as temp:
        temp = Path(temp)
        origin = temp / "origin"
        subprocess.run(["git", "init", "-q", "-b", "main", str(origin)], check=True)
        subprocess.run(["git", "-C", str(origin), "config", "uploadpack.allowFilter", "true"], check=True)
        importer = subprocess.Popen(["git", "-C", str(origin), "fast-import", "--quiet"], stdin=subprocess.PIPE)
        for piece in history(docs, args.code_files, args.commits):
            importer.stdin.write(piece)
        importer.stdin.close()
        if importer.wait() != 0:
            sys.exit("git fast-import failed")
        subprocess.run(["git", "-C", str(origin), "repack", "-a", "-d", "-q"], check=True)
        subprocess.run(["git", "-C", str(origin), "checkout", "-q", "main"], check=True)
        subtree = size_of(origin / "docs")
        registry = temp / "sources.json"
        source = {"id": "big", "name": "Big", "type": "git", "url": f"file://{origin}", "path": "docs"}
        registry.write_text(json.dumps({"sources": [source]}))
        env = {**os.environ, "HOME": str(temp), "RAG_SEARCH_SOURCES": str(registry)}
        data = temp / "data"
        git_dir = size_of(origin / ".git")
        print(f"repository: {args.commits} commits, {args.code_files} code files, {len(docs)} pages; .git {git_dir / 1e6:.1f} MB, "
              f"working tree {(size_of(origin) - git_dir) / 1e6:.1f} MB, docs/ {subtree / 1e6:.2f} MB")
        seconds = index(env, data)
        clone = next((data / "sources").glob("*/repo"))
        print(f"first index {seconds:.1f} s: clone .git {size_of(clone / '.git') / 1e6:.2f} MB "
              f"({size_of(clone / '.git') / subtree:.2f}x docs/), checkout {(size_of(clone) - size_of(clone / '.git')) / 1e6:.2f} MB")
        page = origin / "docs" / sorted(docs)[0]
        page.write_bytes(page.read_bytes() + b"\nOne more line.\n")
        subprocess.run(["git", "-C", str(origin), "-c", "user.name=Bench", "-c", "user.email=bench@example.org",
                        "commit", "-q", "-am", "one page"], check=True)
        seconds = index(env, data)
        print(f"refresh after one commit {seconds:.1f} s: clone .git {size_of(clone / '.git') / 1e6:.2f} MB "
              f"({size_of(clone / '.git') / subtree:.2f}x docs/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
