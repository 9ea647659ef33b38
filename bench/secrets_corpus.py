"""A hostile corpus for the secret redactor: fake credentials planted in every file and source type we index.

`generate(root, seed)` writes files under four folders, one per kind of source:

    root/personal/   markdown notes (front matter, headings, code fences), JSON memory records, JSONL logs
    root/git/        a folder the caller commits into a git repository (README, k8s/compose YAML, JSON configs)
    root/local/      a local folder: .txt runbook, .yaml/.yml (ansible, kubeconfig), JSON and JSONL exports
    root/web/        HTML pages the caller serves over HTTP (index.html links guide.html), and pages.txt: the page
                     list to index, one of them with an access token in its URL's query

and returns one `Planted` per planted string. Two sorts:

- credentials (`must_survive=False`): at least 60 values of more than 28 kinds, shaped like the real thing (right
  prefixes, lengths and alphabets; GitHub and npm tokens carry their CRC32 check digits) but drawn from a seeded
  random generator, so never real. `value` is the secret as the index would show it once decoded (for a URL, only
  the password; for a key block, one line of its body): it must not appear anywhere in the index.
- hard negatives (`must_survive=True`): strings that look secret-ish but are not (commit SHAs, sha256 checksums,
  UUIDs, a base64 PNG data URI, image digests, `token: 256`, `auth: true`, `secret: my-tls-secret`, `${DB_PASSWORD}`
  placeholders, "sk-learn" in prose, public keys and certificates). `value` must still appear in the index.

`context_words` is a short phrase written next to the value, to find its chunk by search. Some values are written
escaped the way real files do it (a GitHub token with a `\\u005f` JSON escape, a URL with `\\/` escapes): `value` is
then the decoded form, which is what JSON parsing puts in the index. An SAS signature stays percent-encoded in its
URL, as in the index, so its `value` is the percent-encoded form. Long values (JWTs, client-key-data, data URIs) are
split across chunks by the chunker: check them by pieces (e.g. every 20-character window), not as one string.

The same seed always writes the same bytes. Run `python bench/secrets_corpus.py DIR` to write a corpus and list it.
"""

import base64
import json
import random
import string
import struct
import sys
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BASE32 = string.ascii_uppercase + "234567"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
CHANNELS = ("personal", "git", "local", "web")


@dataclass(frozen=True)
class Planted:
    kind: str
    value: str
    file: str  # relative to root, e.g. "git/deploy/k8s-secret.yaml"
    context_words: str
    channel: str  # personal | git | local | web
    must_survive: bool = False


