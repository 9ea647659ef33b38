"""Folders of files on disk: walking them safely and syncing them into a collection.

Shared by the personal index and `local` doc sources. The collection mirrors
the folders: new and changed files are (re)indexed, files that are gone or now
ignored are removed. A file that still exists but cannot be read or parsed this
time is reported and keeps whatever was indexed from it before.
"""

import errno
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .. import dates
from ..errors import ConfigError
from ..indexer import IndexWriter, SourceDocument, content_hash
from ..parsing import ParseError, kind_of
from ..progress import Progress
from ..secrets import is_secret_file, warn_secret_files

log = logging.getLogger("rag_search")

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


@dataclass
class WalkResult:
    root: Path
    files: list[FileEntry] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {"file": rel, "reason", "folder"?}
    ignored: int = 0
    secret_files: list[str] = field(default_factory=list)  # rel paths of files that hold credentials


def ignore_spec(root: Path, patterns: list[str]):
    """Default globals, then `patterns`, then the root's .ragignore (gitignore syntax)."""
    import pathspec

    lines = DEFAULT_IGNORES + list(patterns)
    ignore_file = root / IGNORE_FILE
    if ignore_file.is_file():
        try:
            lines += ignore_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {ignore_file}: {exc}") from None
    return pathspec.GitIgnoreSpec.from_lines(lines), any(line.strip().startswith("!") for line in lines)


