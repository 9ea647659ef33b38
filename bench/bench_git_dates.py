#!/usr/bin/env python3
"""What dating git files by their last commit costs, on a repository of real size (not part of the test suite).

Dating each file by its last commit needs the history, fetched without blobs
(commits and trees only): once for a new source, into a folder of its own that is
removed after the walk; the clone keeps one commit. This builds a
repository shaped like a large documentation site (by default 40,000 commits over
12,000 files, 3,000 of them under docs/, two files changed a commit, with
git fast-import: no network), serves it over file:// with partial clone allowed,
and measures in fresh clones:

  - the fetch one commit deep (the clone) and with the whole history without blobs (for the dates), and their sizes;
  - deepening a one-commit-deep clone in place (what dating from the clone itself would cost instead);
  - the `git log` walk that dates every file under docs/ (sources.git.last_commit_times), and one changed file.

    .venv/bin/python bench/bench_git_dates.py [--work DIR] [--commits 40000] [--files 12000] [--docs 3000]
"""

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))

from rag_search.core.atomic import folder_size  # noqa: E402
from rag_search.sources.git import last_commit_times  # noqa: E402

START = 1_400_000_000  # 2014: one commit an hour or so from there


def git(*args, cwd: Path, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=True).stdout.decode().strip()


def build_origin(folder: Path, commits: int, files: int, docs: int) -> None:
    """A repository with `commits` commits, each changing two of `files` files (`docs` of them under docs/)."""
    rng = random.Random(7)
    sections = [f"section-{i:02d}/topic-{j:02d}" for i in range(30) for j in range(10)]
    paths = [f"docs/content/en/{rng.choice(sections)}/page-{i:05d}.md" for i in range(docs)]
    paths += [f"{rng.choice(['src', 'pkg', 'static', 'i18n'])}/{rng.choice(sections)}/file-{i:05d}.txt" for i in range(files - docs)]
    stream = []
    for number in range(commits):
        when = START + number * 3600
        changed = rng.sample(paths, 2) if number else paths
        stream.append(f"commit refs/heads/main\ncommitter Bench <bench@example.org> {when} +0000\ndata 12\ncommit {number:05d}\n")
        for path in changed:
            body = f"# {path}\n\nRevision {number}. " + "Documentation text. " * rng.randint(20, 120) + "\n"
            data = body.encode()
            stream.append(f"M 100644 inline {path}\ndata {len(data)}\n{body}\n")
    folder.mkdir(parents=True)
    git("init", "-q", "--bare", cwd=folder)
    git("fast-import", "--quiet", cwd=folder, stdin="".join(stream).encode())
    git("config", "uploadpack.allowFilter", "true", cwd=folder)
    git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=folder)
    git("gc", "-q", cwd=folder)


def timed_fetch(origin: Path, folder: Path, *options: str) -> tuple[float, int]:
    """Seconds for one fetch of main into a new repository, and the size of its .git."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    git("init", "-q", cwd=folder)
    git("remote", "add", "origin", f"file://{origin}", cwd=folder)
    started = time.monotonic()
    git("fetch", "--quiet", *options, "--filter=blob:none", "origin", "main", cwd=folder)
    return time.monotonic() - started, folder_size(folder / ".git")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, help="keep the generated repository here for the next run")
    parser.add_argument("--commits", type=int, default=40_000)
    parser.add_argument("--files", type=int, default=12_000)
    parser.add_argument("--docs", type=int, default=3_000)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="rag-bench-git-"))
    origin = work / f"origin-{args.commits}-{args.files}-{args.docs}.git"
    report: dict = {"commits": args.commits, "files": args.files, "docs_files": args.docs}
    try:
        if not origin.is_dir():
            started = time.monotonic()
            build_origin(origin, args.commits, args.files, args.docs)
            report["build_s"] = round(time.monotonic() - started, 1)
        report["origin_mb"] = round(folder_size(origin) / 2**20, 1)
        seconds, size = timed_fetch(origin, work / "shallow", "--depth", "1")
        report["fetch_one_commit"] = {"s": round(seconds, 2), "git_dir_mb": round(size / 2**20, 1)}
        seconds, size = timed_fetch(origin, work / "history", )
        report["fetch_history_no_blobs"] = {"s": round(seconds, 2), "git_dir_mb": round(size / 2**20, 1)}
        started = time.monotonic()
        git("fetch", "--quiet", "--unshallow", "--filter=blob:none", "origin", "main", cwd=work / "shallow")
        report["deepen_one_commit_clone_s"] = round(time.monotonic() - started, 2)

        clone = work / "history"
        commit = git("rev-parse", "FETCH_HEAD", cwd=clone)
        docs = set(git("ls-tree", "-r", "--name-only", "--full-tree", commit, "--", "docs", cwd=clone).splitlines())
        started = time.monotonic()
        dated = len(last_commit_times(clone / ".git", commit, None, "docs", docs) or {})
        report["walk_all_docs_files"] = {"s": round(time.monotonic() - started, 2), "files": len(docs), "dated": dated}
        newest = git("log", "-1", "--format=", "--name-only", commit, "--", "docs", cwd=clone).splitlines()[0]
        started = time.monotonic()
        last_commit_times(clone / ".git", commit, None, "docs", {newest})
        report["walk_one_recent_file_s"] = round(time.monotonic() - started, 3)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
