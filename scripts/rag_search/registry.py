"""The registry of documentation sources: references/sources.json.

Validated on every load, with one error naming the source and the field.
Fields we do not know are kept when the file is rewritten. Writes are atomic
(temp file + rename) and refuse to overwrite a file that changed since it was
read, so a manual edit made meanwhile is never lost silently.
"""

import contextlib
import copy
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .config import SKILL_DIR, expand
from .errors import ConfigError
from .locking import exclusive_lock

DEFAULT_REGISTRY = SKILL_DIR / "references" / "sources.json"
ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
GIT_SCHEMES = {"https", "ssh", "git", "file"}
SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:[^/].*")  # git@github.com:owner/repo.git

# Per type: required fields and the optional ones we check. All values are strings but `pages`.
FIELDS = {
    "git": {"required": ("url",), "optional": ("path", "glob", "version")},
    "web": {"required": ("base_url",), "optional": ("pages", "sitemap")},
    "local": {"required": ("path",), "optional": ("glob",)},
}
DEFAULT_GLOB = "**/*.md"


def registry_path(cli_value: str | None = None) -> Path:
    """--sources, else RAG_SEARCH_SOURCES, else references/sources.json in the skill folder."""
    configured = cli_value or os.environ.get("RAG_SEARCH_SOURCES")
    return expand(configured) if configured else DEFAULT_REGISTRY


@dataclass
class Registry:
    path: Path
    data: dict  # the whole document as read, unknown fields included
    digest: str | None  # hash of the bytes read; None when the file did not exist

    @property
    def sources(self) -> list[dict]:
        return self.data["sources"]

    def get(self, source_id: str) -> dict | None:
        return next((s for s in self.sources if s.get("id") == source_id), None)


def load(path: Path) -> Registry:
    """Read and validate the registry; a missing file is an empty registry."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Registry(path, {"sources": []}, None)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path} is not valid JSON: {_one_line(exc)}", hint="fix the file or restore it from git") from None
    validate(data, path.name)
    return Registry(path, data, _digest(raw))


def validate(data, name: str = "sources.json") -> None:
    """Raise ConfigError for the first problem, naming the source and the field."""
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list):
        raise ConfigError(f'{name}: expected an object with a "sources" list')
    seen: set[str] = set()
    for position, source in enumerate(data["sources"], start=1):
        if not isinstance(source, dict):
            raise ConfigError(f"{name}: source #{position} is not an object")
        where = f'{name}: source #{position} ("{source.get("id", "?")}")'
        source_id = source.get("id")
        if not isinstance(source_id, str) or not source_id:
            raise ConfigError(f'{where}: "id" is missing')
        if not ID_PATTERN.fullmatch(source_id):
            raise ConfigError(f'{where}: "id" must be a slug of a-z, 0-9, ".", "_" and "-", starting with a letter or digit')
        if source_id in seen:
            raise ConfigError(f'{where}: duplicate "id"')
        seen.add(source_id)
        if not isinstance(source.get("name"), str) or not source["name"].strip():
            raise ConfigError(f'{where}: "name" is missing')
        kind = source.get("type")
        if kind not in FIELDS:
            raise ConfigError(f'{where}: "type" must be one of {", ".join(sorted(FIELDS))}, not {kind!r}')
        for field in FIELDS[kind]["required"]:
            if not isinstance(source.get(field), str) or not source[field].strip():
                raise ConfigError(f'{where}: "{field}" is missing (required for {kind} sources)')
        for field in FIELDS[kind]["optional"] + ("last_indexed", "last_commit"):
            value = source.get(field)
            if field == "pages":
                if value is not None and not (isinstance(value, list) and all(isinstance(p, str) for p in value)):
                    raise ConfigError(f'{where}: "pages" must be a list of paths relative to base_url')
            elif value is not None and not isinstance(value, str):
                raise ConfigError(f'{where}: "{field}" must be a string')
        problem = _check_location(source)
        if problem:
            raise ConfigError(f"{where}: {problem}")


def _check_location(source: dict) -> str | None:
    kind = source["type"]
    if kind == "git":
        url = source["url"]
        if url.startswith("-"):
            return '"url" must not start with "-"'
        scheme = urlsplit(url).scheme
        if scheme not in GIT_SCHEMES and not SCP_LIKE.match(url):
            return f'"url" must use https, ssh, git or file (or user@host:path), not {scheme or url!r}'
    elif kind == "web":
        parts = urlsplit(source["base_url"])
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return '"base_url" must be an http or https URL'
        if not source.get("pages") and not source.get("sitemap"):
            return 'a web source needs "pages" (paths relative to base_url) or a "sitemap"'
    return None


def save(registry: Registry) -> None:
    """Validate and write atomically, unless the file changed since it was read."""
    validate(registry.data, registry.path.name)
    registry.path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(registry.path.with_name(f".{registry.path.name}.lock")):
        current = _current_digest(registry.path)
        if current != registry.digest:
            raise ConfigError(
                f"{registry.path} changed while this command ran; nothing was written",
                hint="run the command again",
            )
        raw = (json.dumps(registry.data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        _write_atomically(registry.path, raw)
        registry.digest = _digest(raw)


def update(path: Path, change) -> Registry:
    """Re-read the registry, apply `change(registry)` to a copy, and save it."""
    registry = load(path)
    changed = Registry(registry.path, copy.deepcopy(registry.data), registry.digest)
    change(changed)
    save(changed)
    return changed


def _write_atomically(path: Path, raw: bytes) -> None:
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o777)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _current_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes())
    except FileNotFoundError:
        return None


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
