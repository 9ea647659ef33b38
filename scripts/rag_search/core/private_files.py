"""Opening the files rag-search keeps in its folders, never through a link planted there.

A symbolic link at <data dir>/resident/log would make a search append to, and
chmod, the file it points at; one at a lock file would create that file; a FIFO
would hang the open. Every file rag-search creates, appends to, locks or chmods
in the data dir is opened here (whole files it replaces go through
atomic.write_atomically, which never follows one either). Imports nothing
heavy: the warm search client uses it.
"""

import errno
import os
import stat
from pathlib import Path


def open_private(path: Path, flags: int) -> int:
    """A descriptor of the regular file at `path` (made 0600 when `flags` create it); OSError if `path` is a symbolic
    link or not a regular file. Change its mode with os.fchmod on the descriptor, never by path."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)  # O_NONBLOCK: a FIFO fails or opens, never hangs
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, f"{path} is a symbolic link: not followed") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a regular file: not used")
    os.set_blocking(fd, True)
    return fd
