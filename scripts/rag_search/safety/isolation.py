"""Reading the index in a child process, so a damaged store cannot crash the caller.

A ChromaDB store that went bad can segfault every process that queries it.
search.py therefore forks: the child opens the index and runs the search, the
parent embeds the query meanwhile and hands it over; if the child dies from a
signal, the parent reports a damaged index and how to rebuild it, instead of
the agent seeing a segfault. Forking before ChromaDB starts any thread is safe;
where there is no fork (Windows), the work runs in the same process.
"""

import os
import pickle
import signal
import sys

from ..core.errors import EXIT_FAILURE, StoreError

REPAIR_HINT = "rebuild it: scripts/index_personal.py --full and scripts/index_docs.py --all --full"


def run_isolated(work, give):
    """Run work(receive) in a child, where receive() returns what the parent passes to give();
    the parent calls give() itself, then gets work's result (or its exception) back."""
    if not hasattr(os, "fork"):
        value = give()
        return work(lambda: value)
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(to_child_w)
        os.close(to_parent_r)
        try:
            outcome = ("ok", work(lambda: _receive(to_child_r)))
        except BaseException as exc:  # carried to the parent and raised there
            outcome = ("error", exc)
        try:
            payload = pickle.dumps(outcome)
        except Exception as exc:  # an exception that cannot be pickled still becomes a message
            payload = pickle.dumps(("error", RuntimeError(f"{type(outcome[1]).__name__}: {exc}")))
        with os.fdopen(to_parent_w, "wb") as out:
            out.write(payload)
        sys.stderr.flush()
        os._exit(0)
    os.close(to_child_r)
    os.close(to_parent_w)
    try:
        value = give()
        with os.fdopen(to_child_w, "wb") as out:
            out.write(pickle.dumps(value))
    except BrokenPipeError:
        pass  # the child already failed; its outcome says why
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    with os.fdopen(to_parent_r, "rb") as result:
        payload = result.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise StoreError(f"the index crashed the process reading it ({name}): it is damaged", hint=REPAIR_HINT)
    if not payload:
        raise StoreError(f"the process reading the index ended without an answer (exit {os.WEXITSTATUS(status)})", hint=REPAIR_HINT)
    kind, value = pickle.loads(payload)
    if kind == "error":
        raise value
    return value


def _receive(fd: int):
    with os.fdopen(fd, "rb") as source:
        data = source.read()
    if not data:
        sys.exit(EXIT_FAILURE)  # the parent failed before it could send anything
    return pickle.loads(data)
