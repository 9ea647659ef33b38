"""No library phones home, and nothing is written outside what rag-search owns, in any script a user runs or the MCP server.

Each process starts as from a user's fresh shell: a fresh HOME and TMPDIR, none of the libraries' switches (the
scripts must set them), and no CI variables: onnxruntime collects nothing when it believes it runs in CI (CI,
GITHUB_ACTIONS, …), so inherited from a CI runner they would hide what a user's machine gets. Telemetry leaves files
before it sends (onnxruntime 1.29+: a device id and an event queue in ~/.cache/Microsoft, a session file in $TMPDIR,
then a lookup of its collector), so after the runs every file under HOME and TMPDIR must lie in the data dir, the
personal root, or what this test made (the doc folder, the registry); and every process must have had the switches
set before it imported any of the libraries that read them.
"""

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import SCRIPTS
from rag_search.core.telemetry import FORCED

pytestmark = pytest.mark.processes  # each script and the MCP server run as the user runs them, watched

# Installed in every process: at the first import of each library that reads a switch, the switches' values then
# (most are read once, at import: onnxruntime's as it initialises).
LIBRARIES = ("onnxruntime", "chromadb", "torch", "transformers", "sentence_transformers", "huggingface_hub", "tokenizers")
WATCH_IMPORTS = """
import importlib.abc, json, os, sys

class _Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in {libraries!r}:
            with open({record!r}, "a") as record:
                switches = {{key: os.environ.get(key) for key in {switches!r}}}
                record.write(json.dumps({{"argv": sys.argv, "library": name, "switches": switches}}) + "\\n")
        return None

sys.meta_path.insert(0, _Watch())
"""


def clean_env(home: Path, tmp: Path, hook: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp), "PYTHONPATH": str(hook),
            "RAG_SEARCH_SOURCES": str(home / "registry" / "sources.json")}


# What `make setup` runs: the one-time ONNX export (torch leaves an empty cache folder, torchinductor_$USER, in $TMPDIR).
SETUP = ("import sys; sys.path.insert(0, sys.argv[1]); "
         "from rag_search.core.telemetry import keep_libraries_local; keep_libraries_local(); "
         "from rag_search.model.embedding import find_model; "
         "from rag_search.model.onnx_export import prepare_cache; prepare_cache(find_model())")

EMBED_WITHOUT_A_SCRIPT = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
                          "from rag_search.model.embedding import find_model, query_embedder; "
                          "query_embedder(Path(sys.argv[2]), find_model(), 'int8').embed(['a question'])")


