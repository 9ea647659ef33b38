"""A fake documentation site on 127.0.0.1 for the tests of web sources.

    with DocsSite() as site:
        site.url                                  # "http://127.0.0.1:PORT/docs/"
        site.pages["/docs/sync-options/"].body = "<html>…"   # new content, so a new ETag
        site.pages["/robots.txt"] = Page("down", status=503)
        site.slow_paths.add("/robots.txt")
        site.statuses("/docs/sync-options/")      # [200, 304]: what each request got

Static pages live in `site.pages` (path -> Page) and answer conditional GETs;
a few routes misbehave on purpose (slow, endless, huge, redirect loops).
Nothing here ever connects anywhere: the only socket is the listening one.
"""

import functools
import hashlib
import threading
import time
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LAST_MODIFIED = "Wed, 15 Jan 2025 10:00:00 GMT"
SLOW_SECONDS = 5  # longer than any test timeout
GIVE_UP_SECONDS = 60  # the endless and trickling routes end then: a client without a deadline fails, not hangs
HUGE_BYTES = 200_000  # larger than any test max_bytes


@dataclass
class Page:
    body: str | bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    last_modified: str = LAST_MODIFIED
    encoding: str | None = None  # Content-Encoding of `body` as given (e.g. gzip)

    @property
    def data(self) -> bytes:
        return self.body if isinstance(self.body, bytes) else self.body.encode()

    @property
    def etag(self) -> str:
        """Derived from the body, so changing the body changes the ETag."""
        return '"' + hashlib.sha256(self.data).hexdigest()[:16] + '"'


@dataclass
class Hit:
    path: str
    headers: dict
    status: int | None = None


def html_page(title: str, article: str) -> str:
    """A realistic docs page: the article wrapped in header, navigation and footer boilerplate."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{title} | Argo CD</title></head>
<body>
<header><a class="brand" href="/docs/">Argo CD Documentation</a>
  <nav><a href="/docs/install/">Getting started</a> <a href="/docs/sync-options/">User guide</a> <a href="/blog/">Blog</a></nav>
</header>
<nav class="sidebar"><ul><li><a href="/docs/">Overview</a></li><li><a href="/docs/install/">Installation</a></li>
  <li><a href="/docs/sync-options/">Sync Options</a></li></ul></nav>
<main>
<article>
{article}
</article>
</main>
<footer><p>Copyright 2025 The Argo Project Authors. Privacy policy. Terms of use.</p></footer>
</body>
</html>
"""


SYNC_OPTIONS = html_page("Sync Options", """
<h1>Sync Options</h1>
<p>Argo CD lets you tune how an application is synchronised with the cluster. The options live in the
<code>syncPolicy</code> field of the Application resource and apply to every sync of that application.</p>
<h2>Automated Sync Policy</h2>
<p>With an automated sync policy Argo CD applies changes from Git as soon as it detects them, without waiting
for someone to press the sync button in the UI or run the CLI.</p>
<h3>Self-Heal</h3>
<p>By default, changes made directly to the live cluster are not reverted. Enable self-heal so that Argo CD
puts back the state described in Git whenever the live state drifts from it.</p>
<pre><code class="language-yaml">spec:
  syncPolicy:
    automated:
      selfHeal: true
</code></pre>
<h2>Prune</h2>
<p>Pruning deletes resources that are no longer defined in Git. It is off by default as a safety measure, so a
mistaken commit cannot wipe out a running workload.</p>
""")

INSTALL = html_page("Installation", """
<h1>Installation</h1>
<p>Argo CD runs inside the cluster it manages. Create a namespace for it and apply the release manifest, which
installs the API server, the repository server and the application controller.</p>
<pre><code>kubectl create namespace argocd
kubectl apply -n argocd -f install.yaml
</code></pre>
<h2>Log in</h2>
<p>The initial admin password is stored in a secret. Read it, log in with the CLI and change it right away.</p>
""")

NOTES = """# Release notes

## v2.13

- Sync waves now respect `PruneLast`.
- The UI shows the health of every resource.
"""

ROBOTS = "User-agent: *\nDisallow: /docs/private/\n"

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


def sitemap(origin: str) -> str:
    """Two pages of the site, one off-site URL and one outside /docs/."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>{origin}/docs/sync-options/</loc><lastmod>2025-01-15</lastmod></url>
  <url><loc>{origin}/docs/install/</loc></url>
  <url><loc>http://example.invalid/docs/elsewhere/</loc></url>
  <url><loc>{origin}/blog/release-2-13/</loc></url>
</urlset>
"""


def sitemap_index(origin: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>{origin}/docs/sitemap.xml</loc></sitemap>
  <sitemap><loc>{origin}/docs/more-sitemap.xml</loc></sitemap>
</sitemapindex>
"""


def more_sitemap(origin: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>{origin}/docs/notes.md</loc></url>
</urlset>
"""


def default_pages(origin: str) -> dict[str, Page]:
    return {
        "/robots.txt": Page(ROBOTS, "text/plain"),
        "/docs/sync-options/": Page(SYNC_OPTIONS),
        "/docs/install/": Page(INSTALL),
        "/docs/notes.md": Page(NOTES, "text/markdown; charset=utf-8"),
        "/docs/private/": Page(html_page("Internal", "<h1>Internal</h1><p>Not for crawlers.</p>")),
        "/docs/removed/": Page("gone for good", "text/plain", status=410),
        "/docs/empty/": Page("<!DOCTYPE html><html><head><title>Empty</title></head><body></body></html>"),
        "/docs/image.png": Page(PNG, "image/png"),
        "/docs/sitemap.xml": Page(sitemap(origin), "application/xml"),
        "/docs/sitemap-index.xml": Page(sitemap_index(origin), "application/xml"),
        "/docs/more-sitemap.xml": Page(more_sitemap(origin), "application/xml"),
    }


@functools.cache
def gzip_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)  # gzip framing
    block = bytes(1024 * 1024)
    return b"".join(compressor.compress(block) for _ in range(200)) + compressor.flush()


