"""Index generations: searches read a complete index while the next one is built beside it.

ChromaDB is thread-safe but not process-safe: a process writing a store while
others query it can leave readers with stale answers, crash them, or break the
store for good. So no process ever writes an index that anyone reads. Each
collection has its own folder, so a run that changes one never copies the other:

    <data dir>/<collection>/CURRENT                 the name of the published generation
    <data dir>/<collection>/generations/g000042/    chroma/, catalog.sqlite, generation.json
    <data dir>/<collection>/write.lock              held by the one index run that may write

An index run takes the write lock (waiting a bounded time) and reads the
current generation to plan its changes. On its first write it copies the
current generation into a hidden work folder (or starts from an empty one to
rebuild), applies its changes there, verifies the result, then publishes it: write
generation.json, fsync, rename to its final name, replace CURRENT. A run that
changes nothing, fails or is killed leaves the previous generation serving;
its work folder is removed by the next run.

A copy costs in proportion to the whole index (at 200k chunks, a gigabyte
written, flushed and later deleted), however small the change. So in an index
of 64 MB or more (local_vectors.KEEP_PREVIOUS_FROM; a smaller one is copied,
which costs less than catching up and keeps one generation at rest) a run that
added few vectors records them (ADDED) and its generation names the one it was
built from ("previous" in generation.json); that predecessor is kept. The next
run takes the predecessor's folder, when no search holds it, as its work folder
instead of a copy, and the store brings it up to date with the current
generation before applying its own changes (local_vectors.py, LocalVectors.catch_up).

Searches hold a shared flock on the generation folder itself while they read
it, and read its files through that descriptor (held_path); old generations
are deleted once no search holds them. A reader that stays open (the MCP
server, the resident searcher) follows the published generation by its
identity, not its name (still_published): a collection deleted and built
again, or restored from a copy, is a g000001 again. A CURRENT that is
missing, garbled or names a missing folder is never fatal: readers use the
newest complete generation, and the next run rewrites CURRENT to it. Garbage
collection never deletes the current or the newest complete generation.
"""

import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import sqlite3
import time
from pathlib import Path

from ..core import dates
from ..core.atomic import fsync_tree, write_atomically
from ..core.datadir import same_file, sqlite_uri
from ..core.errors import IndexBusy, IndexNotBuilt, StoreError
from ..core.private_files import open_private

log = logging.getLogger("rag_search")

CURRENT = "CURRENT"
GENERATIONS = "generations"
WRITE_LOCK = "write.lock"
MARKER = "generation.json"  # written last, before the rename: only complete generations have it
ADDED = "added-vectors.sqlite"  # the vectors a run added, by chunk id, when they were few: see above
_NAME = re.compile(r"^g(\d{6,})$")
INDEX_COMMANDS = {"personal": "scripts/index_personal.py", "docs": "scripts/index_docs.py --all"}


def published(root: Path) -> tuple[str | None, str | None]:
    """(the generation to read, a note when CURRENT could not be used): CURRENT, else the newest complete one."""
    try:
        name = (root / CURRENT).read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        name = None
    if name and _NAME.match(name) and (root / GENERATIONS / name / MARKER).is_file():
        return name, None
    complete = complete_generations(root)
    if not complete:
        return None, None
    problem = "is missing" if name is None else f"names {name!r}, which is not a complete generation"
    return complete[-1], f"{root / CURRENT} {problem}; using {complete[-1]}, the newest complete generation"


def published_at(folder: Path) -> str:
    """When the generation in `folder` was published (ISO time), from its marker."""
    return _marker(folder, "published") or dates.from_timestamp(folder.stat().st_mtime)[0]


def predecessor(root: Path, name: str) -> Path | None:
    """The complete generation that generation `name` was built from, if `name` recorded what it added since."""
    folder = root / GENERATIONS / name
    previous = _marker(folder, "previous")
    if not (isinstance(previous, str) and _NAME.match(previous) and (folder / ADDED).is_file()):
        return None
    path = root / GENERATIONS / previous
    return path if (path / MARKER).is_file() else None


def _marker(folder: Path, field: str):
    """A field of the generation's marker; None if the marker or the field cannot be read."""
    try:
        return json.loads((folder / MARKER).read_text())[field]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def complete_generations(root: Path) -> list[str]:
    """Names of the generations that were published (or installed) whole, oldest first."""
    folder = root / GENERATIONS
    if not folder.is_dir():
        return []
    names = [path.name for path in folder.iterdir() if _NAME.match(path.name) and (path / MARKER).is_file()]
    return sorted(names, key=lambda name: int(name[1:]))


