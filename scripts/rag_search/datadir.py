"""The data dir: every path rag-search writes under it, and the check that the folder is ours.

Index runs delete things in the data dir (old generations, work folders, the
clones of sources no longer registered), so a data dir pointed at the wrong
folder by a setting would cost the user files. The first run that writes marks
the folder (MARKER); from then on it is ours. A non-empty folder without the
marker is refused with an error naming it, unless everything in it is what an
earlier version of rag-search made there (then it is adopted: marked, and the
single-generation layout of early versions removed). Inside, a source's folder
is deleted only if we made it (SOURCE_MARKER, or the layout of earlier versions).
"""

import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote

from . import dates
from .atomic import write_atomically
from .config import DATA_DIR_MARKER
from .errors import ConfigError, DiskFull, StoreError, is_disk_full

log = logging.getLogger("rag_search")

MARKER = DATA_DIR_MARKER
SOURCE_MARKER = ".rag-search-source"
COLLECTIONS = ("personal", "docs")
# What rag-search puts at the top of a data dir, this version or an earlier one.
OUR_NAMES = {*COLLECTIONS, "sources", "model", "server", "owner", ".notes-said", "resident", MARKER, "generations", "index", "CURRENT",
             "write.lock"}
LEGACY_NAMES = ("generations", "index", "CURRENT", "write.lock")  # the single-generation layout of early versions
RESIDENT_FILES = {"lock", "log", "log.1", "socket"}  # the resident searcher's, in <data dir>/resident
_GENERATION = re.compile(r"^\.?g\d{6,}")
_EARLIER_SOURCE_FOLDER = {"repo", "pages"}  # what earlier versions kept in a source's folder


def sqlite_uri(path: Path, **parameters: str) -> str:
    """A SQLite URI for `path` that names exactly that file: `#`, `?` and `%` in a path would otherwise end or change it."""
    query = "&".join(f"{key}={value}" for key, value in parameters.items())
    return f"file:{quote(os.path.abspath(path))}" + (f"?{query}" if query else "")


class DataDir:
    """A data dir checked to be ours, and the paths in it."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def for_writing(cls, path: Path, graph: str) -> "DataDir":
        """The data dir, made (0700) and marked if new, adopted if an earlier version made it; refused otherwise.
        `graph`: the embedding graph of the run, which a new marker records (config.py reads it for "auto")."""
        data_dir = cls(path)
        make_private_dir(path)
        if not (path / MARKER).is_file():
            data_dir._claim(graph)
        return data_dir

    def remember_graph(self, graph: str) -> None:
        """Record in the marker the graph an index run published with, so "auto" keeps using it (a switch of graph
        that rebuilt the index sticks); the marker is rewritten only when it says otherwise."""
        try:
            marker = json.loads((self.path / MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # not ours to mend here: the next run's check reports it
        if isinstance(marker, dict) and marker.get("embedding") != graph:
            write_atomically(self.path / MARKER, json.dumps({**marker, "embedding": graph}) + "\n", mode=0o600)

    def _claim(self, graph: str) -> None:
        entries = sorted(entry.name for entry in self.path.iterdir())
        if entries and not self._made_by_us(entries):
            strangers = ", ".join(name for name in entries if name not in OUR_NAMES)[:200] or ", ".join(entries)[:200]
            raise ConfigError(f"{self.path} is not empty and is not a rag-search data folder (it holds {strangers}); "
                              "nothing in it was changed",
                              hint="choose an empty or new folder with --data-dir or RAG_SEARCH_HOME")
        self._remove_legacy_layout()
        marker = {"made_by": "rag-search", "since": dates.now_iso(), "embedding": graph}
        write_atomically(self.path / MARKER, json.dumps(marker) + "\n", mode=0o600)

    def _made_by_us(self, entries: list[str]) -> bool:
        """Whether every entry is one that rag-search makes, with what it puts inside."""
        return all(name in OUR_NAMES and _LOOKS_OURS.get(name, Path.is_file)(self.path / name) for name in entries)

    def _remove_legacy_layout(self) -> None:
        """Delete the single-generation layout of early versions: its schema cannot be read any more, so it only takes
        space. Only called on a folder checked to be ours."""
        legacy = [self.path / name for name in LEGACY_NAMES if (self.path / name).exists()]
        for path in legacy:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        if any(path.is_dir() for path in legacy) or (self.path / "CURRENT") in legacy:
            log.warning("removed the index of an earlier rag-search version in %s; run both index scripts to rebuild it", self.path)

    def collection(self, name: str) -> Path:
        return self.path / name

    def source_folder(self, source_id: str) -> Path:
        """Where a doc source keeps its working files (a git clone, fetched pages), marked as ours; ids are slugs, so
        this stays inside the data dir."""
        folder = self.path / "sources" / source_id
        if not (folder / SOURCE_MARKER).is_file():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomically(folder / SOURCE_MARKER, source_id + "\n", mode=0o600)
        return folder

    def source_folders(self) -> list[str]:
        """Ids of the source folders we made."""
        sources = self.path / "sources"
        return sorted(folder.name for folder in sources.iterdir() if self._source_made_by_us(folder)) if sources.is_dir() else []

    def remove_source_folder(self, source_id: str) -> bool:
        """Delete a source's folder if we made it; False if there is none of ours."""
        folder = self.path / "sources" / source_id
        if not self._source_made_by_us(folder):
            return False
        shutil.rmtree(folder, ignore_errors=True)
        return True

    @staticmethod
    def _source_made_by_us(folder: Path) -> bool:
        return _source_made_by_us(folder)


