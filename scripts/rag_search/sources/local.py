"""Local doc sources: a folder on disk, listed like a personal root."""

from ..config import Settings
from ..errors import SourceFailed
from ..reconcile import Listing
from ..specs import LocalSource
from .files import folder_listing, walk_root


def local_listing(spec: LocalSource, settings: Settings) -> Listing:
    """The files under the source's folder that match its glob."""
    import pathspec

    if not spec.path.is_dir():
        raise SourceFailed(f"folder {spec.path} does not exist or is not a folder")
    include = pathspec.GitIgnoreSpec.from_lines([spec.glob])
    walk = walk_root(spec.path, list(settings.ignore_patterns), include)
    return folder_listing(walk, spec.id, settings.max_file_bytes, file_prefix=f"{spec.id}/")