class _Gen:
    """Seeded value factory; records what is planted where."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.planted: list[Planted] = []
        self.file = ""

    def at(self, file: str) -> "_Gen":
        self.file = file
        return self

    def plant(self, kind: str, value: str, context: str, *, survive: bool = False, shown: str | None = None) -> str:
        """Record `value` as planted in the current file; returns what to write (`shown`, default `value`)."""
        channel = self.file.split("/", 1)[0]
        self.planted.append(Planted(kind, value, self.file, context, channel, survive))
        return value if shown is None else shown

    def keep(self, kind: str, value: str, context: str) -> str:
        return self.plant(kind, value, context, survive=True)

    # --- value shapes -------------------------------------------------------

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def mixed(self, alphabet: str, n: int) -> str:
        """Random, with an upper, a lower and a digit where the alphabet has them (as almost every real token has)."""
        classes = [test for test in (str.isupper, str.islower, str.isdigit) if any(test(c) for c in alphabet)]
        while True:
            value = self.s(alphabet, n)
            if all(any(test(c) for c in value) for test in classes):
                return value

    def b64(self, nbytes: int) -> str:
        return base64.b64encode(self.rng.randbytes(nbytes)).decode()

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def checksummed(self, prefix: str) -> str:
        """GitHub-style token: 30 random base62 characters then the CRC32 of them, base62, 6 digits."""
        body = self.s(ALNUM, 30)
        crc = zlib.crc32(body.encode())
        digits = ""
        base62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
        while crc:
            crc, rem = divmod(crc, 62)
            digits = base62[rem] + digits
        return prefix + body + digits.rjust(6, "0")

    def password(self) -> str:
        style = self.rng.randrange(3)
        if style == 0:
            return self.s(ALNUM, 12) + self.rng.choice("!#%&*+-=?@^_") + self.s(ALNUM, 5)
        if style == 1:
            word = self.rng.choice(["Harbor", "Copper", "Lantern", "Meadow", "Falcon", "Granite", "Willow", "Orchid"])
            return f"{word}{self.rng.randrange(1000, 9999)}{self.rng.choice('!$#@')}{self.s(ALNUM, 3)}"
        return self.mixed(ALNUM + "-_.~", 20)

    def url_password(self) -> str:
        return self.mixed(ALNUM, 8) + self.rng.choice("-_.~") + self.mixed(ALNUM, 9)

    def pem_body(self, lines: int) -> list[str]:
        return [self.b64(48) for _ in range(lines)] + [self.b64(self.rng.randrange(10, 40))]

    def pem(self, label: str, lines: int = 12) -> tuple[str, str]:
        """(a PEM block, one line of its body)."""
        body = self.pem_body(lines)
        return f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----", body[lines // 2]

    def jwt(self, payload: dict) -> str:
        def part(obj: dict) -> str:
            return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")

        return f"{part({'alg': 'RS256', 'kid': self.s(ALNUM, 12), 'typ': 'JWT'})}.{part(payload)}.{self.s(B64URL, 342)}"

    def png_data_uri(self) -> str:
        """A real 12x12 PNG of random pixels, as a data: URI."""
        width = height = 12
        raw = b"".join(b"\x00" + self.rng.randbytes(width * 3) for _ in range(height))

        def chunk(tag: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

        png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
        return "data:image/png;base64," + base64.b64encode(png).decode()


def generate(root: Path, seed: int = 0) -> list[Planted]:
    """Write the corpus under `root` (personal/, git/, local/, web/) and return everything planted."""
    g = _Gen(seed)
    files: dict[str, str] = {}
    for build in (
        _personal_notes,
        _personal_ml,
        _personal_records,
        _personal_log,
        _git_readme,
        _git_k8s,
        _git_compose,
        _git_kubeconfig_json,
        _git_docker_config,
        _git_app_settings,
        _git_llm_yaml,
        _local_runbook,
        _local_inventory,
        _local_kubeconfig,
        _local_export,
        _local_events,
        _web_index,
        _web_guide,
        _personal_publishing,  # added later: last, so the values above stay those of earlier runs
        _web_status,
        _web_pages,
    ):
        path, text = build(g)
        files[path] = text
    for path, text in files.items():
        target = Path(root) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    missing = [p for p in g.planted if p.value not in _decoded_view(files[p.file])]
    if missing:  # every value must be findable in its file, decoded
        raise AssertionError(f"planted values not written: {missing[:3]}")
    return g.planted


def negatives(planted: list[Planted]) -> list[Planted]:
    """The hard negatives: strings that must survive redaction."""
    return [p for p in planted if p.must_survive]


def credentials(planted: list[Planted]) -> list[Planted]:
    """The planted credentials: strings that must not reach the index."""
    return [p for p in planted if not p.must_survive]


def _decoded_view(text: str) -> str:
    """The text plus its JSON-decoded forms (for the self-check that every planted value is in its file)."""
    views = [text, text.replace("\\/", "/")]
    try:
        views.append(json.dumps(json.loads(text), ensure_ascii=False))
    except ValueError:
        for line in text.splitlines():
            try:
                views.append(json.dumps(json.loads(line), ensure_ascii=False))
            except ValueError:
                pass
    return "\n".join(views)


# --- personal: notes, memory records, logs -------------------------------------


def _personal_notes(g: _Gen) -> tuple[str, str]:
    g.at("personal/notes/infra-2024.md")
    rk_live = g.plant("stripe-restricted-key", "rk_live_" + g.mixed(ALNUM, 99), "billing webhook restricted key")
    sk_live = g.plant("stripe-secret-key", "sk_live_" + g.mixed(ALNUM, 24), "Stripe live secret checkout service")
    google = g.plant("google-api-key", "AIzaSy" + g.mixed(B64URL, 33), "rotated Google Maps key")
    akia = g.plant("aws-access-key-id", "AKIA" + g.s(BASE32, 16), "deploy user access key id")
    aws_prose = g.plant("aws-secret-in-prose", g.mixed(B64, 40), "its secret is kept in 1Password")
    db_pw = g.plant("env-password", g.password(), "export DB_PASSWORD analytics")
    pg_pw = g.plant("url-password", g.url_password(), "psql postgres app_user connection")
    sha = g.keep("commit-sha", g.s(HEX, 40), "deployed commit to prod")
    sha256 = g.keep("sha256-checksum", g.s(HEX, 64), "sha256 of the release tarball")
    request_id = g.keep("uuid", g.uuid(), "support ticket request id")
    sk_learn = g.keep("prose-sk-learn", "sk-learn", "classifier built with sk-learn")
    token_256 = g.keep("yaml-token-number", "token: 256", "llm chunk token budget")
    text = f"""---
title: Infra notes 2024
description: "Billing webhook uses restricted key {rk_live}"
tags: [infra, billing]
date: 2024-03-02
---
# Infra notes 2024

## Payments

The Stripe live secret for the checkout service is {sk_live} (rotate every quarter).
Refunds are handled by the billing webhook.

## Rotated Google Maps key {google}

The old key was revoked on 2024-02-11 after the rotated Google Maps key went out.

## AWS

Access key id {akia} belongs to the deploy user; its secret is {aws_prose} and is kept in 1Password too.

## Database

```bash
# analytics box
export DB_PASSWORD={db_pw}
psql "postgres://app_user:{pg_pw}@db.internal.example:5432/app"
```

## Release log

Deployed commit {sha} to prod on Friday. The sha256 of the release tarball is {sha256}.
Support ticket request id {request_id} was about the login page.

The classifier is built with {sk_learn} (scikit-learn), nothing exotic.

