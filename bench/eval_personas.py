#!/usr/bin/env python3
"""One search over both collections, judged on personas nobody tuned to: does either collection hide the other?

Each persona (bench/personas/<name>/, README.md there) is a user's ~/.claude/state written blind,
beside the documentation sets that user reads, with frozen questions of three kinds: personal (the
answer is a passage of the user's state), docs (a documentation page answers it) and cross (both a
note and a page bear on it). The mixed benchmark's generated state (bench/mixed_state.py) with docs-faq's helm
and traefik sets and their questions is one more persona, "platform", kept as it was.

Each persona gets one data dir under --work, built through the product's scripts (the state
indexed by index_personal.py, each doc set a local doc source without --glob, as README's
command registers it) and only refreshed on a rerun. Every question is searched in-process as
search.py does (top 10, search.py's per-file cap), by:
  default   search.py with no --index: both collections
  personal  --index personal (personal questions)
  docs      --index docs (docs and cross questions)
  NAME      each --variant NAME:FIELD=VALUE,... : default search with other SearchOptions fields
Scores per persona: personal answer first / in the top 3; docs answer page in the top 5 (what
search.py shows); cross questions with both a listed note passage and a listed page in the top 5.
A personal result answers when its file is the listed file and its text holds the needle; a docs
result when it is a listed page ("answer" grade; the platform persona's linked pages).

The questions are frozen: each persona's files are hashed and checked against FROZEN before
any search, so a question cannot be changed after its ranking was seen.

    .venv/bin/python bench/eval_personas.py --work /tmp/personas [--personas webdev sre-edge] [--variant ...]
"""

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import re
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))
sys.path.insert(0, str(PROJECT / "bench"))

import mixed_state  # noqa: E402
from eval_docs import DEFAULT_DATA, K, run_script  # noqa: E402
from variants import parse_variant  # noqa: E402

from rag_search.core.config import load_settings  # noqa: E402
from rag_search.search.retrieval import Searcher, SearchOptions, search, stores_for  # noqa: E402

PERSONAS = PROJECT / "bench" / "personas"
SHARED = PROJECT.parent / "shared" / "bench"
SHOWN = 5  # results search.py prints by default
PLATFORM = "platform"  # the mixed benchmark's persona: bench/mixed_state.py beside docs-faq's helm and traefik
PLATFORM_CORPORA = ("helm", "traefik")
# sha256 of each persona's folder (bench/personas/<name>: every file's path and bytes), taken when it was frozen.
FROZEN: dict[str, str] = {
    "gitops": "e0db97035cb9bfc4cb2d5aefaf9f1cdaa7153d8fb1754f8f6bd5fbd15a54a92c",
    "webdev": "bd48852e37b85a1957428fbd58ca3338900adf6e3366929cdacc7f4ee35b58a3",
    "sre-edge": "0a293c5a52b82097688b5880c11480a4828361033b28dd7f21c6338e5a4a9478",
    "data-platform": "10929c8da9dbc02f09cc524e2964c45f72c9479b93a811afa46be217a712aa85",
}
_DATE_TOKEN = re.compile(r"\{\{(date|time):-(\d+)\}\}")


@dataclasses.dataclass
class Persona:
    name: str
    docs: dict[str, Path]  # corpus id -> its documentation folder
    files: dict[str, str]  # state files (relative path -> text), dates filled in
    questions: list[dict]  # as bench/personas/README.md: id, kind, question, personal [{file, needle}], docs [{corpus, path}]


def folder_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def fill_dates(text: str, today: dt.date) -> str:
    """{{date:-N}} -> the day N days before today; {{time:-N}} -> a time that day (UTC)."""
    def filled(match: re.Match) -> str:
        day = today - dt.timedelta(days=int(match.group(2)))
        return day.isoformat() if match.group(1) == "date" else f"{day.isoformat()}T09:30:00Z"
    return _DATE_TOKEN.sub(filled, text)


def load_persona(name: str, today: dt.date, unfrozen: bool) -> Persona:
    folder = PERSONAS / name
    if not unfrozen and FROZEN.get(name) != folder_hash(folder):
        raise SystemExit(f"persona {name}: its files are not the frozen ones (FROZEN in {Path(__file__).name}); "
                         "questions are frozen before any search")
    state = folder / "state"
    files = {path.relative_to(state).as_posix(): fill_dates(path.read_text(encoding="utf-8"), today)
             for path in sorted(state.rglob("*")) if path.is_file()}
    docs = {corpus: SHARED / where for corpus, where in json.loads((folder / "docs.json").read_text()).items()}
    questions = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines() if line.strip()]
    return Persona(name, docs, files, questions)


