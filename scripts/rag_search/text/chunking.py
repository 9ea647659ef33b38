"""Sizing sections to the model's window.

all-MiniLM-L6-v2 reads at most 256 word pieces ([CLS] and [SEP] included) and
silently drops the rest, so every chunk is measured with the model's own
tokenizer. A section that does not fit is cut at the best boundary inside the
window (paragraph, then line, sentence, word; a code fence only as a last
resort) and the next piece starts a little before the cut (the overlap).
A continuation is embedded from the overlap's start, wherever that falls, but shown
from the start of its sentence: the words before it (the lead-in, also the end of
the chunk before) are for the reader, who should not start mid-sentence, and not for
the model, whose ranking was measured on the fixed overlap (docs/decisions.md).
A chunk is bounded in characters too: WordPiece reads any word of over 100
characters as one [UNK], so a run of such words (hashes, base64, minified code)
is few word pieces however long.
"""

import bisect
import hashlib
import re
from dataclasses import dataclass, field

from ..model.embedding import TokenCounter
from .sections import Section

# Bump when chunk boundaries, shown or embedded text change: it is part of the index fingerprint.
CHUNKER_VERSION = "10"  # 10: a continuation is shown from its sentence's start (the lead-in, at most LEAD_IN_LIMIT word
# pieces back) and embedded as before, from the overlap's start: metadata embedded_from says where that is
# 9: reStructuredText (.rst, .rest) read by docutils: sections per title, code as fences, roles
# as their text, toctrees, targets and comments left out; `.. include::` and `.. literalinclude::` resolved; each
# documentation chunk carries its page's kind (page_kind: guide, reference, changelog, blog), which --kind filters on
# and ranking weighs; markdown's headings and code found by markdown-it (a setext heading is one line, never a table
# row); MkDocs anchors, admonitions, MDX imports and JSX tags, Hugo shortcodes taken out, their text kept
# 8: a JSON record's bookkeeping (id, dates, loop id, iteration, confidence, schema) is metadata,
# not text, and a record of nothing else makes no chunk; a file named for a kind (decisions.json) types untyped records
# 7: HTML comments in markdown are dropped (never text nor headings); a markdown section of
# only markup (a rule, HTML tags, images) makes no chunk; a JSON file's scalar fields beside its records are no chunk
# each (its date dates the file, a version or schema is left out, the rest is one record)
# 6: a piece that starts inside a word is measured on its own (it could reach 257 word pieces);
# chunks are bounded in characters as well (MAX_CHUNK_CHARS), a word piece longer than that is cut by characters;
# a --- or === line under a list item, quote, table row or indented code is no setext heading (heading paths change)
# 5: JSON records by shape (a memory entry is one chunk), record dates by magnitude, tags normalised
DEFAULT_OVERLAP = 32
WINDOW_CHARS = 256 * 1024  # text tokenized at once: bounds the memory a huge section takes
# Chunks of the 1,991 markdown pages of bench/docs-faq (32,735 chunks at 256 word pieces): median 553 characters,
# 99th percentile 1,354, 99.9th 3,738, largest without an [UNK] 6,039 (a table padded with spaces), largest of all
# 7,507 (a base64 certificate). Normal text never comes near this; a run of [UNK]s is cut by it.
MAX_CHUNK_CHARS = 10_000
WINDOW_MARGIN = 16  # word pieces kept clear of a window's end, where a word may be cut in two
HEADING_SEPARATOR = " > "
EMBEDDED_FROM = "embedded_from"  # chunk metadata: where in its text the passage the model read begins (after the lead-in)
LEAD_IN_LIMIT = 128  # word pieces a continuation's shown text may reach back for its sentence's start

# Priority of cutting before a token; higher is better, 0 splits a word.
PARAGRAPH, LINE, SENTENCE, WORD = 4.0, 3.0, 2.0, 1.0
IN_FENCE_LINE, IN_FENCE_WORD = 0.6, 0.3

