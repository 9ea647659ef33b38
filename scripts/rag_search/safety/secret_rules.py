"""Our own secret rules, for what provider token formats (gitleaks.py) do not cover: finding secrets' spans in text.

- Private key blocks (PEM and PGP, through the END line, or the base64 lines of a truncated block; also with
  literal `\\n` escapes inside JSON strings; blocks with < 64 base64 characters are examples).
- Formats this gitleaks release lacks or matches too narrowly (EXTRA_RULES), and a 40-character AWS-secret-shaped
  string anywhere (mixed case, >= 3 digits, high entropy: an AWS secret in prose).
- Authorization headers, URL userinfo passwords (`postgres://user:[REDACTED:url-password]@host`), netrc lines,
  .npmrc auth lines (the legacy `:_authToken=<uuid>` too), XML elements named like secrets, k8s env name/value
  pairs, markdown table rows naming a secret, `--flag value`, the CLIs whose short flag is a password (mysql -pX,
  sshpass -p, docker login -p, redis-cli -a, curl -u user:pass), and prose ("the admin key is ...").
- The key-name rule: `key: value`, `key = value`, `"key": "value"`, `KEY=value`, `&key=value`, `Key=value;`, YAML
  `key: |` blocks, where the key's last word names a secret. Strong keys (the password family, qualified *_key,
  client-key-data, `sig` in a URL query) get any value redacted but placeholders (a password: but references, see
  secret_values.kept_under); weak keys (token, auth, secret, credentials) only values that look like a credential
  (not `my-tls-secret`, a Kubernetes object name).

Whether a key names a secret and whether a value is a placeholder or looks like a credential is judged in
secret_values.py. Known public values (NATS JWTs, meeting-link passcodes) are left out. Every span is a secret in a
personal note; which ones documentation keeps as examples is decided in secret_examples.py.

`find_spans(text)` returns (start, end, kind) for every rule, gitleaks' included; secrets.py merges and applies them.
"""

import base64
import json
import re
from collections import Counter
from functools import cache

from .gitleaks import GitleaksRules, entropy
from .secret_values import DNS_NAME, UUID, is_placeholder, kept_under, key_strength, kind_for, looks_like_credential

Span = tuple[int, int, str]