# Routes that redirect: path -> Location.
REDIRECTS = {
    "/docs/moved/": "/docs/install/",
    "/docs/loop/": "/docs/loop/",
    "/docs/away/": "http://example.invalid/docs/",
    "/docs/sneaky/": "/docs/private/",
}


def ticks(site: "DocsSite"):
    """Every 50 ms until the site stops, for GIVE_UP_SECONDS at most."""
    give_up_at = time.monotonic() + GIVE_UP_SECONDS
    while not site.stopping.wait(0.05) and time.monotonic() < give_up_at:
        yield


class DocsSite:
    """The site in a daemon thread; use as a context manager or call start() and stop()."""

    def __init__(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.site = self
        self.origin = f"http://127.0.0.1:{self.httpd.server_port}"
        self.url = f"{self.origin}/docs/"
        self.pages = default_pages(self.origin)
        self.hits: list[Hit] = []
        self.slow_paths = {"/docs/slow/"}  # answered only after SLOW_SECONDS
        self.stopping = threading.Event()
        # A short poll interval keeps stop() quick.
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> "DocsSite":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # lets the slow and endless handlers finish
        if self._thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "DocsSite":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def requests(self, path: str) -> list[Hit]:
        return [hit for hit in self.hits if hit.path == path]

    def statuses(self, path: str) -> list[int | None]:
        return [hit.status for hit in self.requests(path)]


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeDocs/1.0"
    hit: Hit | None = None

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first, as the time and size tests intend

    def do_GET(self):
        site: DocsSite = self.server.site
        path = urlsplit(self.path).path
        self.hit = Hit(path, dict(self.headers))
        site.hits.append(self.hit)
        if path in REDIRECTS:
            self.send_response(302)
            self.send_header("Location", REDIRECTS[path])
            self.end_headers()
        elif path.startswith("/docs/hop/"):  # /docs/hop/1/ -> /docs/hop/2/ -> … endlessly
            self.send_response(302)
            self.send_header("Location", f"/docs/hop/{int(path.split('/')[3]) + 1}/")
            self.end_headers()
        elif path in site.slow_paths:
            site.stopping.wait(SLOW_SECONDS)
            self.send_page(site.pages.get(path, Page("<html><body><p>Finally.</p></body></html>")))
        elif path == "/docs/endless/":
            self.endless(site)
        elif path == "/docs/trickle-headers/":  # headers one byte at a time, never finished
            self.trickle(site, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Slow: ", b"a")
        elif path == "/docs/trickle-chunked/":  # a chunked body whose chunk-size line never ends
            self.trickle(site, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n", b"0")
        elif path == "/docs/gzip-bomb/":  # 20 KB on the wire, 200 MB once decompressed
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(gzip_bomb())))
            self.end_headers()
            self.wfile.write(gzip_bomb())
        elif path == "/docs/huge/":  # no Content-Length: only streaming can stop it
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"x" * HUGE_BYTES)
        elif path == "/docs/huge-declared/":  # declares a size over the cap and sends nothing: must not be read
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(10**9))
            self.end_headers()
        elif path in site.pages:
            self.send_page(site.pages[path])
        else:
            self.send_page(Page("<html><body><h1>Not found</h1></body></html>", status=404))

    def send_page(self, page: Page) -> None:
        if page.status == 200 and self.not_modified(page):
            self.send_response(304)
            self.send_header("ETag", page.etag)
            self.end_headers()
            return
        self.send_response(page.status)
        self.send_header("Content-Type", page.content_type)
        self.send_header("Content-Length", str(len(page.data)))
        if page.encoding:
            self.send_header("Content-Encoding", page.encoding)
        if page.status == 200:
            self.send_header("ETag", page.etag)
            self.send_header("Last-Modified", page.last_modified)
        self.end_headers()
        self.wfile.write(page.data)

    def not_modified(self, page: Page) -> bool:
        """If-None-Match wins over If-Modified-Since, as in RFC 9110."""
        if "If-None-Match" in self.headers:
            return page.etag in [tag.strip() for tag in self.headers["If-None-Match"].split(",")]
        return self.headers.get("If-Modified-Since") == page.last_modified

    def endless(self, site: DocsSite) -> None:
        """200, then a byte every 50 ms until the client gives up or the site stops (GIVE_UP_SECONDS at most)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><body><p>")
        for _ in ticks(site):
            self.wfile.write(b"x")

    def trickle(self, site: DocsSite, start: bytes, byte: bytes) -> None:
        """Raw bytes: `start`, then `byte` every 50 ms until the client gives up or the site stops (GIVE_UP_SECONDS at most)."""
        self.wfile.write(start)
        self.wfile.flush()
        for _ in ticks(site):
            self.wfile.write(byte)
            self.wfile.flush()

    def send_response(self, code, message=None):
        if self.hit:
            self.hit.status = code
        super().send_response(code, message)

    def log_message(self, *args):
        pass  # keep pytest output clean
