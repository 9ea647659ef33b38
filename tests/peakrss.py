"""Run a script and report its peak memory: `python peakrss.py OUT SCRIPT [ARG…]` writes the peak RSS in MB to OUT."""

import resource
import runpy
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

if __name__ == "__main__":
    out, script, *args = sys.argv[1:]
    sys.path.insert(0, str(SCRIPTS))
    sys.argv = [str(SCRIPTS / script), *args]
    try:
        runpy.run_path(str(SCRIPTS / script), run_name="__main__")
    finally:
        Path(out).write_text(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024))