def platform_persona() -> Persona:
    """The mixed benchmark's persona as it was: the generated state's questions, and docs-faq's questions of helm and traefik
    answered by their linked pages."""
    questions = [{"id": f"platform-p{n:02d}", "kind": "personal", "style": style, "question": question,
                  "personal": [{"file": path, "needle": needle}]}
                 for n, (style, question, path, needle) in enumerate(mixed_state.QUESTIONS, start=1)]
    faq = [json.loads(line) for line in (DEFAULT_DATA / "questions.jsonl").read_text().splitlines() if line.strip()]
    questions += [{"id": q["id"], "kind": "docs", "question": q["question"],
                   "docs": [{"corpus": q["corpus"], "path": path, "grade": "answer"} for path in q["relevant"]]}
                  for q in faq if q["corpus"] in PLATFORM_CORPORA]
    return Persona(PLATFORM, {corpus: DEFAULT_DATA / corpus for corpus in PLATFORM_CORPORA}, mixed_state.state_files(), questions)


def problems_of(persona: Persona) -> list[str]:
    """Needles that are not in their file, pages that do not exist: authoring mistakes, found before any search."""
    found = []
    for q in persona.questions:
        for item in q.get("personal", []):
            if item["needle"] not in persona.files.get(item["file"], ""):
                found.append(f"{q['id']}: needle not in {item['file']}: {item['needle']!r}")
        for item in q.get("docs", []):
            if not (persona.docs[item["corpus"]] / item["path"]).is_file():
                found.append(f"{q['id']}: no page {item['corpus']}/{item['path']}")
    return found


def build(persona: Persona, work: Path) -> dict:
    """The persona's data dir (work/data): its state and its doc sets indexed, or refreshed on a rerun."""
    state, data, registry = work / "state", work / "data", work / "sources.json"
    mixed_state.write_state(state, persona.files)
    personal = run_script("index_personal.py", "--data-dir", data, "--quiet", state)
    if not registry.is_file():
        registry.write_text('{"sources": []}\n')
        for corpus, folder in persona.docs.items():
            run_script("add_doc_source.py", "--sources", registry, "--data-dir", data, "--quiet", "--id", corpus,
                       "--name", f"{corpus} docs", "--type", "local", "--path", folder.resolve())
    docs = run_script("index_docs.py", "--sources", registry, "--data-dir", data, "--quiet", "--all")
    failed = [source for source in docs["sources"] if source["status"] != "ok"]
    if failed:
        raise SystemExit(f"{persona.name}: indexing docs failed: {failed}")
    return {"personal": personal["chunks"], "docs": {source["id"]: source["chunks"] for source in docs["sources"]}}


def answers(hit, question: dict, kind: str) -> bool:
    if kind == "personal":
        return hit.collection == "personal" and any(hit.metadata.get("file") == item["file"] and item["needle"] in hit.text
                                                    for item in question.get("personal", []))
    return hit.collection == "docs" and any(hit.metadata.get("file") == f"{item['corpus']}/{item['path']}"
                                            for item in question.get("docs", []) if item.get("grade", "answer") == "answer")


def rank_of(hits: list, question: dict, kind: str) -> int | None:
    return next((rank for rank, hit in enumerate(hits, start=1) if answers(hit, question, kind)), None)


def systems_of(variants: list[str]) -> dict[str, tuple[str, SearchOptions]]:
    """{name: (index, options)}: the fixed systems, then one per --variant (default search with other settings)."""
    options = SearchOptions(top_k=K)
    systems = {"default": ("all", options), "personal": ("personal", options), "docs": ("docs", options)}
    for text in variants:
        name, changed = parse_variant(text, options)
        systems[name] = ("all", changed)
    return systems


def ranks(data: Path, persona: Persona, systems: dict) -> dict[str, dict[str, dict]]:
    """{system: {question id: {"personal": rank, "docs": rank, "first": where the first result is from}}}."""
    searcher = Searcher(load_settings(data_dir=str(data)), "all")
    try:
        stores = searcher.refresh()
        vectors = {q["id"]: searcher.embedder.embed([q["question"]])[0] for q in persona.questions}
        found: dict[str, dict[str, dict]] = {}
        for name, (index, options) in systems.items():
            chosen = stores_for(stores if index == "all" else {index: stores[index]}, None)
            found[name] = {}
            for q in persona.questions:
                hits = search(chosen, q["question"], vectors[q["id"]], options).hits
                found[name][q["id"]] = {"personal": rank_of(hits, q, "personal"), "docs": rank_of(hits, q, "docs"),
                                        "first": f"{hits[0].collection}:{hits[0].metadata.get('file', '')}" if hits else None}
        return found
    finally:
        searcher.close()