_B = r"(?<![A-Za-z0-9_-])"  # not in the middle of a token
_E = r"(?![A-Za-z0-9_-])"
# (kind, literal that must be in the text, regex): the regexes start with their literal so `re` can search fast.
EXTRA_RULES = [
    ("anthropic-api-key", "sk-ant-", re.compile(r"sk-ant-(?<![\w-]sk-ant-)(?:api|admin|sid)\d{2}-[A-Za-z0-9_-]{80,}")),
    ("openai-api-key", "sk-", re.compile(r"sk-(?<![\w-]sk-)(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,}")),
    ("openai-api-key", "sk-", re.compile(r"sk-(?<![\w-]sk-)[A-Za-z0-9]{48}" + _E)),
    ("huggingface-access-token", "hf_", re.compile(r"hf_(?<![\w-]hf_)[A-Za-z0-9]{30,40}" + _E)),
    ("pypi-upload-token", "pypi-", re.compile(r"pypi-(?<![\w-]pypi-)AgE[A-Za-z0-9_-]{50,}")),
    ("heroku-api-key", "HRKU-", re.compile(r"HRKU-(?<![\w-]HRKU-)[A-Za-z0-9_-]{60,}")),
    ("google-oauth-client-secret", "GOCSPX-", re.compile(r"GOCSPX-(?<![\w-]GOCSPX-)[A-Za-z0-9_-]{28}" + _E)),
    ("google-oauth-access-token", "ya29.", re.compile(r"ya29\.(?<![\w-]ya29\.)[A-Za-z0-9_-]{30,}")),
    ("kubeadm-bootstrap-token", "--token", re.compile(r"(?<=--token[ =])[a-z0-9]{6}\.[a-z0-9]{16}(?![A-Za-z0-9.])")),
]
# "the staging Heroku API key is 0f9c...": a credential-looking value right after a secret noun and "is"/":"/"="
_PROSE = re.compile(  # run on lower-cased text
    r"\b(?:(?:api|access|admin|master|root|license|signing)[ _-]?key|secret(?:[ _-]?key)?|token|password|passphrase)\b"
    r"(?:[ \t]+[a-z]+){0,4}?[ \t]+(?:is|was|=|:)[ \t]+[`'\"]?"
    r"([A-Za-z0-9][A-Za-z0-9_\-+/=.~]{15,})"
)
# Formats where the key and value are not an assignment: netrc lines, XML elements, k8s env name/value pairs, and
# the few CLIs whose short flag is a password (mysql -pX, sshpass -p X, docker login -p X, redis-cli -a X).
_NETRC = re.compile(r"\bmachine[ \t]+\S+[ \t\n]+(?:login[ \t]+\S+[ \t\n]+)?password[ \t]+(\S+)")
_XML = re.compile(r"<([A-Za-z_][\w.-]*)>([^<>\n]{1,300})</\1>")
_ENV_PAIR = re.compile(r"\bname:[ \t]*[\"']?([A-Za-z_][\w.-]*)[\"']?[ \t]*\n[ \t]*(?:[\w.\[\]-]*\.)?value:[ \t]*(\S[^\n]*)")
_CLI = re.compile(
    r"\b(?:(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?[ \t]-p([^\s\-][^\s]*)|sshpass[ \t]+-p[ \t]*(\S+)"
    r"|docker[ \t]+login\b[^\n]*?[ \t]-p[ \t]+(\S+)|redis-cli\b[^\n]*?[ \t]-a[ \t]+(\S+)"
    r"|curl\b[^\n]*?[ \t](?:-u|--user)(?:=|[ \t]+)[\"']?[^\s:\"'$]+:([^\s\"']+))"  # curl -u user:password
)
_CLI_NAMES = ("mysql", "mariadb", "sshpass", "docker", "redis-cli", "curl")
# .npmrc auth lines, the legacy forms too: `//registry.npmjs.org/:_authToken=<uuid>`, `_auth=<base64>`, `_password=`
_NPMRC = re.compile(r"(?<![^\s:])_(?:authToken|auth|password)[ \t]*=[ \t]*[\"']?([^\s\"'`]+)")
_TABLE_ROW = re.compile(r"^[ \t]*\|(.*\|)[ \t]*$", re.M)
_TABLE_KEY = re.compile(r"[A-Za-z_][\w.\[\]-]*")
_TABLE_VALUE = re.compile(r"(?=[^\d]*\d)[\w\-+/=.~!@#%^&*:]{8,}")  # one token with a digit: not a type, a link or prose
# "--password hunter2" (a flag and its value, space separated)
_FLAG = re.compile(r"--(?<![\w-]--)([A-Za-z][\w-]*)[ \t]+([^\s\-$<{\[\"'`][^\s\"'`]*)")
_AWS_SHAPED = re.compile(r"(?<![A-Za-z0-9/+=_.-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_-])")

_KEY_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----"  # group 2 always takes part, so \2 below can match
    # through the END line; or, for a truncated block, its base64 runs and armor headers ("Version: ...")
    r"(?:(?:(?!-----)[\s\S])*?-----END \1PRIVATE KEY\2-----|(?:(?:\s|\\n)*(?:[A-Za-z0-9+/=\\]{16,}|[A-Za-z-]+: [^\n]*))*)"
)
_HEADER = re.compile(
    r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(bearer|basic|token|digest)[ \t]+)?([A-Za-z0-9._~+/=:-]{8,})"
)
_BARE_BEARER = re.compile(r"\b(?i:bearer)[ \t]+(?=[A-Za-z0-9._~+/=-]*[0-9])([A-Za-z0-9._~+/=-]{20,})")
_URL_USERINFO = re.compile(r"\b([a-zA-Z][\w+.-]{1,20}://)([^\s:/?#@\"'<>\[\]]*):([^\s/?#@\"'<>]+)@(?=[^\s/?#@\"'<>]*[A-Za-z0-9\]])")
_MEETING_LINK = re.compile(r"https?://[^\s/]*zoom[^\s/]*\.[a-z]+/", re.I)
_JSON_ESCAPE = re.compile(r"\\u00([2-7][0-9a-fA-F])|\\/")

# --- the key-name rule --------------------------------------------------------------------

_KEY_CORE_PATTERN = r"(?:pass|pwd|secret|token|auth|key|sig|cred)[A-Za-z0-9_-]*([\"']?)[ \t]*(:=|=>|=(?!=)|:(?![:/\w]))"
_KEY_CORE = re.compile("(?i)" + _KEY_CORE_PATTERN)
_KEY_CORE_LOW = re.compile(_KEY_CORE_PATTERN)  # on lower-cased text: 6x faster than (?i) in `re`
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.$@[]-")
MAX_KEY = 120  # characters looked back for the start of a key


