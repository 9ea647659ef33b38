#!/usr/bin/env python3
"""Time a git doc source of real size: first index, a refresh with nothing changed, one file changed.

Builds a git repository in a temporary folder from the markdown files of the
given folders (default: the Node.js and npm documentation installed on this
machine), registers it in a throwaway registry and data dir, and runs
index_docs.py as a subprocess, the way the daily timer does.

    .venv/bin/python bench/bench_docs_refresh.py [--docs DIR ...] [--json FILE]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
DEFAULT_DOCS = ["/usr/share/doc/nodejs/api", "/usr/share/doc/nodejs/contributing", "/usr/lib/node_modules/npm/docs"]
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def build_repo(repo: Path, folders: list[str]) -> int:
    """Copy every *.md under the folders into repo/docs/<folder name>/…; returns the number of files."""
    count = 0
    for folder in map(Path, folders):
        for source in sorted(folder.rglob("*.md")):
            target = repo / "docs" / folder.name / source.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            count += 1
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "docs")
    return count


def timed_index(env: dict, data: Path) -> tuple[float, dict]:
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, str(PROJECT / "scripts" / "index_docs.py"), "--data-dir", str(data), "--source", "bench", "--quiet"],
        env=env, capture_output=True, text=True,
    )
    seconds = time.monotonic() - started
    if completed.returncode != 0:
        sys.exit(f"index_docs.py failed ({completed.returncode}):\n{completed.stderr}")
    return seconds, json.loads(completed.stdout)["sources"][0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", nargs="+", default=DEFAULT_DOCS, help="folders whose *.md files make the repository")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rag-bench-docs-") as temp:
        temp = Path(temp)
        repo = temp / "origin"
        repo.mkdir()
        files = build_repo(repo, [d for d in args.docs if Path(d).is_dir()])
        megabytes = sum(p.stat().st_size for p in repo.rglob("*.md")) / 1e6
        registry = temp / "sources.json"
        registry.write_text(json.dumps({"sources": [
            {"id": "bench", "name": "Benchmark docs", "type": "git", "url": f"file://{repo}", "path": "docs"}
        ]}))
        env = {**os.environ, "HOME": str(temp), "RAG_SEARCH_SOURCES": str(registry)}
        data = temp / "data"

        runs = {}
        runs["first index"] = timed_index(env, data)
        runs["refresh, nothing changed"] = timed_index(env, data)
        changed = sorted((repo / "docs").rglob("*.md"))[files // 2]
        with changed.open("a") as handle:
            handle.write("\n\n## Benchmark addendum\n\nOne more paragraph, to change one file.\n")
        git(repo, "commit", "-q", "-am", "change one file")
        runs["refresh, one file changed"] = timed_index(env, data)

    rows = [
        {"run": name, "seconds": round(seconds, 2), "mode": s["mode"], "added": s["added"], "updated": s["updated"],
         "embedded": s["embedded"], "chunks": s["chunks"]}
        for name, (seconds, s) in runs.items()
    ]
    result = {"files": files, "megabytes": round(megabytes, 1), "runs": rows}
    print(f"{files} markdown files, {megabytes:.1f} MB, cold subprocess runs of index_docs.py")
    print(f"{'run':28} {'seconds':>8} {'mode':>11} {'added':>6} {'updated':>8} {'embedded':>9} {'chunks':>7}")
    for row in rows:
        print(f"{row['run']:28} {row['seconds']:8.2f} {row['mode']:>11} {row['added']:6} {row['updated']:8} "
              f"{row['embedded']:9} {row['chunks']:7}")
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
