"""Documentation's credential-shaped examples: which secrets the rules find in git and web docs are examples.

Published docs are full of values shaped like credentials: a gateway's documented default admin key on every page,
`apikey:` headers, `ADMIN_PASSWORD=admin`, sample JWTs, `curl -u user:pass`. Redacting them fails the reader (the
answer shows `X-API-KEY: [REDACTED]` where the docs print the key). Personal notes and local folders (which may be
private) get none of this: every span is redacted there. In documentation from git and web sources:

- Always redacted: provider token formats (gitleaks' rules but its generic jwt and curl ones, and ours), private
  keys, .npmrc auth lines and credentials in URLs (userinfo, `?token=`, `&sig=`; placeholders kept, as in notes).
- Always kept, whatever the rule that found it: a slot the reader fills in (`{sasl_password}`, `<your-key>`,
  `${TOKEN}`: secret_values.is_written_placeholder). A note keeps today's rules (a quoted `{...}` password is redacted).
- JUDGED (key names such as `password=` and `X-API-KEY:`, Authorization headers, `-u user:pass`, JWTs, "the key
  is ..." prose, and 40-character strings shaped like an AWS secret but with no AWS context): kept unless the
  value looks like a real secret. It does not when
  - its section calls it an example ("for example", "sample output"), it is in a code block introduced as output
    ("Response:", "will return:": what the author's own run printed), or it is a placeholder or example word;
  - it is too short or too regular to be random (under 12 characters, one character class, a run like `1234` or
    `abcd`, under 3 bits of entropy a character); for `user:pass` and Basic credentials, the password part;
  - it is a JWT whose claims are examples (John Doe, 1234567890, example.com) or that has expired;
  - it is introduced as a default: "default" on its line or one of the two lines before (a code fence skipped),
    or in a table column headed Default;
  - the document shows it three times or more (a walkthrough's sample credential), or another document of the same
    source shows it (a documented default repeated on several pages): `documented(value)` answers that, since only
    the caller sees the other documents (secrets.SourceCensus).
  So a high-entropy key pasted into docs by mistake (once, or twice: `export` then `curl`) is redacted; the same key
  printed on two pages is a default. Within a document a value is shown or redacted throughout: where one occurrence
  is kept, a judged or URL occurrence of the same value is kept too (redacting it would hide nothing).
"""

import base64
import binascii
import bisect
import json
import re
import time
from collections.abc import Callable

from .gitleaks import entropy
from .secret_values import is_placeholder, is_written_placeholder

Span = tuple[int, int, str]

JUDGED = frozenset({
    "password", "token", "auth", "secret", "credential", "api-key", "azure-account-key", "authorization-header",
    "bearer-token", "curl-auth-user", "curl-auth-header", "jwt", "jwt-base64", "aws-secret-access-key",
})
EXAMPLE_LOOKBACK = 600  # characters of the value's own section read for an example marker
REPEATED = 3  # times one document shows a value that make it the document's sample, not a secret pasted by mistake
# A word of prose, not part of a name: "example" in git.acme.example or /examples/ says nothing about the value.
_EXAMPLE_MARKER = re.compile(r"(?<![\w./@-])(?:for example|examples?|e\.g\.|for instance|samples?|dummy|fake|placeholder|"
                             r"(?:will |would )?looks? like)(?![\w/-]|\.\w)", re.I)
_DEFAULT = re.compile(r"\bdefaults?\b", re.I)
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.M)
_OUTPUT_LEAD = re.compile(r"\b(?:responses?|output|returns?|answers?|results?|prints?)\b[^\n]*:[ \t]*$", re.I)
_URL_QUERY = re.compile(r"\?(?:[^\s\"'<>`]*&(?:amp;)?)?[\w.-]+=$")  # ...?a=1&token= right before the value
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_RUN = 4  # a run of this many consecutive characters (1234, abcd, 4321) or one repeated: typed, not random
_EXAMPLE_CLAIMS = ("1234567890", "john doe", "jane doe", "example.com", "example.org", "example.net", "@example",
                   "alice", "bob", "foo", "test", "demo", "sample")


def example_spans(text: str, spans: list[Span], documented: Callable[[str], bool] | None = None) -> set[Span]:
    """The spans documentation keeps: JUDGED kinds whose value does not look like a real secret, and then any judged
    or URL span of a value the document shows anyway."""
    judge = _Judge(text, documented)
    kept = {span for span in spans if judge.example(span)}
    redacted = [span for span in spans if span not in kept]
    shown = {judge.value(span) for span in kept if not any(r[0] < span[1] and span[0] < r[1] for r in redacted)}
    return kept | {span for span in redacted if judge.value(span) in shown and (span[2] in JUDGED or judge.in_url(span))}


