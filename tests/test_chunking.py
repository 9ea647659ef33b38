"""Chunk sizing, measured with the model's real tokenizer."""

import re

import pytest

from rag_search.chunking import Chunker
from rag_search.embedding import TokenCounter, find_model
from rag_search.parsing import Section


@pytest.fixture(scope="module")
def tokens():
    return TokenCounter(find_model())


@pytest.fixture(scope="module")
def chunker(tokens):
    return Chunker(tokens, max_tokens=256)


def window_size(tokens, text):
    return tokens.count(text) + 2  # [CLS] and [SEP]


def test_short_section_is_one_chunk_with_its_heading_path(chunker):
    chunks = chunker.chunk([Section(["Guide", "Install"], "Run make setup.")])
    assert len(chunks) == 1
    assert chunks[0].heading == "Guide > Install"
    assert chunks[0].embed_text == "Guide > Install\n\nRun make setup."


def test_long_section_is_split_into_pieces_that_fit_the_window(chunker, tokens):
    paragraphs = [
        f"Paragraph {i}: the node-{i} controller reconciles volume replicas and reports health every {i} seconds."
        for i in range(60)
    ]
    chunks = chunker.chunk([Section(["Storage", "Replicas"], "\n\n".join(paragraphs))])
    assert len(chunks) > 3
    for chunk in chunks:
        assert window_size(tokens, chunk.embed_text) <= 256
    joined = " ".join(chunk.text for chunk in chunks)
    for i in range(60):
        assert f"Paragraph {i}:" in joined, f"paragraph {i} was lost"
    # Cuts fall on paragraph boundaries when one is in reach.
    assert all(chunk.text.startswith("Paragraph") or chunk.text[0].isalnum() for chunk in chunks)


def test_consecutive_pieces_overlap(chunker):
    words = " ".join(f"word{i}" for i in range(2000))
    pieces = chunker.split(words, 100)
    assert len(pieces) > 5
    for before, after in zip(pieces, pieces[1:], strict=False):
        first_after = after.split()[0]
        assert first_after in before.split(), "the next piece should start inside the previous one"


def test_text_without_any_boundary_is_still_cut(chunker, tokens):
    blob = "x" * 20_000
    pieces = chunker.split(blob, 200)
    assert all(tokens.count(piece) <= 200 for piece in pieces)
    assert "".join(pieces).count("x") >= 20_000


def test_code_fence_is_not_cut_when_a_boundary_outside_is_in_reach(chunker, tokens):
    prose = " ".join(f"Sentence number {i} explains the setup." for i in range(25))
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(12)) + "\n```"
    text = prose + "\n\n" + code + "\n\n" + prose
    pieces = chunker.split(text, 200)
    for piece in pieces:
        assert piece.count("```") in (0, 2), f"a fence was cut:\n{piece}"


def test_a_runaway_heading_cannot_eat_the_window(chunker, tokens):
    heading = ["Very long heading " * 100]
    chunks = chunker.chunk([Section(heading, "body text " * 300)])
    for chunk in chunks:
        assert window_size(tokens, chunk.embed_text) <= 256
        assert re.search(r"body text", chunk.text)


def test_a_huge_section_is_tokenized_a_window_at_a_time_with_the_same_result(tokens, monkeypatch):
    from rag_search import chunking

    rng = __import__("random").Random(4)
    text = "\n\n".join(" ".join(rng.choice(["alpha", "beta", "gamma.", "delta,", "epsilon"]) for _ in range(rng.randint(20, 90)))
                       for _ in range(400))
    whole = Chunker(tokens).split(text, 200)
    monkeypatch.setattr(chunking, "WINDOW_CHARS", 3000)  # about 600 word pieces a window
    windowed = Chunker(tokens).split(text, 200)
    assert all(tokens.count(piece) <= 200 for piece in windowed)
    assert windowed == whole, "cuts land on the same paragraph and sentence boundaries"
