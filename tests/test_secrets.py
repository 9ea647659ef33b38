"""Secrets never enter the index: secret files are left out, secrets in text are redacted.

The fake secrets are assembled at run time, so this file holds no string a
secret scanner would flag.
"""

import json
import sys
import time

import git
import pytest

from conftest import PROJECT, call_script, files_in_store, store_contents
from gitrepo import GitRepo
from rag_search.safety.secrets import is_secret_file, redact
from rag_search.sources.files import walk_root
from rag_search.sources.git import _tree_files
from rag_search.sources.specs import GitSource, Selection

GITHUB_TOKEN = "ghp_" + "R7x2Kq9LmW4pZs8T" * 2 + "Vb3N"
AWS_KEY_ID = "AKIA" + "Q7ZK3M9XW2RT5YHP"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYz8Q2kLm5Tv"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
PEM_BODY = "MIIEowIBAAKCAQEA7bq0Vv3NfHs6Lh0zL2cL9kq3mB1x\nq4rT9yZ2uK8pX1wQ5jH3nV7cD6fS0aE4gR2tY8hU9iO1pL3kM5nB7vC9xZ2q=="


def pem(kind: str) -> str:
    label = f"{kind} PRIVATE KEY" if kind else "PRIVATE KEY"
    return f"-----BEGIN {label}-----\n{PEM_BODY}\n-----END {label}-----"


OAUTH_TOKEN = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # 36 characters, as GitHub issues them
SLACK_HOOK = "https://hooks.slack.com/services/" + "T0ABC12345/B0DEF67890/" + "aBcDeFgHiJkLmNoPqRsTuVwX"
BEARER = "9f8e7d6c5b4a3928" + "1706fedcba9f8e7d6c5b"


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"token: {GITHUB_TOKEN}", "token: [REDACTED:github-pat]"),
        *((f"{prefix}_{OAUTH_TOKEN}!", f"[REDACTED:{kind}]!")
          for prefix, kind in (("gho", "github-oauth"), ("ghu", "github-app-token"), ("ghs", "github-app-token"),
                               ("ghr", "github-refresh-token"))),
        ("github_pat_" + "11ABCDEFG0" * 8 + "_x", "[REDACTED:github-fine-grained-pat]"),
        ("GITLAB_TOKEN=glpat-" + "x7Yz_9-AbCdEfGhIjKlMn", "GITLAB_TOKEN=[REDACTED:token]"),
        ("slack: xoxb-" + "2851903775-2851938457-AbCdEfGhIjKlMnOpQrStUvWx", "slack: [REDACTED:slack-bot-token]"),
        (f"post to {SLACK_HOOK}", "post to [REDACTED:slack-webhook-url]"),
        (f"key id {AWS_KEY_ID}.", "key id [REDACTED:aws-access-token]."),
        ("ASIA" + "Q7ZK3M9XW2RT5YHP", "[REDACTED:aws-access-token]"),
        (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED:aws-secret-access-key]"),
        (f'"SecretAccessKey": "{AWS_SECRET}"', '"SecretAccessKey": "[REDACTED:aws-secret-access-key]"'),
        (f"Authorization: Bearer {BEARER}", "Authorization: Bearer [REDACTED:authorization-header]"),
        (f'-H "authorization: bearer {BEARER}"', '-H "authorization: bearer [REDACTED:authorization-header]"'),
        (f"send Bearer {BEARER}", "send Bearer [REDACTED:bearer-token]"),
        (f"session={JWT};", "session=[REDACTED:jwt];"),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:jwt]"),
        *((f"before\n{pem(kind)}\nafter", "before\n[REDACTED:private-key]\nafter") for kind in ("RSA", "EC", "OPENSSH", "ENCRYPTED", "")),
        ('{"private_key": "' + pem("").replace("\n", "\\n") + '\\n"}', '{"private_key": "[REDACTED:api-key]"}'),
        ("key: |\n  " + pem("RSA").replace("\n", "\n  ") + "\nnext: 1", "key: |\n  [REDACTED:private-key]\nnext: 1"),
        ("-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "\n(truncated)", "[REDACTED:private-key]\n(truncated)"),
        ("-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "\n\nSee the docs.", "[REDACTED:private-key]\n\nSee the docs."),
        ("//registry.npmjs.org/:_authToken=" + "2f1c6a4e-9b3d-4e8a-" + "a1c2-7d5e6f8a9b0c",
         "//registry.npmjs.org/:_authToken=[REDACTED:npmrc-auth-token]"),
        ("_auth=" + "dXNlcjpIYXJib3I0ODIxIXg3UQ==", "_auth=[REDACTED:npmrc-auth-token]"),
        ("ADMIN_PASSWORD=admin", "ADMIN_PASSWORD=[REDACTED:password]"),  # in a note, a password whatever it looks like
        ("curl -u user:pass http://nas.local/api", "curl -u user:[REDACTED:password] http://nas.local/api"),
        ("| DB_PASSWORD | Harbor4821!x7Q |", "| DB_PASSWORD | [REDACTED:password] |"),
        (f"The staging admin key is {BEARER}.", "The staging admin key is [REDACTED:credential]."),
    ],
)
def test_secrets_are_redacted(text, expected):
    assert redact(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "the ghp_ prefix marks a classic personal access token",
        "ghp_short and ghp_" + "x" * 20,
        "Use a Bearer token in the Authorization header.",
        "Bearer token-based-authentication-everywhere",
        'curl -H "Authorization: Bearer $TOKEN" https://api.example.org',
        "Authorization: Bearer <token>",
        "AKIA is the prefix of long-term access key ids; AKIAQ7ZK3M9XW2RT5YH is one short",
        "xoxo-hugs-and-kisses-forever",
        "hooks.slack.com/services/ is where webhooks live",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
        "secret_access_key is read from the environment",
        "eyJust.eyJoking.really",
        "-----BEGIN PUBLIC KEY-----\n" + PEM_BODY + "\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\n" + PEM_BODY + "\n-----END CERTIFICATE-----",
        "Keys start with `-----BEGIN OPENSSH PRIVATE KEY-----`.",
        "Authorization: Bearer <token>",
        "password: ${DB_PASSWORD}",
        "secretName: my-tls-secret",
        "token: 256",
        "      --password string   Password for basic authentication to the API server",  # usage text: a type
        "token: aHZzLioqKioqKio= # hvs.*******",  # base64 of a masked value
        "auth: " + "Zm9vOiRhcHIxJE9GRzNYeWJwJGNrTDBGSERBa29YWUlsSDkuY3lzVDAK",  # base64 of an htpasswd line: a hash
        "password=self.password",
        "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    ],
)
def test_look_alikes_are_left_alone(text):
    assert redact(text) == (text, {})


