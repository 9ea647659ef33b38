"""The registry of documentation sources: references/sources.json.

Loading validates every entry into a typed spec (specs.py), with one error
naming the source and the field; no other module sees the JSON. Fields we do
not know are kept when the file is rewritten. Writes are atomic and
compare-and-swap: a change is applied to what is on disk at that moment, and
retried if the file changed meanwhile, so concurrent edits never lose each other.
"""

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..core.atomic import write_atomically
from ..core.errors import ConfigError, one_line
from ..core.locking import exclusive_lock
from .specs import STATUS_FIELDS, SourceSpec, spec_from_entry

SAVE_ATTEMPTS = 5


@dataclass
class Registry:
    path: Path
    _data: dict  # the whole document as read, unknown fields included
    digest: str | None  # hash of the bytes read; None when the file did not exist
    sources: list[SourceSpec] = field(default_factory=list)

    def get(self, source_id: str) -> SourceSpec | None:
        return next((spec for spec in self.sources if spec.id == source_id), None)

    def describe(self, source_id: str) -> dict:
        """The source's entry as written (with its last_indexed and other status), for listings."""
        return copy.deepcopy(self._entry(source_id))

    def add(self, fields: dict) -> SourceSpec:
        if self.get(fields.get("id", "")) is not None:
            raise ConfigError(f"a source with id {fields['id']!r} already exists", hint="use --update to change it")
        self._data["sources"].append(dict(fields))
        self._revalidate()
        return self._spec(fields["id"])

    def update(self, source_id: str, fields: dict) -> SourceSpec:
        entry = self._entry(source_id)
        entry.update(fields)
        for key in [key for key, value in entry.items() if value is None]:
            del entry[key]
        self._revalidate()
        return self._spec(source_id)

    def remove(self, source_id: str) -> bool:
        before = len(self._data["sources"])
        self._data["sources"] = [entry for entry in self._data["sources"] if entry.get("id") != source_id]
        self._revalidate()
        return len(self._data["sources"]) < before

    def record(self, source_id: str, **status) -> None:
        """Status fields (last_indexed, last_commit, last_attempt, last_error) of a source still registered."""
        if self.get(source_id) is None:
            return
        unknown = set(status) - set(STATUS_FIELDS)
        if unknown:
            raise ValueError(f"not status fields: {sorted(unknown)}")
        self.update(source_id, status)

    def _entry(self, source_id: str) -> dict:
        entry = next((e for e in self._data["sources"] if isinstance(e, dict) and e.get("id") == source_id), None)
        if entry is None:
            raise self._unknown(source_id)
        return entry

    def _spec(self, source_id: str) -> SourceSpec:
        spec = self.get(source_id)
        if spec is None:
            raise self._unknown(source_id)
        return spec

    def _unknown(self, source_id: str) -> ConfigError:
        return ConfigError(f"no source with id {source_id!r} in {self.path}", hint="see add_doc_source.py --list")

    def _revalidate(self) -> None:
        self.sources = validate(self._data, self.path.name)


def load(path: Path) -> Registry:
    """Read and validate the registry; a missing file is an empty registry."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Registry(path, {"sources": []}, None)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    # Our writes are atomic, so a broken registry was edited by hand; and it is the user's (git ignores it).
    hint = f"fix {path} in an editor; status.py lists the doc sources the index holds"
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path} is not valid JSON: {one_line(exc)}", hint=hint) from None
    try:
        return Registry(path, data, _digest(raw), validate(data, path.name))
    except ConfigError as exc:
        raise ConfigError(exc.message, hint=exc.hint or hint) from None


def validate(data, name: str = "sources.json") -> list[SourceSpec]:
    """The typed specs of the document; ConfigError for the first problem, naming the source and the field."""
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list):
        raise ConfigError(f'{name}: expected an object with a "sources" list')
    specs: list[SourceSpec] = []
    for position, entry in enumerate(data["sources"], start=1):
        spec = spec_from_entry(entry, f"{name}: source #{position}")
        if any(other.id == spec.id for other in specs):
            raise ConfigError(f'{name}: source #{position} ("{spec.id}"): duplicate "id"')
        specs.append(spec)
    return specs


def update(path: Path, change) -> Registry:
    """Apply `change(registry)` to the registry as it is on disk and save it; retried if the file changes meanwhile."""
    for _ in range(SAVE_ATTEMPTS):
        registry = load(path)
        changed = Registry(registry.path, copy.deepcopy(registry._data), registry.digest, list(registry.sources))
        change(changed)
        if _save(changed):
            return changed
    raise ConfigError(f"{path} kept changing while this command ran; nothing was written", hint="run the command again")


def _save(registry: Registry) -> bool:
    """Write the registry unless the file changed since it was read; False if it did."""
    validate(registry._data, registry.path.name)
    registry.path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(registry.path.with_name(f".{registry.path.name}.lock")):
        if _current_digest(registry.path) != registry.digest:
            return False
        raw = (json.dumps(registry._data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        write_atomically(registry.path, raw)
        registry.digest = _digest(raw)
    return True


def _current_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes())
    except FileNotFoundError:
        return None


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