```yaml
llm:
  model: small
  max_tokens: 4096
  {token_256}
```
"""
    return g.file, text


def _personal_ml(g: _Gen) -> tuple[str, str]:
    g.at("personal/notes/ml-setup.md")
    hf = g.plant("huggingface-token", "hf_" + g.mixed(string.ascii_letters, 34), "my HF token for gated models")
    openai_proj = g.plant(
        "openai-project-key",
        "sk-proj-" + g.mixed(B64URL, 73) + "x" + "T3BlbkFJ" + g.mixed(B64URL, 73) + "Q",
        "OpenAI client for the summariser",
    )
    openai_legacy = g.plant("openai-api-key", "sk-" + g.mixed(ALNUM, 20) + "T3BlbkFJ" + g.mixed(ALNUM, 20), "old OpenAI key batch jobs")
    anthropic = g.plant("anthropic-api-key", "sk-ant-api03-" + g.mixed(B64URL, 93) + "AA", "ANTHROPIC_API_KEY for evals")
    pypi = g.plant(
        "pypi-token",
        "pypi-AgEIcHlwaS5vcmc" + base64.urlsafe_b64encode(g.rng.randbytes(120)).decode().rstrip("="),
        "PyPI upload token twine",
    )
    env_ref = g.keep("env-reference", 'api_key=os.environ["OPENAI_API_KEY"]', "read the key from the environment")
    text = f"""---
title: ML setup
tags: [ml, notes]
---
# ML setup

Downloading gated models needs my HF token for gated models: {hf}

```python
from openai import OpenAI

# OpenAI client for the summariser
client = OpenAI(api_key="{openai_proj}")
# the right way: read the key from the environment
client = OpenAI({env_ref})
```

The old OpenAI key for batch jobs ({openai_legacy}) still works until June.

```bash
export ANTHROPIC_API_KEY={anthropic}   # ANTHROPIC_API_KEY for evals
```

## Publishing

The PyPI upload token for twine goes in the keyring, not here: {pypi}
"""
    return g.file, text


def _personal_records(g: _Gen) -> tuple[str, str]:
    g.at("personal/memory/records.json")
    sendgrid = g.plant("sendgrid-api-key", f"SG.{g.mixed(B64URL, 22)}.{g.mixed(B64URL, 43)}", "SendGrid key newsletters")
    github = g.plant("github-token-json-escaped", g.checksummed("ghp_"), "GitHub token release bot")
    db_pw = g.plant("json-password", g.password(), "reporting database credentials")
    generic = g.plant("generic-api-key", g.s(HEX, 32), "weather service api_key")
    png = g.keep("png-data-uri", g.png_data_uri(), "whiteboard photo attachment")
    record_id = g.keep("uuid", g.uuid(), "record id whiteboard")
    records = [
        {"type": "credential-note", "date": "2024-05-01", "context": "email", "content": f"SendGrid key for newsletters: {sendgrid}"},
        {"type": "note", "date": "2024-05-02", "context": "ci", "content": f"GitHub token for the release bot: {github}"},
        {
            "type": "config",
            "date": "2024-05-03",
            "context": "reporting database credentials",
            "service": {"db": {"host": "reports.internal", "user": "reporter", "password": db_pw}},
        },
        {
            "type": "config",
            "date": "2024-05-04",
            "context": "weather service",
            "settings": {"endpoint": "https://api.weather.example/v2", "api_key": generic, "timeout": 10},
        },
        {
            "type": "note",
            "date": "2024-05-05",
            "id": record_id,
            "context": "whiteboard photo attachment",
            "content": "Architecture sketch from the offsite.",
            "attachment": png,
        },
    ]
    text = json.dumps(records, indent=2)
    # Written escaped, as some exporters do: the raw file never contains "ghp_".
    text = text.replace(github, github.replace("_", "\\u005f").replace("g", "\\u0067", 1))
    return g.file, text + "\n"


def _personal_log(g: _Gen) -> tuple[str, str]:
    g.at("personal/memory/log.jsonl")
    twilio = g.plant("twilio-api-key", "SK" + g.s(HEX, 32), "Twilio API key SMS alerts")
    heroku = g.plant("heroku-api-key", g.uuid(), "HEROKU_API_KEY staging app")
    mongo_pw = g.plant("url-password", g.url_password(), "mongodb atlas cluster connection")
    sha = g.keep("commit-sha", g.s(HEX, 40), "hotfix commit merged")
    event_id = g.keep("uuid", g.uuid(), "event id hotfix")
    lines = [
        {"ts": "2024-06-01T09:12:00Z", "event": "note", "text": f"Twilio API key for SMS alerts: {twilio}"},
        {"ts": "2024-06-01T10:00:00Z", "event": "note", "text": f"set HEROKU_API_KEY={heroku} for the staging app"},
        {
            "ts": "2024-06-02T08:30:00Z",
            "event": "note",
            "text": f"mongodb atlas cluster connection: mongodb+srv://svc-ingest:{mongo_pw}@cluster0.ab1cd.mongodb.net/prod",
        },
        {"ts": "2024-06-02T11:45:00Z", "event": "deploy", "id": event_id, "text": f"hotfix commit merged: {sha}"},
    ]
    out = []
    for line in lines:
        encoded = json.dumps(line)
        out.append(encoded.replace("mongodb+srv://", "mongodb+srv:\\/\\/"))  # JSON's optional "\/" escape
    return g.file, "\n".join(out) + "\n"


# --- git: a repository -------------------------------------------------------------


def _git_readme(g: _Gen) -> tuple[str, str]:
    g.at("git/README.md")
    npm = g.plant("npmrc-auth-token", g.checksummed("npm_"), "npmrc publish token registry")
    https_pw = g.plant("url-password", g.url_password(), "clone over https deploy user")
    gitlab = g.plant("gitlab-token", "glpat-" + g.mixed(B64URL, 20), "GitLab mirror token")
    digest = g.keep("image-digest", "sha256:" + g.s(HEX, 64), "pinned api image digest")
    sha = g.keep("commit-sha", g.s(HEX, 40), "first release commit")
    checksum = g.keep("sha256-checksum", g.s(HEX, 64), "checksum of the CLI binary")
    ssh_pub = g.keep("ssh-public-key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + g.s(B64, 43) + " deploy@ci", "CI deploy public key")
    example_key = g.keep("aws-doc-example", "AKIAIOSFODNN7EXAMPLE", "AWS documentation example key id")
    integrity = g.keep("npm-integrity", "sha512-" + g.b64(64), "lockfile integrity hash")
    text = f"""# acme-api

