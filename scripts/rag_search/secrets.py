"""Keeping credentials out of the index.

Chunks are shown to a model and, in server mode, sent over the network, so a
secret that reaches the index has leaked. Files that exist to hold secrets are
never indexed, whatever the ignore rules say; high-confidence secret patterns in
any other text are replaced by `[REDACTED:<kind>]` before chunking. The patterns
are anchored and need realistic lengths, so ordinary prose is left alone.
"""

import fnmatch
import logging
import re

log = logging.getLogger("rag_search")

# Matched against the file name alone (not the path), case-insensitively.
SECRET_FILE_PATTERNS = (
    ".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.p12", "*.pfx",
    "credentials*", ".netrc", ".git-credentials", "*.kdbx", ".pgpass", ".npmrc", ".pypirc", "*.keystore", "*.jks",
)
NAMED_SECRET_FILES = 5  # the warning names the files when there are at most this many

_TOKEN = r"[A-Za-z0-9._~+/=-]"  # characters of a bearer token (RFC 6750 b64token)
_NOT_AFTER_WORD = r"(?<![A-Za-z0-9_])"

# (kind, pattern) in the order applied. A pattern with a group named `keep` keeps that
# part (the key name of an assignment) and replaces only what follows it.
REDACTIONS = [
    # A PEM private key of any type, through its END line; a truncated one through its base64 lines.
    # The body never spans "-----", so many headers without an END cost linear time, not quadratic.
    ("private-key", re.compile(
        r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----"
        r"(?:(?:(?!-----)[\s\S])*?-----END \1PRIVATE KEY-----|(?:\s*[A-Za-z0-9+/=\\]{16,})*)"
    )),
    ("github-token", re.compile(_NOT_AFTER_WORD + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{82,})")),
    ("gitlab-token", re.compile(_NOT_AFTER_WORD + r"glpat-[0-9A-Za-z_-]{20,}")),
    ("slack-webhook", re.compile(r"(?:https?://)?hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+")),
    ("slack-token", re.compile(_NOT_AFTER_WORD + r"xox[abposr]-[0-9]+-[0-9A-Za-z-]{10,}")),
    ("aws-access-key-id", re.compile(_NOT_AFTER_WORD + r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    ("aws-secret-access-key", re.compile(
        r"(?P<keep>(?i:(?:aws_?)?secret_?access_?key)[\"']?[ \t]*[:=][ \t]*[\"']?)[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"
    )),
    ("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    ("bearer-token", re.compile(r"(?P<keep>(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:bearer)[ \t]+)" + _TOKEN + "{8,}")),
    # Without the header name: a long token that has a digit, so "Bearer token-based-authentication" stays.
    ("bearer-token", re.compile(r"(?P<keep>\b(?i:bearer)[ \t]+)(?=" + _TOKEN + "*[0-9])" + _TOKEN + "{20,}")),
]


def is_secret_file(name: str) -> bool:
    """True for files that exist to hold credentials: never indexed, and no ignore rule can re-include them."""
    name = name.lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_FILE_PATTERNS)


def redact(text: str) -> tuple[str, dict[str, int]]:
    """`text` with every secret replaced by [REDACTED:<kind>], and how many of each kind."""
    found: dict[str, int] = {}
    for kind, pattern in REDACTIONS:
        text, count = pattern.subn(_replacement(kind), text)
        if count:
            found[kind] = found.get(kind, 0) + count
    return text, found


def _replacement(kind: str):
    tag = f"[REDACTED:{kind}]"
    return lambda match: (match.groupdict().get("keep") or "") + tag


def warn_secret_files(source: str, paths: list[str]) -> None:
    """One warning a run: how many secret files were left out, naming them when there are few."""
    if not paths:
        return
    named = f": {', '.join(paths)}" if len(paths) <= NAMED_SECRET_FILES else ""
    log.warning("%s: left out %d file(s) that hold credentials (never indexed)%s", source, len(paths), named)
