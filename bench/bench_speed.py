#!/usr/bin/env python3
"""Speed and memory, measured side by side in one run (not part of the test suite).

Builds a personal corpus of 5,000 markdown files from SciFact abstracts (two
per file, each file titled on its own, so every chunk is new: about 20,000
chunks), indexes it with index_personal.py in a fresh process, then measures:

  - indexing: chunks/s and peak RSS;
  - refresh with nothing changed, and after one file changed (fresh processes);
  - search.py, warm (the resident searcher running) and cold (--no-resident):
    wall time p50/p95 over fresh processes (at least 30), and peak RSS;
  - the naive reference (bench/naive_search.py: sentence-transformers and
    ChromaDB loaded in one fresh process per query), in turn with those two;
  - in-process query latency (embedding + hybrid retrieval);
  - the MCP server (scripts/mcp_server.py): per `search` call through the SDK's
    client over stdio, p50/p95, and the server's RSS.

    .venv/bin/python bench/bench_speed.py [--work DIR] [--runs 15] [--json FILE] [--baseline DIR]

--work keeps the corpus and index for the next run (indexing is then skipped).
"""

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
SCRIPTS = PROJECT / "scripts"
sys.path.insert(0, str(SCRIPTS))

try:  # IN_PROCESS imports this file beside a baseline's package too, which may predate the package's layers
    from rag_search.core.config import load_settings
    from rag_search.search.retrieval import Searcher, SearchOptions
    from rag_search.store.store import Store
except ImportError:
    from rag_search.config import load_settings  # type: ignore[no-redef]
    from rag_search.retrieval import Searcher, SearchOptions  # type: ignore[no-redef]
    from rag_search.store import Store  # type: ignore[no-redef]

SCIFACT = PROJECT.parent / "shared" / "bench" / "scifact"
FILES = 5000
ABSTRACTS_PER_FILE = 2
QUERIES = [
    "does vitamin D supplementation reduce fracture risk in older adults",
    "BRCA1 mutations and breast cancer susceptibility",
    "how do macrophages respond to bacterial infection",
    "effect of statins on cardiovascular mortality",
    "insulin resistance in type 2 diabetes",
    "CRISPR gene editing off-target effects",
    "gut microbiome and obesity",
    "antibiotic resistance in hospital-acquired infections",
]


def timed_runs(command: list[str], env: dict, count: int, *others: list[str]) -> dict | list[dict]:
    """Wall time p50/p95 and the peak RSS of `count` fresh processes (each measured on its own); with `others`,
    the commands take turns, so that a busier or quieter moment of the machine weighs on each alike."""
    commands = [command, *others]
    times: list[list[float]] = [[] for _ in commands]
    peaks: list[list[float]] = [[] for _ in commands]
    for _ in range(count):
        for number, each in enumerate(commands):
            seconds, peak, _ = child_peak(each, env)
            times[number].append(seconds)
            peaks[number].append(peak)
    rows = []
    for measured, peak in zip(times, peaks, strict=True):
        measured.sort()
        rows.append({"runs": count, "p50_s": round(statistics.median(measured), 3), "p95_s": round(measured[int(0.95 * (count - 1))], 3),
                     "peak_rss_mb": round(max(peak))})
    return rows if others else rows[0]