def open_for_reading(root: Path) -> tuple[Path, int, str | None]:
    """(folder of the published generation, a descriptor holding a shared lock on it, a note or None).

    The lock keeps the generation from being deleted while it is read; closing
    the descriptor (or the process ending) releases it. Reading never writes.
    """
    for _ in range(20):
        name, note = published(root)
        if name is None:
            raise IndexNotBuilt(f"the {root.name} index has not been built yet in {root.parent}",
                                hint=f"run {INDEX_COMMANDS.get(root.name, 'an index script')}")
        folder = root / GENERATIONS / name
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            continue  # deleted since it was chosen: look again
        fcntl.flock(fd, fcntl.LOCK_SH)
        if same_file(folder, os.fstat(fd)):
            return folder, fd, note
        os.close(fd)  # renamed away by garbage collection before the lock was ours
    raise StoreError(f"cannot open the current index in {root}: it keeps changing", hint="try again")


def still_published(root: Path, fd: int) -> bool:
    """Whether the generation that `fd` (from open_for_reading) holds is still the published one of `root`.

    Compared by device and inode, not by name: a collection deleted and built again, or restored from a copy, has a
    g000001 too. The descriptor keeps its folder's inode from being reused while it is held.
    """
    name, _ = published(root)
    return name is not None and same_file(root / GENERATIONS / name, os.fstat(fd))


def held_path(fd: int, folder: Path) -> Path:
    """A path to what `fd` (from open_for_reading) holds, whatever `folder` names by now: /proc/self/fd/N (Linux), so
    that every file read later (ChromaDB opens its files as it needs them) comes from the generation that was locked,
    even once another folder was renamed to its name. Where there is no /proc, `folder` (readers that keep a store
    open check still_published before each use)."""
    proc = Path(f"/proc/self/fd/{fd}")
    return proc if proc.is_dir() else folder


