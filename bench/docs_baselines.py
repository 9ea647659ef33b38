"""The two reference systems for the docs-faq benchmark, run in-process on one corpus folder.

- `bm25s_files`: BM25 (the bm25s package, its English stopwords, PyStemmer's Snowball English stemmer)
  over whole files, as docs-faq's baselines/bm25s_baseline.py does with unit `files`.
- `naive_chroma`: the naive design: fixed 380-word chunks with 50 words of overlap, embedded with
  all-MiniLM-L6-v2, stored in a ChromaDB PersistentClient in a temporary folder (cosine space), the
  nearest chunks deduplicated to files. `embed` is any callable giving normalised vectors; `onnx_embed()`
  gives the product's ONNX export of the model (same vectors as sentence-transformers, much faster to load).

Both read every .md and .mdx file under the corpus folder (as docs-faq's baseline does) and answer each question with up to `top_k` files,
as paths relative to the corpus folder (the form of `relevant` in docs-faq's questions.jsonl).
Questions are dicts with "id" and "question"; pass the questions of that corpus only.
"""

import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

CHUNK_WORDS, CHUNK_OVERLAP = 380, 50
SUFFIXES = {".md", ".mdx"}  # what docs-faq's baselines/bm25s_baseline.py reads
TOP_K = 10
CANDIDATES_PER_FILE = 5  # ask for top_k * this many units before deduplicating to files
ADD_BATCH = 1000

Embed = Callable[[list[str]], np.ndarray]


def corpus_files(corpus_dir: Path) -> list[Path]:
    """The markdown files of a docs-faq corpus folder (.md and .mdx), sorted."""
    return sorted(path for path in Path(corpus_dir).rglob("*") if path.suffix in SUFFIXES and path.is_file())


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def word_chunks(text: str, words: int = CHUNK_WORDS, overlap: int = CHUNK_OVERLAP) -> Iterator[str]:
    """Fixed windows of `words` whitespace-separated words, each starting `words - overlap` after the last."""
    tokens = text.split()
    step = words - overlap
    for start in range(0, max(len(tokens), 1), step):
        piece = tokens[start : start + words]
        if piece:
            yield " ".join(piece)
        if start + words >= len(tokens):
            break


def _dedupe(files: list[str], top_k: int) -> list[str]:
    return list(dict.fromkeys(files))[:top_k]


def bm25s_files(corpus_dir: Path, questions: list[dict], top_k: int = TOP_K) -> dict[str, list[str]]:
    """BM25 over whole files (bm25s defaults, k1=1.5, b=0.75; English stopwords; Snowball English stemmer)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    paths = corpus_files(corpus_dir)
    names = [path.relative_to(corpus_dir).as_posix() for path in paths]
    texts = [read(path) for path in paths]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    ranked: dict[str, list[str]] = {}
    for question in questions:
        tokens = bm25s.tokenize([question["question"]], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = retriever.retrieve(tokens, k=min(top_k * CANDIDATES_PER_FILE, len(names)), show_progress=False)
        ranked[question["id"]] = _dedupe([names[int(doc)] for doc, score in zip(docs[0], scores[0], strict=True) if score > 0], top_k)
    return ranked


def naive_chroma(corpus_dir: Path, questions: list[dict], embed: Embed, top_k: int = TOP_K) -> dict[str, list[str]]:
    """Dense retrieval over 380-word chunks (50 overlap) in a throwaway ChromaDB store, chunks deduplicated to files."""
    import chromadb
    from chromadb.config import Settings

    chunks: list[str] = []
    files: list[str] = []
    for path in corpus_files(corpus_dir):
        name = path.relative_to(corpus_dir).as_posix()
        for piece in word_chunks(read(path)):
            chunks.append(piece)
            files.append(name)
    ranked: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="naive-chroma-") as folder:
        client = chromadb.PersistentClient(path=folder, settings=Settings(anonymized_telemetry=False))
        collection = client.create_collection("docs", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
        for start in range(0, len(chunks), ADD_BATCH):
            batch = chunks[start : start + ADD_BATCH]
            collection.add(
                ids=[str(i) for i in range(start, start + len(batch))],
                embeddings=np.asarray(embed(batch), dtype=np.float32),
                documents=batch,
                metadatas=[{"file": name} for name in files[start : start + len(batch)]],
            )
        if chunks:
            vectors = np.asarray(embed([question["question"] for question in questions]), dtype=np.float32)
            n_results = min(top_k * CANDIDATES_PER_FILE, len(chunks))
            for question, vector in zip(questions, vectors, strict=True):
                found = collection.query(query_embeddings=[vector.tolist()], n_results=n_results, include=["metadatas"])
                ranked[question["id"]] = _dedupe([meta["file"] for meta in found["metadatas"][0]], top_k)
        else:
            ranked = {question["id"]: [] for question in questions}
        if hasattr(client, "close"):  # chromadb >= 1.1: release the store before its folder goes
            client.close()
    return ranked


def onnx_embed() -> Embed:
    """The float all-MiniLM-L6-v2 (the naive design's model): the install's ONNX export when present, else sentence-transformers."""
    scripts = Path(__file__).resolve().parents[1] / "scripts"
    if str(scripts) not in sys.path:
        sys.path.insert(0, str(scripts))
    from rag_search.model.embedding import EXPORT_CACHE, GRAPHS, OnnxEmbedder, SentenceTransformerEmbedder, find_model

    model = find_model()
    folder = EXPORT_CACHE / model.model_id
    embedder = OnnxEmbedder(folder, "float") if (folder / GRAPHS["float"]).is_file() else SentenceTransformerEmbedder(model)
    return embedder.embed
