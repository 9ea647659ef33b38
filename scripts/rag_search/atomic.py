"""Writing files so that a crash leaves either the old content or the new, never half of either."""

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes | str, mode: int | None = None) -> None:
    """Replace `path` with `data`: temp file in the same folder, fsync, rename, fsync the folder.

    The file keeps its permissions (or gets `mode` when it is new).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o777)
        elif mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    fsync_dir(path.parent)


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
