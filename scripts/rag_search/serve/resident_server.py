"""The resident searcher itself: a WarmIndex behind a Unix socket, answering search.py as its cold path would.

Started detached by a client (resident.start) and alone per data dir (a lock
held for its life). A thread per connection checks the peer's uid, reads one
bounded request within REQUEST_SECONDS and acknowledges it; the main thread
answers the requests one at a time with the scripts' own code (answers.py, and
cli.run for the errors), capturing what it prints. Until its answer, a client
gets a keep-alive byte every HEARTBEAT_SECONDS from another thread, so it can
tell a slow answer from a stopped searcher. Between requests it looks,
once per TICK_SECONDS, at what would make it stop: its idle time, its data dir
or socket gone or replaced; and it closes collections an index run replaced, so
it never holds an old generation longer than one answer (or one tick).
"""

import argparse
import contextlib
import fcntl
import io
import logging
import os
import queue
import signal
import socket
import stat
import sys
import threading
import time
from pathlib import Path

from ..core import cli, dates, logs
from ..core.config import Settings
from ..core.datadir import same_file
from ..core.errors import EXIT_FAILURE, STOPPED_EXITS, RagSearchError
from ..core.private_files import open_private
from ..store.store import Store
from . import answers
from .resident import (
    HEARTBEAT_SECONDS,
    KEEP_ALIVE,
    MAX_REQUEST,
    PROTOCOL,
    check_socket_folder,
    folder,
    identity,
    peer,
    receive,
    send,
    socket_path,
)
from .warm import WarmIndex

# The searcher's own log, on its stderr (<data dir>/resident/log) whatever the "rag_search" logger writes to while a
# request is answered (that request's captured stderr).
log = logging.getLogger("rag_search.serve.resident")

REQUEST_SECONDS = 2.0  # a client sends its whole request at once
TICK_SECONDS = 1.0
LOCK_WAIT_SECONDS = 5.0  # a searcher being replaced takes this long at most to let go of the lock
MAX_CONNECTIONS = 32  # connections being read at once; more are closed (their clients answer cold)


