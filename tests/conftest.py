"""Shared fixtures: an isolated HOME for every test, script runners, a prebuilt example index, the two tiers.

Tests use real parts: ChromaDB on disk in tmp dirs, the real model, the scripts run as
subprocesses from another working directory (run_script), or their main() in the test's own
process (call_script) where the process is not what the test is about.

Two tiers: a test that starts a Python process (a script through run_script, the fault runner,
a resident, MCP or Chroma server) is marked `processes`; `make test-fast` runs the others.
"""

import contextlib
import fcntl
import http.client
import importlib
import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
SCRIPTS = PROJECT / "scripts"
EXAMPLES = PROJECT / "examples" / "state"

sys.path.insert(0, str(SCRIPTS))

OUR_ENV_VARS = ("RAG_SEARCH_HOME", "RAG_SEARCH_CONFIG", "RAG_SEARCH_PERSONAL_DIRS", "RAG_SEARCH_MODEL", "RAG_SEARCH_SOURCES",
                "RAG_SEARCH_MEMORY_FILE", "RAG_SEARCH_EMBEDDING")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """No test may touch the real ~/.claude, ~/.config or the shipped sources.json."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in OUR_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_SEARCH_SOURCES", str(home / "sources.json"))
    monkeypatch.setenv("RAG_SEARCH_RESIDENT", "0")  # tests about the resident searcher turn it on (test_resident.py)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return home


# The two tiers ---------------------------------------------------------------------------------------------------
# A test that starts a Python process (a script through run_script, the fault runner, a resident searcher, the MCP or
# Chroma server) is marked `processes`: the whole module with `pytestmark = pytest.mark.processes`, or the test with
# `@pytest.mark.processes`. `make test-fast` runs the others. The guard below fails an unmarked test that starts one,
# in either tier (a session fixture starts its process before the guard is on: mark the modules that use it).

VENV_BIN = Path(sys.executable).parent  # the chroma command is there too


def _is_python(command) -> bool:
    program = Path(str(command[0] if isinstance(command, (list, tuple)) else command))
    return program.name.startswith("python") or program.parent == VENV_BIN


@pytest.fixture(autouse=True)
def in_process_only(request):
    """A test not marked `processes` that starts a Python process fails at once: it belongs to the slow tier."""
    if request.node.get_closest_marker("processes"):
        yield
        return
    start = subprocess.Popen.__init__

    def refuse_python(self, args, *rest, **options):
        if _is_python(options.get("executable") or args):
            pytest.fail(f"{request.node.nodeid} starts a Python process ({args!r}): mark it @pytest.mark.processes",
                        pytrace=False)
        start(self, args, *rest, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", refuse_python)
        yield


def resident_searchers(under: Path) -> dict[int, str]:
    """{pid: data dir} of the resident searchers running for a data dir under `under` (the one whose lock they hold)."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            if not (any(part.endswith(b"resident.py") for part in command) and b"serve" in command):
                continue
            held = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except (OSError, ValueError):
            continue
        for path in held:
            if path.endswith("/resident/lock") and path.startswith(str(under)):
                found[int(entry.name)] = path.removesuffix("/resident/lock")
    return found


@pytest.fixture(scope="session", autouse=True)
def no_searcher_left(tmp_path_factory):
    """The suite leaves no resident searcher running: one left by a test is killed, and the session fails."""
    yield
    base = tmp_path_factory.getbasetemp()
    left = resident_searchers(base)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    assert not left, f"resident searchers left running: {left}"


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


# Every option of search.py, each in at least one case (the tests fail when an option has none): answered the same cold
# and warm (test_resident.py), and by the MCP server's search tool (test_mcp_server.py).
SEARCH_QUERY = "caching decision"
SEARCH_CASES = [
    [SEARCH_QUERY],
    [SEARCH_QUERY, "--index", "personal", "--top-k", "3", "--mode", "dense"],
    [SEARCH_QUERY, "--index", "all", "--mode", "lexical", "--per-file", "0", "--explain"],
    [SEARCH_QUERY, "--index", "docs"],  # not built: exit 3, the same JSON error
    [SEARCH_QUERY, "--source", "personal", "--since", "2020-01-01", "--until", "1d", "--verbose"],
    [SEARCH_QUERY, "--source", "nonesuch"],  # unknown source: exit 2
    ["lesson", "--type", "lesson_learned", "--tag", "ci", "--min-score", "0.1", "--metadata-only"],
    [SEARCH_QUERY, "--kind", "guide", "--kind", "changelog"],  # the user's own files have no page kind: none match
    [SEARCH_QUERY, "--max-tokens", "60", "--recency-half-life", "7", "--no-refresh"],
    [SEARCH_QUERY, "--rerank", "--format", "text"],
    ["what did we decide last week", "--data-dir", "{data}"],
]
SEARCH_COLD_CASES = [  # last: other settings make the searcher give way (it is the searcher of other settings)
    [SEARCH_QUERY, "--no-resident"],
    [SEARCH_QUERY, "--chroma-url", "http://127.0.0.1:9"],  # a dead server: the same error both ways
]


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


