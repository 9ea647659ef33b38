"""The resident searcher: warm answers equal to the cold ones, and never worse than cold when it breaks.

Real parts: the scripts as subprocesses, the real searcher they start (detached), the example index, real signals.
Each test has its own data dir and runtime dir, and stops its searcher (tests/conftest.py checks none is left).
"""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, SCRIPTS, SEARCH_CASES, SEARCH_COLD_CASES, fill, resident_searchers, run_script
from conftest import SEARCH_QUERY as QUERY

pytestmark = [pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="the resident searcher needs Linux peer credentials"),
              pytest.mark.processes]  # the real searcher its clients start


class Resident:
    """A data dir whose searches may use a resident searcher, and helpers to watch it."""

    def __init__(self, data: Path, runtime: Path):
        self.data = data
        self.env = {"RAG_SEARCH_RESIDENT": "1", "RAG_SEARCH_HOME": str(data), "XDG_RUNTIME_DIR": str(runtime)}

    def settings(self):
        from rag_search.core.config import load_settings

        return load_settings(environ={**os.environ, **self.env})

    def search(self, *args, env: dict | None = None):
        return run_script("search.py", *args, env={**self.env, **(env or {})})

    def cold(self, *args):
        return run_script("search.py", *args, "--no-resident", env=self.env)

    def about(self) -> dict | None:
        from rag_search.serve import resident

        return resident.about(self.settings())

    def wait_for(self, condition, seconds: float = 60.0):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if (value := condition()) is not None and value is not False:
                return value
            time.sleep(0.1)
        pytest.fail(f"waited {seconds} s in vain; searchers: {self.pids()}; log: {self.log()}")

    def started(self) -> dict:
        """Leave a searcher behind (one cold search) and wait until it answers."""
        assert self.search(QUERY).code == 0
        return self.wait_for(self.about)

    def pids(self) -> list[int]:
        return [pid for pid, data in resident_searchers(self.data.parent).items() if data == str(self.data)]

    def log(self) -> str:
        path = self.data / "resident" / "log"
        return path.read_text() if path.exists() else ""

    def stop(self) -> None:
        from rag_search.serve import resident

        with contextlib.suppress(Exception):
            resident.stop(self.settings())
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def resident_for(data: Path):
    runtime = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))  # short: a socket path has at most 107 bytes
    os.chmod(runtime, 0o700)
    resident = Resident(data, runtime)
    try:
        yield resident
    finally:
        resident.stop()
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def warm(example_data):
    with resident_for(example_data) as resident:
        yield resident


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie nobody reaped yet has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def same(first, second) -> None:
    assert (first.code, first.stdout) == (second.code, second.stdout), (first, second)


def answered_warm(resident: Resident, before: dict) -> bool:
    now = resident.about()
    return now is not None and now["pid"] == before["pid"] and now["answers"] > before["answers"]


def test_every_option_answers_the_same_warm_and_cold(warm):
    from search import build_parser

    covered = {option for case in SEARCH_CASES + SEARCH_COLD_CASES for option in case if option.startswith("--")}
    documented = {option for action in build_parser()._actions for option in action.option_strings} - {"-h", "--help"}
    assert documented <= covered, f"options without a case: {sorted(documented - covered)}"
    warm.started()
    for case in SEARCH_CASES + SEARCH_COLD_CASES:
        args = [part.format(data=warm.data) for part in case]
        cold = warm.cold(*args)
        before = warm.about()
        same(warm.search(*args), cold)
        assert answered_warm(warm, before) == (case in SEARCH_CASES), (case, warm.log())


# The other scripts the searcher answers for: get.py, status.py, memory.py list and query ({file}, {id}: a search result's).
OTHER_CASES = [
    ["get.py", "{file}"],
    ["get.py", "{file}", "--section", "nonesuch"],  # exit 2, the same error
    ["get.py", "{file}", "--max-chars", "80", "--format", "text"],
    ["get.py", "{id}", "--context", "2"],
    ["get.py", "{id}", "--max-chars", "600"],
    ["get.py", "no/such/file.md"],
    ["status.py"],
    ["status.py", "--format", "text"],
    ["memory.py", "list", "--type", "lesson_learned"],
    ["memory.py", "--format", "text", "list"],
    ["memory.py", "query", "caching", "--top-k", "2"],
    ["memory.py", "--format", "text", "query", "retry the flaky test", "--tag", "ci"],
    ["memory.py", "list", "--tag", "ci", "--format", "text"],
]
OTHER_COLD_CASES = [["get.py", "{file}", "--no-resident"]]  # answered here, as search.py --no-resident is


