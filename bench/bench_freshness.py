#!/usr/bin/env python3
"""Time search.py's freshness check: the stat walk of the personal roots against the published catalog.

Generates FILES small notes and records in a temporary personal root (40 folders,
like a busy ~/.claude/state), indexes them once, then times find_changes()
(the check every search of the personal index pays) with nothing changed and with
one file changed, and one search.py run that brings a new note in against one
with --no-refresh.

    .venv/bin/python bench/bench_freshness.py [--files 2000] [--repeat 50]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))


def make_root(root: Path, files: int) -> None:
    for number in range(files):
        folder = root / f"area-{number % 40:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        if number % 4 == 0:
            record = {"id": f"m-{number}", "type": "lesson_learned", "lesson": f"lesson number {number}", "tags": ["bench"]}
            (folder / f"m-{number}.json").write_text(json.dumps(record))
        else:
            (folder / f"note-{number}.md").write_text(f"# Note {number}\n\nSome text about topic {number % 97}.\n")


def timed(function, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    return times


def run(*args: str, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    from rag_search.core.config import load_settings
    from rag_search.serve.freshness import find_changes

    with tempfile.TemporaryDirectory() as temp:
        root, data = Path(temp) / "state", Path(temp) / "data"
        make_root(root, args.files)
        env = {"HOME": temp, "RAG_SEARCH_HOME": str(data), "PATH": "/usr/bin:/bin"}
        index_seconds = run(str(PROJECT / "scripts" / "index_personal.py"), "--quiet", str(root), env=env)
        settings = load_settings(data_dir=str(data), roots=[str(root)], environ={})
        unchanged = timed(lambda: find_changes(settings), args.repeat)
        (root / "area-00" / "new.md").write_text("# New\n\nwritten after the index run\n")
        one_new = timed(lambda: find_changes(settings), args.repeat)
        assert find_changes(settings).count == 1
        search = str(PROJECT / "scripts" / "search.py")
        without = run(search, "--index", "personal", "--no-refresh", "written after", env=env)
        bringing_in = run(search, "--index", "personal", "written after", env=env)
        after = run(search, "--index", "personal", "written after", env=env)
    print(json.dumps({
        "files": args.files,
        "first_index_seconds": round(index_seconds, 1),
        "find_changes_ms_median_unchanged": round(statistics.median(unchanged), 1),
        "find_changes_ms_p90_unchanged": round(sorted(unchanged)[int(len(unchanged) * 0.9) - 1], 1),
        "find_changes_ms_median_one_new": round(statistics.median(one_new), 1),
        "search_seconds_no_refresh": round(without, 2),
        "search_seconds_bringing_in_one_note": round(bringing_in, 2),
        "search_seconds_after": round(after, 2),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
