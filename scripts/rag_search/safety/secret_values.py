"""Judging a value and the key that names it: is the value a placeholder or a credential, is the key a secret's name.

- Key names (`key_strength`, `kind_for`): a key's last word (`DB_PASSWORD`, `users[0].user.token`, `AccountKey`)
  says whether it names a secret. Strong keys (the password family, qualified *_key, client-key-data, `sig`) get any
  value redacted but placeholders; weak keys (token, auth, secret, credentials) only values that `looks_like_credential`
  (not `my-tls-secret`, a Kubernetes object name).
- Slots to fill in (`is_written_placeholder`: `{sasl_password}`, `<your-key>`, `${TOKEN}`) are how documentation
  writes a value the reader supplies; only documentation asks (secret_examples.py), as a note may hold `{...}` itself.
- References always survive (`is_reference`): empty values, booleans, references and templates (`${VAR}`,
  `{{ ... }}`, `<...>`, `os.environ[...]`), masks (`xxxx`, `****`), elided values (`...`), code, password hashes,
  paths to key files and unquoted prose. Placeholders (`is_placeholder`: also values under 6 characters, letters-only
  values under 16, example words even in leetspeak (`changeme`, `s3cr3t!`), base64 that decodes to such a word)
  survive too, except under a password key (`kept_under`): `ADMIN_PASSWORD=admin` in a note is a password.

The rules that find values in text (secret_rules.py) and the JSON walk (secrets.py) both ask these questions.
"""

import base64
import re

# --- key names ---------------------------------------------------------------------------

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
PASSWORD_WORDS = {"password", "passwd", "pwd", "passphrase", "passcode", "passwort", "contrasena", "motdepasse"}
JOINED_STRONG = frozenset((
    "apikey accesskey secretkey privatekey accountkey authkey masterkey sharedkey clientkey signingkey "
    "encryptionkey apisecret clientsecret appsecret authtoken accesstoken "
).split())
KEY_QUALIFIERS = frozenset((
    "api access secret private account auth client encryption signing master storage shared license app "
    "subscription service webhook consumer deploy admin management hmac sas session root server write read ingest "
    "integration personal live test "
).split())
WEAK_WORDS = {"token", "secret", "auth", "credential", "credentials", "creds", "cred"}


def key_strength(key: str) -> str | None:
    """'strong', 'weak' or None, from the key's last word (`DB_PASSWORD`, `users[0].user.token`, `AccountKey`)."""
    last = re.split(r"[.\[\]/:]", key.strip("\"'[]."))[-1] or key
    words = [w.lower() for w in _CAMEL.findall(last.replace("-", "_"))]
    if not words:
        return None
    word = words[-1]
    joined = "".join(words)
    if word in PASSWORD_WORDS or (word == "pass" and len(words) > 1) or joined in JOINED_STRONG and word != "token":
        return "strong"
    if word.endswith(("password", "passwd")) and word.isalpha():  # PGPASSWORD, dbpassword
        return "strong"
    if word == "key" and len(words) > 1 and words[-2] in KEY_QUALIFIERS:
        return "strong"
    if word == "data" and len(words) > 1 and words[-2] == "key":  # kubeconfig client-key-data
        return "strong"
    if joined in {"sig", "sharedaccesssignature"} and len(words) == 1 or joined == "sharedaccesssignature":
        return "strong"
    if word in WEAK_WORDS or joined.endswith("token"):
        return "weak"
    return None


def kind_for(key: str) -> str:
    last = re.split(r"[.\[\]/:]", key.strip("\"'[]."))[-1] or key
    words = [w.lower() for w in _CAMEL.findall(last.replace("-", "_"))]
    if words and (words[-1] in PASSWORD_WORDS or words[-1] == "pass" or words[-1].endswith(("password", "passwd"))):
        return "password"
    if words[-2:] == ["key", "data"]:
        return "client-key-data"
    joined = "".join(words)
    if joined == "accountkey":
        return "azure-account-key"
    if joined == "sig":
        return "sas-signature"
    if words and words[-1] == "token" or joined.endswith("token"):
        return "token"
    if words and words[-1] == "auth":
        return "auth"
    if words and words[-1] in {"secret"} or "secret" in joined:
        return "secret"
    if words and words[-1] == "key":
        return "api-key"
    return "credential"


# --- values ------------------------------------------------------------------------------