def without_moments(case: list[str], stdout: str) -> str:
    """status.py's answer without what changes between two calls: the index's age in seconds, the searcher's memory
    and answer count."""
    if case[0] != "status.py":
        return stdout
    if "--format" in case:
        return "\n".join(line for line in stdout.splitlines() if "published" not in line and "resident searcher" not in line)
    report = json.loads(stdout)
    for collection in report["collections"].values():
        collection.pop("age_seconds", None)
    report["resident"] = report["resident"] and report["resident"]["pid"]
    return json.dumps(report)


def test_the_other_scripts_answer_the_same_warm_and_cold(warm):
    warm.env["RAG_SEARCH_MEMORY_FILE"] = str(EXAMPLES / "memory" / "memory.json")
    first = warm.search(QUERY).json["results"][0]
    warm.wait_for(warm.about)
    for case in OTHER_CASES + OTHER_COLD_CASES:
        args = [part.format(file=first["file"], id=first["id"]) for part in case]
        cold = run_script(*args, env={**warm.env, "RAG_SEARCH_RESIDENT": "0"})
        before = warm.about()
        answer = run_script(*args, env=warm.env)
        assert (answer.code, without_moments(case, answer.stdout)) == (cold.code, without_moments(case, cold.stdout)), case
        assert answer.stderr == cold.stderr, case
        assert answered_warm(warm, before) == (case in OTHER_CASES), (case, warm.log())
        assert case in OTHER_CASES or answer.code == 0, answer


def test_a_warm_client_stays_small_and_imports_no_heavy_library(warm):
    warm.started()
    probe = f"""
import json, runpy, sys
sys.path.insert(0, {str(SCRIPTS)!r})
sys.argv = ["search.py", {QUERY!r}]
code = 0
try:
    runpy.run_path({str(SCRIPTS / "search.py")!r}, run_name="__main__")
except SystemExit as exit:
    code = exit.code
heavy = [name for name in ("chromadb", "numpy", "onnxruntime") if name in sys.modules]
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")]  # getrusage may count the parent's
print(json.dumps({{"code": code, "heavy": heavy, "peak_kb": int(peak[0])}}), file=sys.stderr)
"""
    before = warm.about()
    completed = subprocess.run([sys.executable, "-c", probe], env={**os.environ, **warm.env}, capture_output=True, text=True,
                               timeout=120, cwd=warm.data.parent)
    report = json.loads(completed.stderr.strip().splitlines()[-1])
    assert report["code"] == 0 and report["heavy"] == [], report
    assert report["peak_kb"] * 1024 <= 40 * 1024 * 1024, report
    assert answered_warm(warm, before)
    assert json.loads(completed.stdout)["results"]


def test_a_searcher_killed_between_answers_is_replaced(warm):
    before = warm.started()
    os.kill(before["pid"], signal.SIGKILL)
    warm.wait_for(lambda: not alive(before["pid"]))
    socket_file = Path(warm.env["XDG_RUNTIME_DIR"]) / "rag-search"
    assert any(socket_file.iterdir()), "the killed searcher's socket file stays behind"
    same(warm.search(QUERY), warm.cold(QUERY))
    after = warm.wait_for(warm.about)
    assert after["pid"] != before["pid"]


def test_searches_while_the_searcher_is_killed_mid_answer_equal_cold(warm):
    cold = warm.cold(QUERY)
    warm.started()
    answers, stop = [], threading.Event()

    def search_in_a_loop():
        while not stop.is_set():
            answers.append(warm.search(QUERY))

    threads = [threading.Thread(target=search_in_a_loop) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(4):  # kill whatever searcher runs, while searches are in flight
            pid = warm.wait_for(lambda: (warm.pids() or [None])[0])
            time.sleep(0.3)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=300)
    assert len(answers) >= 4
    for answer in answers:
        same(answer, cold)


