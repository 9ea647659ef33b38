"""Local doc sources: a folder on disk, listed like a personal root."""

from ..config import Settings
from ..errors import SourceFailed
from ..reconcile import Listing
from ..specs import LocalSource, glob_spec
from .files import folder_listing, walk_root


def local_listing(spec: LocalSource, settings: Settings) -> Listing:
    """The files under the source's folder that match its glob."""
    if not spec.path.is_dir():
        raise SourceFailed(f"folder {spec.path} does not exist or is not a folder")
    walk = walk_root(spec.path, list(settings.ignore_patterns), glob_spec(spec.glob))
    return folder_listing(walk, spec.id, settings.max_file_bytes, file_prefix=f"{spec.id}/")
