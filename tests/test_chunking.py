"""Chunk sizing, measured with the model's real tokenizer."""

import random
import re
import string

import pytest
from tokenizers import Tokenizer

from rag_search.model.embedding import TokenCounter, find_model
from rag_search.text import chunking
from rag_search.text.chunking import MAX_CHUNK_CHARS, Chunker
from rag_search.text.sections import Section


@pytest.fixture(scope="module")
def tokens():
    return TokenCounter(find_model())


@pytest.fixture(scope="module")
def chunker(tokens):
    return Chunker(tokens, max_tokens=256)


@pytest.fixture(scope="module")
def model_tokenizer():
    """The model's tokenizer as the embedder runs it, less its truncation: [CLS] and [SEP] included."""
    tokenizer = Tokenizer.from_file(str(find_model().path / "tokenizer.json"))
    tokenizer.no_truncation()
    return tokenizer


def passages(chunker, text, budget):
    """What the model reads of each piece (its lead-in left out)."""
    return [passage for _, passage in chunker.split(text, budget)]


def window_size(tokens, text):
    return tokens.count(text) + 2  # [CLS] and [SEP]


def _identifier(rng):
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 30)))


def _note(rng):
    """A note as people keep them: prose, a code fence, and a line of minified code or a long URL (no spaces)."""
    prose = " ".join(rng.choice(["The", "controller", "reconciles", "volume", "replicas.", "Run", "make", "setup", "again,",
                                 "then", "check", "kube-proxy", "logs:", "ERR_CONNECTION_REFUSED"]) for _ in range(rng.randint(20, 200)))
    code = "```js\n" + "\n".join(f"const {_identifier(rng)} = require('{_identifier(rng)}');" for _ in range(rng.randint(1, 8))) + "\n```"
    run = "".join(_identifier(rng) + rng.choice("-._/()=&?") for _ in range(rng.randint(20, 200)))
    return "\n\n".join([prose, code, run, prose])


def _letters(rng, n):
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


def assert_holds_all_of(text, pieces):
    """The pieces, in order, hold all of `text` but spaces: each starts inside the one before or right after it."""
    covered, previous = 0, -1
    for piece in pieces:
        found = text.find(piece, previous + 1)
        assert found != -1, f"a piece that is not the next part of the text: {piece[:80]!r}"
        assert not text[covered:found].strip(), f"text lost between pieces: {text[covered:found][:80]!r}"
        covered, previous = max(covered, found + len(piece)), found
    assert not text[covered:].strip(), f"text lost after the last piece: {text[covered:][:80]!r}"


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


def _prose(rng, sentences):
    """Sentences of 8-40 words, five to a paragraph, hard-wrapped at 72 columns as reStructuredText pages are."""
    words = ["the", "controller", "reconciles", "volume", "replicas", "and", "reports", "health", "to", "operators",
             "while", "backups", "run", "nightly", "on", "each", "node"]
    text = [" ".join(rng.choice(words) for _ in range(rng.randint(8, 40))).capitalize() + "." for _ in range(sentences)]
    paragraphs = [" ".join(text[i : i + 5]) for i in range(0, len(text), 5)]
    return "\n\n".join("\n".join(_wrapped(paragraph, 72)) for paragraph in paragraphs)


def _wrapped(paragraph, width):
    lines, line = [], ""
    for word in paragraph.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


def test_a_continuation_is_shown_from_the_start_of_its_sentence(chunker):
    rng = random.Random(7)
    text = _prose(rng, 200)
    chunks = chunker.chunk([Section(["Guide"], text)])
    assert len(chunks) > 10
    for chunk in chunks[1:]:
        assert chunk.text[0].isupper(), f"starts mid-sentence: {chunk.text[:60]!r}"
        start = text.find(chunk.text)
        assert start > 0 and text[:start].rstrip().endswith("."), f"not after a sentence's end: {chunk.text[:60]!r}"


def test_a_continuation_is_embedded_from_the_overlap_as_before(chunker, tokens):
    """The lead-in is for the reader: the model reads the passage from the fixed overlap, as ranking was measured."""
    rng = random.Random(8)
    text = _prose(rng, 200)
    chunks = chunker.chunk([Section(["Guide"], text)])
    leads = [chunk for chunk in chunks[1:] if chunk.passage != chunk.text]
    assert len(leads) > len(chunks) // 2, "most continuations of such prose start mid-sentence at the overlap"
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.text.endswith(after.passage) and after.embed_text == f"Guide\n\n{after.passage}"
        shared = next(size for size in range(len(after.passage), 0, -1) if before.passage.endswith(after.passage[:size]))
        word_before = before.passage[: len(before.passage) - shared].rstrip().rsplit(None, 1)[-1]
        overlap = before.passage[before.passage.rindex(word_before, 0, len(before.passage) - shared) :]
        assert tokens.count(after.passage[:shared]) <= chunker.overlap < tokens.count(overlap), \
            "the passage starts at the first word in the 32 word pieces before the cut"
        assert before.passage.endswith(after.text[: len(after.text) - len(after.passage) + shared]), "the lead-in is shown before"


def test_a_lead_in_reaches_back_no_further_than_its_limit(chunker, tokens):
    text = " ".join(f"word{i}" for i in range(3000))  # no sentence ends at all
    chunks = chunker.chunk([Section([], text)])
    assert all(chunk.text == chunk.passage for chunk in chunks), "no sentence start in reach: shown from the overlap"