def test_a_stopped_searcher_is_killed_and_the_answer_is_cold(warm):
    before = warm.started()
    os.kill(before["pid"], signal.SIGSTOP)
    same(warm.search(QUERY), warm.cold(QUERY))
    warm.wait_for(lambda: not alive(before["pid"]))
    assert warm.wait_for(warm.about)["pid"] != before["pid"]


def test_a_searcher_of_another_version_gives_way(warm, tmp_path):
    other = tmp_path / "other-checkout"  # the same skill at another path: other code, as after an update
    shutil.copytree(SCRIPTS.parent / "scripts", other / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    process = subprocess.Popen([sys.executable, str(other / "scripts" / "resident.py"), "serve"], env={**os.environ, **warm.env},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        first = warm.wait_for(warm.about)
        assert first["pid"] == process.pid
        same(warm.search(QUERY), warm.cold(QUERY))
        assert process.wait(timeout=30) == 0  # told by the client that it is stale, it exits
        assert warm.wait_for(warm.about)["pid"] != process.pid
    finally:
        with contextlib.suppress(OSError):
            process.kill()
        process.wait()


def test_the_same_interpreter_spelled_another_way_is_answered_warm(warm):
    before = warm.started()
    interpreter = Path(sys.executable)
    relative = Path("..") / interpreter.parent.name / interpreter.name  # bin/../bin/python: run from bin, as `../.venv/bin/python`
    completed = subprocess.run([str(relative), str(SCRIPTS / "search.py"), QUERY], cwd=interpreter.parent,
                               env={**os.environ, **warm.env}, capture_output=True, text=True, timeout=300)
    assert (completed.returncode, completed.stdout) == (0, warm.cold(QUERY).stdout)
    assert answered_warm(warm, before), warm.log()


def test_other_settings_replace_the_searcher(warm):
    before = warm.started()
    config = warm.data.parent / "config.json"
    config.write_text(json.dumps({"resident_idle_minutes": 30}))
    env = {"RAG_SEARCH_CONFIG": str(config)}
    same(warm.search(QUERY, env=env), run_script("search.py", QUERY, "--no-resident", env={**warm.env, **env}))
    warm.wait_for(lambda: not alive(before["pid"]))
    warm.env.update(env)
    assert warm.wait_for(warm.about)["pid"] != before["pid"]


def test_the_searcher_exits_when_its_data_dir_is_removed(warm, tmp_path):
    before = warm.started()
    moved = tmp_path / "moved"
    warm.data.rename(moved)
    warm.wait_for(lambda: not alive(before["pid"]), seconds=10)
    same(warm.search(QUERY), warm.cold(QUERY))  # no index now: the same error
    assert warm.search(QUERY).code == 3


def test_racing_clients_start_one_searcher(warm):
    cold = warm.cold(QUERY)
    results = [None] * 4

    def search(index):
        results[index] = warm.search(QUERY)

    threads = [threading.Thread(target=search, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    for result in results:
        same(result, cold)
    warm.wait_for(warm.about)
    warm.wait_for(lambda: len(starting_searchers(warm.data)) == 1)  # the losers wait for the lock a while, then give up
    assert warm.pids() == starting_searchers(warm.data), warm.log()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another uid")
def test_another_uid_is_refused(warm):
    from rag_search.serve import resident

    warm.started()
    path = resident.socket_path(warm.settings())
    os.chmod(path.parent.parent, 0o755)  # loosen what the files' modes guard, so only the peer check is left
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o666)
    probe = ("import os, socket, sys\n"
             "os.setgid(65534); os.setuid(65534)\n"
             "s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])\n"
             "try:\n"
             "    s.sendall(b'{\"command\": \"about\", \"protocol\": 1}\\n')\n"
             "    print(repr(s.recv(100)))\n"
             "except (BrokenPipeError, ConnectionResetError):  # closed before or while we spoke\n"
             "    print(repr(b''))\n")
    completed = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "b''", completed.stdout  # closed without a word
    assert "refused a connection from uid 65534" in warm.log(), warm.log()


def test_an_idle_searcher_exits(warm):
    config = warm.data.parent / "config.json"
    config.write_text(json.dumps({"resident_idle_minutes": 0.03}))
    warm.env["RAG_SEARCH_CONFIG"] = str(config)
    before = warm.started()
    warm.wait_for(lambda: not alive(before["pid"]), seconds=20)
    assert not (Path(warm.env["XDG_RUNTIME_DIR"]) / "rag-search" / resident_socket_name(warm)).exists()


def resident_socket_name(warm: Resident) -> str:
    from rag_search.serve import resident

    return resident.socket_path(warm.settings()).name


@pytest.mark.parametrize("off", [{"RAG_SEARCH_RESIDENT": "0"}, "--no-resident", {"resident_idle_minutes": 0}])
def test_turned_off_no_searcher_starts(warm, off):
    args, env = [QUERY], {}
    if off == "--no-resident":
        args.append(off)
    elif "resident_idle_minutes" in off:
        config = warm.data.parent / "config.json"
        config.write_text(json.dumps(off))
        env["RAG_SEARCH_CONFIG"] = str(config)
    else:
        env.update(off)
    assert warm.search(*args, env=env).code == 0
    assert starting_searchers(warm.data) == []  # a client starts its searcher before it exits: that would run now
    assert not (warm.data / "resident" / "log").exists()  # and its log would be there, opened for the searcher's stderr


def test_without_a_runtime_dir_the_socket_is_in_the_data_dir(warm):
    del warm.env["XDG_RUNTIME_DIR"]
    warm.started()
    assert (warm.data / "resident" / "socket").exists()
    same(warm.search(QUERY), warm.cold(QUERY))


def test_fresh_notes_and_index_runs_reach_the_warm_answer(warm, tmp_path):
    state = tmp_path / "mine"
    state.mkdir()
    warm.env["RAG_SEARCH_PERSONAL_DIRS"] = str(state)
    (state / "first.md").write_text("# Quokka census\n\nWe counted forty quokkas on the island.\n")
    assert run_script("index_personal.py", "--quiet", env=warm.env).code == 0
    before = warm.started()
    (state / "second.md").write_text("# Wombat burrows\n\nThe wombat burrow survey found nine burrows.\n")
    found = warm.search("wombat burrow survey")  # written just now: brought in before the answer
    assert found.json["results"][0]["file"] == "second.md"
    assert answered_warm(warm, before)
    (state / "first.md").write_text("# Quokka census\n\nWe counted fifty-two quokkas on the island.\n")
    assert run_script("index_personal.py", "--quiet", env=warm.env).code == 0
    again = warm.search("quokka census", "--no-refresh")
    assert "fifty-two" in again.json["results"][0]["chunk"]
    same(again, warm.cold("quokka census", "--no-refresh"))


def test_a_memory_entry_removed_answers_no_more_warm(warm, tmp_path):
    """Once the only entry of the memory file is removed, neither memory.py query nor search.py answers it,
    warm as cold."""
    memory_file = tmp_path / "mine" / "memory" / "memory.json"
    warm.env.update(RAG_SEARCH_PERSONAL_DIRS=str(tmp_path / "mine"), RAG_SEARCH_MEMORY_FILE=str(memory_file))
    query = "quokka runner cache volume"
    added = run_script("memory.py", "add", "--type", "lesson_learned", "--lesson", "The quokka runner needs its cache volume "
                       "mounted read-write", env=warm.env)
    assert added.code == 0 and added.json["indexed"], added
    entry_id = added.json["added"]["id"]
    before = warm.started()
    assert run_script("memory.py", "query", query, env=warm.env).json["entries"][0]["id"] == entry_id
    removed = run_script("memory.py", "remove", entry_id, "--yes", env=warm.env)
    assert removed.code == 0 and removed.json["indexed"] and json.loads(memory_file.read_text()) == [], removed
    recalled = run_script("memory.py", "query", query, env=warm.env)
    assert entry_id not in [entry["id"] for entry in recalled.json["entries"]], recalled.json
    found = warm.search(query)
    assert entry_id not in [item["metadata"].get("record_id") for item in found.json["results"]], found.json
    assert answered_warm(warm, before)
    same(found, warm.cold(query))


def test_status_shows_the_searcher(warm):
    assert run_script("status.py", env=warm.env).json["resident"] is None
    before = warm.started()
    shown = run_script("status.py", env=warm.env).json["resident"]
    assert shown["pid"] == before["pid"] and shown["rss_bytes"] > 0 and shown["answers"] >= 0 and shown["since"]
    stopped = run_script("resident.py", "stop", env=warm.env)
    assert stopped.json["stopped"]["pid"] == before["pid"]
    warm.wait_for(lambda: not alive(before["pid"]))
    assert run_script("resident.py", "status", env=warm.env).json == {"resident": None}


def test_stop_returns_once_the_searcher_has_exited(warm):
    before = warm.started()
    stopped = run_script("resident.py", "stop", env=warm.env)
    assert stopped.json["stopped"]["pid"] == before["pid"]
    assert warm.pids() == [] and not alive(before["pid"])  # a script run next sees none, a session ending leaves none


def test_a_data_dir_removed_during_warm_up_is_not_made_again(tmp_path):
    from rag_search.serve.resident_server import _listening

    gone = tmp_path / "data" / "resident" / "socket"  # the data dir is gone: its resident folder cannot be made
    with pytest.raises(FileNotFoundError), _listening(gone):
        pass
    assert not (tmp_path / "data").exists()


def test_an_answer_is_counted_before_its_client_can_ask(tmp_path, monkeypatch):
    """A client that asks `about` right after its answer sees that answer counted (CI once saw the count lag behind:
    the searcher counted only after sending the reply)."""
    from rag_search.core.config import load_settings
    from rag_search.serve import answers
    from rag_search.serve.resident import PROTOCOL, socket_path
    from rag_search.serve.resident_server import Resident, _listening

    runtime = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))  # short: a socket path has at most 107 bytes
    os.chmod(runtime, 0o700)
    settings = load_settings(environ={"RAG_SEARCH_HOME": str(tmp_path / "data"), "XDG_RUNTIME_DIR": str(runtime)})
    monkeypatch.setattr(answers, "answer", lambda *args: 0)  # what is answered does not matter here, when it is counted
    lock = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT)
    try:
        with _listening(socket_path(settings)) as listener:
            searcher = Resident(settings, None, listener, lock)
            counted_at_reply = []
            monkeypatch.setattr(searcher, "_reply", lambda connection, message: counted_at_reply.append(searcher.about()["answers"]))
            request = {"protocol": PROTOCOL, "identity": searcher.identity, "command": "status", "args": {"format": "json"}}
            searcher._answer(None, request)
            searcher._answer(None, request)
        assert counted_at_reply == [1, 2]
    finally:
        os.close(lock)
        shutil.rmtree(runtime, ignore_errors=True)