# A process started straight from this one inherits this one's high-water RSS (Linux carries it across fork or vfork
# and exec), so its own rusage would say at least what this bench holds. A small launcher forks the command instead
# and writes the command's wall time and peak RSS (KB, the command and its children) to the file named first.
LAUNCHER = """import os, sys, time
started = time.monotonic()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as figures:
    figures.write(f"{time.monotonic() - started} {usage.ru_maxrss}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def child_peak(command: list[str], env: dict) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stdout) of one fresh process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, tempfile.NamedTemporaryFile("r") as figures:
        status = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, figures.name, *command], env=env, stdout=out, stderr=err).returncode
        out.seek(0)
        err.seek(0)
        if status != 0:
            sys.exit(f"{' '.join(command[:3])} failed:\n{err.read()[-2000:]}")
        seconds, peak = figures.read().split()
        return float(seconds), int(peak) / 1024, out.read()


def warm_and_cold(search: list[str], env: dict, runs: int, *others: list[str]) -> list[dict]:
    """Rows for `search` answered by the resident searcher and cold (--no-resident), and for `others`, taking turns
    over `runs` fresh processes each. The searcher is started first (one search leaves it behind) and stopped after."""
    from rag_search.serve import resident  # here: IN_PROCESS imports this file beside a baseline's package, which has none

    settings = load_settings(environ=env)
    child_peak(search, env)
    deadline = time.monotonic() + 120
    while resident.about(settings) is None:
        if time.monotonic() > deadline:
            sys.exit(f"no resident searcher started: see {resident.folder(settings) / 'log'}")
        time.sleep(0.2)
    try:
        return timed_runs(search, env, runs, [*search, "--no-resident"], *others)
    finally:
        resident.stop(settings)


def in_process_query_ms(data: Path, index: str, queries: list[str], rounds: int = 4) -> dict:
    """p50/p95 of Searcher.search in this process (query embedding + hybrid retrieval), after one warming round."""
    searcher = Searcher(load_settings(data_dir=str(data)), index)
    latencies = []
    for query in queries * (rounds + 1):
        started = time.perf_counter()
        searcher.search(query, SearchOptions())
        latencies.append((time.perf_counter() - started) * 1000)
    searcher.close()
    latencies = sorted(latencies[len(queries):])
    return {"p50": round(statistics.median(latencies), 1), "p95": round(latencies[int(0.95 * (len(latencies) - 1))], 1)}


# in_process_query_ms in a fresh process, with the rag_search package of the scripts folder named first (imported
# before bench_speed, which would otherwise import this checkout's).
IN_PROCESS = """import json, sys
sys.path.insert(0, sys.argv[1])
import rag_search
assert rag_search.__file__.startswith(sys.argv[1]), rag_search.__file__
sys.path.insert(0, sys.argv[2])
from bench_speed import QUERIES, in_process_query_ms
print(json.dumps(in_process_query_ms(sys.argv[3], "personal", QUERIES)))
"""


def in_process_pair(data: Path, env: dict, baseline: Path, baseline_data: Path, turns: int = 3) -> dict:
    """In-process p50 of this version on `data` and of `baseline` on its own index of the same corpus (an index of
    another chunker version is refused), `turns` fresh processes each, taking turns; the medians and their ratio."""
    p50s: dict[str, list[float]] = {"this": [], "baseline": []}
    for _ in range(turns):
        for name, scripts, folder in (("this", SCRIPTS, data), ("baseline", baseline / "scripts", baseline_data)):
            command = [sys.executable, "-c", IN_PROCESS, str(scripts), str(PROJECT / "bench"), str(folder)]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"in-process search of {scripts} failed:\n{done.stderr[-2000:]}")
            p50s[name].append(json.loads(done.stdout.splitlines()[-1])["p50"])
    this, then = statistics.median(p50s["this"]), statistics.median(p50s["baseline"])
    return {"p50_ms": this, "baseline_p50_ms": then, "ratio": round(this / then, 2), "turns": turns}


async def mcp_calls(data: Path, env: dict, rounds: int) -> dict:
    """p50/p95 of `search` calls through the SDK's client over stdio (after one warming round), and the server's RSS."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(command=sys.executable, args=[str(SCRIPTS / "mcp_server.py"), "--data-dir", str(data)],
                                   env={key: env[key] for key in ("HOME", "RAG_SEARCH_HOME")})
    latencies = []
    async with Client(server, mode="legacy") as client:
        for query in QUERIES * (rounds + 1):
            started = time.perf_counter()
            result = await client.call_tool("search", {"query": query})
            latencies.append((time.perf_counter() - started) * 1000)
            if result.is_error or not json.loads(result.content[0].text)["results"]:
                sys.exit(f"MCP search failed: {result.content[0].text[:500]}")
        rss, peak = server_memory()
    latencies = sorted(latencies[len(QUERIES):])
    return {"calls": len(latencies), "p50_ms": round(statistics.median(latencies), 1),
            "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1), "rss_mb": rss, "peak_rss_mb": peak}


def server_memory() -> tuple[int, int]:
    """(RSS, peak RSS) in MB of our child running mcp_server.py, from /proc."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            command = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields["PPid"]) == os.getpid() and b"mcp_server.py" in command:
            return round(int(fields["VmRSS"].split()[0]) / 1024), round(int(fields["VmHWM"].split()[0]) / 1024)
    sys.exit("the MCP server process was not found")


def build_corpus(root: Path) -> None:
    abstracts = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text().splitlines() if line.strip()]
    for number in range(FILES):
        parts = [f"# Reading notes {number}\n"]
        for offset in range(ABSTRACTS_PER_FILE):
            doc = abstracts[(number * ABSTRACTS_PER_FILE + offset) % len(abstracts)]
            parts.append(f"## {doc['title']}\n\n{doc['text']}\n")
        folder = root / f"topic-{number % 50:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{number:04d}.md").write_text("\n".join(parts))


def cpu() -> dict:
    """The CPU the figures were measured on: int8 embedding is about twice as fast as float only where the CPU has
    VNNI instructions (an AMD EPYC without them ran both at the same speed)."""
    # here: IN_PROCESS imports this file beside a baseline's package, which has none of these
    from rag_search.core.config import INT8_CPU_FLAGS, cpu_flags, graph_for_cpu, read_cpuinfo

    text = read_cpuinfo()
    model = next((line.partition(":")[2].strip() for line in (text or "").splitlines() if line.startswith("model name")), "unknown")
    flags = cpu_flags(text)
    return {"model": model, "cores": os.cpu_count(), "vnni": sorted(flags & INT8_CPU_FLAGS), "avx512": "avx512f" in flags,
            "graph_for_a_new_data_dir": graph_for_cpu(text)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, help="keep corpus and index here, and reuse them")
    parser.add_argument("--runs", type=int, default=30, help="fresh processes per search measurement (default 30)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another version's checkout (e.g. `git archive main scripts | tar -x -C DIR`): its cold search.py "
                             "and its in-process search, on its own index of the corpus, are measured in turn with this one's")
    args = parser.parse_args()

    temp = None
    if args.work is None:
        temp = tempfile.mkdtemp(prefix="rag-bench-speed-")
    work = args.work or Path(temp)
    corpus, data = work / "corpus", work / "data"
    env = {**os.environ, "HOME": str(work), "RAG_SEARCH_HOME": str(data)}
    python = sys.executable
    report: dict = {"files": FILES, "cpu": cpu()}
    try:
        if not (data / "personal" / "CURRENT").exists():
            shutil.rmtree(corpus, ignore_errors=True)
            build_corpus(corpus)
            seconds, peak, output = child_peak([python, str(SCRIPTS / "index_personal.py"), "--quiet", str(corpus)], env)
            summary = json.loads(output)
            report["indexing"] = {"chunks": summary["chunks"], "seconds": round(seconds, 1),
                                  "chunks_per_second": round(summary["chunks"] / seconds, 1), "peak_rss_mb": round(peak)}
        seconds, _, output = child_peak([python, str(SCRIPTS / "index_personal.py"), "--quiet", str(corpus)], env)
        report["refresh_nothing_changed_s"] = round(seconds, 2)
        note = corpus / "topic-07" / "note-1207.md"
        note.write_text(note.read_text() + f"\n## Added at {time.time()}\n\nOne more paragraph about the results.\n")
        seconds, _, output = child_peak([python, str(SCRIPTS / "index_personal.py"), "--quiet", str(corpus)], env)
        changed = json.loads(output)
        report["refresh_one_file_changed_s"] = round(seconds, 2)
        report["one_file_changed_embedded"] = changed["embedded"]
        report["chunks"] = changed["chunks"]

        store = Store.open_for_reading(load_settings(data_dir=str(data)), "personal")
        chroma_folder = str(store.folder / "chroma")
        store.close()
        search = [python, str(SCRIPTS / "search.py"), QUERIES[0]]
        naive = [python, str(PROJECT / "bench" / "naive_search.py"), chroma_folder, "personal", QUERIES[0]]
        baseline_data = work / "baseline-data"  # the baseline's own index of the same corpus, built or refreshed here
        baseline = []
        if args.baseline:
            child_peak([python, str(args.baseline / "scripts" / "index_personal.py"), "--quiet", "--data-dir", str(baseline_data),
                        str(corpus)], env)
            # Cold, as this version's --no-resident: a baseline with a resident searcher would answer warm (one without
            # ignores the variable).
            baseline = [["env", "RAG_SEARCH_RESIDENT=0", python, str(args.baseline / "scripts" / "search.py"), "--data-dir",
                         str(baseline_data), QUERIES[0]]]
        rows = warm_and_cold(search, env, args.runs, naive, *baseline)
        report["warm_search"], report["cold_search"], report["cold_naive"] = rows[:3]
        if baseline:
            report["cold_search_baseline"] = rows[3]
        report["speedup_p50"] = round(report["cold_naive"]["p50_s"] / report["cold_search"]["p50_s"], 1)
        report["warm_vs_cold_p50"] = round(report["warm_search"]["p50_s"] / report["cold_search"]["p50_s"], 3)

        report["in_process_query_ms"] = in_process_query_ms(data, "personal", QUERIES)
        if args.baseline:
            report["in_process_vs_baseline"] = in_process_pair(data, env, args.baseline, baseline_data)
        report["mcp"] = asyncio.run(mcp_calls(data, env, rounds=max(5, args.runs)))
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)

    print(f"cpu: {report['cpu']['model']}, {report['cpu']['cores']} cores, VNNI: {', '.join(report['cpu']['vnni']) or 'none'}, "
          f"AVX-512: {'yes' if report['cpu']['avx512'] else 'no'}, graph for a new data dir: {report['cpu']['graph_for_a_new_data_dir']}")
    print(f"corpus: {FILES} files, {report['chunks']} chunks")
    if "indexing" in report:
        i = report["indexing"]
        print(f"indexing: {i['seconds']} s, {i['chunks_per_second']} chunks/s, peak RSS {i['peak_rss_mb']} MB")
    print(f"refresh, nothing changed: {report['refresh_nothing_changed_s']} s; one file changed: "
          f"{report['refresh_one_file_changed_s']} s ({report['one_file_changed_embedded']} chunks embedded)")
    print(f"{'fresh process':32} {'p50 s':>7} {'p95 s':>7} {'peak RSS MB':>12} {'runs':>5}")
    for name, key in (("search.py, resident searcher", "warm_search"), ("search.py --no-resident (cold)", "cold_search"),
                      ("search.py of --baseline (cold)", "cold_search_baseline"), ("naive sentence-transformers", "cold_naive")):
        if key not in report:
            continue
        row = report[key]
        print(f"{name:32} {row['p50_s']:7.3f} {row['p95_s']:7.3f} {row['peak_rss_mb']:12} {row['runs']:5}")
    print(f"cold search.py is {report['speedup_p50']}x faster than naive at p50; warm takes {report['warm_vs_cold_p50']}x the cold p50")
    if "cold_search_baseline" in report:
        ratio = report["cold_search"]["p50_s"] / report["cold_search_baseline"]["p50_s"]
        print(f"cold search.py against the baseline's: x{ratio:.2f} at p50")
    print(f"in-process query (embedding + hybrid retrieval): p50 {report['in_process_query_ms']['p50']} ms, "
          f"p95 {report['in_process_query_ms']['p95']} ms")
    if "in_process_vs_baseline" in report:
        pair = report["in_process_vs_baseline"]
        print(f"in-process p50, {pair['turns']} fresh processes each taking turns: {pair['p50_ms']} ms against the baseline's "
              f"{pair['baseline_p50_ms']} ms (x{pair['ratio']})")
    mcp = report["mcp"]
    print(f"MCP server, per search call through the client: p50 {mcp['p50_ms']} ms, p95 {mcp['p95_ms']} ms "
          f"({mcp['calls']} calls); server RSS {mcp['rss_mb']} MB, peak {mcp['peak_rss_mb']} MB")
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
