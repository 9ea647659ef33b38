"""Where a web source keeps the markdown of each page it indexed, so the whole page can be read back (get.py).

A page has no file on disk to open, unlike a note or a git file: the index run
writes the markdown it indexed to <data dir>/sources/<id>/pages/<hash of the URL>.md.
The folder goes with the source (add_doc_source.py --remove, index_docs.py --all).
"""

import contextlib
import hashlib
from pathlib import Path

from .. import secrets
from ..atomic import write_atomically


def page_file(data_dir: Path, source_id: str, url: str) -> Path:
    name = hashlib.blake2b(url.encode("utf-8"), digest_size=16).hexdigest()
    return data_dir / "sources" / source_id / "pages" / f"{name}.md"


def save_page(path: Path, markdown: str) -> None:
    """Kept as the indexer sees it, secrets redacted: no credential a page shows lands in the data dir."""
    markdown, _ = secrets.redact_document("markdown", markdown, documentation=True)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomically(path, markdown, mode=0o600)


def remove_page(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