def answers_like_cold(warm: Resident, *args: str):
    """search.py's (or another script's: args[0] ends in .py) warm answer, checked equal to the cold one; the answer."""
    script, args = (args[0], args[1:]) if args[0].endswith(".py") else ("search.py", args)
    before = warm.about()
    answer = run_script(script, *args, env=warm.env)
    same(answer, run_script(script, *args, env={**warm.env, "RAG_SEARCH_RESIDENT": "0"}))
    assert answered_warm(warm, before), (args, warm.log())
    return answer


ARGOCD = "why is ArgoCD self-heal disabled?"


def test_a_collection_deleted_and_built_again_is_answered_from_the_new_index(warm, state_dir):
    """The new index's generation has the name of the deleted one's (g000001): the searcher follows the index itself.
    It is paused meanwhile, as while it answers a long request, so it cannot have let go of the old one between the two.
    (A data dir deleted whole stops the searcher: test_the_searcher_exits_when_its_data_dir_is_removed.)"""
    before = warm.started()
    assert answers_like_cold(warm, ARGOCD).json["results"][0]["file"] == "notes/argocd-setup.md"
    (state_dir / "notes" / "argocd-setup.md").unlink()
    (state_dir / "notes" / "zebra-migration.md").write_text("# Zebra migration\n\nThe zebracorn cluster moved to rack 7.\n")
    os.kill(before["pid"], signal.SIGSTOP)
    try:
        shutil.rmtree(warm.data / "personal")
        indexed = run_script("index_personal.py", "--quiet", "--data-dir", warm.data, state_dir, env=warm.env)
    finally:
        os.kill(before["pid"], signal.SIGCONT)
    assert indexed.code == 0, indexed
    assert sorted(path.name for path in (warm.data / "personal" / "generations").iterdir()) == ["g000001"]
    found = answers_like_cold(warm, ARGOCD, "--no-refresh")
    assert "notes/argocd-setup.md" not in [result["file"] for result in found.json["results"]]
    assert answers_like_cold(warm, "zebracorn", "--mode", "lexical").json["results"][0]["file"] == "notes/zebra-migration.md"
    assert answers_like_cold(warm, "get.py", "notes/argocd-setup.md").code == 2
    assert answers_like_cold(warm, "get.py", "notes/zebra-migration.md").code == 0


