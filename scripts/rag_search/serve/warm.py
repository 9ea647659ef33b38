"""The warm core that the MCP server and the resident searcher share: one object, two transports.

It keeps what a cold search.py pays for on every call (the model, the open
collections) and the last look at the personal roots, and answers as search.py
does: personal files changed since the index are brought in first (a few), or
reported as stale. It follows index runs (retrieval.Searcher.refresh) and lets
go of a generation a run replaced, so garbage collection can delete it.

Not thread-safe: each owner calls it from one thread (SQLite connections stay
with the thread that opened them).
"""

import time

from ..core.config import Settings
from ..search.rerank import CrossEncoderReranker, find_rerank_model
from ..search.retrieval import Searcher, SearchOptions, SearchResult
from .freshness import bring_in, find_changes, stale_note, stale_report, stamps


class WarmIndex:
    """The model and the open index kept between calls, with the freshness check search.py makes before each search."""

    def __init__(self, settings: Settings, freshness_pause: float = 0.0):
        """`freshness_pause`: seconds between two walks of the personal roots (a burst of calls pays for one walk)."""
        self.settings = settings
        self.freshness_pause = freshness_pause
        self._searcher: Searcher | None = None
        self._reranker: CrossEncoderReranker | None = None  # the cross-encoder, loaded on the first search that asks for it
        self._looked_at = float("-inf")  # when the personal roots were last compared with the index
        self._stale: dict | None = None  # what that look found and could not bring in
        self.stale_note: str | None = None  # and its one-line note for stderr
        self._watched: list[str] | None = None  # what that look depended on (freshness.Changes.watched)
        self._stamps: list | None = None  # their stamps from before that look, when it saw the same paths

    def searcher(self) -> Searcher:
        if self._searcher is None:
            self._searcher = Searcher(self.settings)
        return self._searcher

    @property
    def notes(self) -> list[str]:
        """What the last look at the index found (an index not built yet, one to rebuild)."""
        return self._searcher.notes if self._searcher is not None else []

    def warm_up(self) -> None:
        """Load the model, open the index and run the model once."""
        searcher = self.searcher()
        searcher.embedder.embed(["warm up"])
        searcher.refresh()

    def search(self, query: str, options: SearchOptions, index: str = "all", rerank: bool = False,
               refresh: bool = True) -> tuple[SearchResult, dict | None]:
        """The result, and the staleness to report (None when the personal index is up to date or not searched)."""
        stale = self.freshen() if refresh and index != "docs" else None
        return self.searcher().search(query, options, index, self.reranker()[0] if rerank else None), stale

    def reranker(self) -> tuple[CrossEncoderReranker | None, str | None]:
        """The configured cross-encoder, kept loaded; or None and why there is none (the fused order then stays)."""
        if self._reranker is None:
            model, why_not = find_rerank_model(self.settings)
            if model is None:
                return None, why_not
            self._reranker = CrossEncoderReranker(model)
        return self._reranker, None

    def freshen(self) -> dict | None:
        """Bring in personal files changed since the index (a few), else the staleness to report.

        The walk is skipped while nothing it depends on has changed: their stamps are taken before a walk, so a change
        during that walk shows at the next look (and when a walk finds other paths than the last, or could not bring in the
        few changes it found, the next one walks).
        """
        if time.monotonic() - self._looked_at < self.freshness_pause:
            return self._stale
        before = stamps(self._watched) if self._watched else None
        if self._stamps is not None and before == self._stamps:
            self._looked_at = time.monotonic()
            return self._stale
        changes = find_changes(self.settings)
        watched = changes.watched if changes is not None else None
        self._stamps = before if watched is not None and watched == self._watched else None
        self._watched = watched
        self._looked_at = time.monotonic()
        self._stale = self.stale_note = None
        if changes is None or not changes.count or (changes.small and bring_in(self.settings, changes)):
            return None
        if changes.small:  # not brought in (the write lock busy, the disk full): not kept, the next call tries again
            self._looked_at, self._stamps = float("-inf"), None
        self.stale_note = stale_note(changes)
        self._stale = stale_report(changes)
        return self._stale

    def let_go_of_replaced(self) -> None:
        """Close the collections an index run has replaced since they were opened (the next search reopens them)."""
        if self._searcher is not None:
            self._searcher.close_stale()

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
