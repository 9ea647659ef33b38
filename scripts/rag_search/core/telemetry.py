"""The libraries' own switches against phoning home and downloading, set before the libraries are imported.

Most read them once, at import. onnxruntime (1.29+) reads ORT_DISABLE_TELEMETRY as it initialises: without it, every
process that loads the model writes a device id and an event queue to ~/.cache/Microsoft/DeveloperTools/.onnxruntime,
a session file to $TMPDIR/.ses, and sends a ProcessInfo event (OS, CPU, container, interpreter path);
onnxruntime.disable_telemetry_events() comes too late for that event. Two layers: every script calls this first
(launch.use_project_venv, so the re-run under .venv and child processes inherit it), and so does each module right
before it imports one of these libraries, for code that runs without a script (benchmarks, tests, make setup).
"""

import os

# Forced, whatever the shell says: rag-search promises that nothing leaves the machine, and a value found in the
# environment was set for some other program (ORT_DISABLE_TELEMETRY=0, for one, turns onnxruntime's telemetry on).
FORCED = {
    "ORT_DISABLE_TELEMETRY": "1",  # onnxruntime: no device id, event queue, session file or upload
    "ANONYMIZED_TELEMETRY": "False",  # ChromaDB's product telemetry (vectors.py also turns it off in its Settings)
    "HF_HUB_DISABLE_TELEMETRY": "1",  # huggingface_hub and transformers
    "HF_HUB_OFFLINE": "1",  # the model is on disk: the Hugging Face libraries fail instead of downloading
    "TRANSFORMERS_OFFLINE": "1",
    "DO_NOT_TRACK": "1",  # the general opt-out (donottrack.sh), for any library that honours it
}
# Output and threads, not privacy: a user's own value wins.
DEFAULTS = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "false"}


def keep_libraries_local() -> None:
    """Call before importing onnxruntime, chromadb, torch or the Hugging Face libraries: they read these once."""
    for name, value in FORCED.items():
        os.environ[name] = value
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
