"""The personal index: notes, state, memory and decision files under the user's roots.

The collection mirrors the roots of the run: new and changed files are
(re)indexed, files that are gone or now ignored are removed. A file that still
exists but cannot be read or parsed this time is reported and keeps whatever
was indexed from it before.
"""

import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import dates
from ..config import Config
from ..errors import ConfigError
from ..indexer import IndexWriter, Pipeline, SourceDocument, content_hash
from ..parsing import ParseError, kind_of
from ..progress import Progress
from ..store import Store

log = logging.getLogger("rag_search")

COLLECTION = "personal"
IGNORE_FILE = ".ragignore"
# Always applied, before the config's patterns and each root's .ragignore.
DEFAULT_IGNORES = [".git/", "node_modules/", "*.log"]
# Directories never entered: fast, and no pattern can re-include them.
ALWAYS_SKIPPED_DIRS = {".git", "node_modules"}


class SkipFile(Exception):
    """This file cannot be indexed; the message says why."""


@dataclass
class FileEntry:
    root: Path
    rel: str  # POSIX path relative to the root
    path: Path
    size: int
    mtime_ns: int

    @property
    def key(self) -> str:
        return str(self.path)


@dataclass
class WalkResult:
    files: list[FileEntry] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    ignored: int = 0


def check_roots(roots: list[Path], origin: str) -> list[Path]:
    """Every root must be an existing folder; a root inside another is dropped."""
    for root in roots:
        if not root.is_dir():
            raise ConfigError(
                f"personal root {root} ({origin}) does not exist or is not a folder",
                hint="create it, or pass roots on the command line / set RAG_SEARCH_PERSONAL_DIRS",
            )
    kept = []
    for root in sorted(roots, key=lambda p: len(p.parts)):
        if any(root.is_relative_to(outer) for outer in kept):
            log.warning("root %s is inside another root: indexed once, as part of that root", root)
        else:
            kept.append(root)
    return kept


def ignore_spec(root: Path, config_patterns: list[str]):
    """Default globals, then the config's patterns, then the root's .ragignore (gitignore syntax)."""
    import pathspec

    lines = DEFAULT_IGNORES + list(config_patterns)
    ignore_file = root / IGNORE_FILE
    if ignore_file.is_file():
        try:
            lines += ignore_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {ignore_file}: {exc}") from None
    return pathspec.GitIgnoreSpec.from_lines(lines), any(line.strip().startswith("!") for line in lines)


