"""The first thing every script does: the libraries' switches, a quick exit, then the skill's own interpreter.

Agents call scripts/search.py directly, and its `python3` shebang may find a
Python without our packages: the script then re-runs itself under .venv. This
module imports nothing but os, sys, atexit and gc, so the interpreter that only
re-runs pays no more than its own start-up (the warm search.py is mostly start-up).
"""

import atexit
import gc
import os
import sys

from .telemetry import keep_libraries_local

SKILL_DIR = os.path.realpath(__file__).rsplit(os.sep, 4)[0]  # <it>/scripts/rag_search/core/launch.py: SKILL.md, scripts/, ...
VENV_DIR = os.path.join(SKILL_DIR, ".venv")


def use_project_venv() -> None:
    """Turn the libraries' telemetry off and skip the garbage collection at exit, then re-run the script under the
    skill's .venv when started by another interpreter.

    Every script calls this first, before anything imports a library, so it is where the switches are set (the re-run
    inherits them).
    """
    keep_libraries_local()
    # An exiting interpreter collects every object it holds, which took 0.13 s once ChromaDB and the model were loaded
    # (an index run that wrote, a cold search); the system frees the memory anyway. Frozen objects are left out.
    atexit.register(gc.freeze)
    python = os.path.join(VENV_DIR, "bin", "python")
    already = os.path.normpath(sys.executable) == python  # a .venv without pyvenv.cfg keeps another sys.prefix: never re-run twice
    if os.path.isfile(python) and os.path.realpath(sys.prefix) != os.path.realpath(VENV_DIR) and not already:
        os.execv(python, [python, *sys.argv])
