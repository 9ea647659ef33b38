"""Secrets, both ways: documentation keeps its credential-shaped examples, personal notes keep nothing of the kind.

The same strings (a gateway's documented default admin key, `ADMIN_PASSWORD=admin`, a sample JWT, `curl -u user:pass`)
are examples in published docs and credentials in a note; a high-entropy key pasted once into docs is a mistake,
redacted. The fake values are assembled at run time, so this file holds no string a secret scanner would flag.
"""

import base64
import json

import pytest

from conftest import add_source, call_script, index_docs, store_contents
from rag_search.safety.secrets import redact, redact_document
from webserver import DocsSite, Page, html_page


def _b64(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


ADMIN_KEY = "edd1c9f0" + "34335f136f87ad84b625c8f1"  # the shape of a gateway's documented default admin key
SAMPLE_JWT = ".".join((_b64({"alg": "HS256", "typ": "JWT"}), _b64({"sub": "1234567890", "name": "John Doe", "iat": 1516239022}),
                       "SflKxwRJSMeKKF2QT4fw" + "pMeJf36POk6yJV_adQssw5c"))  # jwt.io's sample
PASTED = "Zr8Qm2Xw7Kc4" + "Vt9Lp3Hs6Nd1Bf5Gy0Ja" + "Ue2Wk7Tq"  # 40 random characters: a real key, pasted by mistake
NPM_UUID = "2f1c6a4e-" + "9b3d-4e8a-a1c2-7d5e6f8a9b0c"

ROUTES = """<h1>Routes</h1>
<p>Create a route that sends the bluefinch catalog requests to its upstream, with the admin API.</p>
<pre><code>curl http://127.0.0.1:9180/apisix/admin/routes/1 -X PUT -H "X-API-KEY: {key}" -d '{{"uri": "/catalog/*"}}'
</code></pre>"""

PLUGINS = """<h1>Plugins</h1>
<p>List the plugins the gateway loaded, with the admin API.</p>
<pre><code>curl http://127.0.0.1:9180/apisix/admin/plugins/list -H "X-API-KEY: {key}"
</code></pre>
<h2>Dashboard</h2>
<p>The dashboard container reads its login from the environment.</p>
<pre><code>docker run -e ADMIN_PASSWORD=admin gateway/dashboard
</code></pre>
<h2>Basic auth</h2>
<p>Protected routes take the consumer's name and password.</p>
<pre><code>curl -u user:pass http://127.0.0.1:9080/hello
</code></pre>
<h2>JWT</h2>
<p>Send the consumer's token with every request.</p>
<pre><code>curl http://127.0.0.1:9080/hello -H "Authorization: Bearer {jwt}"
</code></pre>
<h2>Mirror</h2>
<p>The mirror pulls the bluefinch catalog every night.</p>
<pre><code>curl https://mirror.internal/sync -H "X-API-KEY: {pasted}"
</code></pre>"""

CONSUMERS = """<h1>Consumers</h1>
<p>Register the bluefinch mobile app as a consumer, with the admin API.</p>
<pre><code>curl http://127.0.0.1:9180/apisix/admin/consumers -X PUT -H "X-API-KEY: {key}" -d '{{"username": "mobile"}}'
</code></pre>"""

NOTE = f"""# Gateway at home

Admin API of the bluefinch gateway:

```
curl http://10.0.0.5:9180/apisix/admin/routes -H "X-API-KEY: {ADMIN_KEY}"
docker run -e ADMIN_PASSWORD=admin gateway/dashboard
curl -u user:pass http://10.0.0.5:9080/hello
curl http://10.0.0.5:9080/hello -H "Authorization: Bearer {SAMPLE_JWT}"
curl https://mirror.internal/sync -H "X-API-KEY: {PASTED}"
```

Publishing the bluefinch packages, from the old laptop's npmrc:

```
//registry.npmjs.org/:_authToken={NPM_UUID}
```
"""


def _texts(stored: dict, file: str) -> str:
    return "\n".join(chunk["text"] for chunk in stored.values() if chunk["metadata"]["file"] == file)


def test_documentation_keeps_its_examples_and_a_personal_note_keeps_none(tmp_path, isolated_home):
    data = tmp_path / "data"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "gateway.md").write_text(NOTE)
    private = tmp_path / "private-docs"  # a local folder of docs: may be private, so as strict as notes
    private.mkdir()
    (private / "routes.md").write_text(f"# Routes\n\n```\ncurl -H \"X-API-KEY: {ADMIN_KEY}\" http://127.0.0.1:9180/apisix/admin/routes\n```\n")
    (private / "plugins.md").write_text(f"# Plugins\n\n```\ncurl -H \"X-API-KEY: {ADMIN_KEY}\" http://127.0.0.1:9180/apisix/admin/plugins\n```\n")
    with DocsSite() as site:
        site.pages["/docs/routes/"] = Page(html_page("Routes", ROUTES.format(key=ADMIN_KEY)))
        site.pages["/docs/plugins/"] = Page(html_page("Plugins", PLUGINS.format(key=ADMIN_KEY, jwt=SAMPLE_JWT, pasted=PASTED)))
        add_source("--id", "gateway", "--name", "Gateway", "--type", "web", "--base-url", site.url, "--pages", "routes/", "plugins/")
        add_source("--id", "private", "--name", "Private", "--type", "local", "--path", private)
        assert index_docs(data, "--all").code == 0
        plugins_page = call_script("get.py", "--data-dir", data, site.url + "plugins/").json
        routes_page = call_script("get.py", "--data-dir", data, site.url + "routes/").json  # redacted again once plugins/ showed it
        site.pages["/docs/consumers/"] = Page(html_page("Consumers", CONSUMERS.format(key=ADMIN_KEY)))
        add_source("--update", "--id", "gateway", "--pages", "routes/", "plugins/", "consumers/")
        later = index_docs(data, "--source", "gateway")
    assert later.code == 0, later
    assert call_script("index_personal.py", "--data-dir", data, notes).code == 0

    docs = store_contents(data, "docs")
    routes, plugins, consumers = (_texts(docs, f"gateway/{page}/") for page in ("routes", "plugins", "consumers"))
    assert ADMIN_KEY in routes and ADMIN_KEY in plugins, "the default admin key that two pages show is an example"
    assert ADMIN_KEY in consumers, "a page added later that shows it too"
    for example in ("ADMIN_PASSWORD=admin", "-u user:pass", SAMPLE_JWT):
        assert example in plugins
    assert PASTED not in json.dumps(docs) and "X-API-KEY: [REDACTED:" in plugins, "a real key pasted once is redacted"
    assert ADMIN_KEY in plugins_page["text"] and SAMPLE_JWT in plugins_page["text"], "get.py shows the page as indexed"
    assert routes_page["from"] == "saved page" and ADMIN_KEY in routes_page["text"]
    assert PASTED not in plugins_page["text"]
    found = call_script("search.py", "--data-dir", data, "--mode", "lexical", "plugins the gateway loaded").json["results"]
    assert found[0]["file"] == "gateway/plugins/" and ADMIN_KEY in found[0]["chunk"]
    assert ADMIN_KEY not in _texts(docs, "private/routes.md") + _texts(docs, "private/plugins.md")

    personal = json.dumps(store_contents(data))
    for secret in (ADMIN_KEY, SAMPLE_JWT.split(".")[2], PASTED, NPM_UUID, "ADMIN_PASSWORD=admin", "user:pass"):
        assert secret not in personal, secret
    assert "_authToken=[REDACTED:" in personal


