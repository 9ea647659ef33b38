"""The resident searcher's protocol and control: where its socket is, who it answers, messages, start, about, stop.

A cold search.py pays for Python, ChromaDB, onnxruntime and the model on every
call (about a second). The first call that finds no resident searcher answers
cold as before, then starts one (resident_server.py): detached, warm, one per
data dir (client.py asks it, or answers cold).

Safe: the socket is in $XDG_RUNTIME_DIR/rag-search or <data dir>/resident (both
0700), mode 0600; each side checks the other's uid (SO_PEERCRED). The searcher
answers with its own settings only: a request whose identity (settings, code)
differs is refused. This module imports no heavy library: a warm call stays small.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import sys
import time
from pathlib import Path

from ..core.config import SKILL_DIR, Settings
from ..core.private_files import open_private

PROTOCOL = 1
FOLDER = "resident"  # in the data dir: the lock, the log, and the socket when there is no $XDG_RUNTIME_DIR
ACK_SECONDS = 2.0  # a searcher that has not taken the request by then is hung (or stopped): answer cold
# After taking it, the searcher sends KEEP_ALIVE every HEARTBEAT_SECONDS until the answer, from a thread of its own: a
# search that brings files in may take seconds, a first --rerank longer, and a searcher stopped meanwhile falls silent.
HEARTBEAT_SECONDS = 0.5
SILENCE_SECONDS = 5.0  # silent this long, it is stopped (or hung): answer cold (the longest pause measured was 0.6 s)
ANSWER_SECONDS = 120.0  # and one that keeps sending KEEP_ALIVE without answering within this is hung too
KEEP_ALIVE = b" "  # JSON allows spaces before a value: an answer is a few of them, the JSON and a newline
STOP_SECONDS = 10.0  # how long stop() waits for the searcher to exit
MAX_REQUEST = 1 << 20  # a request bigger than this is refused
MAX_ANSWER = 64 << 20  # an answer bigger than this is answered cold (--top-k 100 --verbose is a few hundred KB)
LOG_BYTES = 1 << 20  # the searcher's log is rotated (one old copy) past this size
LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND
_CREDENTIALS = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid


def usable(settings: Settings) -> bool:
    """Unix sockets with peer credentials (Linux), and a socket path short enough for them: else every call answers
    cold."""
    return hasattr(socket, "AF_UNIX") and hasattr(socket, "SO_PEERCRED") and len(os.fsencode(socket_path(settings))) < 108


def folder(settings: Settings) -> Path:
    return settings.data_dir / FOLDER


def socket_path(settings: Settings) -> Path:
    """Where the searcher of this data dir listens: $XDG_RUNTIME_DIR/rag-search/<hash of the data dir>.socket, else
    <data dir>/resident/socket."""
    if settings.runtime_dir is not None:
        digest = hashlib.sha256(str(settings.data_dir).encode()).hexdigest()[:16]
        return settings.runtime_dir / "rag-search" / f"{digest}.socket"
    return folder(settings) / "socket"


def check_socket_folder(path: Path) -> None:
    """Make the folder of the socket at `path` if it is missing (not its parents: a data dir removed is not made again)
    and check that only we can enter it; OSError if not. Checked before the costly part: by a client before it starts a
    searcher, by the searcher before it loads the model."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    info = path.parent.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{path.parent} must be a folder of ours that only we can enter (mode 0700)")


def identity(settings: Settings) -> str:
    """What a searcher must share with a client to answer for it: the settings, the interpreter and the code (every
    source file's size and mtime, so an update of the skill replaces the searcher). The interpreter's path is
    normalised: `../.venv/bin/python` run from scripts/ is the same interpreter, and must not replace the searcher."""
    code = sorted((str(path), *_size_and_mtime(path)) for path in (SKILL_DIR / "scripts").rglob("*.py"))
    settings_text = repr(settings._replace(warnings=(), wait_seconds=0))
    return hashlib.sha256(json.dumps([PROTOCOL, os.path.normpath(sys.executable), sys.version, settings_text, code]).encode()).hexdigest()


def _size_and_mtime(path: Path) -> tuple[int, int]:
    found = path.stat()
    return found.st_size, found.st_mtime_ns


