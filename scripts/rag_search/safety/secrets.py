"""Keeping credentials out of the index.

Chunks are shown to a model and, in server mode, sent over the network, so a
secret that reaches the index has leaked. Two lines of defence:

- Files that exist to hold secrets are never indexed, whatever the ignore rules say.
- Every other document is redacted before it is parsed: each secret becomes
  `[REDACTED:<kind>]`. JSON and JSONL are decoded first (so `\\u005f` escapes cannot
  hide a token) and walked, so a value under a key that names a secret (`password`,
  `token`, `client-key-data`, `AccountKey`…) is redacted whatever it looks like;
  text (markdown, YAML, plain text) has its JSON escapes decoded and goes through the
  same rules line-wise. Provider token formats come from gitleaks' published rule set,
  used as data (gitleaks.py); the rest are ours (secret_rules.py finds them,
  secret_values.py judges values and key names). Every metadata field (file, URL,
  title, heading) is redacted as strictly as a note, whatever the document.

Documentation from git and web sources keeps the values the generic rules find when
they do not look like real secrets (secret_examples.py): a default admin key the docs
print on several pages, `ADMIN_PASSWORD=admin`, a sample JWT. Which values a source
shows in more than one document only the run sees: SourceCensus counts them.

What is deliberately kept: references (`${DB_PASSWORD}`, `<your-token>`, `****`),
placeholders but under a password key (`changeme`, values under 6 characters,
letters-only words under 16 characters), password hashes, public keys and
certificates, commit SHAs, checksums, UUIDs outside a secret key, and base64 images:
see secret_values.is_placeholder.
"""

import fnmatch
import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache

from ..core.progress import ROUTINE
from .secret_examples import example_spans, is_example_value
from .secret_rules import apply_spans, find_spans, unescape_json
from .secret_values import DNS_NAME, UUID, is_placeholder, kept_under, key_strength, kind_for, looks_like_credential

log = logging.getLogger("rag_search")

# Matched against the file name alone (not the path), case-insensitively.
SECRET_FILE_PATTERNS = (
    ".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.p12", "*.pfx",
    "credentials*", ".netrc", ".git-credentials", "*.kdbx", ".pgpass", ".npmrc", ".pypirc", "*.keystore", "*.jks",
)
NAMED_SECRET_FILES = 5  # the warning names the files when there are at most this many

KEPT_METADATA = frozenset({"content_hash", "indexed_at", "date", "date_ts", "kind", "source", "source_id", "chunk_index"})


_SECRET_FILE = re.compile("|".join(fnmatch.translate(pattern) for pattern in SECRET_FILE_PATTERNS))  # one match a name: walks are hot


def is_secret_file(name: str) -> bool:
    """True for files that exist to hold credentials: never indexed, and no ignore rule can re-include them."""
    return _SECRET_FILE.match(name.lower()) is not None


Documented = Callable[[str], bool]  # whether documentation's source shows a value elsewhere (SourceCensus.documented)


def redact(text: str, documentation: bool = False, documented: Documented | None = None) -> tuple[str, dict[str, int]]:
    """`text` with every secret replaced by [REDACTED:<kind>], and how many of each kind.

    `documentation`: the text is documentation from a git or web source, which keeps the values that do not look like
    real secrets (secret_examples.py); `documented` says which values its source shows in another document.
    """
    text = unescape_json(text)
    spans = find_spans(text)
    if documentation:
        examples = example_spans(text, spans, documented)
        spans = [span for span in spans if span not in examples]
    return apply_spans(text, spans)


def redact_document(kind: str, text: str, documentation: bool = False,
                    documented: Documented | None = None) -> tuple[str, dict[str, int]]:
    """A document's text with its secrets redacted: JSON and JSONL as decoded structures, anything else as text."""
    if kind not in ("json", "jsonl"):
        return redact(text, documentation, documented)
    walk = _JsonWalk(documentation, documented)
    try:
        if kind == "json":
            return json.dumps(walk.value(json.loads(text), None), ensure_ascii=False, indent=1), dict(walk.counts)
        return "\n".join(walk.line(line) for line in text.split("\n")), dict(walk.counts)
    except (ValueError, RecursionError):  # malformed or nested too deeply: the rules still see its text
        return redact(text, documentation, documented)


