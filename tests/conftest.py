"""Shared fixtures: an isolated HOME for every test, script runners, a prebuilt example index.

Tests use real parts: ChromaDB on disk in tmp dirs, the real model, the
scripts run as subprocesses from another working directory.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
SCRIPTS = PROJECT / "scripts"
EXAMPLES = PROJECT / "examples" / "state"

sys.path.insert(0, str(SCRIPTS))

OUR_ENV_VARS = ("RAG_SEARCH_HOME", "RAG_SEARCH_CONFIG", "RAG_SEARCH_PERSONAL_DIRS", "RAG_SEARCH_MODEL", "RAG_SEARCH_SOURCES")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """No test may touch the real ~/.claude, ~/.config or the shipped sources.json."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in OUR_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_SEARCH_SOURCES", str(home / "sources.json"))
    return home


class ScriptResult:
    def __init__(self, completed: subprocess.CompletedProcess):
        self.code = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    @property
    def json(self):
        return json.loads(self.stdout)

    def __repr__(self) -> str:
        return f"<exit {self.code}>\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def run_script(name: str, *args, cwd: Path | None = None, env: dict | None = None, timeout: float = 300) -> ScriptResult:
    """Run scripts/<name> with this interpreter from a working directory outside the project."""
    completed = subprocess.run(
        [sys.executable, str(SCRIPTS / name), *map(str, args)],
        cwd=cwd or Path(os.environ["HOME"]),
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return ScriptResult(completed)


_READ_STORE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from rag_search.store import Store
store = Store.open_for_reading(Path(sys.argv[2]))
collection = store.collection(sys.argv[3])
found = collection.get(include=["metadatas", "documents"]) if collection else {"ids": [], "metadatas": [], "documents": []}
print(json.dumps({i: {"metadata": m, "text": d} for i, m, d in zip(found["ids"], found["metadatas"], found["documents"])}))
"""


def store_contents(data_dir: Path, collection: str = "personal") -> dict:
    """{chunk id: {"metadata", "text"}} read in a child process, as another reader would."""
    completed = subprocess.run(
        [sys.executable, "-c", _READ_STORE, str(SCRIPTS), str(data_dir), collection],
        capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def files_in_store(data_dir: Path, collection: str = "personal") -> dict:
    """{file: number of chunks} in the store."""
    counts: dict = {}
    for chunk in store_contents(data_dir, collection).values():
        counts[chunk["metadata"]["file"]] = counts.get(chunk["metadata"]["file"], 0) + 1
    return counts


@pytest.fixture
def state_dir(tmp_path) -> Path:
    """A fresh copy of the example personal state folder."""
    target = tmp_path / "state"
    shutil.copytree(EXAMPLES, target)
    return target


@pytest.fixture(scope="session")
def example_index(tmp_path_factory) -> Path:
    """A data dir with the example corpus indexed once for the whole session (treat as read-only)."""
    base = tmp_path_factory.mktemp("example-index")
    state = base / "state"
    shutil.copytree(EXAMPLES, state)
    data = base / "data"
    result = run_script("index_personal.py", "--data-dir", data, state, cwd=base, env={"HOME": str(base)})
    assert result.code == 0, result
    return data


@pytest.fixture
def example_data(example_index, tmp_path) -> Path:
    """A private copy of the example index that a test may change."""
    target = tmp_path / "data"
    shutil.copytree(example_index, target)
    return target
