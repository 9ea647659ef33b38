"""The optional cross-encoder stage (--rerank): a closer reading of the top candidates.

A cross-encoder reads query and chunk together, which ranks better than either
retriever but costs a model call per candidate, so it only reorders the top of
the fused list. It is used only when a cross-encoder folder is configured
(RAG_SEARCH_RERANK_MODEL, else "rerank_model" in the config file); nothing is
ever downloaded.
"""

from pathlib import Path

from ..core.config import Settings
from ..core.telemetry import keep_libraries_local


def find_rerank_model(settings: Settings) -> tuple[Path | None, str]:
    """(model folder, "") if one is configured and present, else (None, why not)."""
    path = settings.rerank_model
    if path is None:
        return None, "no cross-encoder is configured (set RAG_SEARCH_RERANK_MODEL or rerank_model in the config file)"
    if not (path / "config.json").is_file():
        return None, f"the configured cross-encoder {path} is not a model folder (no config.json)"
    return path, ""


class CrossEncoderReranker:
    def __init__(self, path: Path):
        keep_libraries_local()
        from sentence_transformers import CrossEncoder

        self._model = CrossEncoder(str(path), device="cpu", local_files_only=True)

    def rerank(self, query: str, hits: list) -> list:
        """The hits reordered by the cross-encoder's score (kept in each hit's evidence)."""
        if not hits:
            return hits
        scores = self._model.predict([(query, hit.text) for hit in hits], show_progress_bar=False)
        for hit, score in zip(hits, scores, strict=True):
            hit.evidence.rerank = round(float(score), 4)
        return sorted(hits, key=lambda hit: hit.evidence.rerank or 0.0, reverse=True)
