"""An API-reference corpus for the redactor's false positives: API gateway docs, full of credential-shaped examples.

Four fictional gateways documented the way Kong, Tyk, Apache APISIX and Apigee document theirs: an admin API whose
documented default key every example sends (`X-API-KEY: edd1c9f0…`, `x-gw-authorization: 352d20ee…`), key-auth
consumers and `apikey:` headers, basic auth (`curl -u user:pass`, `Authorization: Basic …`), JWT plugins with sample
tokens, configuration references with defaults, environment variable tables (`ADMIN_PASSWORD=admin`), install pages,
OAuth apps, and sample responses with generated ids and keys. Every value is an example a reader needs to see.

`generate(seed, pasted=False)` returns ({source: {page: markdown}}, pasted values). With `pasted=True` each gateway's
troubleshooting page also holds a real key and a real password pasted once by mistake (drawn from their own random
generator, so every other page is the same with and without them): those must still be redacted. The same seed
gives the same corpus.

    .venv/bin/python bench/secrets_apidocs.py DIR   # write it as markdown files, to read
"""

import base64
import json
import random
import string
import sys
from pathlib import Path

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
RESOURCES = ("routes", "services", "upstreams", "consumers", "plugins", "certificates", "global-rules", "plugin-configs",
             "stream-routes", "secrets", "protos", "consumer-groups")
AUTH_PLUGINS = ("key-auth", "basic-auth", "jwt-auth", "hmac-auth", "openid-connect", "ldap-auth", "forward-auth")
OTHER_PLUGINS = ("limit-count", "limit-req", "proxy-rewrite", "cors", "ip-restriction", "request-id", "prometheus",
                 "http-logger", "kafka-logger", "response-rewrite", "fault-injection", "traffic-split", "redirect",
                 "gzip", "real-ip", "consumer-restriction", "proxy-cache", "mocking", "grpc-transcode", "zipkin")
GUIDES = ("getting-started", "installation", "docker", "kubernetes", "helm", "configuration", "environment-variables",
          "upgrading", "troubleshooting", "performance-tuning", "high-availability", "tls", "logging", "monitoring",
          "dashboard", "developer-portal", "rate-limiting", "canary-release", "health-checks", "service-discovery")
# Gateways: (name, admin header, documented default admin key, viewer key or None, admin port, proxy port)
GATEWAYS = (
    ("gatehouse", "X-API-KEY", "edd1c9f034335f136f87ad84b625c8f1", "4054f7cf07e344346cd3f287985e76a2", 9180, 9080),
    ("tollbooth", "x-tollbooth-authorization", "352d20ee67be67f6340b4c0605b044b7", None, 8080, 8080),
    ("portcullis", "Kong-Admin-Token", "kpat_admin_local_dev_token", None, 8001, 8000),
    ("bridgekeeper", "X-Admin-Key", "b3f9c2a17d8e4f60a5c1e9d2f7b4a038", None, 8443, 9001),
)


def _b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _jwt(rng: random.Random, claims: dict) -> str:
    signature = base64.urlsafe_b64encode(rng.randbytes(32)).decode().rstrip("=")
    return f"{_b64url({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url(claims)}.{signature}"