def test_a_collection_restored_into_place_is_answered_from_the_restored_index(warm, tmp_path):
    """A copy of a collection (here: another data dir's, built from other notes) renamed over the one being read has
    a generation of the same name: every warm answer comes from the copy, and none says the index is damaged."""
    warm.started()
    other_notes = tmp_path / "other-notes"
    other_notes.mkdir()
    (other_notes / "zebra-migration.md").write_text("# Zebra migration\n\nThe zebracorn cluster moved to rack 7.\n")
    indexed = run_script("index_personal.py", "--quiet", "--data-dir", tmp_path / "other-data", other_notes, env=warm.env)
    assert indexed.code == 0, indexed
    shutil.copytree(tmp_path / "other-data" / "personal", tmp_path / "restored", symlinks=True)
    (warm.data / "personal").rename(tmp_path / "replaced")
    (tmp_path / "restored").rename(warm.data / "personal")
    for _ in range(3):
        found = answers_like_cold(warm, "zebracorn", "--no-refresh")
        assert [result["file"] for result in found.json["results"]] == ["zebra-migration.md"], found
    assert answers_like_cold(warm, "get.py", "zebra-migration.md").code == 0


def write_notes(folder: Path, name: str, count: int) -> None:
    for number in range(count):
        text = f"The zeppelin hangar {name} lease {number} ends in March. " * 40
        (folder / f"{name}-{number}.md").write_text(f"# Zeppelin {name} {number}\n\n{text}\n")