def test_no_chunk_of_a_note_exceeds_the_window_as_the_model_tokenizes_it(chunker, model_tokenizer):
    rng = random.Random(1)
    sections = [Section(["Notes", f"Build {i}", _identifier(rng)], _note(rng)) for i in range(150)]
    sizes = [len(model_tokenizer.encode(chunk.embed_text).ids) for chunk in chunker.chunk(sections)]
    assert max(sizes) <= 256, f"{sum(size > 256 for size in sizes)} of {len(sizes)} chunks exceed the window"


def test_consecutive_pieces_overlap(chunker):
    words = " ".join(f"word{i}" for i in range(2000))
    pieces = passages(chunker, words, 100)
    assert len(pieces) > 5
    for before, after in zip(pieces, pieces[1:], strict=False):
        first_after = after.split()[0]
        assert first_after in before.split(), "the next piece should start inside the previous one"


def test_text_without_any_boundary_is_still_cut(chunker, model_tokenizer):
    """A word of 20,000 letters is one [UNK] to WordPiece, so it is cut by characters; 20,000 ideographs are
    20,000 word pieces with no space between them, so they are cut by word pieces."""
    rng = random.Random(3)
    word = _letters(rng, 20_000)
    ideographs = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(20_000))
    for blob, at_least in ((word, 2), (ideographs, 100)):
        pieces = passages(chunker, blob, 200)
        assert len(pieces) >= at_least
        for piece in pieces:
            assert len(model_tokenizer.encode(piece, add_special_tokens=False).ids) <= 200
            assert len(piece) <= MAX_CHUNK_CHARS
        assert_holds_all_of(blob, pieces)


def test_a_run_of_long_words_is_cut_by_characters(chunker, tokens):
    rng = random.Random(2)
    run = " ".join(_letters(rng, rng.randint(101, 110)) for _ in range(240))
    assert tokens.count(run) == 240, "each word of over 100 characters is one [UNK]: 25 KB fit the window in word pieces"
    chunks = chunker.chunk([Section(["Notes", "Keys"], run)])
    assert all(len(chunk.text) <= MAX_CHUNK_CHARS for chunk in chunks)
    assert_holds_all_of(run, [chunk.text for chunk in chunks])


def test_a_word_longer_than_a_tokenizer_window_is_cut_and_what_follows_is_kept(chunker):
    rng = random.Random(5)
    text = _letters(rng, chunking.WINDOW_CHARS + 10_000) + " " + " ".join(_letters(rng, 8) for _ in range(3000))
    pieces = passages(chunker, text, 200)
    assert max(len(piece) for piece in pieces) <= MAX_CHUNK_CHARS
    assert_holds_all_of(text, pieces)


def test_a_run_of_spaces_longer_than_a_tokenizer_window_only_separates_pieces(chunker):
    before = " ".join(f"word{i}" for i in range(50))
    after = " ".join(f"term{i}" for i in range(50))
    assert passages(chunker, before + " " * (chunking.WINDOW_CHARS + 1000) + after, 200) == [before, after]


def test_an_accent_the_tokenizer_drops_stays_in_the_piece(chunker):
    text = " ".join(f"word{i}" for i in range(300)) + " cafe\u0301"  # é as e and a combining accent: the word piece is "cafe"
    assert passages(chunker, text, 200)[-1].endswith("cafe\u0301")


def test_a_section_of_characters_the_tokenizer_drops_has_no_pieces(chunker):
    assert passages(chunker, "\u200b\u200b\x00", 200) == []


def test_code_fence_is_not_cut_when_a_boundary_outside_is_in_reach(chunker, tokens):
    prose = " ".join(f"Sentence number {i} explains the setup." for i in range(25))
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(12)) + "\n```"
    text = prose + "\n\n" + code + "\n\n" + prose
    pieces = passages(chunker, text, 200)
    for piece in pieces:
        assert piece.count("```") in (0, 2), f"a fence was cut:\n{piece}"


def test_a_runaway_heading_cannot_eat_the_window(chunker, tokens):
    heading = ["Very long heading " * 100]
    chunks = chunker.chunk([Section(heading, "body text " * 300)])
    for chunk in chunks:
        assert window_size(tokens, chunk.embed_text) <= 256
        assert re.search(r"body text", chunk.text)


def test_a_runaway_heading_of_long_words_is_bounded_in_characters_too(chunker):
    rng = random.Random(6)
    heading = " ".join(_letters(rng, 2000) for _ in range(40))  # 40 [UNK]: within a quarter of the window in word pieces
    chunks = chunker.chunk([Section([heading], "body text")])
    assert len(chunks[0].heading) <= MAX_CHUNK_CHARS // 4 + 1


def test_a_huge_section_is_tokenized_a_window_at_a_time_with_the_same_result(tokens, monkeypatch):
    rng = __import__("random").Random(4)
    text = "\n\n".join(" ".join(rng.choice(["alpha", "beta", "gamma.", "delta,", "epsilon"]) for _ in range(rng.randint(20, 90)))
                       for _ in range(400))
    whole = passages(Chunker(tokens), text, 200)
    monkeypatch.setattr(chunking, "WINDOW_CHARS", 3000)  # about 600 word pieces a window
    windowed = passages(Chunker(tokens), text, 200)
    assert all(tokens.count(piece) <= 200 for piece in windowed)
    assert windowed == whole, "cuts land on the same paragraph and sentence boundaries"


def test_a_continuation_inside_code_starts_at_a_line(chunker):
    code = "\n".join(f"    result_{i} = compute_total(order_{i}, discount={i}, currency='EUR')  # line {i}" for i in range(120))
    pieces = passages(chunker, f"```python\n{code}\n```", chunker.budget)
    assert len(pieces) > 2
    for piece in pieces[1:]:
        assert re.match(r"(result_\d+ = |```)", piece), piece[:60]

