"""Writing files so that a crash leaves either the old content or the new, never half of either (nor through a link)."""

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes | str, mode: int | None = None) -> None:
    """Replace `path` with `data`: temp file in the same folder, fsync, rename, fsync the folder.

    The file keeps its permissions (or gets `mode` when it is new). A link at `path` is replaced, never followed: not
    even its target's mode is read.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    kept = _regular_file_mode(path)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(raw)
            out.flush()
            if (chosen := kept if kept is not None else mode) is not None:
                os.fchmod(out.fileno(), chosen)
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    fsync_dir(path.parent)


def _regular_file_mode(path: Path) -> int | None:
    """The permissions of the regular file at `path`; None if there is none (or a link, or anything else)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    return found.st_mode & 0o777 if stat.S_ISREG(found.st_mode) else None


def fsync_tree(folder: Path) -> None:
    """Make every file under `folder` durable (a power cut must not publish half of it)."""
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def folder_size(folder: Path) -> int:
    """Bytes of the regular files under `folder`."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())