def indexed_notes(warm, tmp_path: Path) -> Path:
    """A personal root of one note, indexed, that the searcher's settings name."""
    notes = tmp_path / "mine"
    notes.mkdir()
    warm.env["RAG_SEARCH_PERSONAL_DIRS"] = str(notes)
    write_notes(notes, "first", 1)
    assert run_script("index_personal.py", "--quiet", env=warm.env).code == 0
    return notes


def holds_flock(pid: int, path: Path) -> bool:
    """Whether process `pid` holds a flock() on `path`, read from /proc/locks (taking the lock to see would make the
    holder's own attempt fail)."""
    inode = f":{path.stat().st_ino}"
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()  # "1: FLOCK  ADVISORY  WRITE 12345 00:2f:1234 0 EOF" (a waiter's line has "->" second)
        if fields[1] == "FLOCK" and fields[4] == str(pid) and fields[5].endswith(inode):
            return True
    return False


def test_a_slow_answer_is_waited_for_and_a_searcher_stopped_while_answering_is_killed(warm, tmp_path):
    notes = indexed_notes(warm, tmp_path)
    before = warm.started()
    write_notes(notes, "slow", 20)  # brought in before the answer: seconds of work, keep-alive bytes all along
    slow = warm.search("zeppelin hangar slow lease")
    assert slow.code == 0 and "stale" not in slow.json and slow.json["results"][0]["file"].startswith("slow-"), slow
    assert answered_warm(warm, before), warm.log()

    write_notes(notes, "stopped", 10)
    client = subprocess.Popen([sys.executable, str(SCRIPTS / "search.py"), "zeppelin hangar stopped lease"], cwd=tmp_path,
                              env={**os.environ, **warm.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        write_lock = warm.data / "personal" / "write.lock"
        while not holds_flock(before["pid"], write_lock):  # it took the request and is bringing the notes in
            assert client.poll() is None, "answered before it could be stopped"
            time.sleep(0.005)
        os.kill(before["pid"], signal.SIGSTOP)
        stopped_at = time.monotonic()
        stdout, stderr = client.communicate(timeout=300)
    finally:
        with contextlib.suppress(OSError):
            client.kill()
    assert time.monotonic() - stopped_at < 60, "the client waited for a stopped searcher as if it were answering"
    assert client.returncode == 0, stderr
    assert json.loads(stdout)["results"][0]["file"].startswith("stopped-"), stdout  # answered cold, the notes brought in
    warm.wait_for(lambda: not alive(before["pid"]))
    assert f"resident searcher {before['pid']} killed by client" in warm.log()


def ram_copies(pid: int) -> set[Path]:
    """The folders in /dev/shm a process has files open in (a reader's copy of the index on a full disk)."""
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = Path(os.readlink(fd))
            if target.parts[:3] == ("/", "dev", "shm") and len(target.parts) > 3:
                found.add(Path(*target.parts[:4]))
    return found


def killed_with_its_copies(resident: Resident) -> set[Path]:
    """Start a searcher, SIGKILL it: the copies of the index in memory it leaves."""
    pid = resident.started()["pid"]
    copies = ram_copies(pid)
    assert copies, "on a full disk the searcher reads a copy of the index in memory"
    os.kill(pid, signal.SIGKILL)
    resident.wait_for(lambda: not alive(pid))
    assert all(copy.is_dir() for copy in copies), "a killed process cannot remove its copy itself"
    return copies


def test_copies_of_the_index_in_memory_that_killed_searchers_left_are_removed(state_dir, small_disk):
    data = small_disk / "data"
    assert run_script("index_personal.py", "--quiet", "--data-dir", data, state_dir).code == 0
    fill(small_disk)
    with resident_for(data) as resident:
        left = killed_with_its_copies(resident)
        assert resident.cold(QUERY).code == 0  # a reader that makes a copy removes those first
        assert not any(copy.exists() for copy in left), "the dead searcher's copy stays in memory for good"
        left = killed_with_its_copies(resident)
        (small_disk / "filler").unlink()  # room again: no reader needs a copy, and the next searcher removes them
        assert ram_copies(resident.started()["pid"]) == set()
        assert not any(copy.exists() for copy in left), "the dead searcher's copy stays in memory for good"


def test_only_copies_of_the_index_our_dead_processes_left_are_removed(tmp_path, monkeypatch):
    from rag_search.store import vectors

    monkeypatch.setattr(vectors, "RAM_DIR", tmp_path)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        live, dead = vectors.ram_copy_prefix(running.pid), vectors.ram_copy_prefix(gone.pid)
    finally:
        gone.kill()
        gone.wait()
    folders = {"ours, its owner gone": f"{dead}a", "ours, its owner running": f"{live}b", "another user's, its owner gone": f"{dead}c",
               "named without an owner": "rag-search-d", "not a copy": "other-e"}
    try:
        for name in folders.values():
            (tmp_path / name / "chroma").mkdir(parents=True)
        if os.geteuid() == 0:
            os.chown(tmp_path / folders["another user's, its owner gone"], 65534, 65534)
        else:
            del folders["another user's, its owner gone"]  # only root can make one here
        vectors.remove_orphaned_ram_copies()
        assert {what for what, name in folders.items() if (tmp_path / name).exists()} == set(folders) - {"ours, its owner gone"}
    finally:
        running.kill()
        running.wait()


def test_a_busy_write_lock_once_released_is_tried_again_by_the_next_warm_answer(warm, tmp_path):
    notes = indexed_notes(warm, tmp_path)
    warm.started()
    write_notes(notes, "fresh", 1)
    lock = os.open(warm.data / "personal" / "write.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # an index run holds the personal index, for two searches (the second saw no new paths)
    try:
        for _ in range(2):
            assert warm.search("zeppelin hangar fresh lease").json["stale"]["files"] == 1
    finally:
        os.close(lock)
    found = warm.search("zeppelin hangar fresh lease")
    assert "stale" not in found.json and found.json["results"][0]["file"] == "fresh-0.md", found


def test_no_searcher_loads_the_model_when_its_socket_folder_is_unusable(warm):
    folder = Path(warm.env["XDG_RUNTIME_DIR"]) / "rag-search"
    folder.mkdir()
    os.chmod(folder, 0o755)  # others may enter: no searcher may listen there
    same(warm.search(QUERY), warm.cold(QUERY))
    assert warm.wait_for(warm.log).startswith(f"resident searcher not started: {folder} must be"), warm.log()
    served = subprocess.run([sys.executable, str(Path(__file__).parent / "faultrun.py"), "kill@rag_search.serve.warm.WarmIndex.warm_up",
                             "resident.py", "serve"], env={**os.environ, **warm.env}, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=300)
    assert served.returncode == 1, served.stderr  # -9: it loaded the model before it looked at the folder
    assert f"not started: {folder} must be" in served.stderr, served.stderr
    assert warm.pids() == []


def ask_raw(warm: Resident, request: dict) -> dict | None:
    """Send one request of our own making to the searcher; its reply, None if it closed the connection without one."""
    from rag_search.serve import resident

    settings = warm.settings()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(120)
        sock.connect(str(resident.socket_path(settings)))
        message = {"protocol": resident.PROTOCOL, "identity": resident.identity(settings), "tty": False, **request}
        sock.sendall(json.dumps(message).encode() + b"\n")  # ASCII: a lone surrogate goes as its escape
        assert sock.recv(1) == b"+"
        try:
            return resident.receive(sock, resident.MAX_ANSWER)
        except ValueError:
            return None


def test_malformed_requests_of_our_own_uid_get_an_error_and_the_searcher_answers_on(warm):
    from search import build_parser

    valid = vars(build_parser().parse_args([QUERY]))
    before = warm.started()
    malformed = [{"command": "search", "args": {"__class__": 1}}, {"command": "search", "args": {**valid, "__dict__": []}},
                 {"command": "search", "args": {**valid, "not an option": 1}}, {"command": ["search"], "args": valid},
                 {"command": "search", "args": {**valid, "top_k": "three", "source": 7}}, {"command": "search", "args": {}},
                 {"command": "search", "args": {**valid, "source": ["\ud800"]}}]  # its error echoes what no UTF-8 can encode
    for request in malformed:
        reply = ask_raw(warm, request)
        assert reply is not None and (reply.get("stale") or reply.get("code") not in (0, None)), (request, reply)
    assert ask_raw(warm, {"command": "search", "args": valid})["code"] == 0
    same(warm.search(QUERY), warm.cold(QUERY))
    assert answered_warm(warm, before), warm.log()


@contextlib.contextmanager
def impostor(warm: Resident, replies: list[bytes]):
    """A searcher of our uid at the socket, holding the searchers' lock (none replaces it), that takes each request
    and answers it with the next of `replies`."""
    from rag_search.serve import resident

    settings = warm.settings()
    resident.folder(settings).mkdir(mode=0o700)
    lock = os.open(resident.folder(settings) / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    path = resident.socket_path(settings)
    path.parent.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    listener.settimeout(300)

    def answer_each():
        for reply in replies:
            connection, _ = listener.accept()
            with connection:
                resident.receive(connection, resident.MAX_REQUEST, time.monotonic() + 10)
                connection.sendall(b"+" + reply)

    thread = threading.Thread(target=answer_each, daemon=True)
    thread.start()
    try:
        yield
    finally:
        listener.close()
        warm.wait_for(lambda: not starting_searchers(warm.data))  # each client started one to replace us: it gives up
        os.close(lock)
        thread.join(timeout=10)


def starting_searchers(data: Path) -> list[int]:
    """The searcher processes started for `data`, running or starting (their environment names the data dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            command = (entry / "cmdline").read_bytes().split(b"\0")
            if any(part.endswith(b"resident.py") for part in command) and b"serve" in command:
                if f"RAG_SEARCH_HOME={data}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return [pid for pid in found if alive(pid)]


def test_an_answer_the_client_cannot_use_ends_in_the_cold_answer(warm):
    unusable = [b"[" * 100_000 + b"]" * 100_000 + b"\n",  # json.loads raises RecursionError
                json.dumps({"code": 300, "stdout": "{}\n", "stderr": ""}).encode() + b"\n",  # no exit code of ours
                json.dumps({"code": 0, "stdout": "\ud800\n", "stderr": ""}).encode() + b"\n"]  # stdout cannot print it
    cold = warm.cold(QUERY)
    with impostor(warm, unusable):
        for _ in unusable:
            same(warm.search(QUERY), cold)