The API service. Container image is pinned by digest: `ghcr.io/acme/api@{digest}` (pinned api image digest).

First release commit: {sha}. The checksum of the CLI binary (sha256) is `{checksum}`.

## Publishing to npm

Our npmrc publish token for the registry lives in CI; locally:

```ini
//registry.npmjs.org/:_authToken={npm}
always-auth=true
```

## Cloning

Clone over https as the deploy user:

```bash
git clone https://deploy-bot:{https_pw}@git.acme.example/acme/api.git
git remote add mirror https://oauth2:{gitlab}@gitlab.com/acme/api.git   # GitLab mirror token
```

## Deploy key

The CI deploy public key (safe to share): `{ssh_pub}`

The AWS documentation example key id `{example_key}` appears in our tests as a fixture.

The lockfile integrity hash of the left-pad dependency is `{integrity}`.
"""
    return g.file, text


def _git_k8s(g: _Gen) -> tuple[str, str]:
    g.at("git/deploy/k8s-secret.yaml")
    db_pw = g.plant("k8s-secret-stringdata", g.password(), "api-credentials DATABASE_PASSWORD")
    openai = g.plant(
        "openai-project-key",
        "sk-proj-" + g.mixed(B64URL, 57) + "y" + "T3BlbkFJ" + g.mixed(B64URL, 57) + "Z",
        "api-credentials OPENAI_API_KEY",
    )
    redis_pw = g.plant("url-password", g.url_password(), "api-credentials REDIS_URL")
    tls = g.keep("k8s-secret-name", "secret: my-tls-secret", "ingress tls secret reference")
    tls_name = g.keep("k8s-secret-name", "secretName: my-tls-secret", "ingress tls secretName")
    key_ref = g.keep("k8s-secret-key-ref", "key: DATABASE_PASSWORD", "secretKeyRef key name")
    digest = g.keep("image-digest", "sha256:" + g.s(HEX, 64), "api container image digest")
    text = f"""# api-credentials DATABASE_PASSWORD and OPENAI_API_KEY for the api deployment
apiVersion: v1
kind: Secret
metadata:
  name: api-credentials
  namespace: prod
type: Opaque
stringData:
  DATABASE_PASSWORD: "{db_pw}"
  OPENAI_API_KEY: {openai}
  REDIS_URL: redis://:{redis_pw}@redis-master.prod.svc:6379/0
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: api
  annotations:
    cert-manager.io/cluster-issuer: letsencrypt
spec:
  tls:
    - hosts: [api.acme.example]
      {tls_name}
  # ingress tls secret reference for the legacy controller
  legacyTLS:
    {tls}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
        - name: api
          image: ghcr.io/acme/api@{digest}
          env:
            - name: DB_PASSWORD
              valueFrom:
                secretKeyRef:
                  name: api-credentials
                  {key_ref}
"""
    return g.file, text


def _git_compose(g: _Gen) -> tuple[str, str]:
    g.at("git/deploy/docker-compose.yml")
    pg = g.plant("compose-env-password", g.password(), "POSTGRES_PASSWORD compose db")
    mysql_root = g.plant("compose-env-password", g.password(), "MYSQL_ROOT_PASSWORD compose mysql")
    mysql_url = g.plant("url-password", g.url_password(), "DATABASE_URL mysql app")
    placeholder = g.keep("placeholder", "${DB_PASSWORD}", "password from the environment placeholder")
    auth_true = g.keep("yaml-auth-bool", "auth: true", "redis auth enabled flag")
    empty = g.keep("yaml-empty-password", 'password: ""', "grafana anonymous empty password")
    text = f"""services:
  db:
    image: postgres:16
    environment:
      POSTGRES_USER: app
      POSTGRES_PASSWORD: {pg}   # POSTGRES_PASSWORD compose db
  mysql:
    image: mysql:8
    environment:
      - MYSQL_ROOT_PASSWORD={mysql_root}
      - MYSQL_DATABASE=app
  app:
    build: .
    environment:
      DATABASE_URL: mysql://app:{mysql_url}@mysql:3306/app
      # password from the environment placeholder
      password: {placeholder}
  cache:
    image: redis:7
    # redis auth enabled flag
    {auth_true}
  grafana:
    image: grafana/grafana:10.4.2
    # grafana anonymous empty password
    {empty}
