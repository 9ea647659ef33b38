"""Sizing sections to the model's window.

all-MiniLM-L6-v2 reads at most 256 word pieces ([CLS] and [SEP] included) and
silently drops the rest, so every chunk is measured with the model's own
tokenizer. A section that does not fit is cut at the best boundary inside the
window (paragraph, then line, sentence, word; a code fence only as a last
resort) and the next piece starts a little before the cut (the overlap).
"""

import hashlib
import re
from dataclasses import dataclass, field

from .embedding import TokenCounter
from .parsing import Section

# Bump when chunk boundaries or embedded text change: it is part of the index fingerprint.
CHUNKER_VERSION = "5"  # 5: JSON records by shape (a memory entry is one chunk), record dates by magnitude, tags normalised
DEFAULT_OVERLAP = 32
WINDOW_CHARS = 256 * 1024  # text tokenized at once: bounds the memory a huge section takes
WINDOW_MARGIN = 16  # word pieces kept clear of a window's end, where a word may be cut in two
HEADING_SEPARATOR = " > "

# Priority of cutting before a token; higher is better, 0 splits a word.
PARAGRAPH, LINE, SENTENCE, WORD = 4.0, 3.0, 2.0, 1.0
IN_FENCE_LINE, IN_FENCE_WORD = 0.6, 0.3

_FENCE_BLOCK = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass
class Chunk:
    """A passage sized for the model, with the heading path that locates it."""

    text: str
    heading: str
    metadata: dict = field(default_factory=dict)

    @property
    def embed_text(self) -> str:
        """What the model and the keyword index see: the heading path, then the passage."""
        return f"{self.heading}\n\n{self.text}" if self.heading else self.text

    @property
    def text_hash(self) -> str:
        """The hash of what the model sees: equal hashes, equal vectors (of one model and graph)."""
        return hashlib.blake2b(self.embed_text.encode("utf-8"), digest_size=16).hexdigest()


def chunking_settings(max_tokens: int, overlap: int = DEFAULT_OVERLAP) -> str:
    """The chunking part of the index fingerprint."""
    return f"v{CHUNKER_VERSION}/window={max_tokens}/overlap={overlap}"


class Chunker:
    def __init__(self, tokens: TokenCounter, max_tokens: int = 256, overlap: int = DEFAULT_OVERLAP):
        self._tokens = tokens
        self.budget = max_tokens - 2  # room for [CLS] and [SEP]
        self.overlap = overlap

    def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks = []
        for section in sections:
            heading = self._fit_heading(HEADING_SEPARATOR.join(section.path))
            room = self.budget - (self._tokens.count(heading + "\n\n") if heading else 0)
            for piece in self.split(section.text, room):
                chunks.append(Chunk(piece, heading, dict(section.metadata)))
        return chunks

    def split(self, text: str, budget: int) -> list[str]:
        """Cut `text` into pieces of at most `budget` word pieces each.

        Text is tokenized WINDOW_CHARS at a time, so a section of megabytes costs the memory of one window.
        """
        text = text.strip()
        if not text:
            return []
        fences = [(m.start(), m.end()) for m in _FENCE_BLOCK.finditer(text)]
        offsets, complete = self._offsets(text, 0)
        priority = _cut_priorities(text, offsets, fences)
        pieces = []
        start = 0
        while True:
            if not complete and len(offsets) - start <= budget + WINDOW_MARGIN:  # near the end of a window: the next one
                offsets, complete = self._offsets(text, offsets[start][0])
                priority = _cut_priorities(text, offsets, fences)
                start = 0
            if len(offsets) - start <= budget:
                break
            cut = max(range(start + budget // 2 + 1, start + budget + 1), key=lambda i: (priority[i], i))
            pieces.append(text[offsets[start][0] : offsets[cut - 1][1]].strip())
            next_start = max(cut - self.overlap, start + 1)
            while next_start < cut and priority[next_start] < WORD:
                next_start += 1
            start = next_start
        pieces.append(text[offsets[start][0] :].strip())
        return [piece for piece in pieces if piece]

    def _offsets(self, text: str, begin: int) -> tuple[list[tuple[int, int]], bool]:
        """Character spans (in `text`) of the word pieces of up to WINDOW_CHARS of it from `begin`, and whether they reach its end."""
        end = min(len(text), begin + WINDOW_CHARS)
        return [(begin + a, begin + b) for a, b in self._tokens.offsets(text[begin:end])], end == len(text)

    def _fit_heading(self, heading: str) -> str:
        """Keep a runaway heading path from eating the window: at most a quarter of it."""
        limit = self.budget // 4
        offsets = self._tokens.offsets(heading)
        return heading if len(offsets) <= limit else heading[: offsets[limit - 1][1]] + "…"


def _cut_priorities(text: str, offsets: list[tuple[int, int]], fences: list[tuple[int, int]]) -> list[float]:
    """priority[i]: how good a place it is to end a piece just before token i (code fences: spans in `text`)."""
    priority = [0.0] * (len(offsets) + 1)
    fence_index = 0
    for i in range(1, len(offsets)):
        gap_start, gap_end = offsets[i - 1][1], offsets[i][0]
        gap = text[gap_start:gap_end]
        if not gap:
            continue
        if "\n" in gap:
            value = PARAGRAPH if gap.count("\n") > 1 else LINE
        elif text[gap_start - 1] in ".!?;:":
            value = SENTENCE
        else:
            value = WORD
        while fence_index < len(fences) and fences[fence_index][1] <= gap_end:
            fence_index += 1
        if fence_index < len(fences) and fences[fence_index][0] < gap_start:
            value = IN_FENCE_LINE if value >= LINE else IN_FENCE_WORD
        priority[i] = value
    return priority
