"""An index run: open the next generation of a collection, change it, publish it, close it.

Every script that writes the index uses `index_run`, so the sequence (write
lock, work generation, model pipeline, commit, clean-up) lives in one place, and
so does the one rule about upgrades: a published index built with another
fingerprint (model, graph, chunking, schema) is rebuilt only by a run that
covers everything it holds. Any other run changes nothing and says which run
rebuilds it; until then searches answer from the published index.
"""

import contextlib
import logging
from collections.abc import Callable
from functools import cached_property

from ..core.config import Settings
from ..core.datadir import DataDir
from ..core.errors import DiskFull, FingerprintMismatch, SourceFailed, is_disk_full
from ..model.embedding import find_model
from ..store import generations
from ..store.generations import INDEX_COMMANDS
from ..store.records import IndexedFiles
from ..store.store import Store, fingerprint
from ..store.store_writer import StoreWriter, disk_full
from .indexer import Pipeline

log = logging.getLogger("rag_search")


class IndexRun:
    """What a writer gets: the store of the next generation, and the model pipeline when it needs one."""

    def __init__(self, store: StoreWriter, settings: Settings):
        self.store = store
        self.settings = settings
        self.published = False

    def check_whole(self, lost: list[str], allowed: bool, hint: str) -> None:
        """The no-shrink rule, for both indexes: a rebuild replaces the whole published index, so it is not published
        while it would lose `lost` (roots or sources missing, not given, failed or empty), unless `allowed` (--allow-shrink).
        A run that is not a rebuild keeps whatever it does not reach."""
        if self.store.replacing and lost and not allowed:
            raise SourceFailed(f"a rebuild of the {self.store.name} index would lose the chunks of {', '.join(lost[:3])} "
                               "(missing, not given, failed or empty), so it was not published and nothing was lost", hint=hint)

    @cached_property
    def pipeline(self) -> Pipeline:
        """Loaded on first use: removing a source needs no model."""
        return Pipeline(find_model(self.settings.model_dir), self.settings)


@contextlib.contextmanager
def index_run(settings: Settings, collection: str, fresh: bool = False,
              left_out: Callable[[IndexedFiles], list[str]] | None = None, embeds: bool = True):
    """Yield an IndexRun on the next generation of `collection` (empty when `fresh`); publish it if the block ends
    normally. A full disk anywhere becomes one DiskFull error saying how much to free, after the work is removed.

    `left_out(indexed)` names what of the published index this run does not cover (None: the run covers only part of
    it); a run that covers everything rebuilds an index of another fingerprint. A run that only removes (`embeds` False)
    works on any index."""
    expected = fingerprint(find_model(settings.model_dir), settings.embedding) if embeds else None
    try:
        store = StoreWriter.open(settings, collection, expected, fresh)
    except FingerprintMismatch as exc:
        store = _rebuild(settings, collection, expected, exc, left_out)
    run = IndexRun(store, settings)
    try:
        yield run
        run.published = store.commit()
        if embeds:
            DataDir(settings.data_dir).remember_graph(settings.embedding)
    except Exception as exc:
        if isinstance(exc, DiskFull) or not is_disk_full(exc):
            raise
        store.close()  # the work folder goes first, so the space it held is not counted as needed
        root = settings.data_dir / collection
        raise disk_full(root, generations.complete_generations(root)) from None
    finally:
        store.close()


def _rebuild(settings: Settings, collection: str, expected: dict | None, mismatch: FingerprintMismatch,
             left_out: Callable[[IndexedFiles], list[str]] | None) -> StoreWriter:
    """The store of a rebuild, if this run covers everything the published index holds; else FingerprintMismatch."""
    indexed = Store.indexed_files(settings, collection, None)
    missing = ["part of it"] if left_out is None or indexed is None else left_out(indexed)
    if missing:
        raise FingerprintMismatch(f"{mismatch.message}; this run covers only part of it ({', '.join(missing[:3])} not), so it "
                                  "cannot rebuild it and nothing was changed; searches answer from it until it is rebuilt",
                                  hint=f"rebuild it whole: {INDEX_COMMANDS[collection]} (with every root or source it "
                                       "holds available)") from None
    log.warning("%s: rebuilding it whole (the published index serves until the rebuild is published)", mismatch.message)
    return StoreWriter.open(settings, collection, expected, fresh=True)