def test_get_shows_a_git_file_with_the_examples_its_chunks_kept(tmp_path, isolated_home):
    from gitrepo import GitRepo

    origin = GitRepo(tmp_path / "gateway-docs")
    origin.write({"docs/routes.md": ROUTES_MD.format(key=ADMIN_KEY, extra=""),
                  "docs/plugins.md": ROUTES_MD.format(key=ADMIN_KEY, extra=f"\nMirror: `X-API-KEY: {PASTED}`\n")})
    origin.commit("docs")
    data = tmp_path / "data"
    add_source("--id", "gw", "--name", "Gateway", "--type", "git", "--url", origin.url, "--path", "docs")
    assert index_docs(data, "--source", "gw").code == 0
    page = call_script("get.py", "--data-dir", data, "gw/docs/plugins.md")
    assert page.code == 0 and page.json["from"] == "file", page
    assert ADMIN_KEY in page.json["text"] and PASTED not in page.json["text"]


ROUTES_MD = """# Routes

Create a route for the bluefinch catalog with the admin API:

```shell
curl http://127.0.0.1:9180/apisix/admin/routes/1 -X PUT -H "X-API-KEY: {key}"
```
{extra}"""


@pytest.mark.parametrize(
    "text",
    [
        f"The default admin key is `{ADMIN_KEY}`; change it before exposing the admin API.",
        f"| Variable | Description | Default |\n|---|---|---|\n| ADMIN_KEY | the admin API key | `{ADMIN_KEY}` |",
        f"deployment:\n  # the default admin key: change it\n\n  admin_key: {ADMIN_KEY}",
        "Authorization: Basic " + base64.b64encode(b"aladdin:opensesame").decode(),
        "curl -u admin:admin http://localhost:8001/status",
        "curl -u user:pass http://127.0.0.1:9080/hello",
        "docker run -e ADMIN_PASSWORD=admin gateway/dashboard",
        "curl -H 'apikey: 0123456789abcdef' http://localhost:8000/mock",
        f"token: {SAMPLE_JWT}",
    ],
)
def test_documentation_examples_are_kept_and_the_same_text_in_a_note_is_not(text):
    assert redact(text, documentation=True) == (text, {})
    assert redact(text)[1], "a personal note is strict"


@pytest.mark.parametrize(
    "text",
    [
        f"X-API-KEY: {PASTED}",
        f"password: {PASTED[:18]}",
        f"For example:\n\n    export GITHUB_TOKEN=ghp_{PASTED[:36]}",  # a provider format: always
        f"postgres://app:{PASTED[:16]}@db.internal/app",  # a URL credential: always
        f"curl https://api.internal/v1/export?token={PASTED}",
        f"//registry.npmjs.org/:_authToken={NPM_UUID}",
        f"Authorization: Bearer {PASTED}",
    ],
)
def test_what_looks_real_in_documentation_is_redacted(text):
    assert redact(text, documentation=True)[1], text


