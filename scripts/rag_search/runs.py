"""An index run: open the next generation of a collection, change it, publish it, close it.

Every script that writes the index uses `index_run`, so the sequence (write
lock, work generation, model pipeline, commit, clean-up) lives in one place.
"""

import contextlib
from functools import cached_property

from . import generations
from .config import Settings
from .embedding import find_model
from .errors import DiskFull, is_disk_full
from .indexer import Pipeline
from .store import Store, disk_full


class IndexRun:
    """What a writer gets: the store of the next generation, and the model pipeline when it needs one."""

    def __init__(self, store: Store, settings: Settings):
        self.store = store
        self.settings = settings
        self.published = False

    @cached_property
    def pipeline(self) -> Pipeline:
        """Loaded on first use: removing a source needs no model."""
        return Pipeline(find_model(self.settings.model_dir), self.settings)


@contextlib.contextmanager
def index_run(settings: Settings, collection: str, fresh: bool = False):
    """Yield an IndexRun on the next generation of `collection` (empty when `fresh`); publish it if the block ends
    normally. A full disk anywhere becomes one DiskFull error saying how much to free, after the work is removed."""
    store = Store.open_for_writing(settings, collection, fresh)
    run = IndexRun(store, settings)
    try:
        yield run
        run.published = store.commit()
    except Exception as exc:
        if isinstance(exc, DiskFull) or not is_disk_full(exc):
            raise
        store.close()  # the work folder goes first, so the space it held is not counted as needed
        root = settings.data_dir / collection
        raise disk_full(root, generations.complete_generations(root)) from None
    finally:
        store.close()
