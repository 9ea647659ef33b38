#!/usr/bin/env python3
"""Soak: index runs over a changing corpus, killed at random moments, while searches loop.

Searchers (in-process loops: a warm retrieval.Searcher that follows published
generations, as the MCP server does, and loops that open the index afresh each
time; fresh search.py processes answered cold, and others answered by the
resident searcher) query the personal index while the corpus is edited and
index_personal.py runs are started and, most of the time, killed with SIGKILL
at a random point. At the end one run completes, and its index is compared
with a full rebuild of the same corpus. Reports searches, failures, kills and
whether the index equals the rebuild, and how many answers the resident searcher
gave and how many generations it left on disk; exits 1 on any failure.

    .venv/bin/python bench/soak.py --seconds 600          # by hand, for as long as you like
    .venv/bin/python bench/soak.py --seconds 30           # what tests/test_stress.py runs
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
SCRIPTS = PROJECT / "scripts"
sys.path.insert(0, str(SCRIPTS))

WORDS = ("kernel volume network storage cluster ingress backup policy secret quota certificate registry mirror "
         "upgrade rollback replica snapshot latency throughput timeout").split()
QUERIES = ["how do we back up the cluster", "registry mirror certificate", "rollback after a failed upgrade",
           "replica snapshot latency", "storage quota policy"]


def note(rng: random.Random, number: int) -> str:
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) for _ in range(rng.randint(1, 4))]
    return f"# Note {number}\n\n" + "\n\n## Details\n\n".join(paragraphs) + "\n"


def mutate(root: Path, rng: random.Random, counter: list[int]) -> None:
    """Edit two notes, add one, delete one, rename one."""
    notes = sorted(root.glob("*.md"))
    for path in rng.sample(notes, min(2, len(notes))):
        path.write_text(path.read_text() + "\n" + " ".join(rng.choice(WORDS) for _ in range(30)) + "\n")
    counter[0] += 1
    (root / f"note-{counter[0]:04d}.md").write_text(note(rng, counter[0]))
    notes = sorted(root.glob("*.md"))
    if len(notes) > 5:
        rng.choice(notes).unlink()
        notes = sorted(root.glob("*.md"))
        victim = rng.choice(notes)
        victim.rename(victim.with_name(f"renamed-{counter[0]:04d}-{victim.name}"))


def searcher(data: Path, stop: Path, mode: str, seed: int) -> int:
    """Loop searches until `stop` exists; print {"searches", "failures", "errors"} as JSON."""
    from rag_search.core.config import load_settings
    from rag_search.model.embedding import find_model, query_embedder
    from rag_search.search.retrieval import Searcher, SearchOptions, open_stores, search
    from rag_search.store.store import fingerprint

    rng = random.Random(seed)
    stats = {"mode": mode, "searches": 0, "failures": 0, "errors": []}
    settings = load_settings(data_dir=str(data))
    model = find_model()
    embedder = None
    warm = Searcher(settings, "personal") if mode == "warm" else None
    while not stop.exists():
        query = rng.choice(QUERIES)
        try:
            if mode in ("cold", "resident"):
                completed = subprocess.run([sys.executable, str(SCRIPTS / "search.py"), "--data-dir", str(data), "--index", "personal",
                                            *(["--no-resident"] if mode == "cold" else []), query],
                                           capture_output=True, text=True, timeout=120, env={**os.environ, "RAG_SEARCH_RESIDENT": "1"})
                if completed.returncode != 0 or not json.loads(completed.stdout)["results"]:
                    raise RuntimeError(f"search.py exit {completed.returncode}: {completed.stderr.strip()[-300:]}")
            elif warm is not None:  # the stores stay open and are reopened when a run publishes
                if not warm.search(query, SearchOptions()).hits:
                    raise RuntimeError("no results")
            else:  # the index is opened afresh for every search, to follow the runs; the model stays loaded
                stores, _ = open_stores(settings, "personal", fingerprint(model, settings.embedding))
                try:
                    embedder = embedder or query_embedder(data, model, settings.embedding)
                    if not search(stores, query, embedder.embed([query])[0], SearchOptions()).hits:
                        raise RuntimeError("no results")
                finally:
                    for store in stores.values():
                        store.close()
            stats["searches"] += 1
        except Exception as exc:  # counted, not raised: the soak reports every failure
            stats["failures"] += 1
            stats["errors"] = (stats["errors"] + [f"{type(exc).__name__}: {exc}"[:300]])[-5:]
    if warm is not None:
        warm.close()
    print(json.dumps(stats))
    return 0


def index_contents(data: Path) -> dict:
    """Chunk id -> (text, metadata without indexed_at), plus the keyword index's ids."""
    from rag_search.core.config import load_settings
    from rag_search.store.store import Store

    store = Store.open_for_reading(load_settings(data_dir=str(data)), "personal")
    try:
        chunks = {chunk.id: (chunk.text, {k: v for k, v in chunk.metadata.items() if k != "indexed_at"}) for chunk in store.all_chunks()}
        return {"chunks": chunks, "keywords": sorted(store.keyword_ids())}
    finally:
        store.close()


