"""An exclusive lock on a file, for short critical sections shared by processes."""

import contextlib
import fcntl
from pathlib import Path


@contextlib.contextmanager
def exclusive_lock(lock_path: Path):
    """Hold an exclusive flock on `lock_path` (created if missing) for the `with` block."""
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
