"""An exclusive lock on a file, for short critical sections shared by processes."""

import contextlib
import fcntl
import os
from pathlib import Path

from .private_files import open_private


@contextlib.contextmanager
def exclusive_lock(lock_path: Path):
    """Hold an exclusive flock on `lock_path` (created if missing, never through a link) for the `with` block."""
    with open(open_private(lock_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