_SENTENCE_END = re.compile(r"[.!?][\"')\]*_`]*$")  # a sentence's end, and what may close on it
_LINE_START = re.compile(r"[-*+>|#]\s|\d+[.)]\s|[-=+|]{3}")  # a list item, quote, heading or table row
_FENCE_BLOCK = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass
class Chunk:
    """A passage sized for the model, with the heading path that locates it."""

    text: str
    heading: str
    metadata: dict = field(default_factory=dict)

    @property
    def passage(self) -> str:
        """The text less its lead-in (the start of a sentence the chunk before holds, shown for reading only)."""
        return self.text[self.metadata.get(EMBEDDED_FROM, 0):]

    @property
    def embed_text(self) -> str:
        """What the model and the keyword index see: the heading path, then the passage."""
        return f"{self.heading}\n\n{self.passage}" if self.heading else self.passage

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
            for lead_in, passage in self.split(section.text, room):
                metadata = {**section.metadata, EMBEDDED_FROM: len(lead_in)} if lead_in else dict(section.metadata)
                chunks.append(Chunk(lead_in + passage, heading, metadata))
        return chunks

    def split(self, text: str, budget: int) -> list[tuple[str, str]]:
        """Cut `text` into passages of at most `budget` word pieces and MAX_CHUNK_CHARS characters each, each with
        its lead-in: the text from its sentence's start ("" for a passage that starts one).

        Text is tokenized WINDOW_CHARS at a time, so a section of megabytes costs the memory of one window.
        """
        text = text.strip()
        fences = [(m.start(), m.end()) for m in _FENCE_BLOCK.finditer(text)]
        offsets, priority, complete = self._window(text, 0, fences)
        pieces = []
        start = shown = 0  # the next passage's first word piece, and the character its shown text starts at
        while start < len(offsets):
            if not complete and _reach(offsets, start, budget) >= len(offsets) - WINDOW_MARGIN:  # near the window's end
                offsets, priority, complete = self._window(text, offsets[start][0], fences)
                start = 0
            cut = self._cut(text, offsets, priority, start, budget)
            begin = offsets[start][0]
            if cut < len(offsets):
                end, previous = offsets[cut][0], start
                start = max(cut - self.overlap, start + 1)
                while start < cut and priority[start] < WORD:
                    start += 1
                next_shown = offsets[_sentence_start(text, offsets, priority, start, previous)][0]
            else:  # the rest of the window: then the text's end, or a long run of spaces and the next window
                if complete:
                    offsets = []
                else:
                    offsets, priority, complete = self._window(text, offsets[-1][1], fences)
                start = 0
                end = next_shown = offsets[0][0] if offsets else len(text)
            # Up to the next word piece, so it keeps what the tokenizer drops after its last one (an accent, a joiner);
            # only such characters can reach past MAX_CHUNK_CHARS, and are cut there.
            passage, lead_in = text[begin:end].strip()[:MAX_CHUNK_CHARS], text[shown:begin].lstrip()
            if passage:
                pieces.append((lead_in if len(lead_in) + len(passage) <= MAX_CHUNK_CHARS else "", passage))
            shown = next_shown
        return pieces

    def _cut(self, text: str, offsets: list[tuple[int, int]], priority: list[float], start: int, budget: int) -> int:
        """Where the piece from token `start` ends: the best boundary that keeps it within `budget` word pieces, or
        the window's last token if all the rest is in reach (after it: the text's end, or a long run of spaces).

        A piece that starts inside a word (a run without spaces, cut where no boundary was in reach) tokenizes
        the rest of that word afresh, at times into more pieces than it had, so it is measured on its own; so is
        one long enough to hold a part of a word piece cut by characters.
        """
        limit = budget
        while True:
            end = _reach(offsets, start, limit)
            if end == len(offsets):
                cut = end
            else:
                cut = max(range(start + (end - start) // 2 + 1, end + 1), key=lambda i: (priority[i], i))
            if (start == 0 or priority[start] > 0) and offsets[cut - 1][1] - offsets[start][0] < MAX_CHUNK_CHARS // 2:
                return cut  # it starts a window or a word, and holds no part of a word piece cut by characters: as counted
            excess = self._tokens.count(text[offsets[start][0] : offsets[cut - 1][1]]) - budget
            if excess <= 0 or cut == start + 1:
                return cut
            limit = max(cut - start - excess, 1)  # what the start costs beyond the pieces counted, off the limit

    def _window(self, text: str, begin: int, fences: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[float], bool]:
        """The character spans (in `text`) of the word pieces of up to WINDOW_CHARS of it from `begin`, their cut
        priorities, and whether they reach its end.

        A window with none (spaces, characters the tokenizer drops) is passed over; a word piece that spans more
        than MAX_CHUNK_CHARS (an [UNK] of a very long word) is cut by characters.
        """
        while True:
            end = min(len(text), begin + WINDOW_CHARS)
            offsets = [(begin + a, begin + b) for a, b in self._tokens.offsets(text[begin:end])]
            if any(b - a > MAX_CHUNK_CHARS for a, b in offsets):
                offsets = [part for span in offsets for part in _equal_parts(*span)]
            if offsets or end == len(text):
                return offsets, _cut_priorities(text, offsets, fences), end == len(text)
            begin = end

    def _fit_heading(self, heading: str) -> str:
        """Keep a runaway heading path from eating the window: at most a quarter of it, in word pieces and in characters."""
        limit = self.budget // 4
        offsets = self._tokens.offsets(heading)
        end = min(offsets[limit - 1][1] if len(offsets) > limit else len(heading), MAX_CHUNK_CHARS // 4)
        return heading if end >= len(heading) else heading[:end] + "…"


def _equal_parts(start: int, end: int) -> list[tuple[int, int]]:
    """A span as the fewest equal parts of at most MAX_CHUNK_CHARS characters: over half of that each, so a part of
    an [UNK] word is an [UNK] still."""
    parts = -(-(end - start) // MAX_CHUNK_CHARS)
    return [(start + (end - start) * k // parts, start + (end - start) * (k + 1) // parts) for k in range(parts)]


def _reach(offsets: list[tuple[int, int]], start: int, limit: int) -> int:
    """The end (exclusive) of the longest run of tokens from `start` within `limit` of them and MAX_CHUNK_CHARS."""
    last = offsets[start][0] + MAX_CHUNK_CHARS
    return bisect.bisect_right(offsets, last, start + 1, min(len(offsets), start + limit), key=lambda span: span[1])


def _sentence_start(text: str, offsets: list[tuple[int, int]], priority: list[float], start: int, previous: int) -> int:
    """The word piece that starts the sentence word piece `start` is in: at most LEAD_IN_LIMIT back and after the
    previous passage's first (`previous`); `start` itself when none is in reach."""
    for i in range(start, max(previous + 1, start - LEAD_IN_LIMIT) - 1, -1):
        if _starts_sentence(text, offsets, priority[i], i):
            return i
    return start


def _starts_sentence(text: str, offsets: list[tuple[int, int]], priority: float, i: int) -> bool:
    """Whether word piece `i` (cut priority `priority`) starts a sentence, a paragraph, a list item, a table row or a
    line of code: not a hard-wrapped line of prose."""
    if priority >= PARAGRAPH or priority == IN_FENCE_LINE:
        return True
    if priority not in (LINE, SENTENCE):
        return False
    if _SENTENCE_END.search(text, max(0, offsets[i - 1][1] - 4), offsets[i - 1][1]):
        return True
    line_before = text[text.rfind("\n", 0, offsets[i - 1][1]) + 1 : offsets[i - 1][1]]
    return priority == LINE and (line_before.endswith(":") or "|" in line_before or _LINE_START.match(text, offsets[i][0]) is not None)


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