def index_run(data: Path, root: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SCRIPTS / "index_personal.py"), "--quiet", "--wait", "120",
                             "--data-dir", str(data), str(root), *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def soak(seconds: float, searchers: int, cold_searchers: int, resident_searchers: int, notes: int, seed: int, work: Path) -> dict:
    rng = random.Random(seed)
    root, data, stop = work / "notes", work / "data", work / "stop"
    root.mkdir()
    for number in range(notes):
        (root / f"note-{number:04d}.md").write_text(note(rng, number))
    counter = [notes]
    first = index_run(data, root)
    if first.wait() != 0:
        raise SystemExit(f"the first index run failed: {first.stderr.read().decode()[-1000:]}")

    if resident_searchers:
        start_resident(data)
    modes = [("warm", "inprocess")[number % 2] for number in range(searchers)] + ["cold"] * cold_searchers
    modes += ["resident"] * resident_searchers
    workers = [subprocess.Popen([sys.executable, __file__, "--searcher", str(data), str(stop), mode, str(seed + i)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i, mode in enumerate(modes)]
    started = time.monotonic()
    runs = {"started": 0, "killed": 0, "completed": 0, "failed": 0}
    index_errors = []
    while _soaking(time.monotonic() - started, seconds, runs["killed"]):
        mutate(root, rng, counter)
        process = index_run(data, root)
        runs["started"] += 1
        try:
            process.wait(timeout=rng.uniform(0.1, 4.0))
        except subprocess.TimeoutExpired:
            if rng.random() < 0.8:
                process.send_signal(signal.SIGKILL)
                process.wait()
                runs["killed"] += 1
                continue
            process.wait()
        if process.returncode == 0:
            runs["completed"] += 1
        else:
            runs["failed"] += 1
            index_errors.append(process.stderr.read().decode()[-300:])
    stop.touch()
    reports = []
    for worker in workers:
        stdout, stderr = worker.communicate(timeout=300)
        if worker.returncode != 0:
            reports.append({"mode": "crashed", "searches": 0, "failures": 1, "errors": [f"exit {worker.returncode}: {stderr[-300:]}"]})
        else:
            reports.append(json.loads(stdout))

    served, generations, log = resident_report(data, root) if resident_searchers else (None, None, None)
    final = index_run(data, root)
    final_ok = final.wait() == 0
    rebuild = index_run(work / "rebuilt", root, "--full")
    rebuild_ok = rebuild.wait() == 0
    equal = final_ok and rebuild_ok and index_contents(data) == index_contents(work / "rebuilt")
    return {
        "seconds": round(time.monotonic() - started, 1),
        "searches": sum(r["searches"] for r in reports),
        "search_failures": sum(r["failures"] for r in reports),
        "search_errors": [e for r in reports for e in r["errors"]][:10],
        "index_runs": runs,
        "index_errors": index_errors[:5],
        "files": len(list(root.glob("*.md"))),
        "final_equals_full_rebuild": equal,
        "resident_answers": served,
        "generations_left_with_resident": generations,
        "resident_log": log,
    }


def _soaking(elapsed: float, seconds: float, killed: int) -> bool:
    """Go on for `seconds`, and past them (up to three times as long) until two runs were killed: whether a run is
    killed depends on how fast it ends, and on an idle machine a short soak could kill none."""
    return elapsed < seconds or (killed < 2 and elapsed < 3 * seconds)


def start_resident(data: Path) -> None:
    """One search leaves a resident searcher behind; wait until it answers, so that it serves during the whole soak
    however busy the machine is (its warm-up takes seconds then)."""
    from rag_search.core.config import load_settings
    from rag_search.serve import resident

    subprocess.run([sys.executable, str(SCRIPTS / "search.py"), "--data-dir", str(data), "--index", "personal", QUERIES[0]],
                   capture_output=True, timeout=300, env={**os.environ, "RAG_SEARCH_RESIDENT": "1"})
    settings = load_settings(data_dir=str(data))
    deadline = time.monotonic() + 300
    while resident.about(settings) is None and time.monotonic() < deadline:
        time.sleep(0.2)


def resident_report(data: Path, root: Path) -> tuple[int, int, list[str]]:
    """How many answers the resident searcher running now gave, how many generations are on disk after it had a second
    to let go of those the runs replaced and one more run collected the garbage, and its log's last lines; it is
    stopped."""
    from rag_search.core.config import load_settings
    from rag_search.serve import resident

    settings = load_settings(data_dir=str(data))
    served = (resident.about(settings) or {}).get("answers", 0)
    time.sleep(2.0)
    index_run(data, root).wait()
    generations = len([path for path in (data / "personal" / "generations").iterdir() if not path.name.startswith(".")])
    resident.stop(settings)
    log = resident.folder(settings) / "log"
    return served, generations, log.read_text().splitlines()[-5:] if log.exists() else []


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--searcher":
        data, stop, mode, seed = sys.argv[2:6]
        return searcher(Path(data), Path(stop), mode, int(seed))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300, help="how long to keep killing index runs (default 300)")
    parser.add_argument("--searchers", type=int, default=2, help="in-process search loops, warm and fresh in turn (default 2)")
    parser.add_argument("--cold-searchers", type=int, default=1, help="loops of fresh search.py --no-resident processes (default 1)")
    parser.add_argument("--resident-searchers", type=int, default=1,
                        help="loops of fresh search.py processes, answered by the resident searcher (default 1)")
    parser.add_argument("--notes", type=int, default=60, help="notes in the corpus at the start (default 60)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rag-soak-"))
    try:
        report = soak(args.seconds, args.searchers, args.cold_searchers, args.resident_searchers, args.notes, args.seed, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    ok = report["search_failures"] == 0 and report["index_runs"]["failed"] == 0 and report["final_equals_full_rebuild"]
    ok = ok and report["generations_left_with_resident"] in (None, 1, 2, 3)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
