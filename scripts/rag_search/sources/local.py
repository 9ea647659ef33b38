"""Local doc sources: a folder on disk, listed like a personal root."""

from ..core.config import Settings
from ..core.errors import SourceFailed
from ..index.reconcile import Listing
from .files import folder_listing, walk_root
from .specs import LocalSource, glob_spec


def local_listing(spec: LocalSource, settings: Settings) -> Listing:
    """The files under the source's folder that match its glob."""
    if not spec.path.is_dir():
        raise SourceFailed(f"folder {spec.path} does not exist or is not a folder")
    walk = walk_root(spec.path, list(settings.ignore_patterns), glob_spec(spec.glob))
    return folder_listing(walk, spec.id, settings.max_file_bytes, file_prefix=f"{spec.id}/")