def within(rank: int | None, cut: int) -> bool:
    return rank is not None and rank <= cut


HEADER = ["| persona | system | personal first | personal top 3 | docs in top 5 | cross: both in top 5 |", "|---|---|---|---|---|---|"]


def tally(outcomes: list[tuple[str, dict]]) -> dict:
    """Counts over (kind, {"personal": rank, "docs": rank}) pairs: personal first / top 3, docs in top 5, cross both in
    top 5, and the question count of each kind."""
    row = {"personal": 0, "top1": 0, "top3": 0, "docs": 0, "docs5": 0, "cross": 0, "cross5": 0}
    for kind, ranks in outcomes:
        row[kind] += 1
        if kind == "personal":
            row["top1"] += ranks["personal"] == 1
            row["top3"] += within(ranks["personal"], 3)
        elif kind == "docs":
            row["docs5"] += within(ranks["docs"], SHOWN)
        else:
            row["cross5"] += within(ranks["personal"], SHOWN) and within(ranks["docs"], SHOWN)
    return row


def scores(persona: Persona, found: dict[str, dict]) -> dict:
    """The persona's counts (tally) for one system's ranks."""
    return tally([(q["kind"], found[q["id"]]) for q in persona.questions])


def row_line(persona: str, system: str, row: dict) -> str:
    """One table line: each count over its questions."""
    cells = [f"{row['top1']}/{row['personal']}", f"{row['top3']}/{row['personal']}", f"{row['docs5']}/{row['docs']}",
             f"{row['cross5']}/{row['cross']}" if row["cross"] else "–"]
    return f"| {persona} | {system} | " + " | ".join(cells) + " |"


def report(rows: dict[str, dict[str, dict]]) -> str:
    """One line per persona and system: personal top-1 and top-3, docs Hit@5, cross both in top 5, as counts."""
    return "\n".join(HEADER + [row_line(persona, system, row) for persona, by_system in rows.items()
                                for system, row in by_system.items()])


def misses(persona: Persona, found: dict[str, dict]) -> list[str]:
    """What the default search gets wrong that one collection alone gets right, with what came first instead."""
    lines = []
    for q in persona.questions:
        default = found["default"][q["id"]]
        if q["kind"] in ("personal", "cross") and default["personal"] != 1 and found["personal"][q["id"]]["personal"] == 1:
            lines.append(f"{q['id']} personal rank {default['personal']} (alone 1), first {default['first']}: {q['question']}")
        if q["kind"] in ("docs", "cross") and not within(default["docs"], SHOWN) and within(found["docs"][q["id"]]["docs"], SHOWN):
            lines.append(f"{q['id']} docs rank {default['docs']} (alone {found['docs'][q['id']]['docs']}), first "
                         f"{default['first']}: {q['question']}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--personas", nargs="+", help=f"default: every folder of bench/personas, and {PLATFORM}")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:FIELD=VALUE,…")
    parser.add_argument("--unfrozen", action="store_true", help="run on personas whose files are not the frozen ones")
    parser.add_argument("--json", type=Path, help="write every rank here")
    args = parser.parse_args()
    names = args.personas or sorted(p.name for p in PERSONAS.iterdir() if p.is_dir()) + [PLATFORM]
    today = dt.date.today()
    systems = systems_of(args.variant)
    rows, all_found = {}, {}
    for name in names:
        persona = platform_persona() if name == PLATFORM else load_persona(name, today, args.unfrozen)
        problems = problems_of(persona)
        if problems:
            raise SystemExit(f"persona {name}:\n" + "\n".join(problems))
        started = time.perf_counter()
        built = build(persona, args.work / name)
        print(f"{name}: {len(persona.files)} files, {built['personal']} personal chunks, docs {built['docs']} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        found = ranks(args.work / name / "data", persona, systems)
        rows[name] = {system: scores(persona, found[system]) for system in systems}
        all_found[name] = found
        for line in misses(persona, found):
            print(f"{name}: {line}", file=sys.stderr)
    print(report(rows))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "ranks": all_found}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