def _value_span(text: str, pos: int, sep: str) -> tuple[int, int, bool]:
    """(start, end, quoted) of the value after a separator ending at `pos`."""
    n = len(text)
    while pos < n and text[pos] in " \t":
        pos += 1
    if pos < n and text[pos] in "\"'`":
        quote = text[pos]
        end = pos + 1
        while end < n and text[end] != quote and text[end] != "\n":
            end += 2 if text[end] == "\\" else 1
        return pos + 1, min(end, n), True
    if sep == ":" or sep == ":=":  # YAML-ish: the rest of the line, less a trailing comment
        end = text.find("\n", pos)
        end = n if end < 0 else end
        line_start = text.rfind("\n", 0, pos) + 1
        if "{" in text[line_start:pos] or "[" in text[line_start:pos]:  # a flow mapping: {user: a, password: b}
            stop = re.search(r",\s|[}\]]", text[pos:end])
            if stop:
                end = pos + stop.start()
        comment = re.search(r"[ \t]#", text[pos:end])
        if comment:
            end = pos + comment.start()
        while end > pos and text[end - 1] in " \t,;":
            end -= 1
        return pos, end, False
    end = pos
    while end < n and text[end] not in " \t\r\n&;,\"'<>)]}|`":
        if text[end] in "{(" and end > pos and text[end - 1] in "${":  # ${VAR}, $(cmd), {{ x }}: keep them whole
            close = text.find("}" if text[end] == "{" else ")", end)
            end = close + 1 if close > 0 else end + 1
            continue
        end += 1
    return pos, end, False


def _block_scalar(text: str, pos: int) -> tuple[int, int] | None:
    """For `key: |` / `key: >-`: the span of the indented lines that follow."""
    line_start = text.rfind("\n", 0, pos) + 1
    indent = len(text[line_start:pos]) - len(text[line_start:pos].lstrip(" "))
    eol = text.find("\n", pos)
    if eol < 0:
        return None
    end = start = eol + 1
    for line in text[start:].split("\n"):
        if line.strip() and len(line) - len(line.lstrip(" ")) <= indent:
            break
        end += len(line) + 1
    end = min(end, len(text))
    return (start, end - 1) if end - 1 > start else None


def _key_value_spans(text: str, low: str | None = None) -> list[Span]:
    spans = []
    low = text.lower() if low is None else low
    matches = _KEY_CORE_LOW.finditer(low) if len(low) == len(text) else _KEY_CORE.finditer(text)
    for m in matches:
        key_start = m.start()
        while key_start > 0 and text[key_start - 1] in _KEY_CHARS and m.start() - key_start < MAX_KEY:
            key_start -= 1
        key = text[key_start : m.end(1) - len(m.group(1))] if m.group(1) else text[key_start : m.start(2)].rstrip(" \t")
        strength = key_strength(key)
        if not strength:
            continue
        before = text[key_start - 1] if key_start else "\n"
        if before in ":/\\" or (before.isalnum()):  # part of a URN or a path (urn:k8s:secret:x), not a key
            continue
        if key.lower().strip("\"'") in {"sig", "signature"} and before not in "?&;":  # SAS sig: only in a URL query
            continue
        sep = m.group(2)
        start, end, quoted = _value_span(text, m.end(), sep)
        value = text[start:end]
        if sep == ":" and not quoted and re.fullmatch(r"[|>][-+]?\d?", value):
            block = _block_scalar(text, start)
            if block and strength == "strong" and "-----BEGIN" not in text[block[0] : block[1]]:  # key blocks: _KEY_BLOCK
                spans.append((block[0], block[1], kind_for(key)))
            continue
        if not value or kept_under(key, value, quoted):
            continue
        if strength == "weak" and not looks_like_credential(value):
            continue
        if strength == "weak" and DNS_NAME.match(value.lower()) and not any(c.isupper() for c in value) and not UUID.fullmatch(value):
            continue
        spans.append((start, end, kind_for(key)))
    return spans


@cache
def _gitleaks() -> GitleaksRules:
    return GitleaksRules()


def find_spans(text: str) -> list[Span]:
    """Every secret any rule finds in `text`: (start, end, kind), possibly overlapping; known non-secrets left out.

    Markdown escapes cannot hide one: `ghp\\_…` (how trafilatura writes every underscore of a web page, and how
    authors escape them by hand) is also read with its escapes removed, and what is found there is mapped back.
    """
    spans = [span for span in _all_spans(text) if not _known_public(text, span)]
    if _MARKDOWN_ESCAPE.search(text):
        plain, origin = _without_escapes(text)
        origin.append(len(text))
        found = [span for span in _all_spans(plain) if not _known_public(plain, span)]
        spans += [(origin[start], origin[end], kind) for start, end, kind in found]
    return spans