GENERATED = "Qw3Er5Ty7Ui9" + "Op2As4Df"  # 20 random characters


@pytest.mark.parametrize(
    "text",
    [
        f'Register the app. The portal answers:\n\n```json\n{{"consumerSecret": "{GENERATED}"}}\n```\n',
        f'Response:\n\n```json\n{{"consumerKey": "{GENERATED}"}}\n```\n\nThen call `curl "https://127.0.0.1/v1/forecast?apikey={GENERATED}"`.',
        "\n\n".join(f"Step {n}:\n\n    --tsig-secret={GENERATED}" for n in range(3)),  # a walkthrough's sample, shown 3 times
    ],
)
def test_output_blocks_and_a_documents_own_samples_are_kept_in_documentation(text):
    assert redact(text, documentation=True) == (text, {})
    assert GENERATED not in redact(text)[0]


@pytest.mark.parametrize(
    "text",
    [
        f"```\nexport MIRROR_TOKEN={GENERATED}\ncurl -H \"X-API-KEY: {GENERATED}\" https://mirror.internal/sync\n```",  # twice
        "curl https://127.0.0.1/v1/forecast?apikey=" + GENERATED,  # a URL credential, not shown elsewhere
        f'Response:\n\n```json\n{{"token": "ghp_{PASTED[:36]}"}}\n```',  # a provider format, even in output
    ],
)
def test_a_real_key_in_documentation_stays_redacted(text):
    assert GENERATED not in redact(text, documentation=True)[0] and PASTED[:36] not in redact(text, documentation=True)[0]


def test_a_url_placeholder_is_kept_in_documentation():
    text = "export HELM_DRIVER_SQL_CONNECTION_STRING=postgresql://db:5432/helm?user=helm&password=changeme"
    assert redact(text, documentation=True) == (text, {})


def test_a_document_redacted_before_another_showed_its_value_is_named_for_redaction_again():
    from rag_search.safety.secrets import SourceCensus, redact_document

    census = SourceCensus()
    first = redact_document("markdown", f"X-API-KEY: {ADMIN_KEY}", True, census.documented("a.md"))[0]
    second = redact_document("markdown", f"curl -H 'X-API-KEY: {ADMIN_KEY}' localhost", True, census.documented("b.md"))[0]
    assert ADMIN_KEY not in first and ADMIN_KEY in second and census.flipped() == ["a.md"]
    again = redact_document("markdown", f"X-API-KEY: {ADMIN_KEY}", True, census.documented("a.md"))[0]
    assert ADMIN_KEY in again and census.flipped() == []
    alone = redact_document("markdown", f"X-API-KEY: {PASTED}", True, census.documented("c.md"))[0]
    assert PASTED not in alone and census.flipped() == []


REAL = "Xk9vQ2mZ7pL4" + "wq8Rt"  # 17 random characters: a real password


@pytest.mark.parametrize(
    "text",
    [
        "bootstrap.servers=SASL_SSL://user:{sasl_password}@broker:9093",
        'url = "kafka://user:{sasl_password}@broker:9093"',
        'sasl.password = "{sasl_password}"',
        'AccountKey="{InsertAccountPrimaryKeyHere}"',
        'conn = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={InsertAccountPrimaryKeyHere}"',
        'api_key = "<your-key>"',
        "Authorization: Bearer <YOUR_API_TOKEN>",
        'password: "${TOKEN}"',
        '{"password": "{sasl_password}"}',
    ],
)
def test_a_placeholder_written_in_braces_or_angle_brackets_is_kept_in_documentation(text):
    assert redact(text, documentation=True) == (text, {})
    assert "REDACTED" not in redact_document("json" if text.startswith("{") else "markdown", text, True)[0]


@pytest.mark.parametrize("text", ['url = "kafka://user:{sasl_password}@broker:9093"', 'sasl.password = "{sasl_password}"',
                                  'AccountKey="{InsertAccountPrimaryKeyHere}"'])
def test_a_personal_note_keeps_redacting_a_password_in_braces(text):
    assert redact(text)[1], "notes keep today's rule: a quoted value under a password key is a password"


@pytest.mark.parametrize(
    "text",
    [
        f"SASL_SSL://user:{REAL}@broker:9093",
        f"bootstrap.servers=SASL_SSL://user:{{sasl_password}}@broker:9093\nsasl.password = \"{REAL}\"",
        f'AccountKey="{{InsertAccountPrimaryKeyHere}}"\nAccountKey="{REAL}"',
        f"Authorization: Bearer <YOUR_API_TOKEN>\nAuthorization: Bearer {REAL}",
        f'password = "{{{REAL}}}"',  # braces around a random value: not a slot to fill in
    ],
)
def test_a_real_password_beside_a_placeholder_is_redacted_in_documentation_and_notes(text):
    for documentation in (True, False):
        redacted, found = redact(text, documentation=documentation)
        assert REAL not in redacted and found, (documentation, redacted)