def test_every_bundled_gitleaks_rule_compiles():
    """Rules are compiled on first use (a page's keywords select a few of 200): one whose translation `re` refuses
    must fail here, not on the first page that names its keyword."""
    from rag_search.safety.gitleaks import GitleaksRules, _go

    rules = GitleaksRules().rules
    assert len(rules) > 150
    for rule_id, pattern, *_ in rules:
        assert _go(pattern).pattern, rule_id


def test_redact_counts_each_kind():
    text = f"{GITHUB_TOKEN}\n{GITHUB_TOKEN}\n{AWS_KEY_ID}\n{pem('EC')}\n"
    assert redact(text)[1] == {"github-pat": 2, "aws-access-token": 1, "private-key": 1}


def test_many_key_headers_without_an_end_take_linear_time():
    started = time.monotonic()
    text, found = redact("-----BEGIN RSA PRIVATE KEY-----\n" * 20_000)  # took 80 s with a body that could span headers
    assert found == {}, "a header with no key body is not a secret"
    assert time.monotonic() - started < 10, "a safety net against a quadratic pattern, not a speed test"


@pytest.mark.parametrize(
    "name",
    [".env", ".env.local", ".ENV.production", "server.pem", "tls.key", "id_rsa", "id_rsa.pub", "id_dsa", "id_ecdsa",
     "id_ed25519", "cert.p12", "cert.pfx", "credentials", "credentials.json", ".netrc", ".git-credentials", "vault.kdbx",
     ".pgpass", ".npmrc", ".pypirc", "release.keystore", "trust.jks"],
)
def test_secret_file_names(name):
    assert is_secret_file(name)


@pytest.mark.parametrize("name", ["env.md", "my.env.md", "environment.yaml", "keys.md", "monkey.md", "notes-on-credentials.md",
                                  "pem-files.md", "netrc.md", "key-rotation.txt"])
def test_ordinary_file_names(name):
    assert not is_secret_file(name)


