"""Local doc sources: a folder on disk, listed like a personal root."""

import dataclasses
import functools
from pathlib import Path

from ..core.config import Settings
from ..core.errors import SourceFailed
from ..index.reconcile import Listing
from .files import folder_listing, walk_root
from .specs import LocalSource


def local_listing(spec: LocalSource, settings: Settings) -> Listing:
    """The files under the source's folder that its selection takes."""
    if not spec.path.is_dir():
        raise SourceFailed(f"folder {spec.path} does not exist or is not a folder")
    walk = walk_root(spec.path, list(settings.ignore_patterns), spec.selection.selects)
    listing = folder_listing(walk, spec.id, settings.max_file_bytes, file_prefix=f"{spec.id}/")
    seen = {"seen": walk.unselected} if not listing.documents and not listing.skipped else {}
    return dataclasses.replace(listing, details={**listing.details, **seen}, deselected=functools.partial(_deselected, spec))


def _deselected(spec: LocalSource, key: str) -> bool:
    """Whether the source's folder and selection leave out the indexed document `key` ("<id>:<absolute path>")."""
    path = Path(key.split(":", 1)[1])
    return not path.is_relative_to(spec.path) or not spec.selection.selects(path.relative_to(spec.path).as_posix())
