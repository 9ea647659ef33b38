"""Folders of files on disk: walking them safely and syncing them into a collection.

Shared by the personal index and `local` doc sources: a folder becomes a
listing (reconcile.py), keyed by path with size and mtime as the cheap identity.
A file that still exists but cannot be read or parsed this time is reported and
keeps whatever was indexed from it before.
"""

import codecs
import errno
import functools
import logging
import os
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..core import dates
from ..core.errors import ConfigError
from ..core.progress import ROUTINE
from ..index.indexer import SourceDocument, content_hash
from ..index.reconcile import Listed, Listing, Skip
from ..safety.secrets import is_secret_file, warn_secret_files
from ..text.includes import expand_page
from ..text.parsing import kind_of

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
    looked_at: list[str] = field(default_factory=list)  # every folder walked and every name in it: what a change would touch
    unselected: Counter = field(default_factory=Counter)  # suffixes of the files not of a kind or not selected


def suffix_of(path: str) -> str:
    """A file's type as a source that matched nothing reports what it saw: `.txt`, or `no suffix`."""
    return PurePosixPath(path).suffix.lower() or "no suffix"


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


def walk_root(root: Path, ignore_patterns: list[str], selects: Callable[[str], bool] | None = None) -> WalkResult:
    """Regular files under `root` that the ignore rules let through and that we can parse.

    `selects`, if given, says which of them to take by their path in the root (a source's Selection).
    Directory symlinks are never followed; file symlinks only when they resolve
    inside the root. Secret files (secrets.is_secret_file) are left out before any
    ignore rule is consulted, so no `!` pattern can bring them back.
    """
    spec, has_negation = ignore_spec(root, ignore_patterns)
    result = WalkResult(root)
    real_root = root.resolve()

    def on_error(exc: OSError) -> None:
        rel = _printable(relative_name(root, exc.filename))
        result.skipped.append({"file": rel, "reason": f"unreadable folder: {exc.strerror}", "folder": True})

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
        result.looked_at += [dirpath, *(os.path.join(dirpath, name) for name in filenames)]
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
            if spec.match_file(rel):
                result.ignored += 1
                continue
            if kind_of(name) is None or (selects is not None and not selects(rel)):
                result.ignored += 1
                result.unselected[suffix_of(name)] += 1
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


def read_text(path: Path, max_bytes: int) -> tuple[str, str | None]:
    """The file as text and the encoding it was read in (None: UTF-8), or SkipFile with the reason it cannot be indexed.

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


def decode_text(data: bytes, max_bytes: int) -> tuple[str, str | None]:
    """Bytes of a text file as text and the encoding they were read in (None: UTF-8), or SkipFile: too large, binary,
    or in no encoding we can tell. An empty file is read: it is an empty document (reconcile.py)."""
    if len(data) > max_bytes:
        raise SkipFile(_too_large(max_bytes))
    try:
        text, encoding = data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        text, encoding = _other_encoding(data, exc.start)
    if "\0" in text:
        raise SkipFile("binary file (contains NUL bytes)")
    return text, encoding


def _other_encoding(data: bytes, bad_byte: int) -> tuple[str, str]:
    """Text that is not UTF-8: UTF-16 by its BOM (Windows PowerShell writes it), else cp1252 if it reads as text (Western
    notes not in UTF-8 nearly all are, latin-1 text is cp1252 text, and on a few accented words charset-normalizer cannot
    tell it from cp1250 or mac_iceland), else charset-normalizer's guess if it finds plausible text; SkipFile otherwise."""
    import charset_normalizer

    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            raise SkipFile("not valid UTF-16") from None
    if b"\0" in data:
        raise SkipFile("binary file (contains NUL bytes)")
    guess = (charset_normalizer.from_bytes(data, cp_isolation=["cp1252"], enable_fallback=False).best()
             or charset_normalizer.from_bytes(data, enable_fallback=False).best())
    if guess is None:
        raise SkipFile(f"not valid UTF-8 (byte {bad_byte}), nor text in another encoding")
    return str(guess), guess.encoding


def _too_large(max_bytes: int) -> str:
    return f"larger than the {max_bytes // 1024} KiB limit (max_file_bytes)"


def folder_listing(walk: WalkResult, source_id: str, max_bytes: int, file_prefix: str = "", quiet: bool = False) -> Listing:
    """The walked files as a listing: keyed by `source_id:absolute path`, shown as `file_prefix + path in root`.

    A folder that could not be read makes the listing incomplete, so nothing is
    removed on its account; files that were found but cannot be indexed stay listed.
    What was skipped is logged unless `quiet` (a search's freshness step plans with it).
    """
    unreadable = [skip["file"] for skip in walk.skipped if skip.get("folder")]
    skipped = [{"file": str(walk.root / skip["file"]), "reason": skip["reason"], "key": f"{source_id}:{walk.root / skip['file']}"}
               for skip in walk.skipped]
    if not quiet:
        warn_secret_files(source_id, [str(walk.root / rel) for rel in walk.secret_files])
        for skip in skipped:
            log.warning("skipped %s: %s", skip["file"], skip["reason"], extra=ROUTINE)
    documents = [
        Listed(f"{source_id}:{entry.path}", str(entry.path), f"{entry.size}:{entry.mtime_ns}",
               functools.partial(_load_file, entry, source_id, max_bytes, file_prefix))
        for entry in walk.files
    ]
    problem = f"folder(s) could not be read: {', '.join(unreadable[:3])}" if unreadable else None
    real_root = walk.root.resolve()
    return Listing(documents, complete=not unreadable, problem=problem, skipped=skipped,
                   details={"ignored": walk.ignored, "secret_files": len(walk.secret_files)},
                   dependency=lambda rel: file_identity(real_root / rel))


def file_identity(path: Path) -> str | None:
    """A file's cheap identity, size and mtime (what listings compare); None if it is gone."""
    try:
        info = path.stat()
    except OSError:
        return None
    return f"{info.st_size}:{info.st_mtime_ns}"


def listed_kind(path: str) -> str:
    """The kind of a listed file: listings hold only files of a kind that is indexed (parsing.kind_of)."""
    kind = kind_of(path)
    if kind is None:
        raise Skip("not a kind of file that is indexed")
    return kind


def _load_file(entry: FileEntry, source_id: str, max_bytes: int, file_prefix: str, previous) -> SourceDocument:
    try:
        text, encoding = read_text(entry.path, max_bytes)
    except SkipFile as exc:
        raise Skip(str(exc)) from None
    kind = listed_kind(entry.rel)
    text, warnings, included = expand_page(kind, text, entry.path, entry.root, max_bytes)
    real_root = entry.root.resolve()
    return SourceDocument(
        key=f"{source_id}:{entry.path}",
        source_id=source_id,
        file=file_prefix + entry.rel,
        kind=kind,
        text=text,
        content_hash=content_hash(text.encode("utf-8")),
        identity=f"{entry.size}:{entry.mtime_ns}",
        metadata={"root": str(entry.root), "path": str(entry.path), **({"encoding": encoding} if encoding else {})},
        fallback_date=dates.from_timestamp(entry.mtime_ns / 1e9),
        warnings=warnings,
        depends=[path.relative_to(real_root).as_posix() for path in included],
    )


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


def relative_name(root: Path, name) -> str:
    """`name` as a POSIX path relative to `root`, or as it is when it is not under it."""
    try:
        return Path(name).relative_to(root).as_posix()
    except (TypeError, ValueError):
        return str(name)