def test_no_ignore_rule_brings_a_secret_file_back(tmp_path):
    (tmp_path / ".ragignore").write_text("!.env\n!credentials.json\n!**/.npmrc\n")
    for rel in [".env", ".env.local", "credentials.json", "server.pem", "id_ed25519", "sub/.npmrc", "note.md", "sub/keep.json"]:
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("x")
    result = walk_root(tmp_path, ignore_patterns=["!.env.local"])
    assert sorted(entry.rel for entry in result.files) == ["note.md", "sub/keep.json"]
    assert sorted(result.secret_files) == [".env", ".env.local", "credentials.json", "id_ed25519", "server.pem", "sub/.npmrc"]
    assert result.ignored == 1, "only .ragignore: secret files are counted apart"


def test_git_tree_leaves_out_secret_files_whatever_the_glob(tmp_path):
    origin = GitRepo(tmp_path / "origin")
    origin.write({"docs/guide.md": "# Guide", "docs/credentials.json": "{}", "docs/.env": "A=1", "docs/tls/server.key": "k",
                  "src/id_rsa": "k"})
    commit = origin.commit("docs")
    spec = GitSource("proj", "Project", origin.url, "docs", Selection(("**/*",)))
    tree = _tree_files(git.Repo(origin.path), commit, spec)
    assert list(tree.files) == ["docs/guide.md"]
    assert sorted(tree.secret_files) == ["docs/.env", "docs/credentials.json", "docs/tls/server.key"]
    assert list(tree.blobs) == ["docs/guide.md"], "a credential file is not even offered to includes"


def test_no_secret_reaches_the_store_end_to_end(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "homelab.md").write_text(
        "# Homelab access\n\n"
        "The bluefinch cluster backs up to the NAS every night.\n\n"
        f"## Tokens\n\nThe deploy bot uses {GITHUB_TOKEN} and the backup job key id {AWS_KEY_ID}.\n\n"
        f"## SSH\n\n```\n{pem('OPENSSH')}\n```\n\nRotate the key every quarter.\n"
    )
    env_value = "DB_PASSWORD=" + "tangerine-" + "walrus-42"
    (root / ".env").write_text(env_value + "\n")
    (root / "credentials.json").write_text(json.dumps({"password": "saffron-" + "otter-77"}))
    (root / ".ragignore").write_text("!.env\n")
    data = tmp_path / "data"

    result = call_script("index_personal.py", "--data-dir", data, root)
    assert result.code == 0, result
    summary = result.json
    assert (summary["added"], summary["secret_files"], summary["redacted"], summary["ignored"]) == (1, 2, 3, 1)
    assert "left out 2 file(s) that hold credentials" in result.stderr
    assert set(files_in_store(data)) == {"homelab.md"}

    stored = json.dumps(store_contents(data))
    for secret in (GITHUB_TOKEN, AWS_KEY_ID, PEM_BODY.splitlines()[0], "tangerine", "saffron"):
        assert secret not in stored
    assert "[REDACTED:github-pat]" in stored and "[REDACTED:private-key]" in stored
    for path in data.rglob("*"):  # vectors, catalog, keyword index, write-ahead logs
        if path.is_file() and "model" not in path.relative_to(data).parts:
            content = path.read_bytes()
            assert GITHUB_TOKEN.encode() not in content and AWS_KEY_ID.encode() not in content, path

    by_token = call_script("search.py", "--data-dir", data, "--mode", "lexical", GITHUB_TOKEN)
    assert by_token.code == 0, by_token
    assert by_token.json["results"] == []
    found = call_script("search.py", "--data-dir", data, "--mode", "lexical", "bluefinch cluster backups")
    assert found.json["results"][0]["file"] == "homelab.md"

    again = call_script("index_personal.py", "--data-dir", data, root).json
    assert (again["unchanged"], again["embedded"], again["redacted"]) == (1, 0, 0), "hashes are of the raw file: nothing changed"


def test_markdown_escapes_cannot_hide_a_secret():
    """trafilatura writes every underscore of a web page as `\\_`, and authors escape them by hand."""
    escaped = GITHUB_TOKEN.replace("_", "\\_")
    text, counts = redact(f"The bot uses {escaped} to push, and self\\_heal stays off.")
    assert counts == {"github-pat": 1}
    assert GITHUB_TOKEN[4:16] not in text and "self\\_heal stays off" in text