def run(env: dict, name: str, *args) -> dict:
    completed = subprocess.run([sys.executable, str(SCRIPTS / name), *map(str, args)], env=env, cwd=env["HOME"],
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, f"{name} {args}: exit {completed.returncode}\n{completed.stderr}"
    return json.loads(completed.stdout)


def mcp_search(env: dict, query: str) -> dict:
    """Start mcp_server.py over stdio as Claude Code does (initialize), search once."""
    async def main():
        parameters = StdioServerParameters(command=sys.executable, args=[str(SCRIPTS / "mcp_server.py")], env=env, cwd=env["HOME"])
        async with asyncio.timeout(240), Client(parameters, mode="legacy", read_timeout_seconds=120) as client:
            result = await client.call_tool("search", {"query": query, "top_k": 2})
            assert not result.is_error, result.content[0].text
            return json.loads(result.content[0].text)

    return asyncio.run(main())


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The install as `make setup` leaves it, made elsewhere: what counts is what the runs after it leave."""
    setup = tmp_path_factory.mktemp("setup")
    subprocess.run([sys.executable, "-c", SETUP, str(SCRIPTS)], env={"PATH": os.environ["PATH"], "HOME": str(setup), "TMPDIR": str(setup)},
                   check=True, capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def user_runs(installed, tmp_path_factory):
    """Every script a user runs, and the MCP server, once each over one data dir: (home, tmp, records, owned paths)."""
    base = tmp_path_factory.mktemp("fresh")
    home, tmp, hook = base / "home", base / "tmp", base / "hook"
    notes, docs = home / ".claude" / "state" / "notes", home / "docs"  # the default personal root; a local doc folder
    for folder in (notes, docs, tmp, hook, home / "registry"):
        folder.mkdir(parents=True)
    (notes / "caching.md").write_text("# Caching\n\nWe cache rendered pages for ten minutes in Redis.\n")
    (docs / "deploy.md").write_text("# Deploying\n\nRun the deploy job from the release branch only.\n")
    records = base / "imports.jsonl"
    (hook / "sitecustomize.py").write_text(WATCH_IMPORTS.format(libraries=LIBRARIES, record=str(records), switches=list(FORCED)))
    env = clean_env(home, tmp, hook)

    run(env, "index_personal.py", "--quiet")
    run(env, "add_doc_source.py", "--id", "handbook", "--name", "Handbook", "--type", "local", "--path", docs)
    run(env, "index_docs.py", "--all", "--quiet")
    found = run(env, "search.py", "how long are pages cached?")  # cold, and it leaves a resident searcher behind
    deadline = time.monotonic() + 60
    while run(env, "resident.py", "status")["resident"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert run(env, "search.py", "how long are pages cached?") == found  # answered by the searcher
    run(env, "get.py", found["results"][0]["file"])
    run(env, "status.py")
    run(env, "memory.py", "add", "--type", "lesson_learned", "--lesson", "Warm the cache before a release.")
    run(env, "memory.py", "list")
    run(env, "memory.py", "query", "cache")
    run(env, "add_doc_source.py", "--list")
    assert mcp_search(env, "deploy job")["results"]
    assert run(env, "resident.py", "stop")["stopped"]["answers"] >= 1
    owned = [home / ".claude" / "data" / "rag-search", home / ".claude" / "state", docs, home / "registry"]
    return home, tmp, records, owned


def leftovers(folder: Path, owned: list[Path]) -> list[str]:
    """Files (and empty folders) under `folder` that are neither in nor on the way to an `owned` path."""
    found = []
    for path in sorted(folder.rglob("*")):
        if any(path == mine or mine in path.parents or path in mine.parents for mine in owned):
            continue
        if not path.is_dir() or not any(path.iterdir()):
            found.append(str(path.relative_to(folder.parent)))
    return found


def test_nothing_is_written_outside_the_data_dir_and_the_personal_root(user_runs):
    home, tmp, _, owned = user_runs
    stray = leftovers(home, owned) + leftovers(tmp, [])
    assert stray == [], "written outside what rag-search owns:\n" + "\n".join(stray)


def test_the_package_sets_them_itself_for_code_run_without_a_script(installed, tmp_path):
    """A benchmark or `make setup` imports the package and loads the model without a script's first call."""
    home, tmp = tmp_path / "fresh-home", tmp_path / "fresh-tmp"
    home.mkdir()
    tmp.mkdir()
    completed = subprocess.run([sys.executable, "-c", EMBED_WITHOUT_A_SCRIPT, str(SCRIPTS), str(tmp_path / "no-index")],
                               env={"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp)}, capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0, completed.stderr
    stray = leftovers(home, []) + leftovers(tmp, [])
    assert stray == [], "written by loading the model:\n" + "\n".join(stray)


def test_the_switches_are_set_before_any_library_is_imported(user_runs):
    """In every process, ORT_DISABLE_TELEMETRY=1 (and the rest) before onnxruntime initialises, and before the others load."""
    *_, records, _ = user_runs
    imports = [json.loads(line) for line in records.read_text().splitlines()]
    onnxruntime = {Path(entry["argv"][0]).name for entry in imports if entry["library"] == "onnxruntime"}
    loaded = {"index_personal.py", "index_docs.py", "search.py", "memory.py", "mcp_server.py", "resident.py"}
    assert loaded <= onnxruntime  # the model was loaded, by the resident searcher too
    assert {entry["library"] for entry in imports} >= {"onnxruntime", "chromadb", "tokenizers"}
    unset = [f"{' '.join(entry['argv'])}: {entry['library']} with {entry['switches']}" for entry in imports
             if entry["switches"] != FORCED]
    assert unset == [], "imported before the switches were set:\n" + "\n".join(unset)