class _Site:
    """One gateway's docs: the values its pages share, and the pages."""

    def __init__(self, rng: random.Random, gateway: tuple, pasted: random.Random | None):
        self.rng = rng
        self.name, self.header, self.admin_key, self.viewer_key, self.admin_port, self.port = gateway
        self.pasted = pasted
        self.secrets: list[str] = []
        # One sample token and one consumer key the plugin pages and the consumer pages both print.
        self.sample_jwt = _jwt(rng, {"key": "user-key", "exp": 1879318541})
        self.consumer_key = "".join(rng.choice(HEX) for _ in range(32))
        self.pages: dict[str, str] = {}

    def hex(self, n: int) -> str:
        return "".join(self.rng.choice(HEX) for _ in range(n))

    def admin(self, method: str, path: str, body: dict | None = None) -> str:
        data = f" \\\n  -d '{json.dumps(body)}'" if body else ""
        return (f"curl http://127.0.0.1:{self.admin_port}/{self.name}/admin/{path} -X {method} \\\n"
                f"  -H \"{self.header}: {self.admin_key}\"{data}")

    def response(self, body: dict) -> str:
        heading = self.rng.choice(("Response", "Example response", "The gateway answers", "Sample response", "Output"))
        return f"{heading}:\n\n```json\n{json.dumps(body, indent=2)}\n```\n"

    def parameters(self, names: list[str]) -> str:
        rows = ["| Name | Type | Required | Default | Description |", "|---|---|---|---|---|"]
        for name in names:
            kind = self.rng.choice(("string", "integer", "boolean", "object", "array[string]"))
            default = {"string": '""', "integer": str(self.rng.choice((0, 1, 60, 100, 3000))), "boolean": "false"}.get(kind, "")
            rows.append(f"| {name} | {kind} | {self.rng.choice(('True', 'False'))} | {default} | The {name.replace('_', ' ')} of "
                        f"the object; see the guide for the values it takes. |")
        return "\n".join(rows)

    # --- page kinds ------------------------------------------------------------------

    def resource_page(self, resource: str) -> str:
        oid = str(self.rng.randrange(10**17, 10**18))
        body = {"uri": f"/{resource}/*", "upstream": {"type": "roundrobin", "nodes": {"httpbin.org:80": 1}}}
        created = {"key": f"/{self.name}/{resource}/{oid}", "value": {**body, "id": oid, "create_time": 1707300000}}
        return f"""# {resource.replace('-', ' ').title()}

{self.name.title()} stores {resource} in its configuration center and applies a change to every gateway node within a
second. This page describes the Admin API for {resource}: create, read, update and delete, with their parameters.

## Attributes

{self.parameters(['id', 'name', 'desc', 'labels', 'uri', 'hosts', 'priority', 'timeout', 'status'])}

## Create

Create one with a PUT to its id, or a POST to let the gateway choose the id:

```shell
{self.admin('PUT', f'{resource}/{oid}', body)}
```

{self.response(created)}
## List and get

```shell
{self.admin('GET', resource)}
{self.admin('GET', f'{resource}/{oid}')}
```

## Delete

Deleting a {resource[:-1]} that another object still uses fails with 400, and the error names the object.

```shell
{self.admin('DELETE', f'{resource}/{oid}')}
```
"""

    def auth_plugin_page(self, plugin: str) -> str:
        consumer = self.rng.choice(("jack", "tom", "alice", "mobile-app", "partner-a"))
        if plugin == "key-auth":
            config = {"username": consumer, "plugins": {"key-auth": {"key": f"auth-{self.rng.choice(('one', 'two', 'jack'))}"}}}
            use = f"curl http://127.0.0.1:{self.port}/index.html -H 'apikey: {config['plugins']['key-auth']['key']}' -i"
            extra = f"\nKeys the gateway generates are 32 hex characters, such as `{self.consumer_key}`.\n"
        elif plugin == "basic-auth":
            user, password = self.rng.choice((("foo", "bar"), ("user", "pass"), ("admin", "admin"), ("bob", "password123")))
            config = {"username": consumer, "plugins": {"basic-auth": {"username": user, "password": password}}}
            basic = base64.b64encode(f"{user}:{password}".encode()).decode()
            use = f"curl -i -u {user}:{password} http://127.0.0.1:{self.port}/hello\n\n# or, the same header by hand\n" \
                  f"curl -i -H 'Authorization: Basic {basic}' http://127.0.0.1:{self.port}/hello"
            extra = ""
        elif plugin == "jwt-auth":
            config = {"username": consumer, "plugins": {"jwt-auth": {"key": "user-key", "secret": "my-secret-key"}}}
            use = f"curl http://127.0.0.1:{self.port}/index.html -H 'Authorization: {self.sample_jwt}' -i"
            sample = _jwt(self.rng, {"sub": "1234567890", "name": "John Doe", "iat": 1516239022})
            extra = f"\nA token signed with another secret, such as `{sample}`, is refused with 401.\n"
        else:
            secret = self.rng.choice(("my-secret-key", "secret-key-123", "client-secret", "${{CLIENT_SECRET}}"))
            config = {"username": consumer, "plugins": {plugin: {"client_id": f"{consumer}-client", "client_secret": secret}}}
            use = f"curl http://127.0.0.1:{self.port}/get -H 'Authorization: Bearer <access token>'"
            extra = ""
        return f"""# {plugin}

The `{plugin}` plugin authenticates the requests of a consumer before they reach the upstream. Add it to a consumer,
then enable it on a route; requests without valid credentials get 401.

## Attributes

{self.parameters(['key', 'secret', 'header', 'query', 'hide_credentials'])}

## Enable the plugin

Create a consumer with its credentials:

```shell
{self.admin('PUT', 'consumers', config)}
```

Then enable the plugin on a route:

```shell
{self.admin('PUT', 'routes/1', {'uri': '/index.html', 'plugins': {plugin: {}}})}
```

## Test the plugin

```shell
{use}
```
{extra}
## Delete the plugin

Remove its entry from the route's `plugins` and update the route; the change is applied at once, without a restart.
"""

    def other_plugin_page(self, plugin: str) -> str:
        return f"""# {plugin}

The `{plugin}` plugin changes how the gateway handles the requests of a route, a service or a consumer. It runs in the
access phase, after authentication, and its configuration is checked against its schema when you save it.

## Attributes

{self.parameters(['count', 'time_window', 'key', 'rejected_code', 'policy', 'allow_degradation'])}

## Enable the plugin

```shell
{self.admin('PUT', 'routes/1', {'uri': '/index.html', 'plugins': {plugin: {'count': 2, 'time_window': 60}}})}
```

## Test

```shell
curl -i http://127.0.0.1:{self.port}/index.html
```

The third request within a minute gets 503 with the `X-RateLimit-Remaining: 0` header.
"""

    def guide_page(self, guide: str) -> str:
        sections = [f"# {guide.replace('-', ' ').title()}\n\nThis guide walks through {guide.replace('-', ' ')} for "
                    f"{self.name.title()}, from a single node on a laptop to a cluster behind a load balancer."]
        if guide in ("configuration", "installation", "docker", "helm", "getting-started", "dashboard"):
            sections.append(self.config_section())
        if guide in ("environment-variables", "docker", "dashboard", "configuration"):
            sections.append(self.env_table())
        if guide in ("installation", "docker", "kubernetes", "helm", "getting-started"):
            sections.append(self.install_section())
        if guide == "troubleshooting" and self.pasted:
            sections.append(self.pasted_section(self.pasted))
        if guide == "developer-portal":
            sections.append(self.app_section())
        sections.append(f"## Check the node\n\n```shell\n{self.admin('GET', 'routes')}\n```\n\nAn empty list means the "
                        f"node is up and has no route yet; an error names the configuration key to fix.")
        return "\n\n".join(sections) + "\n"

    def config_section(self) -> str:
        viewer = f"""
      - name: viewer
        key: {self.viewer_key}
        role: viewer""" if self.viewer_key else ""
        return f"""## Configuration file

`conf/config.yaml` overrides `conf/config-default.yaml`. Change the admin key before you expose the Admin API.

```yaml
deployment:
  admin:
    admin_key_required: true
    admin_key:
      - name: admin
        key: {self.admin_key}  # the default: change it
        role: admin{viewer}
  etcd:
    host:
      - "http://127.0.0.1:2379"
    user: root
    password: {self.rng.choice(('5tHkHhYkjr6cQY', 'etcd-password', 'changeme'))}
```

The default admin key is `{self.admin_key}`; the gateway logs a warning at start while it is in use."""

    def env_table(self) -> str:
        upper = self.name.upper()
        rows = [(f"{upper}_ADMIN_KEY", self.admin_key, "Admin API key"), (f"{upper}_PG_PASSWORD", "kongpass", "Postgres password"),
                ("ADMIN_PASSWORD", "admin", "Dashboard login"), (f"{upper}_PG_USER", upper.lower(), "Postgres user"),
                (f"{upper}_REDIS_PASSWORD", '""', "Redis password, empty for none"), (f"{upper}_LOG_LEVEL", "notice", "Log level")]
        table = "\n".join(f"| `{name}` | `{default}` | {text} |" for name, default, text in rows)
        return f"""## Environment variables

| Variable | Default | Description |
|---|---|---|
{table}

```shell
export {upper}_PG_PASSWORD=kongpass
export ADMIN_PASSWORD=admin
```"""

    def install_section(self) -> str:
        return f"""## Run it

```shell
docker network create {self.name}-net
docker run -d --name {self.name}-database --network={self.name}-net \\
  -e "POSTGRES_USER={self.name}" -e "POSTGRES_DB={self.name}" -e "POSTGRES_PASSWORD=kongpass" postgres:13
docker run -d --name {self.name} --network={self.name}-net \\
  -e "{self.name.upper()}_PG_PASSWORD=kongpass" -e "ADMIN_PASSWORD=admin" \\
  -p {self.port}:{self.port} -p {self.admin_port}:{self.admin_port} {self.name}/{self.name}:3.6
helm install {self.name} {self.name}/{self.name} --set admin.key={self.admin_key} --set dashboard.password=admin
```

Log in to the dashboard as `admin` with the password `admin`, and change it at once:

```shell
curl -u admin:admin http://127.0.0.1:9000/api/user/password -X PUT -d '{{"new": "..."}}'
```"""

    def app_section(self) -> str:
        """A developer app's credentials as the portal answers them: generated, printed once."""
        key = "".join(self.rng.choice(ALNUM) for _ in range(32))
        secret = "".join(self.rng.choice(ALNUM) for _ in range(16))
        answer = {"appId": self.hex(8) + "-" + self.hex(4), "name": "weather-app", "credentials": [
            {"consumerKey": key, "consumerSecret": secret, "status": "approved", "expiresAt": -1}]}
        return f"""## Register an app

A developer registers an app in the portal and gets a consumer key and secret for it.

{self.response(answer)}
The app sends its consumer key with each call:

```shell
curl "https://127.0.0.1:{self.port}/v1/weather/forecast?city=Lisbon&apikey={key}"
```"""

    def pasted_section(self, rng: random.Random) -> str:
        """A real key pasted by mistake into a page: it must be redacted."""
        token = "".join(rng.choice(ALNUM) for _ in range(40))
        password = "".join(rng.choice(ALNUM) for _ in range(14)) + "!" + "".join(rng.choice(ALNUM) for _ in range(3))
        self.secrets += [token, password]
        return f"""## Reproducing a 401 on the mirror

The nightly mirror job failed with 401 after the key rotation; this is how the on-call engineer reproduced it:

```shell
curl https://mirror.{self.name}.internal/v1/sync -H "{self.header}: {token}"
MIRROR_DB_PASSWORD={password} ./sync.sh --dry-run
```"""

    def consumer_page(self, index: int) -> str:
        body = {"username": f"partner-{index}", "plugins": {"key-auth": {"key": self.consumer_key}, "jwt-auth": {"key": "user-key"}}}
        answer = {"key": f"/{self.name}/consumers/partner-{index}", "value": {**body, "create_time": 1707300000 + index}}
        return f"""# Partner consumer {index}

Partners get one consumer each, with a key for the public API and a JWT key for the partner API.

```shell
{self.admin('PUT', 'consumers', body)}
```

{self.response(answer)}
The partner sends the key in the `apikey` header, and the token in `Authorization`:

```shell
curl http://127.0.0.1:{self.port}/partner/orders -H 'apikey: {self.consumer_key}'
curl http://127.0.0.1:{self.port}/partner/orders -H 'Authorization: {self.sample_jwt}'
```
"""

    def build(self) -> dict[str, str]:
        for resource in RESOURCES:
            self.pages[f"admin-api/{resource}.md"] = self.resource_page(resource)
        for plugin in AUTH_PLUGINS:
            self.pages[f"plugins/{plugin}.md"] = self.auth_plugin_page(plugin)
        for plugin in OTHER_PLUGINS:
            self.pages[f"plugins/{plugin}.md"] = self.other_plugin_page(plugin)
        for guide in GUIDES:
            self.pages[f"guides/{guide}.md"] = self.guide_page(guide)
        for index in range(1, 11):
            self.pages[f"partners/partner-{index}.md"] = self.consumer_page(index)
        return self.pages


def generate(seed: int = 0, pasted: bool = False) -> tuple[dict[str, dict[str, str]], list[str]]:
    """({source: {page path: markdown}} for the four gateways, the real values pasted into them)."""
    rng, paste = random.Random(seed), random.Random(seed + 1) if pasted else None
    sites = [_Site(rng, gateway, paste) for gateway in GATEWAYS]
    return {site.name: site.build() for site in sites}, [value for site in sites for value in site.secrets]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: secrets_apidocs.py DIR")
    corpus, pasted = generate(pasted=True)
    for source, pages in corpus.items():
        for path, text in pages.items():
            target = Path(sys.argv[1]) / source / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    print(f"{sum(len(pages) for pages in corpus.values())} pages in {len(corpus)} sources, {len(pasted)} real values pasted")


if __name__ == "__main__":
    main()
