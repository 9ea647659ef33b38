"""Index generations: searches read a complete index while the next one is built beside it.

ChromaDB is thread-safe but not process-safe: a process writing a store while
others query it can leave readers with stale answers, crash them, or break the
store for good. So no process ever writes an index that anyone reads:

    <data dir>/CURRENT              the name of the published generation
    <data dir>/generations/g000042/ chroma/ and catalog.sqlite, published, read by searches
    <data dir>/generations/g000042.lock   searches hold a shared lock on it while they read
    <data dir>/write.lock           held by the one index run that may write

An index run takes the write lock (waiting a bounded time), copies the current
generation into a hidden work folder, applies its changes there, verifies the
result, then publishes it: rename to its final name, then replace CURRENT (both
atomic). If the run changed nothing, fails, or is killed, the work folder is
discarded (by the next run if need be) and the previous generation keeps
serving. Old generations are deleted once no search holds their lock.
"""

import contextlib
import fcntl
import json
import os
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from .errors import IndexBusy, IndexNotBuilt, StoreError

CURRENT = "CURRENT"
GENERATIONS = "generations"
WRITE_LOCK = "write.lock"
_NAME = re.compile(r"^g(\d{6,})$")
DEFAULT_WAIT_SECONDS = 30.0
_LEGACY_FOLDER = "index"  # the single-folder layout of earlier versions


def current_name(data_dir: Path) -> str | None:
    try:
        name = (data_dir / CURRENT).read_text().strip()
    except FileNotFoundError:
        return None
    return name if _NAME.match(name) else None


def open_for_reading(data_dir: Path) -> tuple[Path, int]:
    """(folder of the published generation, a file descriptor holding a shared lock on it).

    The lock keeps the generation from being deleted while it is read; closing
    the descriptor (or the process ending) releases it.
    """
    for _ in range(20):
        name = current_name(data_dir)
        if name is None:
            raise IndexNotBuilt(f"no index in {data_dir}", hint="run scripts/index_personal.py and/or scripts/index_docs.py --all")
        folder = data_dir / GENERATIONS / name
        try:
            fd = os.open(folder.with_name(f"{name}.lock"), os.O_RDONLY)
        except FileNotFoundError:
            continue  # deleted since CURRENT was read: a newer generation is current now
        fcntl.flock(fd, fcntl.LOCK_SH)
        if folder.is_dir():
            return folder, fd
        os.close(fd)
    raise StoreError(f"cannot open the current index in {data_dir}: it keeps changing", hint="try again")


class WriteSession:
    """The write lock, and a work folder holding a copy of the current generation."""

    def __init__(self, data_dir: Path, wait_seconds: float = DEFAULT_WAIT_SECONDS):
        self.data_dir = data_dir
        self.generations = data_dir / GENERATIONS
        self._lock = _acquire_write_lock(data_dir, wait_seconds)
        try:
            self.generations.mkdir(mode=0o700, exist_ok=True)
            collect_garbage(data_dir)
            self.base = self._base()
            self.name = self._next_name()
            self.folder = self.generations / f".{self.name}.work"
            if self.base is not None:
                copy_generation(self.base, self.folder)
            else:
                self.folder.mkdir(mode=0o700)
        except BaseException:
            self.discard()
            raise

    def _base(self) -> Path | None:
        name = current_name(self.data_dir)
        if name is not None:
            return self.generations / name
        legacy = self.data_dir / _LEGACY_FOLDER
        return legacy if (legacy / "catalog.sqlite").is_file() else None

    def _next_name(self) -> str:
        numbers = [int(match.group(1)) for path in self.generations.iterdir() if (match := _NAME.match(path.name.strip(".").split(".")[0]))]
        return f"g{max(numbers, default=0) + 1:06d}"

    def publish(self) -> None:
        """Make the work folder the current generation; the caller has closed and verified it."""
        final = self.generations / self.name
        _fsync_tree(self.folder)
        final.with_name(f"{self.name}.lock").touch(mode=0o600)
        os.replace(self.folder, final)
        _write_atomically(self.data_dir / CURRENT, self.name + "\n")
        collect_garbage(self.data_dir)

    def discard(self) -> None:
        """Drop the work folder (if not published) and release the write lock."""
        folder = getattr(self, "folder", None)
        if folder is not None and folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def collect_garbage(data_dir: Path) -> list[str]:
    """Delete work folders of dead runs and generations that are neither current nor being read.

    Called with the write lock held, so no other run's work folder can be in the way.
    """
    generations = data_dir / GENERATIONS
    current = current_name(data_dir)
    removed = []
    if not generations.is_dir():
        return removed
    for path in generations.iterdir():
        if path.name.startswith(".") and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)  # a work folder left by a killed or failed run
            removed.append(path.name)
        elif _NAME.match(path.name) and path.name != current and _remove_if_unused(path):
            removed.append(path.name)
    legacy = data_dir / _LEGACY_FOLDER
    if current is not None and legacy.is_dir():
        shutil.rmtree(legacy, ignore_errors=True)
        removed.append(_LEGACY_FOLDER)
    return removed


def _remove_if_unused(folder: Path) -> bool:
    """Delete a generation no search holds; False if one does.

    The exclusive lock is held while the folder is renamed away, so a search
    that locks it afterwards finds the folder gone and moves to CURRENT.
    """
    lock_file = folder.with_name(f"{folder.name}.lock")
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except FileNotFoundError:
        fd = None
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
        trash = folder.with_name(f".{folder.name}.trash")
        os.replace(folder, trash)
    finally:
        if fd is not None:
            os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    lock_file.unlink(missing_ok=True)
    return True


def copy_generation(source: Path, target: Path) -> None:
    """Copy a generation: SQLite files through SQLite's backup API (consistent even while a
    search opens them; ChromaDB writes a row on every open), everything else byte for byte."""
    target.mkdir(mode=0o700)
    for path in sorted(source.rglob("*")):
        destination = target / path.relative_to(source)
        if path.is_dir():
            destination.mkdir(mode=0o700, exist_ok=True)
        elif path.name.endswith(("-journal", "-wal", "-shm")):
            continue  # part of the database file; the backup carries its committed state
        elif path.suffix in (".sqlite", ".sqlite3"):
            _backup_sqlite(path, destination)
        else:
            shutil.copy2(path, destination)


def _backup_sqlite(source: Path, target: Path) -> None:
    with contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)) as src:
        with contextlib.closing(sqlite3.connect(target)) as dst:
            src.backup(dst)


def _acquire_write_lock(data_dir: Path, wait_seconds: float) -> int:
    """Take write.lock, waiting up to wait_seconds; raise IndexBusy naming the holder if it stays taken."""
    path = data_dir / WRITE_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = _holder(fd)
                os.close(fd)
                raise IndexBusy(
                    f"another index run{holder} is writing the index in {data_dir}",
                    hint="wait for it to finish, or pass --wait SECONDS",
                ) from None
            time.sleep(0.1)
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode(), 0)
    return fd


def _holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 200, 0) or b"{}")
        return f" (pid {holder['pid']}, since {holder['since']})"
    except (ValueError, KeyError, OSError):
        return ""


def _write_atomically(path: Path, text: str) -> None:
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)
    _fsync_dir(path.parent)


def _fsync_tree(folder: Path) -> None:
    """Make the generation durable before it is published (a power cut must not publish half of it)."""
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
