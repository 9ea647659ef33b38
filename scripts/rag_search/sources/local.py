"""Local doc sources: a folder on disk, indexed like the personal roots."""

from ..config import Config, expand
from ..errors import SourceFailed
from ..indexer import IndexWriter
from ..registry import DEFAULT_GLOB
from .files import sync_folders, walk_root


def sync_local(writer: IndexWriter, source: dict, config: Config, full: bool = False, quiet: bool = False) -> dict:
    """Index the files under the source's `path` that match its `glob` (default **/*.md)."""
    import pathspec

    root = expand(source["path"])
    if not root.is_dir():
        raise SourceFailed(f"folder {root} does not exist or is not a folder")
    include = pathspec.GitIgnoreSpec.from_lines([source.get("glob", DEFAULT_GLOB)])
    walk = walk_root(root, config.ignore_patterns, include)
    return sync_folders(
        writer, [walk], source["id"], config.max_file_bytes, file_prefix=f"{source['id']}/", full=full, quiet=quiet
    )