_BOOLEAN_ISH = frozenset("true false yes no on off null none nil undefined ~ required optional enabled disabled true, false,".split())
PLACEHOLDER_VALUES = frozenset((
    "password passwd pass pwd secret mysecret mypassword yourpassword token apikey changeme changeit admin root "
    "test testing foo bar foobar baz example sample dummy value string str hidden masked redacted todo tbd none "
    "empty secretpassword s3cr3t p@ssw0rd passw0rd hunter2 letmein default guest user username qwerty abc123 123456 "
    "12345678 1234 0000 xyz "
).split())
PLACEHOLDER_WORDS = frozenset((
    "your example examples changeme placeholder dummy sample fake redacted replace here insert my secret password "
    "token key xxx xxxx some super random generated foo bar test demo secure strong the a pass api value real "
    "actual env "
).split())
_TEMPLATE = re.compile(
    r"^(?:\$\{.*\}|\$\(.*\)|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*\}\}|\{%.*%\}|<[^<>]*>|%[A-Za-z_][A-Za-z0-9_]*%|@[A-Za-z_]+@"
    r"|\[[^\]]*\]|!vault.*|!!.*|\(.*\)|ENC\[.*\]|vault:.*|ref\+.*|secret:.*|arn:aws:.*|projects/.*/secrets/.*)$",
    re.S,
)
_REFERENCE = re.compile(
    r"(?:os\.environ|os\.getenv|process\.env|getenv\(|ENV\[|env\(|System\.getenv|secrets\.|vars\.|\.Values\.|"
    r"valueFrom|secretKeyRef|lookup\(|var\.|local\.|data\.)"
)
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
DNS_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)+(?:\.[a-z0-9]+(?:-[a-z0-9]+)*)*$")
_PATHLIKE = re.compile(r"^(?:~?/|\./|\.\./|[A-Za-z]:\\|file:)|\.(?:pem|key|crt|cer|p12|pfx|json|txt|gpg|asc|jks|keystore)$")
_REPEATED = re.compile(r"^(.)\1{2,}$")
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


_HASHED = re.compile(r"^\$(?:2[abxy]?|apr1|1|5|6|y|gy|7|argon2(?:id|i|d)?|pbkdf2[\w-]*|scrypt|sha1|md5)\$")
_EXAMPLE_PREFIX = re.compile(
    r"^(?:my|your|some|super|the|a|an|test|dummy|example|sample|fake|default|demo|foo|bar)[-_]?"
    r"(?:secret|password|passwd|pass|pwd|key|token|apikey|api[-_]key|credential)",
    re.I,
)
_B64_TEXT = re.compile(r"^(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")


_LEET = str.maketrans("013457@$!", "oieastasi")
EXAMPLE_WORDS = frozenset((
    "top secret super my your pass password passwd word admin root test change me it example default letmein qwerty "
    "hunter demo user guest foo bar baz sample dummy s very strong secure key token the a db sql mysql postgres "
    "redis "
).split())


def _example_words(low: str) -> bool:
    """True if the value is only example words, leetspeak allowed, plus digits/punctuation: s3cr3t!, T0pS3cr3t, P@ssw0rd1."""
    core = re.sub(r"[^a-z]", "", low.rstrip("0123456789!?.#*-_").translate(_LEET))
    if not core:
        return False
    reachable = [True] + [False] * len(core)  # word segmentation over EXAMPLE_WORDS
    for i in range(len(core)):
        if reachable[i]:
            for word in EXAMPLE_WORDS:
                if core.startswith(word, i):
                    reachable[i + len(word)] = True
    return reachable[-1]


def _decoded_text(v: str) -> str | None:
    """The text a short base64 value decodes to, when it is printable (YWRtaW4= -> admin)."""
    if len(v) > 200 or len(v) < 8 or not _B64_TEXT.match(v):
        return None
    try:
        decoded = base64.b64decode(v).decode("ascii").rstrip("\n")
    except ValueError:
        return None
    return decoded if decoded.isprintable() else None


_MASK = re.compile(r"[*xX.#•_-]{3,}|[0-]*0[0-]*|.*[*•]{4}.*")  # ****, xxxx, 0000…-0000, hvs.****** (masked)
_PLACEHOLDER_MARKS = {"your", "example", "placeholder", "replace", "redacted", "dummy", "xxx", "xxxx"}
# A type in usage text or a schema (`--password string   Password for basic auth`), not a value.
_TYPE_NAMES = frozenset("string strings str int integer bool boolean float number duration bytes stringarray stringslice "
                        "object array value text".split())
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # self.password, cfg.db.password: a variable