def redact_metadata(metadata: dict) -> tuple[dict, dict[str, int]]:
    """Every metadata string (file, URL, title, heading, tags) redacted as strictly as a note; bookkeeping fields
    are left alone."""
    counts: Counter = Counter()
    clean = {}
    for key, value in metadata.items():
        if key not in KEPT_METADATA and isinstance(value, str):
            value, found = redact_field(value)
            counts.update(dict(found))
        elif key not in KEPT_METADATA and isinstance(value, list):
            fields = [redact_field(item) if isinstance(item, str) else (item, ()) for item in value]
            value = [item for item, _ in fields]
            counts.update(dict(pair for _, found in fields for pair in found))
        clean[key] = value
    return clean, dict(counts)


@lru_cache(maxsize=4096)
def redact_field(value: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """One metadata string redacted (cached: a document's file and headings repeat on each of its chunks)."""
    text, found = redact(value)
    return text, tuple(found.items())


class SourceCensus:
    """Which credential-shaped values a documentation source shows in more than one document: its documented defaults
    (a gateway's admin key printed on every page), which it keeps. A value one document shows is redacted.

    A document redacted before a later one showed the same value is out of date: `flipped()` names it, for the caller
    to redact it again. `shown_before(value, key)` says whether the index already shows the value in another document
    of the source (what an earlier run kept). Values are held as digests, in memory only.
    """

    def __init__(self, shown_before: Callable[[str, str], bool] | None = None):
        self._shown: dict[bytes, set[str]] = {}
        self._lonely: dict[str, set[bytes]] = {}
        self._shown_before = shown_before

    def documented(self, key: str) -> Documented:
        """The `documented` question for the document `key`, answered from the documents counted so far."""
        lonely = self._lonely[key] = set()

        def check(value: str) -> bool:
            digest = hashlib.blake2b(value.encode("utf-8"), digest_size=16).digest()
            shown = self._shown.setdefault(digest, set())
            shown.add(key)
            if len(shown) > 1 or (self._shown_before is not None and self._shown_before(value, key)):
                return True
            lonely.add(digest)
            return False

        return check

    def lonely(self, key: str) -> bool:
        """Whether the document `key` redacted a value it alone has shown so far."""
        return bool(self._lonely.get(key))

    def flipped(self) -> list[str]:
        """Documents with a value redacted as shown once that another document has shown since."""
        return [key for key, lonely in self._lonely.items() if any(len(self._shown[digest]) > 1 for digest in lonely)]


class _JsonWalk:
    """A decoded JSON document's values redacted: the key-name rule for dict keys, the text rules for every string."""

    def __init__(self, documentation: bool, documented: Documented | None):
        self.documentation, self.documented = documentation, documented
        self.counts: Counter = Counter()

    def line(self, line: str) -> str:
        if not line.strip():
            return line
        try:
            data = json.loads(line)
        except ValueError:
            return self._text(line)
        return json.dumps(self.value(data, None), ensure_ascii=False)

    def value(self, value, key: str | None):
        if isinstance(value, dict):
            return {k: self.value(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v, key) for v in value]
        if isinstance(value, bool) or value is None:
            return value
        text = str(value)
        if isinstance(value, str):
            secret = key is not None and _secret_under_key(key, value)
        else:  # a number: redacted only under a strong key ("pin": 123456)
            secret = key is not None and key_strength(key) == "strong" and len(text) >= 4 and not is_placeholder(text)
        if secret and key is not None and not (self.documentation and is_example_value(text, kind_for(key), self.documented)):
            self.counts[kind_for(key)] += 1
            return f"[REDACTED:{kind_for(key)}]"
        return self._text(value) if isinstance(value, str) else value

    def _text(self, text: str) -> str:
        redacted, found = redact(text, self.documentation, self.documented)
        self.counts.update(found)
        return redacted


def _secret_under_key(key: str, value: str) -> bool:
    """Whether a string value is a secret because of the key it is under."""
    strength = key_strength(key)
    if not strength or not value or kept_under(key, value, quoted=True):
        return False
    if strength == "strong":
        return True
    return looks_like_credential(value) and not (DNS_NAME.match(value) and not UUID.fullmatch(value))


def warn_secret_files(source: str, paths: list[str]) -> None:
    """One warning a run: how many secret files were left out, naming them when there are few."""
    if not paths:
        return
    named = f": {', '.join(paths)}" if len(paths) <= NAMED_SECRET_FILES else ""
    log.warning("%s: left out %d file(s) that hold credentials (never indexed)%s", source, len(paths), named, extra=ROUTINE)