"""
    return g.file, text


def _git_kubeconfig_json(g: _Gen) -> tuple[str, str]:
    g.at("git/config/kubeconfig.json")
    key_pem, _ = g.pem("RSA PRIVATE KEY", 20)
    key_data = g.plant("kubeconfig-client-key", base64.b64encode((key_pem + "\n").encode()).decode(), "prod-admin client-key-data")
    token = g.plant("kubeconfig-token", g.mixed(ALNUM, 64), "ci-deployer user token")
    cert_pem, _ = g.pem("CERTIFICATE", 14)
    ca = g.keep("ca-certificate-data", base64.b64encode((cert_pem + "\n").encode()).decode(), "cluster certificate-authority-data")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "prod", "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": ca}}],
        "users": [
            {"name": "prod-admin", "user": {"client-key-data": key_data}},
            {"name": "ci-deployer", "user": {"token": token}},
        ],
        "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "prod-admin"}}],
        "current-context": "prod",
    }
    return g.file, json.dumps(config, indent=2) + "\n"


def _git_docker_config(g: _Gen) -> tuple[str, str]:
    g.at("git/config/docker-config.json")
    registry_pw = g.password()
    auth1 = g.plant("docker-config-auth", base64.b64encode(f"ci-bot:{registry_pw}".encode()).decode(), "registry.acme.example auth")
    ghcr = g.checksummed("ghp_")
    auth2 = g.plant("docker-config-auth", base64.b64encode(f"acme-bot:{ghcr}".encode()).decode(), "ghcr.io auth")
    config = {"auths": {"registry.acme.example": {"auth": auth1}, "ghcr.io": {"auth": auth2}}, "credsStore": "desktop"}
    return g.file, json.dumps(config, indent=2) + "\n"


def _git_app_settings(g: _Gen) -> tuple[str, str]:
    g.at("git/config/app-settings.json")
    account_key = g.plant("azure-storage-account-key", g.b64(64), "acmeprod storage AccountKey")
    sig = g.plant("azure-sas-signature", quote(g.b64(32), safe=""), "backups container SAS sig")
    slack = g.plant(
        "slack-webhook",
        f"https://hooks.slack.com/services/T{g.s(string.ascii_uppercase + string.digits, 8)}/"
        f"B{g.s(string.ascii_uppercase + string.digits, 10)}/{g.mixed(ALNUM, 24)}",
        "alerts channel webhook",
    )
    sentry = g.plant("sentry-user-token", "sntryu_" + g.s(HEX, 64), "sentry release token")
    uuid_value = g.keep("uuid", g.uuid(), "tenant id")
    settings = {
        "tenant": {"id": uuid_value, "name": "acme"},
        "azure": {
            "storage": f"DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={account_key};EndpointSuffix=core.windows.net",
            "backups_sas_url": "https://acmeprod.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rl"
            f"&se=2025-12-31T00:00:00Z&st=2024-01-01T00:00:00Z&spr=https&sig={sig}",
        },
        "alerts": {"slack_webhook": slack, "channel": "#ops"},
        "sentry": {"auth_token": sentry, "org": "acme"},
        "llm": {"max_tokens": 512, "token_budget": 256},
    }
    return g.file, json.dumps(settings, indent=2) + "\n"


def _git_llm_yaml(g: _Gen) -> tuple[str, str]:
    g.at("git/config/llm.yaml")
    anthropic = g.plant("anthropic-api-key", "sk-ant-api03-" + g.mixed(B64URL, 93) + "AA", "anthropic_api_key judge model")
    hf = g.plant("huggingface-token", "hf_" + g.mixed(string.ascii_letters, 34), "hub token for private datasets")
    keeps = [
        g.keep("yaml-token-number", "token: 256", "chunk token size"),
        g.keep("placeholder", "api_key: ${OPENAI_API_KEY}", "openai key from env placeholder"),
        g.keep("placeholder", "password: <your-password>", "your password placeholder"),
        g.keep("placeholder", "password: changeme", "changeme default placeholder"),
        g.keep("placeholder", "secret: xxxxxxxx", "masked secret placeholder"),
        g.keep("placeholder", 'password: "********"', "starred password placeholder"),
        g.keep("placeholder", "password: '{{ .Values.db.password }}'", "helm template password"),
    ]
    text = f"""# LLM evaluation settings
judge:
  provider: anthropic
  anthropic_api_key: {anthropic}   # anthropic_api_key judge model
hub:
  token: {hf}   # hub token for private datasets
chunking:
  {keeps[0]}   # chunk token size
openai:
  # openai key from env placeholder
  {keeps[1]}
examples:
  # your password placeholder
  - {keeps[2]}
  # changeme default placeholder
  - {keeps[3]}
  # masked secret placeholder
  - {keeps[4]}
  # starred password placeholder
  - {keeps[5]}
  # helm template password
  - {keeps[6]}