def is_reference(value: str, quoted: bool = False) -> bool:
    """True for values that are no literal at all: empty, booleans, type names, references and templates, masks,
    elided values, code, password hashes, paths, unquoted prose, and values that say they are placeholders
    (`<your-token>`)."""
    v = value.strip()
    low = v.lower()
    if not v or "..." in v or "\u2026" in v or "$(" in v or "${" in v or "{{" in v or "%{" in v:
        return True
    if re.match(r"\\?\$[A-Za-z_{(]", v) or _HASHED.match(v) or low.startswith(("urn:", "arn:", "http://", "https://")):
        return True
    if not quoted and ("(" in v or v[0] in "{[" or v.endswith(";")):  # code or a structure, not a value
        return True
    if low in _BOOLEAN_ISH or low in _TYPE_NAMES or _MASK.fullmatch(v) or re.fullmatch(r"-?\d{1,3}(?:\.\d+)?", v):
        return True
    if _TEMPLATE.match(v) or _REFERENCE.search(v) or _ENV_NAME.match(v) or _REPEATED.match(v) or _PATHLIKE.search(v):
        return True
    if not quoted and re.search(r"\s", v):  # unquoted prose: "at least 12 characters"
        return True
    return any(w in _PLACEHOLDER_MARKS for w in re.split(r"[^a-z0-9]+", low))


def is_placeholder(value: str, quoted: bool = False, _depth: int = 0) -> bool:
    """True for values that are not secrets: references (is_reference), example words even in leetspeak, values under
    6 characters, letters-only words under 16 characters, and base64 of any of these."""
    v = value.strip()
    low = v.lower()
    if len(v) < 6 or is_reference(v, quoted):
        return True
    if _EXAMPLE_PREFIX.match(v) or (re.fullmatch(r"[A-Za-z_.-]+", v) and len(v) < 16):
        return True
    decoded = _decoded_text(v) if _depth == 0 else None
    if decoded is not None and (is_placeholder(decoded, True, 1) or _HASHED.match(decoded.partition(":")[2])):
        return True  # base64 of an example (YWRtaW4= is "admin") or of an htpasswd line (user:$apr1$...: a hash)
    if _example_words(low) or low in PLACEHOLDER_VALUES:
        return True
    words = [w for w in re.split(r"[^a-z0-9]+", low) if w]
    if len(words) > 1 and all(w in PLACEHOLDER_WORDS or w.isdigit() and len(w) <= 4 for w in words):
        return True
    names = {"secret", "password", "passwd", "key", "token", "example"}
    return bool(re.fullmatch(r"[a-z_.-]+", low) and names & set(re.split(r"[_.-]", low)))


def kept_under(key: str, value: str, quoted: bool = False) -> bool:
    """Whether a value under the secret key `key` is left alone. A password is kept only when it is no literal at all
    (is_reference), shorter than 4 characters, or the variable it is passed from (`password=self.password`): `admin` or
    `changeme` under a password key in a note is someone's password. Any other key's value also when it is an example.
    Documentation is more lenient (secret_examples.py)."""
    if kind_for(key) != "password":
        return is_placeholder(value, quoted)
    v = value.strip()
    last = [word for word in re.split(r"[^a-z]+", key.lower()) if word][-1:] or [""]
    return len(v) < 4 or is_reference(v, quoted) or v.lower() == last[0] or bool(_IDENTIFIER_PATH.fullmatch(v))


_SLOT = re.compile(r"\{(?P<a>[^{}]+)\}|<(?P<b>[^<>]+)>|\$\{(?P<c>[^{}]+)\}|\{\{\s*(?P<d>[^{}]+?)\s*\}\}")
_SLOT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_. ][A-Za-z0-9]+)*")


def is_written_placeholder(value: str) -> bool:
    """True for a slot the reader fills in, written in braces or angle brackets around words (`{sasl_password}`,
    `{InsertAccountPrimaryKeyHere}`, `<your-key>`, `<YOUR_API_TOKEN>`, `${TOKEN}`); not for a random value in braces."""
    slot = _SLOT.fullmatch(value.strip().strip("\"'`"))
    name = slot and next(group for group in slot.groups() if group is not None)
    if not name or not _SLOT_NAME.fullmatch(name):
        return False
    words = [word for word in _CAMEL.findall(name) if not word.isdigit()]
    return bool(words) and sum(map(len, words)) >= 3 * len(words) and len(re.findall(r"\d+", name)) <= 1


def looks_like_credential(value: str) -> bool:
    """For weak keys (token, auth, secret): long enough and mixed enough to be a credential, not an object name."""
    v = value.strip()
    if UUID.fullmatch(v):  # random, so a credential when a secret key or noun names it (Heroku keys, npm tokens)
        return True
    if len(v) < 8 or re.search(r"\s", v) or DNS_NAME.match(v) or re.fullmatch(r"\d+", v):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isalpha() for c in v)
    mixed_case = any(c.islower() for c in v) and any(c.isupper() for c in v)
    return has_alpha and (has_digit or (mixed_case and len(v) >= 16))