_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # a backslash before ASCII punctuation


def _without_escapes(text: str) -> tuple[str, list[int]]:
    """`text` with markdown's backslash escapes removed, and for each of its characters its index in `text`."""
    pieces: list[str] = []
    origin: list[int] = []
    last = 0
    for match in _MARKDOWN_ESCAPE.finditer(text):
        pieces.append(text[last : match.start()])
        origin.extend(range(last, match.start()))
        pieces.append(match.group(1))
        origin.append(match.start() + 1)
        last = match.end()
    pieces.append(text[last:])
    origin.extend(range(last, len(text)))
    return "".join(pieces), origin


def _known_public(text: str, span: Span) -> bool:
    """Formats that look secret but are not: NATS JWTs (public claims signed with nkeys; the seed is the secret),
    the passcode in a meeting invite link (part of the shared link), and values holding a 1234567890 run (examples)."""
    start, end, kind = span
    value = text[start:end]
    if "1234567890" in value:
        return True
    if kind == "jwt":
        return _jwt_header(value).get("alg", "").lower().startswith("ed25519")
    if kind in ("password", "url-password"):
        url_start = max(text.rfind(" ", 0, start), text.rfind("(", 0, start), text.rfind("\n", 0, start)) + 1
        return bool(_MEETING_LINK.match(text, url_start))
    return False


def _jwt_header(token: str) -> dict:
    try:
        header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "==="))
    except (ValueError, UnicodeDecodeError):
        return {}
    return header if isinstance(header, dict) else {}


def _all_spans(text: str) -> list[Span]:
    low = text.lower()
    spans = _key_blocks(text, low) + _gitleaks().spans(text, low) + _formats(text) + _headers(text, low) + _prose(text, low)
    spans += _netrc(text, low) + _xml(text) + _env_pairs(text, low) + _clis(text, low) + _flags(text) + _npmrc(text)
    spans += _table_rows(text)
    if "bearer" in low:
        spans += [(m.start(1), m.end(1), "bearer-token") for m in _BARE_BEARER.finditer(text)]
    if "://" in text and "@" in text:
        spans += url_spans(text)
    return spans + _key_value_spans(text, low)


def _key_blocks(text: str, low: str) -> list[Span]:
    if "private key" not in low:
        return []
    spans = []
    for m in _KEY_BLOCK.finditer(text):
        body = m.group(0).split("-----", 2)[-1]
        if len(re.findall(r"[A-Za-z0-9+/=]", body)) >= 64 and "..." not in body:  # not an empty or elided example
            spans.append((m.start(), m.end(), "private-key"))
    return spans


def _formats(text: str) -> list[Span]:
    """EXTRA_RULES, and AWS-secret-shaped strings anywhere."""
    spans = [(m.start(), m.end(), kind) for kind, literal, regex in EXTRA_RULES if literal in text for m in regex.finditer(text)]
    for m in _AWS_SHAPED.finditer(text):
        value = m.group(0)
        if (sum(c.isdigit() for c in value) >= 3 and sum(c.isupper() for c in value) >= 5 and sum(c.islower() for c in value) >= 5
                and "EXAMPLE" not in value and entropy(value) > 4.3):
            spans.append((m.start(), m.end(), "aws-secret-access-key"))
    return spans


def _headers(text: str, low: str) -> list[Span]:
    if "authorization" not in low:
        return []
    return [(m.start(2), m.end(2), "authorization-header") for m in _HEADER.finditer(text) if not is_placeholder(m.group(2), quoted=True)]


def _prose(text: str, low: str) -> list[Span]:
    if len(low) != len(text):  # lower-casing changed offsets (rare Unicode): skip the prose rule
        return []
    spans = []
    for m in _PROSE.finditer(low):
        value = text[m.start(1) : m.end(1)].rstrip(".,;:")
        if looks_like_credential(value) and not is_placeholder(value, quoted=True) and any(c.isdigit() for c in value):
            spans.append((m.start(1), m.start(1) + len(value), "credential"))
    return spans


def _netrc(text: str, low: str) -> list[Span]:
    if "machine" not in low or "password" not in low:
        return []
    return [(m.start(1), m.end(1), "password") for m in _NETRC.finditer(text) if not kept_under("password", m.group(1))]