class _Judge:
    """One document's examples: its fenced blocks found once, then each span judged in its context."""

    def __init__(self, text: str, documented: Callable[[str], bool] | None):
        self.text, self.documented = text, documented
        self.fences = [m.start() for m in _FENCE.finditer(text)] if "```" in text or "~~~" in text else []

    def value(self, span: Span) -> str:
        return _MARKDOWN_ESCAPE.sub(r"\1", self.text[span[0] : span[1]]).strip("\"'` ")

    def in_url(self, span: Span) -> bool:
        return _URL_QUERY.search(self.text, max(0, span[0] - 400), span[0]) is not None

    def example(self, span: Span) -> bool:
        start, end, kind = span
        text, value = self.text, self.value(span)
        if is_written_placeholder(value):
            return True
        if self.in_url(span):
            return is_placeholder(value, quoted=True)
        if kind not in JUDGED:
            return False
        before = text[max(0, start - EXAMPLE_LOOKBACK) : start]
        if _EXAMPLE_MARKER.search(before[before.rfind("\n#") + 1 :]) or self._in_output(start):
            return True
        if not looks_real(value, kind) or _introduced_as_default(text, start) or text.count(text[start:end]) >= REPEATED:
            return True
        return self.documented is not None and self.documented(value)

    def _in_output(self, start: int) -> bool:
        """Whether `start` is in a fenced block whose lead line says it is output ("Response:")."""
        opened = bisect.bisect_left(self.fences, start)
        if opened % 2 == 0:
            return False
        lead = self.text[: self.fences[opened - 1]].rstrip().rsplit("\n", 1)[-1]
        return _OUTPUT_LEAD.search(lead) is not None


def is_example_value(value: str, kind: str, documented: Callable[[str], bool] | None = None) -> bool:
    """The same judgment for a value without its text around it (a JSON string under a secret key)."""
    if is_written_placeholder(value):
        return True
    return kind in JUDGED and (not looks_real(value, kind) or (documented is not None and documented(value)))


def looks_real(value: str, kind: str) -> bool:
    """Whether a value could be a live secret rather than a documentation example."""
    value = re.sub(r"^(?i:bearer|basic|token)[ \t]+", "", value)
    claims = _jwt_claims(value)
    if claims is not None:
        return not _example_claims(claims)
    if kind in ("curl-auth-user", "authorization-header", "bearer-token", "curl-auth-header"):
        value = _basic_password(value)
    return _random(value)


def _random(value: str) -> bool:
    if len(value) < 12 or is_placeholder(value, quoted=True) or entropy(value) < 3.0:
        return False
    classes = sum(any(test(c) for c in value) for test in (str.islower, str.isupper, str.isdigit)) + (not value.isalnum())
    if classes < 2:
        return False
    low = value.lower()
    return not any(_typed_run(low[i : i + _RUN]) for i in range(len(low) - _RUN + 1))


def _typed_run(piece: str) -> bool:
    steps = {ord(b) - ord(a) for a, b in zip(piece, piece[1:], strict=False)}
    return piece.isalnum() and len(steps) == 1 and steps <= {-1, 0, 1}


def _basic_password(value: str) -> str:
    """The password part of `user:password`, also base64-encoded (Basic credentials); else the value."""
    if ":" not in value:
        try:
            decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return value
        if ":" not in decoded or not decoded.isprintable():
            return value
        value = decoded
    return value.split(":", 1)[1].strip("\"'")


def _jwt_claims(value: str) -> dict | None:
    parts = value.split(".")
    if len(parts) != 3 or not parts[0].startswith("ey") or not parts[1].startswith("ey"):
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    return claims if isinstance(claims, dict) else None


def _example_claims(claims: dict) -> bool:
    expires = claims.get("exp")
    if isinstance(expires, int | float) and expires < time.time():
        return True
    text = json.dumps(claims).lower()
    return any(marker in text for marker in _EXAMPLE_CLAIMS)


def _introduced_as_default(text: str, start: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    if _DEFAULT.search(line):
        return True
    if line.lstrip().startswith("|"):
        return _default_column(text, line_start, start)
    before = [ln for ln in text[max(0, line_start - 400) : line_start].split("\n")[:-1] if ln.strip()]
    before = [ln for ln in before if not ln.lstrip().startswith(("```", "~~~"))][-2:]
    return any(_DEFAULT.search(ln) for ln in before)


def _default_column(text: str, line_start: int, start: int) -> bool:
    """Whether the table cell at `start` is in a column whose header says Default."""
    column = text[line_start:start].count("|")
    header = line_start
    while header > 0:
        previous = text.rfind("\n", 0, header - 1) + 1
        if not text[previous:header].lstrip().startswith("|"):
            break
        header = previous
    cells = text[header : text.find("\n", header)].split("|")
    return column < len(cells) and bool(_DEFAULT.search(cells[column]))