def test_a_token_in_a_web_pages_prose_never_reaches_the_data_dir(tmp_path, isolated_home):
    from conftest import add_source, index_docs
    from webserver import DocsSite, Page

    data = tmp_path / "data"
    with DocsSite() as site:
        site.pages["/docs/bot/"] = Page(
            "<html><head><title>Bot</title></head><body><article><h1>Deploy bot</h1>"
            f"<p>The deploy bot pushes with the token {GITHUB_TOKEN} from the vault, every night at two.</p>"
            "<p>It restarts the bluefinch services after each push and reports to the channel.</p></article></body></html>")
        add_source("--id", "wiki", "--name", "Wiki", "--type", "web", "--base-url", site.url, "--pages", "bot/")
        result = index_docs(data, "--all")
    assert result.code == 0, result
    assert "wiki/bot/" in files_in_store(data, "docs")
    needle = GITHUB_TOKEN[4:16].encode()
    for path in data.rglob("*"):
        if path.is_file() and "model" not in path.relative_to(data).parts:
            assert needle not in path.read_bytes(), path


def test_a_token_in_a_web_pages_url_reaches_no_field(tmp_path, isolated_home):
    """The page's URL carries an access token in its query: it fetches the page, and every field the index keeps (the
    chunks' file and url, the catalog, a search result, the saved page's name) shows it redacted."""
    from conftest import add_source, index_docs
    from webserver import DocsSite, Page, html_page

    data = tmp_path / "data"
    token = "Xq7Lm2Vp9Rt4" + "Kw8Zs3Nb6Yd1"
    with DocsSite() as site:
        site.pages["/docs/status/"] = Page(html_page("Status", "<h1>Status board</h1><p>The bluefinch status board lists "
                                                     "every degraded service with the engineer on call for it.</p>"))
        add_source("--id", "board", "--name", "Board", "--type", "web", "--base-url", site.url, "--pages", f"status/?token={token}")
        result = index_docs(data, "--all")
    assert result.code == 0, result
    stored = store_contents(data, "docs")
    assert {chunk["metadata"]["file"] for chunk in stored.values()} == {"board/status/?token=[REDACTED:token]"}
    assert token not in json.dumps(stored)
    found = call_script("search.py", "--data-dir", data, "--mode", "lexical", "bluefinch status board")
    assert found.json["results"] and found.json["results"][0]["file"] == "board/status/?token=[REDACTED:token]"
    assert token not in found.stdout
    page = call_script("get.py", "--data-dir", data, "board/status/?token=[REDACTED:token]")
    assert page.code == 0 and page.json["from"] == "saved page", page
    for path in data.rglob("*"):
        if path.is_file() and "model" not in path.relative_to(data).parts:
            assert token.encode() not in path.read_bytes(), path


@pytest.fixture(scope="module")
def hostile_corpus(tmp_path_factory):
    """bench/secrets_corpus.py: 81 fake credentials of 58 kinds and 42 hard negatives in every file type we index."""
    sys.path.insert(0, str(PROJECT / "bench"))
    from secrets_corpus import generate

    root = tmp_path_factory.mktemp("hostile")
    return root, generate(root, seed=0)


KIND_BY_SUFFIX = {".json": "json", ".jsonl": "jsonl", ".md": "markdown"}


def test_every_planted_credential_is_redacted_and_every_hard_negative_kept(hostile_corpus):
    """Each kind that leaked before (Stripe, Google, OpenAI, Anthropic, Hugging Face, npm, PyPI, SendGrid, Twilio, Heroku,
    passwords in URLs, YAML and JSON, DB_PASSWORD=, .npmrc, Azure keys and SAS, Docker auth, kubeconfig, PGP, AWS in prose,
    escaped JSON) and more, as the indexer redacts each file (git and web text as documentation)."""
    from rag_search.safety.secrets import redact_document

    root, planted = hostile_corpus
    redacted = {}
    for item in planted:
        if item.file not in redacted:
            path = root / item.file
            redacted[item.file] = redact_document(KIND_BY_SUFFIX.get(path.suffix, "text"), path.read_text(),
                                                  documentation=item.channel in ("git", "web"))[0]
    leaked = [(item.kind, item.file) for item in planted if not item.must_survive and item.value in redacted[item.file]]
    lost = [(item.kind, item.file) for item in planted if item.must_survive and item.value not in redacted[item.file]]
    assert leaked == [] and lost == []
    kinds = {item.kind for item in planted if not item.must_survive}
    assert len(kinds) >= 25 and {"stripe-secret-key", "anthropic-api-key", "url-password", "pgp-private-key",
                                 "kubeconfig-client-key", "github-token-json-escaped", "aws-secret-in-prose"} <= kinds
