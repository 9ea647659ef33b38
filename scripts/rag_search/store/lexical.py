"""Keyword matching: turning text into the terms the BM25 index (SQLite FTS5) stores.

We tokenize here rather than in SQLite, because agents search for identifiers:
an identifier is kept whole and also split into its parts, so `selfHeal`,
`self heal` and `selfheal` all match (terms selfheal, self, heal);
`kube-proxy` gives kubeproxy, kube, proxy; `--max-tokens` gives maxtokens, max,
tokens; `v1.30.0` gives v1300, v1, 30, 0. Chinese, Japanese and Korean text has no
spaces, so it becomes overlapping character bigrams (as Lucene's CJK analyzer
does). FTS5's porter stemmer then folds plurals and tenses of English words.
Common English words are dropped unless they are part of an identifier (`--all`).
"""

import re
from typing import NamedTuple

# An optional command-line dash, then a run of letters/digits, possibly joined by - _ . : /
# into a compound (kube-proxy, v1.30.0, --max-tokens).
_COMPOUND = re.compile(r"(--?)?([^\W_]+(?:[-_.:/][^\W_]+)*)")
_SEPARATORS = re.compile(r"[-_.:/]")
# camelCase and HTTPServer boundaries; digits stay with their letters (k8s, v1, http2).
_CAMEL = re.compile(r"[A-Z]+[0-9]*(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z0-9]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it its
    me my no not of on or our so such than that the their them then there these they this to too was we were what
    when where which while who whom why will with would you your""".split()
)


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order (duplicates kept: they count for BM25)."""
    out: list[str] = []
    for cjk in _CJK.findall(text):
        out.extend(cjk[i : i + 2] for i in range(max(1, len(cjk) - 1)))
    for dash, compound in _COMPOUND.findall(_CJK.sub(" ", text)):
        words = _words(compound)
        if len(words) > 1:
            out.append("".join(words))
            out.extend(words)
        elif dash or words[0] not in STOPWORDS:
            out.append(words[0])
    return out


def _words(compound: str) -> list[str]:
    """kube-proxy -> kube, proxy; selfHeal -> self, heal."""
    return [part.lower() for piece in _SEPARATORS.split(compound) for part in _camel_parts(piece)]


def _camel_parts(piece: str) -> list[str]:
    """selfHeal -> self, Heal; only for ASCII, where case boundaries mean identifiers."""
    return (_CAMEL.findall(piece) or [piece]) if piece.isascii() else [piece]


def identifiers(query: str) -> list[str]:
    """The identifiers a query names, as the terms the index keeps them whole under (LED-517 -> led517): anything in
    a code span, and compounds of letters and digits joined by - _ . / that hold a digit or an underscore (LED-517,
    v1.30.0, max_tokens, HTTP/2). Hyphenated words (read-only) and bare numbers (1.5, 2024-05) are prose."""
    found = ["".join(_words(compound)) for span in _CODE_SPAN.findall(query) for _, compound in _COMPOUND.findall(span)]
    for _, compound in _COMPOUND.findall(_CODE_SPAN.sub(" ", query)):
        joined = _SEPARATORS.search(compound) and any(c.isalpha() for c in compound)
        if joined and ("_" in compound or any(c.isdigit() for c in compound)):
            found.append("".join(_words(compound)))
    return list(dict.fromkeys(found))


def query_terms(query: str) -> list[str]:
    """The distinct index terms of a query, in order."""
    return list(dict.fromkeys(terms(query)))


class Match(NamedTuple):
    expression: str  # an FTS5 query
    scale: float  # its BM25 scores are the plain query's times this


def match_expression(unique_terms: list[str], common: frozenset[str] = frozenset()) -> Match | None:
    """An FTS5 query matching any of `unique_terms` (BM25 ranks by how many and how rare), or None when there are none.

    When some terms are `common` and others are not, only chunks holding a rarer term match, and every term still
    scores them: ("rotate" OR "tls") AND ("rotate" OR "tls" OR "controller" OR "controller") names each term twice,
    so the scores are the plain query's, doubled. A chunk with common words only (in a large index, most of those a
    keyword search would score) is rarely among the best.
    """
    if not unique_terms:
        return None
    any_term = " OR ".join(phrase(term) for term in unique_terms)
    rare = [term for term in unique_terms if term not in common]
    if not rare or len(rare) == len(unique_terms):
        return Match(any_term, 1.0)
    common_again = " OR ".join(phrase(term) for term in unique_terms if term in common)
    return Match(f"({' OR '.join(phrase(term) for term in rare)}) AND ({any_term} OR {common_again})", 2.0)


def phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'