class WriteSession:
    """The write lock of one collection, and a work folder for its next generation, made on the first write."""

    def __init__(self, root: Path, wait_seconds: float, fresh: bool = False):
        """Take the lock and choose what the next generation starts from: the published one, or nothing when `fresh`.

        Nothing is copied yet: a run that finds nothing to change never pays for a copy of the index.
        """
        self.root = root
        self.folder: Path | None = None  # the work folder, once start() made it
        self.reused = False  # whether the work folder is a taken predecessor (True) or a copy of the base
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._lock: int | None = _acquire_write_lock(root, wait_seconds)
        try:
            (root / GENERATIONS).mkdir(mode=0o700, exist_ok=True)
            name, note = published(root)
            if note and name is not None:  # a note names the generation used instead
                log.warning("%s; CURRENT rewritten", note)
                point_current(root, name)
            collect_garbage(root)
            self.published = root / GENERATIONS / name if name is not None else None  # what searches read now
            self.base = None if fresh else self.published
            self.name = _next_name(root)
        except BaseException:
            self.discard()
            raise

    def start(self, previous: Path | None = None) -> Path:
        """The work folder, made now if not yet: the `previous` generation's own folder if no search holds it (see
        `reused`), else a copy of the published generation (or empty)."""
        if self.folder is None:
            work = self.root / GENERATIONS / f".{self.name}.work"
            self.folder = work  # set first, so discard() removes a copy cut short
            if self.base is None:
                work.mkdir(mode=0o700)
            elif previous is not None and _take(previous, work):
                self.reused = True
            else:
                copy_generation(self.base, work)
        return self.folder

    def restart(self) -> None:
        """Drop the work folder, so that start() makes a new one."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        self.folder, self.reused = None, False

    def publish(self) -> None:
        """Make the work folder the current generation; the caller has closed and verified it."""
        work = self.folder
        if work is None:
            raise RuntimeError("nothing to publish: no work folder was made")
        final = self.root / GENERATIONS / self.name
        previous = self.base.name if self.base is not None else None
        write_atomically(work / MARKER, json.dumps({"name": self.name, "published": dates.now_iso(), "previous": previous}) + "\n")
        fsync_tree(work)
        install(work, final)
        self.folder = None
        point_current(self.root, self.name)
        try:
            collect_garbage(self.root)
        except OSError as exc:  # the new index is published; old generations go next time
            log.warning("could not remove old generations in %s: %s", self.root, exc)
        self.published = self.base = final  # a run that goes on writing (a checkpoint) starts its next generation here
        self.name, self.reused = _next_name(self.root), False

    def discard(self) -> None:
        """Drop the work folder (if not published) and release the write lock."""
        if self.folder is not None and self.folder.exists():
            shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def install(work: Path, final: Path) -> None:
    """Rename a verified work folder to its generation name (atomic)."""
    os.replace(work, final)


def point_current(root: Path, name: str) -> None:
    """Publish generation `name`: replace CURRENT atomically."""
    write_atomically(root / CURRENT, name + "\n", mode=0o600)


def collect_garbage(root: Path) -> list[str]:
    """Delete work folders of dead runs and generations that are neither current, the newest, nor being read.

    Called with the write lock held, so no other run's work folder can be in the
    way. When CURRENT cannot be read, no generation is deleted at all.
    """
    folder = root / GENERATIONS
    if not folder.is_dir():
        return []
    current, _ = published(root)
    complete = complete_generations(root)
    previous = predecessor(root, current) if current is not None else None
    keep = {current, complete[-1] if complete else None, previous.name if previous is not None else None}
    removed = []
    for path in folder.iterdir():
        if path.name.startswith(".") and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)  # a work folder left by a killed or failed run
            removed.append(path.name)
        elif path.name.endswith(".lock") and path.is_file():
            path.unlink()  # lock files of earlier versions: readers lock the folder itself now
        elif _NAME.match(path.name) and current is not None and path.name not in keep and _remove_if_unused(path):
            removed.append(path.name)
    return removed


def _take(folder: Path, work: Path) -> bool:
    """Make a generation no search holds the work folder, without its marker and its record of added vectors; False if
    a search holds it."""
    if not _rename_if_unused(folder, work):
        return False
    for name in (MARKER, ADDED):
        with contextlib.suppress(FileNotFoundError):
            (work / name).unlink()
    return True


def _remove_if_unused(folder: Path) -> bool:
    """Delete a generation no search holds; False if one does."""
    trash = folder.with_name(f".{folder.name}.trash")
    if not _rename_if_unused(folder, trash):
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True


def _rename_if_unused(folder: Path, target: Path) -> bool:
    """Rename a generation no search holds to `target`; False if one does.

    The exclusive lock is held while the folder is renamed away, so a search
    that locks it afterwards finds it gone and looks again.
    """
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        os.replace(folder, target)
    finally:
        os.close(fd)
    return True


def _next_name(root: Path) -> str:
    names = [path.name.strip(".").split(".")[0] for path in (root / GENERATIONS).iterdir()]
    numbers = [int(name[1:]) for name in names if _NAME.match(name)]
    return f"g{max(numbers, default=0) + 1:06d}"


def copy_generation(source: Path, target: Path) -> None:
    """Copy a generation: SQLite files as a committed state (a search's ChromaDB writes a row as it opens them),
    everything else byte for byte."""
    target.mkdir(mode=0o700)
    for path in sorted(source.rglob("*")):
        destination = target / path.relative_to(source)
        if path.is_dir():
            destination.mkdir(mode=0o700, exist_ok=True)
        elif path.name.endswith(("-journal", "-wal", "-shm")) or path.name in (MARKER, ADDED):
            continue  # part of the database file (the copy carries its committed state); marker and record are the new one's
        elif path.suffix in (".sqlite", ".sqlite3"):
            copy_sqlite(path, destination)
        else:
            shutil.copy2(path, destination)


def copy_sqlite(source: Path, target: Path) -> None:
    """Copy a SQLite file as of its last commit. With a rollback journal, the file's bytes are copied while a read
    transaction keeps writers from committing (ten times faster than the backup API); otherwise the backup API."""
    with contextlib.closing(sqlite3.connect(sqlite_uri(source, mode="ro"), uri=True, timeout=30, isolation_level=None)) as src:
        if src.execute("PRAGMA journal_mode").fetchone()[0] == "delete":
            src.execute("BEGIN")
            src.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # the shared lock, held until the rollback
            shutil.copyfile(source, target)
            src.execute("ROLLBACK")
            return
        with contextlib.closing(sqlite3.connect(target)) as dst:
            src.backup(dst)


def _acquire_write_lock(root: Path, wait_seconds: float) -> int:
    """Take write.lock, waiting up to wait_seconds; raise IndexBusy naming the holder if it stays taken."""
    fd = open_private(root / WRITE_LOCK, os.O_RDWR | os.O_CREAT)
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
                    f"another index run{holder} is writing the {root.name} index in {root.parent}",
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