def _source_made_by_us(folder: Path) -> bool:
    if not folder.is_dir() or folder.is_symlink():
        return False
    names = {entry.name for entry in folder.iterdir()}
    return SOURCE_MARKER in names or (bool(names) and names <= _EARLIER_SOURCE_FOLDER)


def _children(folder: Path) -> list[Path]:
    return list(folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []


def _collection_made_by_us(folder: Path) -> bool:
    """A collection folder: its generations, CURRENT, locks, the runs' records and server journal."""
    if not folder.is_dir():
        return False
    for child in folder.iterdir():
        if child.name == "generations":
            if not all(_GENERATION.match(entry.name) or entry.name.endswith(".lock") for entry in _children(child)):
                return False
        elif not _COLLECTION_FILE.match(child.name):
            return False
    return True


_COLLECTION_FILE = re.compile(r"^(CURRENT|write\.lock|\.?roots\.json(\.lock)?|server-journal\.jsonl|unpublished-vectors-.*\.sqlite)$")
# How to tell that an entry at the top of a folder is what rag-search made there (files: any file of that name).
_LOOKS_OURS = {
    "personal": _collection_made_by_us,
    "docs": _collection_made_by_us,
    "sources": lambda folder: folder.is_dir() and all(_source_made_by_us(child) for child in _children(folder)),
    "model": lambda folder: folder.is_dir() and all(child.is_dir() for child in _children(folder)),
    "server": lambda folder: folder.is_dir() and all(child.is_dir() for child in _children(folder)),
    "generations": lambda folder: folder.is_dir() and all(_GENERATION.match(child.name) or child.name.endswith(".lock")
                                                          for child in _children(folder)),
    "resident": lambda folder: folder.is_dir() and all(child.name in RESIDENT_FILES for child in _children(folder)),
    "index": lambda folder: (folder / "chroma.sqlite3").is_file(),  # the ChromaDB folder of the earliest versions
    "CURRENT": lambda path: path.is_file() and path.stat().st_size < 64 and bool(_GENERATION.match(_read(path).strip())),
}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def same_file(path: Path, known: os.stat_result) -> bool:
    """Whether `path` still names the file (or folder) `known` describes: the same device and inode."""
    try:
        now = path.lstat()
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (known.st_dev, known.st_ino)


def make_private_dir(path: Path) -> None:
    """Create `path` (and parents) readable by the owner only; fail clearly if impossible."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe-").close()
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFull(f"the disk is full: free some space in {path}", hint="free disk space and rerun") from None
        raise StoreError(f"cannot write to the data folder {path}: {exc.strerror or exc}",
                         hint="choose a writable folder with --data-dir or RAG_SEARCH_HOME") from None