def _loggers() -> list:
    return [logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)]


@contextlib.contextmanager
def process_state_kept():
    """What a script's main() sets for its whole process, put back afterwards: the environment (telemetry.py), the
    working directory, sys.argv, the loggers (logs.setup_logging; a logger made meanwhile gets the default level), the
    warning filters, and the SIGTERM and SIGINT handlers (cli.run)."""
    environ, cwd, argv = dict(os.environ), os.getcwd(), sys.argv[:]
    loggers = {logger: (logger.handlers[:], logger.level, logger.propagate) for logger in _loggers()}
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        with warnings.catch_warnings():
            yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)
        sys.argv[:] = argv
        for logger in _loggers():
            logger.handlers[:], level, logger.propagate = loggers.get(logger, (logger.handlers, logging.NOTSET, logger.propagate))
            logger.setLevel(level)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def call_script(name: str, *args, cwd: Path | None = None, env: dict | None = None) -> ScriptResult:
    """scripts/<name>'s main() in this process, as run_script runs it (its stdout, stderr and exit code), for a test of
    what a script computes, not of the script as a process (its start-up, imports, signals, a kill, a lock another
    process holds, what a C library writes to the file descriptors): such a test stays in the fast tier.

    It runs as where there is no fork: isolation.run_isolated then reads the index in this process. A child forked
    from a process where ChromaDB's and onnxruntime's threads already run (an earlier call's) can hang on a lock one
    of them held; a crash the isolation contains is a test of processes (test_damaged_index.py)."""
    arguments = [*map(str, args)]
    cwd = cwd or Path(os.environ["HOME"])
    stdout, stderr = io.StringIO(), io.StringIO()
    with process_state_kept(), pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(stdout), \
            contextlib.redirect_stderr(stderr):
        patch.delattr(os, "fork")
        os.environ.update({key: str(value) for key, value in (env or {}).items()})
        os.chdir(cwd)
        sys.argv[:] = [str(SCRIPTS / name), *arguments]
        try:
            code = importlib.import_module(Path(name).stem).main(arguments)
        except SystemExit as exit:  # argparse: --help, a bad flag
            code = exit.code
    return ScriptResult(subprocess.CompletedProcess(name, code or 0, stdout.getvalue(), stderr.getvalue()))


def add_source(*args):
    """add_doc_source.py with these arguments, which must succeed; its JSON."""
    result = call_script("add_doc_source.py", *args)
    assert result.code == 0, result
    return result.json


def index_docs(data, *args):
    return call_script("index_docs.py", "--data-dir", data, *args)


@pytest.fixture
def keep_previous(monkeypatch):
    """Every index keeps the generation before the published one, as one of KEEP_PREVIOUS_FROM bytes does."""
    from rag_search.store import local_vectors
    monkeypatch.setattr(local_vectors, "KEEP_PREVIOUS_FROM", 0)


def store_contents(data_dir: Path, collection: str = "personal", server: str | None = None) -> dict:
    """{chunk id: {"metadata", "text"}} as the store publishes them (as JSON has them), read through a store closed
    before this returns: no file of the index stays open here (an index run may take a generation no process holds)."""
    from rag_search.core.config import load_settings
    from rag_search.core.errors import IndexNotBuilt
    from rag_search.store.store import Store

    try:
        store = Store.open_for_reading(load_settings(data_dir=str(data_dir), chroma_url=server), collection)
    except IndexNotBuilt:
        return {}
    try:
        return json.loads(json.dumps({chunk.id: {"metadata": chunk.metadata, "text": chunk.text} for chunk in store.all_chunks()}))
    finally:
        store.close()


def server_collection(collection: str, embedding: str = "int8") -> str:
    """The Chroma server collection this install's scripts use for `collection` (its name carries the fingerprint)."""
    from rag_search.model.embedding import find_model
    from rag_search.store.server_vectors import collection_name
    from rag_search.store.store import fingerprint

    return collection_name(collection, fingerprint(find_model(), embedding))


_AGE_VECTORS = """
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from rag_search.store.vectors import FINGERPRINT_KEY, VectorIndex
folder, name, changes = Path(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
vectors = VectorIndex.open_local(folder, name)
stored = vectors.fingerprint()
if stored is not None:
    vectors.collection.modify(metadata={FINGERPRINT_KEY: json.dumps({**stored, **changes})})
vectors.close()
"""


def marked_data_dir(path: Path) -> Path:
    """A new data dir as the first index run leaves it before anything else is in it: 0700, with rag-search's marker."""
    path.mkdir(mode=0o700, parents=True)
    (path / ".rag-search").write_text(json.dumps({"made_by": "rag-search"}) + "\n")
    return path