def peer(sock: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of a connected Unix socket."""
    pid, uid, _ = _CREDENTIALS.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size))
    return pid, uid


def kill_hung(pid: int, settings: Settings, why: str) -> None:
    """Kill a hung searcher (SIGKILL ends a stopped one too), which peer() showed to run as us; its log says why."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
        _log(settings, f"resident searcher {pid} killed by client {os.getpid()}: {why}")


def _log(settings: Settings, line: str) -> None:
    """A line in the searcher's log, from a client (never through a link planted at its path)."""
    with contextlib.suppress(OSError), open(open_private(folder(settings) / "log", LOG_FLAGS), "a", encoding="utf-8") as log:
        log.write(line + "\n")


def start(settings: Settings, replacing: bool = False) -> None:
    """Start a searcher for this data dir, detached, unless one runs or starts (holds the lock); `replacing`: start one
    anyway, it waits for the one that is going away."""
    own = folder(settings)
    own.mkdir(mode=0o700, exist_ok=True)
    if not replacing and held(own / "lock"):
        return
    log_path = own / "log"
    with contextlib.suppress(FileNotFoundError):
        if log_path.lstat().st_size > LOG_BYTES:
            log_path.replace(own / "log.1")
    try:
        check_socket_folder(socket_path(settings))
    except OSError as exc:  # no searcher could listen: every search is answered cold, and the log says why
        _log(settings, f"resident searcher not started: {exc}")
        return
    import subprocess  # only here: a warm call does not need it

    # What this client's flags chose goes on the searcher's stdin, never on its command line (a process list shows that).
    handover = {"identity": identity(settings), "data_dir": str(settings.data_dir),
                "chroma_url": settings.server.url if settings.server is not None else None}
    with open(open_private(log_path, LOG_FLAGS), "a", encoding="utf-8") as log:
        os.fchmod(log.fileno(), 0o600)
        process = subprocess.Popen([sys.executable, str(SKILL_DIR / "scripts" / "resident.py"), "serve"], stdin=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, stderr=log, cwd="/", start_new_session=True, close_fds=True)
    if process.stdin is not None:  # stdin=PIPE made one
        with process.stdin:
            process.stdin.write(json.dumps(handover).encode() + b"\n")


def held(lock: Path) -> bool:
    """Whether a searcher holds (or is starting with) this lock."""
    try:
        fd = open_private(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def about(settings: Settings) -> dict | None:
    """The running searcher of this data dir: {"pid", "since", "rss_bytes", "answers"}, or None."""
    return _control(settings, "about")


def stop(settings: Settings) -> dict | None:
    """Ask the searcher of this data dir to exit, and wait until it has (STOP_SECONDS at most: it finishes the answer
    it is giving, then exits within a tick); what it was (as about()), or None if none ran."""
    stopped = _control(settings, "stop")
    deadline = time.monotonic() + STOP_SECONDS
    while stopped is not None and _running(stopped["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return stopped


def _running(pid: int) -> bool:
    """Whether the process runs (a zombie its parent has not reaped yet has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _control(settings: Settings, command: str) -> dict | None:
    if not usable(settings):
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(ACK_SECONDS)
            sock.connect(str(socket_path(settings)))
            if peer(sock)[1] != os.getuid():
                return None
            send(sock, {"command": command, "protocol": PROTOCOL})
            if sock.recv(1) != b"+":
                return None
            reply = receive(sock, MAX_ANSWER)
    except (OSError, ValueError):
        return None
    return reply if isinstance(reply, dict) and "pid" in reply else None


def send(sock: socket.socket, message: dict) -> None:
    """One message: its JSON and a newline."""
    sock.sendall(json.dumps(message, ensure_ascii=False).encode() + b"\n")


def receive(sock: socket.socket, limit: int, deadline: float | None = None, silence: float | None = None) -> dict:
    """One message of at most `limit` bytes (received by the time.monotonic() `deadline`, if given, with no pause longer
    than `silence` seconds between bytes: KEEP_ALIVE counts); ValueError if it is cut short, bigger, not JSON or nested
    too deeply to parse, TimeoutError if it comes too slowly."""
    data = bytearray()
    while not data.endswith(b"\n"):
        if deadline is not None:
            remaining = max(deadline - time.monotonic(), 0.001)
            sock.settimeout(remaining if silence is None else min(remaining, silence))
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("the connection closed before the message ended")
        data += chunk
        if len(data) > limit:
            raise ValueError("message too big")
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("message nested too deeply") from None
