#!/usr/bin/env python3
"""What a default answer costs an agent: characters of search.py's 5-result answer (not part of the test suite).

Indexes the example corpus (examples/state) into a throwaway data dir, runs
search.py with its defaults on five fixed questions, as an agent does (stdout
is a pipe), and reports the characters of each answer and their sum. With
--baseline, another version's search.py answers the same questions on the same
index, and the ratio is reported.

    .venv/bin/python bench/answer_size.py [--json FILE] [--baseline DIR] [-- EXTRA SEARCH FLAGS]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
SCRIPTS = PROJECT / "scripts"
QUERIES = [
    "why is ArgoCD self-heal disabled?",
    "how do I drain a k0s node before maintenance?",
    "which text editor do I like to use?",
    "how to silence alerts during planned work",
    "what did we learn about mocking in unit tests?",
]


def answer_sizes(scripts: Path, data: Path, extra: list[str]) -> dict:
    sizes = {}
    for query in QUERIES:
        completed = subprocess.run([sys.executable, str(scripts / "search.py"), "--data-dir", str(data), *extra, "--", query],
                                   capture_output=True, text=True, check=True)
        sizes[query] = len(completed.stdout)
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another version's checkout (e.g. `git archive main scripts | tar -x -C DIR`): its answers, for comparison")
    parser.add_argument("extra", nargs="*", help="more search.py flags, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rag-answer-size-") as work:
        env = {**os.environ, "HOME": work}
        data = Path(work) / "data"
        subprocess.run([sys.executable, str(SCRIPTS / "index_personal.py"), "--quiet", "--data-dir", str(data),
                        str(PROJECT / "examples" / "state")], env=env, check=True, stdout=subprocess.DEVNULL)
        sizes = answer_sizes(SCRIPTS, data, args.extra)
        before = answer_sizes(args.baseline / "scripts", data, []) if args.baseline else None
    report = {"answers": sizes, "total": sum(sizes.values())}
    for query, size in sizes.items():
        print(f"{size:7,} chars  {query}" + (f"  (baseline {before[query]:,})" if before else ""))
    print(f"{report['total']:7,} chars  total of {len(sizes)} answers (about {report['total'] // 4:,} tokens)")
    if before:
        report.update(baseline_answers=before, baseline_total=sum(before.values()))
        report["ratio"] = round(report["total"] / report["baseline_total"], 3)
        print(f"{report['baseline_total']:7,} chars  the baseline's; this version's answers are {report['ratio']:.0%} of its size")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