def published_folder(data: Path, collection: str) -> Path:
    root = data / collection
    return root / "generations" / (root / "CURRENT").read_text().strip()


def age_index(data: Path, collection: str, **changes) -> None:
    """Make the published index look built by another version (or model): its stored fingerprint gets `changes`."""
    import sqlite3

    folder = published_folder(data, collection)
    with contextlib.closing(sqlite3.connect(folder / "catalog.sqlite")) as catalog, catalog:
        (state,) = catalog.execute("SELECT state FROM sources WHERE source_id = '@fingerprint'").fetchone()
        catalog.execute("UPDATE sources SET state = ? WHERE source_id = '@fingerprint'", (json.dumps({**json.loads(state), **changes}),))
    if (folder / "chroma").is_dir():
        subprocess.run([sys.executable, "-c", _AGE_VECTORS, str(SCRIPTS), str(folder / "chroma"), collection, json.dumps(changes)],
                       check=True, capture_output=True, text=True)


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
    result = call_script("index_personal.py", "--data-dir", data, state, cwd=base, env={"HOME": str(base)})
    assert result.code == 0, result
    return data


# Two long notes for get.py --max-chars: a manual of 400 headed sections, and a transcript with no heading at all whose
# passage DEEP_PASSAGE lies three quarters of the way in.
DEEP_PASSAGE = "The zebracorn failover drill moved to rack 7 after the March outage."


def long_manual() -> str:
    sections = "".join(f"## Option {number:03}\n\nThe setting option-{number:03} sets how often the controller polls queue "
                       f"{number}; its default is {number} seconds.\n\n" for number in range(400))
    return f"# Controller options\n\n{sections}"


def long_transcript() -> str:
    paragraphs = [f"Item {number}: speaker {number % 4} reports on the weekly review, and the team agrees to follow up."
                  for number in range(400)]
    paragraphs[300] = DEEP_PASSAGE
    return "\n\n".join(paragraphs) + "\n"


@pytest.fixture(scope="session")
def long_pages_index(tmp_path_factory) -> Path:
    """A data dir with notes/manual.md (long_manual) and notes/transcript.txt (long_transcript) indexed (read-only)."""
    base = tmp_path_factory.mktemp("long-pages")
    (base / "state" / "notes").mkdir(parents=True)
    (base / "state" / "notes" / "manual.md").write_text(long_manual())
    (base / "state" / "notes" / "transcript.txt").write_text(long_transcript())
    result = call_script("index_personal.py", "--data-dir", base / "data", base / "state", cwd=base, env={"HOME": str(base)})
    assert result.code == 0, result
    return base / "data"


@pytest.fixture
def example_data(example_index, tmp_path) -> Path:
    """A private copy of the example index that a test may change."""
    target = tmp_path / "data"
    shutil.copytree(example_index, target)
    return target


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """`chroma run` from the installed package, on a free port, with its data in a tmp dir."""
    port = free_port()
    chroma = Path(sys.executable).parent / "chroma"
    process = subprocess.Popen([str(chroma), "run", "--path", str(tmp_path_factory.mktemp("chroma-server")),
                                "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/api/v2/heartbeat")
            if connection.getresponse().status == 200:
                break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail("chroma run did not start")
    yield f"http://127.0.0.1:{port}", port
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def small_disk(tmp_path, tmp_path_factory):
    """A 200 MB tmpfs (needs root); the test is skipped where it cannot be mounted.

    One such test at a time across the workers: on a full disk a reader copies the index to /dev/shm, which every test
    shares, and removes the copies that dead processes left; another worker's reader would remove the copy a test has
    just made a searcher leave (by killing it) before the test can see it there."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    with open(tmp_path_factory.getbasetemp().parent / "small_disk.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200m", "tmpfs", str(mount_point)], capture_output=True).returncode:
            pytest.skip("cannot mount a tmpfs here (not root?)")
        yield mount_point
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def fill(disk, leave_bytes=0):
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(disk / "filler", "wb") as filler:
        filler.write(b"\0" * max(0, free - leave_bytes))


def hit(chunk_id, file="a.md", collection="docs", score=0.5, text="x", dense=None, lexical_rank=None, bm25=None, date_ts=None,
        heading=None, kind=None):
    """A search hit with the evidence retrieval gathers: `dense` is its rank in its collection's dense list (its cosine
    is then `score`), `lexical_rank` its rank in the keyword list."""
    from rag_search.store.records import Evidence, Hit

    evidence = Evidence()
    if dense is not None:
        evidence.dense_rank, evidence.cosine = dense, score
    if lexical_rank is not None:
        evidence.lexical_rank, evidence.bm25 = lexical_rank, bm25 if bm25 is not None else 10.0 / lexical_rank
    metadata = {"file": file, **({"heading": heading} if heading else {}), **({"kind": kind} if kind else {})}
    if date_ts is not None:
        metadata["date_ts"] = date_ts
    return Hit(chunk_id, collection, score, text, metadata, evidence)