"""
    return g.file, text


# --- local: a folder of ops files ------------------------------------------------


def _local_runbook(g: _Gen) -> tuple[str, str]:
    g.at("local/ops/runbook.txt")
    pgp_body = g.pem_body(16)
    pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(pgp_body) + "\n=" + g.s(B64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----"
    g.plant("pgp-private-key", pgp_body[8], "backup signing key PGP")
    bearer = g.plant("bearer-token", g.mixed(ALNUM + "-._~", 48), "curl the admin API bearer")
    basic_pw = g.password()
    basic = g.plant("basic-auth-header", base64.b64encode(f"admin:{basic_pw}".encode()).decode(), "metrics endpoint basic auth")
    amqp = g.plant("url-password", g.url_password(), "rabbitmq amqp broker")
    values = {
        "digitalocean-token": ("dop_v1_" + g.s(HEX, 64), "DigitalOcean token terraform"),
        "shopify-token": ("shpat_" + g.s(HEX, 32), "Shopify admin token"),
        "databricks-token": ("dapi" + g.s(HEX, 32), "Databricks token notebooks"),
        "telegram-bot-token": (f"{g.rng.randrange(10**9, 10**10)}:AA{g.mixed(B64URL, 33)}", "Telegram bot token alerts"),
        "square-token": ("sq0atp-" + g.mixed(B64URL, 22), "Square access token POS"),
        "vault-token": ("hvs.CAESI" + g.mixed(B64URL, 90), "Vault root token break glass"),
        "postman-key": (f"PMAK-{g.s(HEX, 24)}-{g.s(HEX, 34)}", "Postman API key collections"),
        "linear-key": ("lin_api_" + g.mixed(ALNUM, 40), "Linear API key triage bot"),
        "doppler-token": ("dp.pt." + g.mixed(ALNUM, 43), "Doppler token config sync"),
        "age-secret-key": ("AGE-SECRET-KEY-1" + g.s(BECH32, 58), "age key for sops"),
    }
    lines = []
    for kind, (value, context) in values.items():
        lines.append(f"- {context}: {g.plant(kind, value, context)}")
    listing = "\n".join(lines)
    pub_body = g.pem_body(6)
    pgp_public = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + "\n".join(pub_body) + "\n-----END PGP PUBLIC KEY BLOCK-----"
    g.keep("pgp-public-key", pub_body[3], "public half for the keyserver")
    text = f"""RUNBOOK: ops break-glass notes (do not share)

1. Backup signing key PGP (export of the backup signing key):

{pgp}

The public half for the keyserver:

{pgp_public}

2. Curl the admin API bearer:

   curl -H "Authorization: Bearer {bearer}" https://admin.acme.example/api/v1/users

3. Metrics endpoint basic auth:

   Authorization: Basic {basic}

4. RabbitMQ amqp broker: amqp://events:{amqp}@mq.internal:5672/prod

5. Service tokens:
{listing}
"""
    return g.file, text


def _local_inventory(g: _Gen) -> tuple[str, str]:
    g.at("local/ops/inventory.yaml")
    become = g.plant("yaml-password", g.password(), "ansible_become_password web hosts")
    smtp = g.plant("yaml-password", g.password(), "smtp_password mail relay")
    oauth = g.plant("google-oauth-client-secret", "GOCSPX-" + g.mixed(B64URL, 28), "google oauth client_secret sso")
    mailgun = g.plant("mailgun-key", "key-" + g.s(HEX, 32), "mailgun_api_key transactional")
    mailchimp = g.plant("mailchimp-key", g.s(HEX, 32) + "-us14", "MAILCHIMP_API_KEY newsletter")
    aws_secret = g.plant("aws-secret-access-key", g.mixed(B64, 40), "aws_secret_access_key backups")
    aws_id = g.plant("aws-access-key-id", "AKIA" + g.s(BASE32, 16), "aws_access_key_id backups")
    uuid_value = g.keep("uuid", g.uuid(), "inventory host uuid")
    text = f"""all:
  vars:
    ansible_user: deploy
    ansible_become_password: {become}   # ansible_become_password web hosts
    smtp_host: relay.acme.example
    smtp_password: "{smtp}"   # smtp_password mail relay
    sso:
      client_id: 1234567890-abc123def456.apps.googleusercontent.com
      client_secret: {oauth}   # google oauth client_secret sso
    mailgun_api_key: {mailgun}   # mailgun_api_key transactional
    MAILCHIMP_API_KEY: {mailchimp}   # MAILCHIMP_API_KEY newsletter
    backups:
      aws_access_key_id: {aws_id}   # aws_access_key_id backups
      aws_secret_access_key: {aws_secret}   # aws_secret_access_key backups
  hosts:
    web1:
      host_uuid: {uuid_value}   # inventory host uuid