def walk_root(root: Path, config: Config) -> WalkResult:
    """Regular files under `root` that the ignore rules let through and that we can parse."""
    spec, has_negation = ignore_spec(root, config.ignore_patterns)
    result = WalkResult()
    real_root = root.resolve()

    def on_error(exc: OSError) -> None:
        result.skipped.append({"file": _rel(root, exc.filename), "reason": f"unreadable folder: {exc.strerror}", "folder": True})

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        kept_dirs = []
        for name in sorted(dirnames):
            rel = f"{name}" if rel_dir == "." else f"{rel_dir}/{name}"
            if name in ALWAYS_SKIPPED_DIRS or name.startswith((".", "_")) or (base / name).is_symlink():
                result.ignored += 1
            elif not has_negation and spec.match_file(rel + "/"):
                result.ignored += 1
            else:
                kept_dirs.append(name)
        dirnames[:] = kept_dirs
        for name in sorted(filenames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if spec.match_file(rel) or kind_of(name) is None:
                result.ignored += 1
                continue
            entry, reason = _entry(root, real_root, rel)
            if reason:
                result.skipped.append({"file": rel, "reason": reason})
            elif entry:
                result.files.append(entry)
    return result


def _entry(root: Path, real_root: Path, rel: str) -> tuple[FileEntry | None, str | None]:
    path = root / rel
    try:
        link = path.lstat()
        if stat.S_ISLNK(link.st_mode):
            target = path.resolve()
            if not target.exists():
                return None, "dangling symlink"
            if not target.is_relative_to(real_root):
                return None, "symlink points outside the root"
        info = path.stat()
    except OSError as exc:
        return None, f"cannot stat: {exc.strerror}"
    if not stat.S_ISREG(info.st_mode):
        return None, "not a regular file"
    return FileEntry(root, rel, path, info.st_size, info.st_mtime_ns), None


def read_text(path: Path, max_bytes: int) -> str:
    """The file as text, or SkipFile with the reason it cannot be indexed."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise SkipFile(f"unreadable: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise SkipFile(f"larger than the {max_bytes // 1024} KiB limit (max_file_bytes)")
    if b"\0" in data:
        raise SkipFile("binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise SkipFile("empty file")
    return text


def index_personal(
    store: Store,
    pipeline: Pipeline,
    roots: list[Path],
    config: Config,
    full: bool = False,
    quiet: bool = False,
) -> dict:
    """Bring the personal collection in line with `roots`; returns the run summary."""
    started = time.monotonic()
    walks = {root: walk_root(root, config) for root in roots}
    files = [entry for walk in walks.values() for entry in walk.files]
    skipped = []
    unreadable_folders = []
    for root, walk in walks.items():
        for skip in walk.skipped:
            path = str(root / skip["file"])
            log.warning("skipped %s: %s", path, skip["reason"])
            skipped.append({"file": path, "reason": skip["reason"]})
            if skip.get("folder"):
                unreadable_folders.append(path + os.sep)
    counts = {"added": 0, "updated": 0, "unchanged": 0, "deleted": 0}

    with IndexWriter(store, COLLECTION, pipeline, full=full) as writer:
        known = writer.known_documents()
        seen = {entry.key for entry in files}
        # Still there, just unreadable this time: keep what we had.
        seen.update(s["file"] for s in skipped)
        seen.update(key for key in known if key.startswith(tuple(unreadable_folders)))
        touched = []
        progress = Progress(len(files), "personal", quiet)
        for entry in files:
            progress.update()
            previous = known.get(entry.key)
            if previous and (previous.size, previous.mtime_ns) == (entry.size, entry.mtime_ns):
                counts["unchanged"] += 1
                continue
            try:
                text = read_text(entry.path, config.max_file_bytes)
            except SkipFile as exc:
                _skip(skipped, entry, str(exc), previous is not None)
                continue
            digest = content_hash(text.encode("utf-8"))
            if previous and previous.content_hash == digest:
                touched.append((entry.key, entry.size, entry.mtime_ns))
                counts["unchanged"] += 1
                continue
            document = SourceDocument(
                key=entry.key,
                source_id=COLLECTION,
                file=entry.rel,
                kind=kind_of(entry.rel),
                text=text,
                content_hash=digest,
                metadata={"root": str(entry.root)},
                fallback_date=dates.from_timestamp(entry.mtime_ns / 1e9),
                size=entry.size,
                mtime_ns=entry.mtime_ns,
            )
            try:
                for warning in writer.put(document):
                    log.warning("%s: %s", entry.path, warning)
            except (ParseError, RecursionError) as exc:
                reason = str(exc) if isinstance(exc, ParseError) else "nested too deeply"
                _skip(skipped, entry, reason, previous is not None)
                continue
            counts["updated" if previous else "added"] += 1
        progress.close()
        writer.touch(touched)
        gone = sorted(set(known) - seen)
        for key in gone:
            writer.remove(key)
        counts["deleted"] = len(gone)

    return {
        "index": COLLECTION,
        "roots": [str(root) for root in roots],
        "files_seen": len(files) + sum(len(walk.skipped) for walk in walks.values()),
        **counts,
        "skipped": skipped,
        "ignored": sum(walk.ignored for walk in walks.values()),
        "chunks": store.catalog.chunk_count(COLLECTION),
        "chunks_added": writer.stats.chunks_added,
        "chunks_removed": writer.stats.chunks_removed,
        "embedded": writer.stats.embedded,
        "reused_vectors": writer.stats.reused,
        "rebuilt": writer.rebuilt,
        "seconds": round(time.monotonic() - started, 2),
    }


def _skip(skipped: list[dict], entry: FileEntry, reason: str, kept_previous: bool) -> None:
    if kept_previous:
        reason += "; the previously indexed version is kept"
    log.warning("skipped %s: %s", entry.path, reason)
    skipped.append({"file": str(entry.path), "reason": reason})


def _rel(root: Path, name) -> str:
    try:
        return Path(name).relative_to(root).as_posix()
    except (TypeError, ValueError):
        return str(name)