def _xml(text: str) -> list[Span]:
    spans = []
    for m in _XML.finditer(text) if "</" in text else ():
        strength = key_strength(m.group(1))
        value = m.group(2).strip()
        if strength and not kept_under(m.group(1), value, True) and (strength == "strong" or looks_like_credential(value)):
            spans.append((m.start(2), m.end(2), kind_for(m.group(1))))
    return spans


def _env_pairs(text: str, low: str) -> list[Span]:
    spans = []
    for m in _ENV_PAIR.finditer(text) if "value:" in low else ():
        strength = key_strength(m.group(1))
        start, end, quoted = _value_span(text, m.start(2), ":")
        value = text[start:end]
        if strength and value and not kept_under(m.group(1), value, quoted) and (strength == "strong" or looks_like_credential(value)):
            spans.append((start, end, kind_for(m.group(1))))
    return spans


def _clis(text: str, low: str) -> list[Span]:
    if not any(name in low for name in _CLI_NAMES):
        return []
    spans = []
    for m in _CLI.finditer(text):
        group = next(g for g in range(1, 6) if m.group(g))
        start, end = m.span(group)
        if text[start] in "'\"" and end - start > 1:
            start, end = start + 1, end - (text[end - 1] == text[start - 1])
        if not kept_under("password", text[start:end], True):
            spans.append((start, end, "password"))
    return spans


def _npmrc(text: str) -> list[Span]:
    if "_auth" not in text and "_password" not in text:
        return []
    return [(m.start(1), m.end(1), "npmrc-auth-token") for m in _NPMRC.finditer(text) if not kept_under("password", m.group(1))]


def _table_rows(text: str) -> list[Span]:
    """Markdown table rows whose first cell names a secret (`| DB_PASSWORD | Harbor4821!x7Q |`): credential-looking cells."""
    spans = []
    for m in _TABLE_ROW.finditer(text) if "|" in text else ():
        bars = [m.start(1) - 1] + [i for i in range(m.start(1), m.end(1)) if text[i] == "|" and text[i - 1] != "\\"]
        cells = [(bars[i] + 1, bars[i + 1]) for i in range(len(bars) - 1)]
        key = text[cells[0][0] : cells[0][1]].strip(" \t`*")
        if len(cells) < 2 or not _TABLE_KEY.fullmatch(key) or not key_strength(key):
            continue
        for start, end in cells[1:]:
            while start < end and text[start] in " \t`\"'":
                start += 1
            while end > start and text[end - 1] in " \t`\"'":
                end -= 1
            value = text[start:end]
            if _TABLE_VALUE.fullmatch(value) and looks_like_credential(value) and not is_placeholder(value, True):
                spans.append((start, end, kind_for(key)))
    return spans


def _flags(text: str) -> list[Span]:
    spans = []
    for m in _FLAG.finditer(text) if "--" in text else ():
        strength = key_strength(m.group(1))
        value = m.group(2)
        if strength and not kept_under(m.group(1), value) and (strength == "strong" or looks_like_credential(value)):
            spans.append((m.start(2), m.end(2), kind_for(m.group(1))))
    return spans


def url_spans(text: str) -> list[Span]:
    """URL userinfo passwords (scheme, user and host are kept)."""
    spans = []
    for m in _URL_USERINFO.finditer(text):
        password = m.group(3)
        if password != m.group(2) and not is_placeholder(password, quoted=True):
            spans.append((m.start(3), m.end(3), "url-password"))
    return spans


def apply_spans(text: str, spans: list[Span]) -> tuple[str, dict[str, int]]:
    """`text` with the spans replaced by [REDACTED:<kind>] (overlaps merged), and how many of each kind."""
    if not spans:
        return text, {}
    # Longer, more specific spans first at the same start; a span inside another is dropped, overlaps merge.
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[list] = []
    for start, end, kind in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, kind])
    counts: Counter = Counter()
    out, last = [], 0
    for start, end, kind in merged:
        out += [text[last:start], f"[REDACTED:{kind}]"]
        counts[kind] += 1
        last = end
    out.append(text[last:])
    return "".join(out), dict(counts)


def unescape_json(text: str) -> str:
    """JSON escapes of ASCII characters decoded (`\\u005f` -> `_`, `\\/` -> `/`): an escaped token in a code fence is seen."""
    if "\\u00" not in text and "\\/" not in text:
        return text
    return _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else "/", text)