"""
    return g.file, text


def _local_kubeconfig(g: _Gen) -> tuple[str, str]:
    g.at("local/ops/kubeconfig.yml")
    key_pem, _ = g.pem("EC PRIVATE KEY", 4)
    key_data = g.plant("kubeconfig-client-key", base64.b64encode((key_pem + "\n").encode()).decode(), "staging-admin client-key-data")
    lower_digits = string.ascii_lowercase + string.digits
    bootstrap = g.plant("kubeconfig-token", f"{g.s(lower_digits, 6)}.{g.s(lower_digits, 16)}", "kubeadm bootstrap token node join")
    sa_token = g.plant(
        "jwt", g.jwt({"iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:ci:deployer"}), "ci service account token"
    )
    cert_pem, _ = g.pem("CERTIFICATE", 10)
    ca = g.keep("ca-certificate-data", base64.b64encode((cert_pem + "\n").encode()).decode(), "staging certificate-authority-data")
    text = f"""apiVersion: v1
kind: Config
clusters:
  - name: staging
    cluster:
      server: https://staging.k8s.acme.example:6443
      certificate-authority-data: {ca}
users:
  - name: staging-admin
    user:
      client-key-data: {key_data}
  - name: node-join
    user:
      token: {bootstrap}   # kubeadm bootstrap token node join
  - name: ci
    user:
      token: {sa_token}   # ci service account token
contexts:
  - name: staging
    context: {{cluster: staging, user: staging-admin}}
current-context: staging
"""
    return g.file, text


def _local_export(g: _Gen) -> tuple[str, str]:
    g.at("local/data/export.json")
    key_pem, key_line = g.pem("PRIVATE KEY", 25)
    g.plant("gcp-service-account-key", key_line, "terraform service account private_key")
    client_secret = g.plant("json-password", g.password(), "ftp sync password")
    atlassian = g.plant("atlassian-token", "ATATT3" + g.mixed(B64URL, 186), "jira automation token")
    sha = g.keep("sha256-checksum", g.s(HEX, 64), "export file checksum")
    png = g.keep("png-data-uri", g.png_data_uri(), "avatar image")
    data = {
        "service_account": {
            "type": "service_account",
            "project_id": "acme-prod-4821",
            "private_key_id": g.s(HEX, 40),
            "private_key": key_pem + "\n",
            "client_email": "terraform@acme-prod-4821.iam.gserviceaccount.com",
        },
        "ftp": {"host": "ftp.partner.example", "user": "acme", "password": client_secret},
        "jira": {"automation": {"email": "bot@acme.example", "api_token": atlassian}},
        "meta": {"sha256": sha, "avatar": png},
    }
    return g.file, json.dumps(data, indent=2) + "\n"


def _local_events(g: _Gen) -> tuple[str, str]:
    g.at("local/data/events.jsonl")
    jwt = g.plant("jwt", g.jwt({"sub": "user-1842", "role": "admin", "exp": 1767225600}), "session token admin login")
    github_pat = g.plant("github-fine-grained-pat", f"github_pat_{g.mixed(ALNUM, 22)}_{g.mixed(ALNUM, 59)}", "fine-grained PAT dependabot")
    slack = g.plant(
        "slack-bot-token",
        f"xoxb-{g.rng.randrange(10**11, 10**12)}-{g.rng.randrange(10**12, 10**13)}-{g.mixed(ALNUM, 24)}",
        "slack bot token deploy notifier",
    )
    ya29 = g.plant("google-oauth-access-token", "ya29." + g.mixed(B64URL, 150), "gcloud access token debugging")
    ghp = g.plant("github-pat", g.checksummed("ghp_"), "classic PAT homebrew tap")
    sha = g.keep("commit-sha", g.s(HEX, 40), "build from commit")
    lines = [
        {"ts": "2024-07-01T12:00:00Z", "msg": f"session token admin login: {jwt}"},
        {"ts": "2024-07-01T12:05:00Z", "msg": "fine-grained PAT dependabot", "token": github_pat},
        {"ts": "2024-07-01T12:06:00Z", "msg": f"slack bot token deploy notifier {slack}"},
        {"ts": "2024-07-01T12:07:00Z", "msg": "gcloud access token debugging", "headers": {"Authorization": f"Bearer {ya29}"}},
        {"ts": "2024-07-01T12:08:00Z", "msg": f"classic PAT homebrew tap={ghp}"},
        {"ts": "2024-07-01T12:09:00Z", "msg": f"build from commit {sha}", "auth": True, "token": 256},
    ]
    return g.file, "\n".join(json.dumps(line) for line in lines) + "\n"


# --- web: HTML pages --------------------------------------------------------------


def _web_index(g: _Gen) -> tuple[str, str]:
    g.at("web/index.html")
    heroku = g.plant("heroku-api-key", g.uuid(), "staging Heroku API key")
    stripe = g.plant("stripe-secret-key", "sk_live_" + g.mixed(ALNUM, 99), "STRIPE_SECRET_KEY env file")
    sendgrid = g.plant("sendgrid-api-key", f"SG.{g.mixed(B64URL, 22)}.{g.mixed(B64URL, 43)}", "SENDGRID_API_KEY env file")
    pg_pw = g.plant("url-password", g.url_password(), "DATABASE_URL env file")
    npm = g.plant("npm-token", g.checksummed("npm_"), "NPM_TOKEN env file")
    sha = g.keep("commit-sha", g.s(HEX, 40), "wiki built from commit")
    digest = g.keep("image-digest", "sha256:" + g.s(HEX, 64), "worker image digest")
    sk_learn = g.keep("prose-sk-learn", "sk-learn", "sk-learn pipeline")
    text = f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Team wiki: deploying the shop</title></head>
<body>
<nav><a href="index.html">Home</a> | <a href="guide.html">Cluster guide</a></nav>
<main>
<article>
<h1>Deploying the shop</h1>
<p>The shop runs on Heroku. The staging Heroku API key is {heroku}; ask in #ops before using it.
Everything else comes from the env file below, which is loaded at boot by the process manager.</p>
<h2>The env file</h2>
<p>Copy this into <code>.env</code> on the box. The values are the production ones, so handle with care.</p>
<pre><code>STRIPE_SECRET_KEY={stripe}
SENDGRID_API_KEY={sendgrid}
DATABASE_URL=postgres://shop:{pg_pw}@db.shop.internal:5432/shop
NPM_TOKEN={npm}
</code></pre>
<h2>Build</h2>
<p>This wiki was built from commit {sha}. The worker image digest is <code>{digest}</code>, and the
recommendation model is an {sk_learn} pipeline trained nightly on the order history.</p>
</article>
</main>
<footer>Internal wiki</footer>
</body>
</html>
"""
    return g.file, text


