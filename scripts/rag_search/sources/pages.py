"""Where a web source keeps the markdown of each page it indexed, so the whole page can be read back (get.py).

A page has no file on disk to open, unlike a note or a git file: the index run
writes the markdown it indexed, secrets redacted as the index has them, to
<data dir>/sources/<id>/pages/<hash of the URL>-<hash of the page>.md. Naming
the version keeps get.py from showing a page that an unpublished run fetched
since; it then joins the indexed chunks instead. The folder goes with the source
(add_doc_source.py --remove, index_docs.py --all).
"""

import contextlib
import hashlib
from pathlib import Path

from ..core.atomic import write_atomically
from ..core.datadir import DataDir


def page_file(data_dir: Path, source_id: str, url: str, content_hash: str) -> Path:
    """The saved markdown of the version of the page at `url` whose (unredacted) text hashes to `content_hash`."""
    return _folder(data_dir, source_id) / f"{_url_name(url)}-{content_hash[:16]}.md"


def save_page(data_dir: Path, source_id: str, url: str, content_hash: str, markdown: str) -> None:
    """Keep the page as indexed, in place of any earlier version. The indexer calls it with the text it indexes
    (SourceDocument.keep_indexed), secrets redacted: no credential a page shows lands in the data dir."""
    path = DataDir(data_dir).source_folder(source_id) / "pages" / page_file(data_dir, source_id, url, content_hash).name
    path.parent.mkdir(mode=0o700, exist_ok=True)
    write_atomically(path, markdown, mode=0o600)
    remove_page(data_dir, source_id, url, keep=path)


def remove_page(data_dir: Path, source_id: str, url: str, keep: Path | None = None) -> None:
    """Delete the saved versions of the page at `url` (but `keep`)."""
    for path in _folder(data_dir, source_id).glob(f"{_url_name(url)}-*.md"):
        if path != keep:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _folder(data_dir: Path, source_id: str) -> Path:
    return data_dir / "sources" / source_id / "pages"


def _url_name(url: str) -> str:
    return hashlib.blake2b(url.encode("utf-8"), digest_size=16).hexdigest()