def serve(settings: Settings, expected_identity: str | None) -> int:
    """Run the searcher of settings.data_dir until it is idle, stopped or orphaned; 0 also when another one runs."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.handlers[:], log.propagate, log.level = [handler], False, logging.INFO
    if expected_identity and identity(settings) != expected_identity:
        log.warning("not started: this process does not share its client's settings or code")
        return 0
    try:
        check_socket_folder(socket_path(settings))  # before the model loads: a searcher that could not listen stops at once
        lock = _take_lock(folder(settings) / "lock")
    except OSError as exc:
        log.warning("not started: %s", exc)
        return 1
    if lock is None:
        return 0  # another searcher runs (or starts) for this data dir
    signal.signal(signal.SIGTERM, _stop_on_signal)
    Store.remove_orphaned_copies()  # a searcher killed on a full disk left its copy of the index in memory
    warm = WarmIndex(settings)
    try:
        warm.warm_up()
        with _listening(socket_path(settings)) as listener:
            log.info("resident searcher %d serves %s", os.getpid(), settings.data_dir)
            Resident(settings, warm, listener, lock).run()
    except (RagSearchError, OSError) as exc:
        log.warning("resident searcher %d stopped: %s", os.getpid(), exc)
        return 1
    except (KeyboardInterrupt, SystemExit):
        log.info("resident searcher %d stopped by a signal", os.getpid())
    finally:
        warm.close()
        os.close(lock)  # after the socket is gone: a successor binds only once it holds the lock
    return 0


class Resident:
    def __init__(self, settings: Settings, warm: WarmIndex, listener: socket.socket, lock: int):
        self.settings = settings
        self.warm = warm
        self.listener = listener
        self.lock = lock
        self.socket_file = socket_path(settings).lstat()  # the inode bind() made: replaced or removed, we exit
        self.identity = identity(settings)
        self.jobs: queue.Queue = queue.Queue(maxsize=MAX_CONNECTIONS)
        self.readers = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.waiting = _Waiting()
        self.stopping = threading.Event()
        self.done = threading.Event()
        self.since = dates.now_iso()
        self.answers = 0
        self.last_request = time.monotonic()

    def run(self) -> None:
        threading.Thread(target=self._accept, name="resident-accept", daemon=True).start()
        threading.Thread(target=self._keep_alive, name="resident-keep-alive", daemon=True).start()
        try:
            while (reason := self._why_stop()) is None:
                try:
                    connection, request = self.jobs.get(timeout=TICK_SECONDS)
                except queue.Empty:
                    continue
                with connection:
                    try:
                        self._answer(connection, request)
                    except Exception as exc:  # noqa: BLE001 - a request it fails on fails alone: its client answers cold
                        log.exception("resident searcher %d failed on a request", os.getpid())
                        self._reply(connection, {"code": EXIT_FAILURE, "stdout": "",
                                                 "stderr": f"error: the resident searcher failed ({type(exc).__name__}), see its log\n"})
                    finally:
                        self.waiting.remove(connection)
            log.info("resident searcher %d exits: %s (%d answers)", os.getpid(), reason, self.answers)
        finally:
            self.stopping.set()
            self.done.set()

    def about(self) -> dict:
        return {"pid": os.getpid(), "since": self.since, "rss_bytes": _rss_bytes(), "answers": self.answers}

    def _accept(self) -> None:
        """Take connections until stopping; each is read on its own thread, so a slow client delays no other."""
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # the listener was closed
            if not self.readers.acquire(blocking=False):
                connection.close()
                continue
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _keep_alive(self) -> None:
        """Every HEARTBEAT_SECONDS, a keep-alive byte to each client waiting for its answer (even while a stop request
        lets the answer being made finish)."""
        while not self.done.wait(HEARTBEAT_SECONDS):
            self.waiting.keep_alive()

    def _read(self, connection: socket.socket) -> None:
        """Check the peer, read its request, acknowledge it; queue it (control requests are answered here)."""
        try:
            queued = False
            _, uid = peer(connection)
            if uid != os.getuid():
                log.warning("refused a connection from uid %d", uid)
                return
            request = receive(connection, MAX_REQUEST, time.monotonic() + REQUEST_SECONDS)
            if not isinstance(request, dict):
                return
            connection.sendall(b"+")
            if request.get("command") in ("about", "stop"):
                send(connection, self.about())
                if request["command"] == "stop":
                    self.stopping.set()
                return
            self.waiting.add(connection)
            self.jobs.put_nowait((connection, request))
            queued = True
        except (OSError, ValueError, queue.Full):
            return
        finally:
            self.readers.release()
            if not queued:
                self.waiting.remove(connection)
                connection.close()

    def _answer(self, connection: socket.socket, request: dict) -> None:
        """Answer one request as its script would, or say it is for another searcher (and stop: the client starts
        the right one)."""
        self.last_request = time.monotonic()
        if request.get("protocol") != PROTOCOL or request.get("identity") != self.identity:
            self.stopping.set()
            self._reply(connection, {"stale": True})
            return
        name, arguments = request.get("command"), request.get("args")
        known = isinstance(name, str) and name in answers.COMMANDS  # a list is unhashable
        if not (known and isinstance(name, str) and isinstance(arguments, dict) and all(map(_is_option, arguments))):
            self._reply(connection, {"stale": True})
            return
        args = argparse.Namespace(**arguments)
        with _captured(request.get("tty") is True) as (out, err):
            code = cli.run(lambda: answers.answer(name, args, self.settings, self.warm),
                           json_errors=getattr(args, "format", "json") == "json")
        self.answers += 1  # before the reply: a client that asks `about` next sees its answer counted
        self.last_request = time.monotonic()
        self._reply(connection, {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
        if code in STOPPED_EXITS:
            self.stopping.set()  # a signal came for this process, not for the client

    def _reply(self, connection: socket.socket, message: dict) -> None:
        self.waiting.remove(connection)  # no keep-alive byte may come inside the answer
        with contextlib.suppress(OSError):
            connection.settimeout(REQUEST_SECONDS)
            send(connection, message)

    def _why_stop(self) -> str | None:
        """Why the searcher must exit now, or None; closes the collections an index run replaced."""
        if self.stopping.is_set():
            return "asked to stop, or a client of another version or settings came"
        if time.monotonic() - self.last_request > self.settings.resident_idle_minutes * 60:
            return f"idle for {self.settings.resident_idle_minutes:g} minutes"
        if not same_file(folder(self.settings) / "lock", os.fstat(self.lock)):
            return "its data dir was removed or replaced"
        if not same_file(socket_path(self.settings), self.socket_file):
            return "its socket was removed or replaced"
        try:
            self.warm.let_go_of_replaced()
        except Exception as exc:  # noqa: BLE001 - whatever broke, a cold search reports it better than we can
            return f"the index cannot be read: {exc}"
        return None


class _Waiting:
    """The connections whose request was taken and not answered yet (queued, or being answered)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()

    def add(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)

    def remove(self, connection: socket.socket) -> None:
        """Once this returns, no keep-alive byte is sent to `connection`."""
        with self._lock:
            self._connections.discard(connection)

    def keep_alive(self) -> None:
        with self._lock:
            for connection in self._connections:
                with contextlib.suppress(OSError):  # a full buffer: the client has bytes to read already
                    connection.send(KEEP_ALIVE, socket.MSG_DONTWAIT)


def _is_option(name: str) -> bool:
    """Whether `name` can be what argparse named an option (`__class__` in a Namespace is no option, but an error)."""
    return name.isidentifier() and not name.startswith("_")


def _take_lock(path: Path) -> int | None:
    """The searcher's lock on its data dir, waiting a little for one that is going away; None if another keeps it."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


@contextlib.contextmanager
def _listening(path: Path):
    """A listening socket at `path`, 0600 in a folder only we can enter; removed when done (if still ours). Its
    folder's parent must exist: a data dir removed while the searcher warmed up is not made again."""
    check_socket_folder(path)  # again: it may have changed while the model loaded
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise OSError(f"{path} is not a socket: not replaced")
        path.unlink()  # left by a searcher that was killed: we hold the lock, so none listens there
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_mask)
    listener.listen(MAX_CONNECTIONS)
    listener.settimeout(TICK_SECONDS)
    bound = path.lstat()
    try:
        yield listener
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if same_file(path, bound):
                path.unlink()


@contextlib.contextmanager
def _captured(tty: bool):
    """What a command prints, captured (and our log on it) for the client to print; stdout a terminal if the
    client's is, so the JSON is indented as the client would indent it."""
    out, err = _Output(tty), _Output(False)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    logs.setup_logging(quiet=True)
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = saved
        logs.setup_logging()


class _Output(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _stop_on_signal(signum, frame):
    raise SystemExit(0)