def _web_guide(g: _Gen) -> tuple[str, str]:
    g.at("web/guide.html")
    key_pem, key_line = g.pem("OPENSSH PRIVATE KEY", 8)
    g.plant("pem-private-key", key_line, "bastion ssh key")
    token = g.plant("kubeconfig-token", g.mixed(ALNUM, 48), "dev cluster user token")
    dev_key = base64.b64encode(g.pem("RSA PRIVATE KEY", 6)[0].encode()).decode()
    key_data = g.plant("kubeconfig-client-key", dev_key, "dev-admin client-key-data")
    sig = g.plant("azure-sas-signature", quote(g.b64(32), safe=""), "reports SAS link")
    sas = (
        "https://acmereports.blob.core.windows.net/reports/q2.pdf?sv=2022-11-02&amp;sr=b&amp;sp=r"
        f"&amp;se=2025-06-30T00:00:00Z&amp;sig={sig}"
    )
    uuid_value = g.keep("uuid", g.uuid(), "dev cluster id")
    text = f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Cluster guide</title></head>
<body>
<main>
<article>
<h1>Cluster guide</h1>
<p>The dev cluster id is {uuid_value}. To reach it, save this kubeconfig as <code>~/.kube/dev</code> and export
KUBECONFIG. The file is short and holds both a client key and a user token, so keep it out of git.</p>
<pre><code>apiVersion: v1
kind: Config
users:
  - name: dev-admin
    user:
      client-key-data: {key_data}
  - name: dev-user
    user:
      token: {token}
</code></pre>
<h2>Bastion</h2>
<p>The bastion ssh key is shared by the on-call rotation. Put it in <code>~/.ssh/bastion</code> with mode 600.</p>
<pre><code>{key_pem}
</code></pre>
<h2>Reports</h2>
<p>Quarterly reports are in blob storage; the reports SAS link is valid until the end of June:
<a href="{sas}">{sas}</a></p>
</article>
</main>
</body>
</html>
"""
    return g.file, text


def _personal_publishing(g: _Gen) -> tuple[str, str]:
    g.at("personal/notes/publishing.md")
    npm = g.plant("npmrc-legacy-auth-token", g.uuid(), "old laptop npmrc publish by hand")
    text = f"""# Publishing by hand

The two packages we still publish by hand go out from the old laptop; its npmrc has the legacy token form:

```ini
registry=https://registry.npmjs.org/
//registry.npmjs.org/:_authToken={npm}
```

Run `npm publish --access public` from the package folder after the changelog is updated.
"""
    return g.file, text


def _web_status(g: _Gen) -> tuple[str, str]:
    g.at("web/status.html")
    return g.file, """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Status board</title></head>
<body><main><article><h1>Status board</h1>
<p>The bluefinch status board lists the degraded services of the shop with the engineer on call for each.</p>
<p>A service stays on the board until its error rate is back under one percent for an hour.</p>
</article></main></body></html>
"""


def _web_pages(g: _Gen) -> tuple[str, str]:
    """The pages to index; the status page's URL carries an access token (it reaches `file` and `url`)."""
    g.at("web/pages.txt")
    token = g.plant("url-query-token", g.mixed(ALNUM, 32), "bluefinch status board degraded services")
    return g.file, f"index.html\nguide.html\nstatus.html?token={token}\n"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: secrets_corpus.py DIR")
    planted = generate(Path(sys.argv[1]))
    found = credentials(planted)
    kinds = sorted({p.kind for p in found})
    print(f"{len(found)} credentials of {len(kinds)} kinds, {len(negatives(planted))} hard negatives")
    for p in planted:
        print(f"{'KEEP' if p.must_survive else 'SECRET':6} {p.channel:8} {p.kind:28} {p.file:36} {p.value[:48]}")


if __name__ == "__main__":
    main()
