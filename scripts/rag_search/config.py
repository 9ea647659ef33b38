"""Where things live and which settings win.

Precedence is the same everywhere: a command-line flag beats an environment
variable, which beats the config file, which beats the default.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError

SKILL_DIR = Path(__file__).resolve().parents[2]  # the checkout: SKILL.md, scripts/, references/
DEFAULT_DATA_DIR = "~/.claude/data/rag-search"
DEFAULT_CONFIG_FILE = "~/.config/rag-search/config.json"
DEFAULT_PERSONAL_ROOT = "~/.claude/state"
DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024
DEFAULT_WEB_TIMEOUT_SECONDS = 20
DEFAULT_WEB_MAX_PAGE_BYTES = 5 * 1024 * 1024

# Positive numbers, with their defaults.
LIMITS = {
    "max_file_bytes": DEFAULT_MAX_FILE_BYTES,
    "web_timeout_seconds": DEFAULT_WEB_TIMEOUT_SECONDS,
    "web_max_page_bytes": DEFAULT_WEB_MAX_PAGE_BYTES,
}
KNOWN_KEYS = {"personal_roots", "ignore_patterns", "rerank_model", "recency_half_life_days", *LIMITS}


def expand(path: str | Path) -> Path:
    """Expand ~ and make absolute, without resolving symlinks."""
    return Path(os.path.abspath(os.path.expanduser(str(path))))


@dataclass(frozen=True)
class ChromaServer:
    """A Chroma server to use instead of the local store, and headers for a proxy in front of it."""

    url: str
    host: str
    port: int
    ssl: bool
    headers: dict


def chroma_server(cli_value: str | None = None) -> ChromaServer | None:
    """--chroma-url, else RAG_SEARCH_CHROMA_URL, else None (the local store).

    Headers come only from RAG_SEARCH_CHROMA_HEADERS (a JSON object), never from the
    command line, where other users could read them in the process list.
    """
    from urllib.parse import urlsplit

    url = cli_value or os.environ.get("RAG_SEARCH_CHROMA_URL")
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise ConfigError(f"Chroma server URL {url!r} must be http(s)://host[:port] with no path")
    raw = os.environ.get("RAG_SEARCH_CHROMA_HEADERS", "")
    try:
        headers = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"RAG_SEARCH_CHROMA_HEADERS is not valid JSON: {exc}", hint='e.g. {"Authorization": "Bearer …"}') from None
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ConfigError("RAG_SEARCH_CHROMA_HEADERS must be a JSON object of strings", hint='e.g. {"Authorization": "Bearer …"}')
    ssl = parts.scheme == "https"
    return ChromaServer(url, parts.hostname, parts.port or (443 if ssl else 8000), ssl, headers)


def data_dir(cli_value: str | None = None) -> Path:
    """The store folder: --data-dir, else RAG_SEARCH_HOME, else ~/.claude/data/rag-search."""
    return expand(cli_value or os.environ.get("RAG_SEARCH_HOME") or DEFAULT_DATA_DIR)


@dataclass
class Config:
    """Settings read from the optional JSON config file."""

    path: Path
    personal_roots: list[str] = field(default_factory=list)
    ignore_patterns: list[str] = field(default_factory=list)
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    web_timeout_seconds: float = DEFAULT_WEB_TIMEOUT_SECONDS
    web_max_page_bytes: int = DEFAULT_WEB_MAX_PAGE_BYTES
    rerank_model: str | None = None  # a local cross-encoder folder for search.py --rerank
    recency_half_life_days: float | None = None  # default for search.py --recency-half-life
    warnings: list[str] = field(default_factory=list)


def load_config() -> Config:
    """Read RAG_SEARCH_CONFIG or ~/.config/rag-search/config.json; a missing file is fine.

    A malformed file is an error, not a warning: silently falling back to the
    default roots would make the next index run drop the configured ones.
    """
    path = expand(os.environ.get("RAG_SEARCH_CONFIG") or DEFAULT_CONFIG_FILE)
    config = Config(path=path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return config
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
        setattr(config, key, value)
    for key, default in LIMITS.items():
        value = data.get(key, default)
        wanted = int if key.endswith("_bytes") else (int, float)
        if isinstance(value, bool) or not isinstance(value, wanted) or value <= 0:
            raise ConfigError(f"config file {path}: {key!r} must be a positive {'integer' if wanted is int else 'number'}")
        setattr(config, key, value)
    rerank_model = data.get("rerank_model")
    if rerank_model is not None and not isinstance(rerank_model, str):
        raise ConfigError(f"config file {path}: 'rerank_model' must be a folder path")
    config.rerank_model = rerank_model
    half_life = data.get("recency_half_life_days")
    if half_life is not None and (isinstance(half_life, bool) or not isinstance(half_life, (int, float)) or half_life <= 0):
        raise ConfigError(f"config file {path}: 'recency_half_life_days' must be a positive number")
    config.recency_half_life_days = half_life
    config.warnings = [f"config file {path}: unknown key {k!r} ignored" for k in sorted(set(data) - KNOWN_KEYS)]
    return config


def personal_roots(cli_roots: list[str], config: Config) -> tuple[list[Path], str]:
    """Roots to index and where they came from: cli > RAG_SEARCH_PERSONAL_DIRS > config > default."""
    env = os.environ.get("RAG_SEARCH_PERSONAL_DIRS", "")
    env_roots = [part.strip() for part in env.split(",") if part.strip()]
    for roots, origin in (
        (cli_roots, "command line"),
        (env_roots, "RAG_SEARCH_PERSONAL_DIRS"),
        (config.personal_roots, f"config file {config.path}"),
        ([DEFAULT_PERSONAL_ROOT], "default"),
    ):
        if roots:
            return _dedupe([expand(r) for r in roots]), origin
    raise AssertionError("unreachable: the default is never empty")


def _dedupe(paths: list[Path]) -> list[Path]:
    seen: dict[Path, None] = {}
    for path in paths:
        seen.setdefault(path, None)
    return list(seen)
