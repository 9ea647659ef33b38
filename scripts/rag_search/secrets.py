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
  used as data (gitleaks.py); the rest are ours (secret_rules.py). Metadata that does
  not come from the text (URLs, paths) is redacted too.

What is deliberately kept: placeholders and references (`${DB_PASSWORD}`, `<your-token>`,
`changeme`, `****`), values under 6 characters, letters-only words under 16 characters,
password hashes, public keys and certificates, commit SHAs, checksums, UUIDs outside a
secret key, and base64 images: see secret_rules.is_placeholder.
"""

import fnmatch
import json
import logging
import re
from collections import Counter

from .secret_rules import (
    DNS_NAME,
    UUID,
    apply_spans,
    example_spans,
    find_spans,
    is_placeholder,
    key_strength,
    kind_for,
    looks_like_credential,
    unescape_json,
)

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


def redact(text: str, documentation: bool = False) -> tuple[str, dict[str, int]]:
    """`text` with every secret replaced by [REDACTED:<kind>], and how many of each kind.

    `documentation`: the text is documentation from a git or web source, where a value its own section calls an
    example is kept (secret_rules.example_spans).
    """
    text = unescape_json(text)
    spans = find_spans(text)
    if documentation:
        examples = set(example_spans(text, spans))
        spans = [span for span in spans if span not in examples]
    return apply_spans(text, spans)


def redact_document(kind: str, text: str, documentation: bool = False) -> tuple[str, dict[str, int]]:
    """A document's text with its secrets redacted: JSON and JSONL as decoded structures, anything else as text."""
    if kind not in ("json", "jsonl"):
        return redact(text, documentation)
    counts: Counter = Counter()
    try:
        if kind == "json":
            return json.dumps(_redact_value(json.loads(text), None, counts), ensure_ascii=False, indent=1), dict(counts)
        return "\n".join(_redact_json_line(line, counts) for line in text.split("\n")), dict(counts)
    except (ValueError, RecursionError):  # malformed or nested too deeply: the rules still see its text
        return redact(text)


def redact_metadata(metadata: dict) -> tuple[dict, dict[str, int]]:
    """Metadata strings (URLs, paths, titles) redacted like text; bookkeeping fields are left alone."""
    counts: Counter = Counter()
    clean = {}
    for key, value in metadata.items():
        if isinstance(value, str) and key not in KEPT_METADATA:
            value, found = redact(value)
            counts.update(found)
        clean[key] = value
    return clean, dict(counts)


def _redact_json_line(line: str, counts: Counter) -> str:
    if not line.strip():
        return line
    try:
        data = json.loads(line)
    except ValueError:
        redacted, found = redact(line)
        counts.update(found)
        return redacted
    return json.dumps(_redact_value(data, None, counts), ensure_ascii=False)


def _redact_value(value, key: str | None, counts: Counter):
    """A decoded JSON value with secrets redacted: the key-name rule for dict keys, the text rules for every string."""
    if isinstance(value, dict):
        return {k: _redact_value(v, str(k), counts) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, key, counts) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if not isinstance(value, str):  # a number: redacted only under a strong key ("pin": 123456)
        text = str(value)
        if key is not None and key_strength(key) == "strong" and len(text) >= 4 and not is_placeholder(text):
            counts[kind_for(key)] += 1
            return f"[REDACTED:{kind_for(key)}]"
        return value
    if key is not None and _secret_under_key(key, value):
        counts[kind_for(key)] += 1
        return f"[REDACTED:{kind_for(key)}]"
    text, found = redact(value)
    counts.update(found)
    return text


def _secret_under_key(key: str, value: str) -> bool:
    """Whether a string value is a secret because of the key it is under."""
    strength = key_strength(key)
    if not strength or not value or is_placeholder(value, quoted=True):
        return False
    if strength == "strong":
        return True
    return looks_like_credential(value) and not (DNS_NAME.match(value) and not UUID.fullmatch(value))


def warn_secret_files(source: str, paths: list[str]) -> None:
    """One warning a run: how many secret files were left out, naming them when there are few."""
    if not paths:
        return
    named = f": {', '.join(paths)}" if len(paths) <= NAMED_SECRET_FILES else ""
    log.warning("%s: left out %d file(s) that hold credentials (never indexed)%s", source, len(paths), named)