def walk_root(root: Path, ignore_patterns: list[str], include=None) -> WalkResult:
    """Regular files under `root` that the ignore rules let through and that we can parse.

    `include`, if given, is a pathspec a file must also match (a source's glob).
    Directory symlinks are never followed; file symlinks only when they resolve
    inside the root. Secret files (secrets.is_secret_file) are left out before any
    ignore rule is consulted, so no `!` pattern can bring them back.
    """
    spec, has_negation = ignore_spec(root, ignore_patterns)
    result = WalkResult(root)
    real_root = root.resolve()

    def on_error(exc: OSError) -> None:
        rel = _printable(_rel(root, exc.filename))
        result.skipped.append({"file": rel, "reason": f"unreadable folder: {exc.strerror}", "folder": True})

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        kept_dirs = []
        for name in sorted(dirnames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if name in ALWAYS_SKIPPED_DIRS or name.startswith((".", "_")) or (base / name).is_symlink():
                result.ignored += 1
            elif not has_negation and spec.match_file(rel + "/"):
                result.ignored += 1
            elif not _is_utf8(name):
                result.skipped.append({"file": _printable(rel), "reason": "folder name is not valid UTF-8"})
            else:
                kept_dirs.append(name)
        dirnames[:] = kept_dirs
        for name in sorted(filenames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if is_secret_file(name):
                result.secret_files.append(_printable(rel))
                continue
            if spec.match_file(rel) or kind_of(name) is None or (include is not None and not include.match_file(rel)):
                result.ignored += 1
                continue
            if not _is_utf8(name):
                result.skipped.append({"file": _printable(rel), "reason": "file name is not valid UTF-8"})
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
            try:
                target = path.resolve(strict=True)
            except FileNotFoundError:
                return None, "dangling symlink"
            except RuntimeError:  # how Python before 3.13 reports a loop
                return None, "symlink loop"
            if not target.is_relative_to(real_root):
                return None, "symlink points outside the root"
        info = path.stat()
    except OSError as exc:
        return None, "symlink loop" if exc.errno == errno.ELOOP else f"cannot stat: {exc.strerror}"
    if not stat.S_ISREG(info.st_mode):
        return None, "not a regular file"
    return FileEntry(root, rel, path, info.st_size, info.st_mtime_ns), None


def read_text(path: Path, max_bytes: int) -> str:
    """The file as text, or SkipFile with the reason it cannot be indexed.

    Opened without blocking and checked before reading: a file that became a FIFO
    since the walk cannot hang the run, and an oversized one is not read at all.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise SkipFile(f"unreadable: {exc.strerror}") from None
    with open(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkipFile("not a regular file")
        if info.st_size > max_bytes:
            raise SkipFile(_too_large(max_bytes))
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise SkipFile(f"unreadable: {exc.strerror}") from None
    return decode_text(data, max_bytes)


def decode_text(data: bytes, max_bytes: int) -> str:
    """Bytes of a text file as text, or SkipFile: too large, binary, not UTF-8, or empty."""
    if len(data) > max_bytes:
        raise SkipFile(_too_large(max_bytes))
    if b"\0" in data:
        raise SkipFile("binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise SkipFile("empty file")
    return text


def _too_large(max_bytes: int) -> str:
    return f"larger than the {max_bytes // 1024} KiB limit (max_file_bytes)"


def sync_folders(
    writer: IndexWriter,
    walks: list[WalkResult],
    source_id: str,
    max_bytes: int,
    file_prefix: str = "",
    full: bool = False,
    quiet: bool = False,
) -> dict:
    """Bring `source_id`'s documents in line with the walked folders; returns counts and skips.

    Files are keyed by `source_id:absolute path` and shown as `file_prefix + path in root`.
    With `full`, every file is read and indexed again, changed or not.
    """
    skipped: list[dict] = []
    keep_under: list[str] = []  # unreadable folders: keep what was indexed below them
    for walk in walks:
        for skip in walk.skipped:
            path = str(walk.root / skip["file"])
            log.warning("skipped %s: %s", path, skip["reason"])
            skipped.append({"file": path, "reason": skip["reason"]})
            if skip.get("folder"):
                keep_under.append(f"{source_id}:{path}{os.sep}")
    files = [entry for walk in walks for entry in walk.files]
    counts = {"added": 0, "updated": 0, "unchanged": 0, "deleted": 0}
    secret_files = [str(walk.root / rel) for walk in walks for rel in walk.secret_files]
    warn_secret_files(source_id, secret_files)

    known = writer.known_documents(source_id)
    seen = {f"{source_id}:{s['file']}" for s in skipped}
    seen.update(key for key in known if key.startswith(tuple(keep_under)))
    touched = []
    progress = Progress(len(files), source_id, quiet)
    for entry in files:
        progress.update()
        key = f"{source_id}:{entry.path}"
        seen.add(key)
        previous = known.get(key)
        if previous and not full and (previous.size, previous.mtime_ns) == (entry.size, entry.mtime_ns):
            counts["unchanged"] += 1
            continue
        try:
            text = read_text(entry.path, max_bytes)
        except SkipFile as exc:
            skipped.append(_skip(entry, str(exc), previous is not None))
            continue
        digest = content_hash(text.encode("utf-8"))
        if previous and not full and previous.content_hash == digest:
            touched.append((key, entry.size, entry.mtime_ns))
            counts["unchanged"] += 1
            continue
        document = SourceDocument(
            key=key,
            source_id=source_id,
            file=file_prefix + entry.rel,
            kind=kind_of(entry.rel),
            text=text,
            content_hash=digest,
            metadata={"root": str(entry.root), "path": str(entry.path)},
            fallback_date=dates.from_timestamp(entry.mtime_ns / 1e9),
            size=entry.size,
            mtime_ns=entry.mtime_ns,
        )
        try:
            for warning in writer.put(document):
                log.warning("%s: %s", entry.path, warning)
        except (ParseError, RecursionError) as exc:
            reason = str(exc) if isinstance(exc, ParseError) else "nested too deeply"
            skipped.append(_skip(entry, reason, previous is not None))
            continue
        counts["updated" if previous else "added"] += 1
    progress.close()
    writer.touch(touched)
    gone = sorted(set(known) - seen)
    for key in gone:
        writer.remove(key)
    counts["deleted"] = len(gone)
    return {
        "files_seen": len(files) + sum(len(walk.skipped) for walk in walks),
        **counts,
        "skipped": skipped,
        "ignored": sum(walk.ignored for walk in walks),
        "secret_files": len(secret_files),
    }


def _skip(entry: FileEntry, reason: str, kept_previous: bool) -> dict:
    if kept_previous:
        reason += "; the previously indexed version is kept"
    log.warning("skipped %s: %s", entry.path, reason)
    return {"file": str(entry.path), "reason": reason}


def _is_utf8(name: str) -> bool:
    """False for names whose bytes are not UTF-8 (Python hands them over with surrogate escapes)."""
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _printable(name: str) -> str:
    """A name that JSON, logs and the catalog can carry: undecodable bytes shown as \\xNN."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _rel(root: Path, name) -> str:
    try:
        return Path(name).relative_to(root).as_posix()
    except (TypeError, ValueError):
        return str(name)
