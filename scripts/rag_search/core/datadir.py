"""The data dir: every path rag-search writes under it, and the check that the folder is ours.

Index runs delete things in the data dir (old generations, work folders, the
clones of sources no longer registered), so a data dir pointed at the wrong
folder by a setting would cost the user files. The first run that writes marks
the folder (MARKER); from then on it is ours. A folder without the marker is
ours only if it is empty, or if it holds an index whose catalog records our
fingerprint (content only rag-search writes: a data dir made before the marker,
2026-11-26), which is then marked, with a warning, and nothing in it removed.
Any other is refused with an error naming it, and nothing in it is changed:
names prove nothing (another tool keeps an index/chroma.sqlite3 too). Inside, a source's
folder is ours only if it carries SOURCE_MARKER. Nobody else may own or write
the data dir (config.check_private), and no file in it is opened through a link
(private_files.py).
"""

import contextlib
import json
import logging
import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path
from urllib.parse import quote

from . import dates
from .atomic import write_atomically
from .config import DATA_DIR_MARKER, is_ours
from .errors import ConfigError, DiskFull, SourceFailed, StoreError, is_disk_full

log = logging.getLogger("rag_search")

MARKER = DATA_DIR_MARKER
SOURCE_MARKER = ".rag-search-source"
COLLECTIONS = ("personal", "docs")


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
        """The data dir, made (0700) and marked if new or empty; refused if it holds anything without our marker.
        `graph`: the embedding graph of the run, which a new marker records (config.py reads it for "auto")."""
        data_dir = cls(path)
        if not is_ours(path):
            data_dir._claim(graph)
        make_private_dir(path)
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
        """Make and mark a new or empty folder, or one holding an index we built before the marker; refuse any other
        before writing anything in it (unless a run beside us marked it meanwhile)."""
        entries = _names_in(self.path)
        if entries and _holds_our_index(self.path):
            log.warning("%s holds an index an earlier rag-search version built (before the %s marker): marked as a "
                        "rag-search data folder; nothing in it was removed", self.path, MARKER)
        elif entries and not is_ours(self.path):
            raise ConfigError(f"{self.path} is not empty and is not a rag-search data folder (no {MARKER} marker, and no "
                              f"index of ours; it holds {', '.join(entries)[:200]}); nothing in it was changed",
                              hint="choose an empty or new folder with --data-dir or RAG_SEARCH_HOME")
        if not is_ours(self.path):
            make_private_dir(self.path)
            marker = {"made_by": "rag-search", "since": dates.now_iso(), "embedding": graph}
            write_atomically(self.path / MARKER, json.dumps(marker) + "\n", mode=0o600)

    def collection(self, name: str) -> Path:
        return self.path / name

    def source_folder(self, source_id: str) -> Path:
        """Where a doc source keeps its working files (a git clone, fetched pages), marked as ours; ids are slugs, so
        this stays inside the data dir. Anything else of that name fails the source, untouched."""
        folder = self.path / "sources" / source_id
        if _source_made_by_us(folder):
            return folder
        folder.parent.mkdir(mode=0o700, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            if not _empty_folder(folder):  # an empty one: left by a run killed before it wrote the marker
                raise SourceFailed(f"{folder} was not made by rag-search (it has no {SOURCE_MARKER}); nothing in it was "
                                   "changed", hint=f"move it away, or register the source under another id than {source_id!r}") from None
        write_atomically(folder / SOURCE_MARKER, source_id + "\n", mode=0o600)
        return folder

    def source_folders(self) -> list[str]:
        """Ids of the source folders we made."""
        sources = self.path / "sources"
        return sorted(folder.name for folder in sources.iterdir() if _source_made_by_us(folder)) if sources.is_dir() else []

    def remove_source_folder(self, source_id: str) -> bool:
        """Delete a source's folder if we made it; False if there is none of ours."""
        folder = self.path / "sources" / source_id
        if not _source_made_by_us(folder):
            return False
        shutil.rmtree(folder, ignore_errors=True)
        return True


def _holds_our_index(folder: Path) -> bool:
    """Whether a collection of `folder` has a generation whose catalog records the fingerprint of our index (the
    "@fingerprint" state, local_vectors.FINGERPRINT_STATE): what only rag-search writes. Read only, never written."""
    for catalog in sorted(path for name in COLLECTIONS for path in (folder / name / "generations").glob("g*/catalog.sqlite")):
        with contextlib.suppress(sqlite3.Error, ValueError, TypeError):
            with contextlib.closing(sqlite3.connect(sqlite_uri(catalog, mode="ro", immutable="1"), uri=True)) as db:
                row = db.execute("SELECT state FROM sources WHERE source_id = '@fingerprint'").fetchone()
            if row and {"model_id", "chunking", "schema"} <= set(json.loads(row[0])):
                return True
    return False


def _names_in(folder: Path) -> list[str]:
    """What the folder holds; nothing for a folder that is not there yet, or a file (the caller's next step fails on it)."""
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StoreError(f"cannot read the folder {folder}: {exc.strerror or exc}", hint="check its permissions") from None


def _empty_folder(path: Path) -> bool:
    return stat.S_ISDIR(path.lstat().st_mode) and not _names_in(path)


def _source_made_by_us(folder: Path) -> bool:
    try:
        return stat.S_ISDIR(folder.lstat().st_mode) and stat.S_ISREG((folder / SOURCE_MARKER).lstat().st_mode)
    except OSError:
        return False


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
