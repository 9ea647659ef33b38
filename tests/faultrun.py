"""Run a script with a fault injected at one step: `python faultrun.py FAULT… SCRIPT [ARG…]`.

FAULT is ACTION@TARGET[#N]: on the N-th call (default 1) of TARGET (a dotted path
to a function or method in rag_search, e.g. rag_search.store.catalog.Catalog.write),
ACTION happens before the call runs:
  kill   the process SIGKILLs itself (no cleanup, as an OOM kill or power cut)
  fail   the call raises OSError(EIO), as a failing disk would
  full   the call raises OSError(ENOSPC)
or set@TARGET=VALUE: the module attribute TARGET (a constant) is VALUE (a Python literal) for the run, to make a rare
step happen (a publish after 0 seconds). The script then runs as usual (its main() in this process).
"""

import ast
import errno
import functools
import importlib
import os
import runpy
import signal
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def resolve(target: str):
    """(owner object, attribute name) for a dotted path: a module attribute or a class attribute."""
    parts = target.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:-1]:
            owner = getattr(owner, name)
        getattr(owner, parts[-1])  # must exist
        return owner, parts[-1]
    raise SystemExit(f"faultrun: cannot resolve {target}")


def inject(fault: str) -> None:
    action, _, target = fault.partition("@")
    if action == "set":
        target, _, value = target.partition("=")
        owner, name = resolve(target)
        setattr(owner, name, ast.literal_eval(value))
        return
    target, _, nth = target.partition("#")
    owner, name = resolve(target)
    original = getattr(owner, name)
    wanted = int(nth or 1)
    calls = 0

    @functools.wraps(original)
    def faulty(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == wanted:
            sys.stderr.write(f"faultrun: {action} at {target} (call {calls})\n")
            sys.stderr.flush()
            if action == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if action == "full":
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            raise OSError(errno.EIO, f"injected fault at {target}")
        return original(*args, **kwargs)

    if isinstance(owner, type) and isinstance(owner.__dict__.get(name), staticmethod):
        faulty = staticmethod(faulty)
    setattr(owner, name, faulty)


def main() -> None:
    given = sys.argv[1:]
    at = next(n for n, arg in enumerate(given) if arg.endswith(".py"))
    faults, script, args = given[:at], given[at], given[at + 1 :]
    sys.path.insert(0, str(SCRIPTS))
    for fault in faults:
        inject(fault)
    sys.argv = [str(SCRIPTS / script), *args]
    runpy.run_path(str(SCRIPTS / script), run_name="__main__")


if __name__ == "__main__":
    main()
