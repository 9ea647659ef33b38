"""Fetching pages politely: bounded in time and size, same-host only; it never writes the index.

It turns a base URL, a page list and an optional sitemap into a list of page
URLs (incomplete when the sitemap cannot be read), and one URL (plus what the
index remembers about it) into a FetchedPage: the page as markdown, with its
headings' anchors. Requests never leave base_url's host, obey robots.txt, and
are capped in time and size, so one bad page can neither hang nor flood an
index run; fetch() reports a bad page instead of raising.
"""

import contextlib
import datetime as dt
import http.client
import socket
import ssl
import threading
import weakref
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from email.utils import parsedate_to_datetime
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import charset_normalizer
import requests
import requests.adapters
import urllib3
import urllib3.connection

from .. import __version__
from ..core import dates
from ..core.errors import one_line
from ..text.html_markdown import heading_anchors, html_to_markdown

USER_AGENT = f"rag-search/{__version__} (local documentation indexer)"
MAX_REDIRECTS = 5
HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"text/markdown", "text/x-markdown", "text/plain"}
READ_SIZE = 64 * 1024
# What a failed request can raise: requests' errors, and urllib3's and the socket's while the body streams.
NETWORK_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)


@dataclass
class PageState:
    """What the index remembers about a page between runs, for a conditional GET."""

    etag: str | None = None
    last_modified: str | None = None


@dataclass
class PageList:
    """The pages of a web source to index, what to warn about, and why the list may be incomplete."""

    urls: list[str]
    warnings: list[str] = field(default_factory=list)
    problem: str | None = None  # the sitemap could not be read: the list may lack pages
    excluded: int = 0  # pages the source's exclude patterns left out


@dataclass
class FetchedPage:
    """What fetch() found; markdown is set only when the page changed."""

    url: str  # the requested page URL (absolute)
    status: str  # "changed" | "unchanged" | "gone" | "failed"
    markdown: str | None = None  # main content as markdown (only when changed)
    title: str | None = None  # the HTML <title>, whitespace collapsed
    etag: str | None = None
    last_modified: str | None = None  # the Last-Modified header as sent
    date: tuple[str, float] | None = None  # Last-Modified as (ISO 8601 UTC text, epoch seconds)
    error: str | None = None  # one-line reason when failed or gone
    anchors: dict[str, str] | None = None  # a heading's text (anchor_key) -> its id in the HTML, to link to a section


class _PageError(Exception):
    """Why a page (or sitemap) was not fetched; status is what fetch() reports."""

    def __init__(self, reason: str, status: str = "failed"):
        super().__init__(reason)
        self.reason = reason
        self.status = status


class WebFetcher:
    """One session per index run: robots.txt is read once per host and connections are reused.

    Every download (page, robots.txt, sitemap) has one time limit for the whole of
    it, enforced on the socket: when it runs out a watchdog shuts the connection
    down, so a server trickling its headers, a chunk-size line or its body cannot
    hold the run. Bodies are decompressed here, never beyond the size cap, so a
    gzip bomb costs at most the cap.
    """

    def __init__(self, timeout: float = 20.0, max_bytes: int = 5 * 1024 * 1024, max_pages: int = 1000, user_agent: str = USER_AGENT):
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_pages = max_pages
        self.user_agent = user_agent
        self._sockets: weakref.WeakSet = weakref.WeakSet()  # every socket this session opened
        self.session = requests.Session()
        self.session.headers.update({"User-Agent": user_agent, "Accept-Encoding": "gzip, deflate"})
        adapter = _GuardedAdapter(self._sockets)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self._robots: dict[tuple[str, str, int] | None, tuple[_Robots, str | None]] = {}

    def close(self) -> None:
        self.session.close()

    def page_urls(self, base_url: str, pages: list[str], sitemap: str | None = None,
                  excluded: Callable[[str], bool] | None = None) -> PageList:
        """The absolute URLs to index, with warnings and why the list may be incomplete.

        pages are relative to base_url (urljoin); the optional sitemap URL is
        relative to base_url or absolute, and its <loc> entries are added.
        Pages must be on base_url's host, sitemap entries also under its
        folder; others are dropped with a warning. Duplicates are removed,
        order is kept, pages whose path below base_url's folder is `excluded`
        are left out, and then the list is capped at max_pages (an excluded page
        uses none of it). A sitemap that cannot be fetched or read makes the
        list incomplete.
        """
        if _origin(base_url) is None:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        found = PageList([])
        for page in pages:
            url = urldefrag(urljoin(base_url, page)).url
            if _same_origin(url, base_url):
                found.urls.append(url)
            else:
                found.warnings.append(f"page {url} is not on {site_of(base_url)}: skipped")
        if sitemap:
            try:
                found.urls += self._sitemap_pages(urldefrag(urljoin(base_url, sitemap)).url, base_url, found.warnings)
            except _PageError as exc:
                found.problem = exc.reason
        urls = list(dict.fromkeys(found.urls))
        found.urls = [url for url in urls if excluded is None or not excluded(urlsplit(below_base(url, base_url)).path)]
        found.excluded = len(urls) - len(found.urls)
        if len(found.urls) > self.max_pages:
            found.warnings.append(f"{len(found.urls)} pages found; only the first {self.max_pages} are used (max_pages)")
            found.urls = found.urls[: self.max_pages]
        return found

    def fetch(self, url: str, previous: PageState | None = None) -> FetchedPage:
        """The page at url, re-downloaded only if it changed since `previous`; never raises."""
        previous = previous or PageState()
        try:
            return self._fetch(url, previous)
        except _PageError as exc:
            return FetchedPage(url, exc.status, error=exc.reason)
        except NETWORK_ERRORS as exc:
            return FetchedPage(url, "failed", error=self._network_error(exc))

    def _fetch(self, url: str, previous: PageState) -> FetchedPage:
        if _origin(url) is None:
            raise _PageError(f"not an http(s) URL: {url}")
        self._check_robots(url)
        headers = {}
        if previous.etag:
            headers["If-None-Match"] = previous.etag
        if previous.last_modified:
            headers["If-Modified-Since"] = previous.last_modified
        response = self._download(url, headers, check=_check_page)
        if response.status == 304:
            return FetchedPage(url, "unchanged", etag=previous.etag, last_modified=previous.last_modified,
                               date=_http_date(previous.last_modified))
        media_type, charset = _content_type(response.headers.get("Content-Type"))
        text = _decode(response.body, charset)
        etag, last_modified = response.headers.get("ETag"), response.headers.get("Last-Modified")
        anchors = None
        if media_type in HTML_TYPES:
            markdown, title = html_to_markdown(text)
            if not markdown:
                raise _PageError("no main content found")
            anchors = heading_anchors(text)
        else:
            markdown, title = text, None
            if not markdown.strip():  # a broken server, as far as we can tell: what was indexed from the page stays
                raise _PageError("empty page")
        return FetchedPage(url, "changed", markdown=markdown, title=title, etag=etag, last_modified=last_modified,
                           date=_http_date(last_modified), anchors=anchors)

    def _download(self, url: str, headers: dict, obey_robots: bool = True, check=None) -> "_Response":
        """Status, headers and body of `url`, redirects followed, all within one time limit.

        `check(response)` may refuse the response (raise _PageError) before its body is read.
        """
        with self._time_limit():
            with self._open(url, headers, obey_robots) as response:
                if check is not None:
                    check(response)
                body = self._read(response) if response.status_code != 304 else b""
                return _Response(response.status_code, response.headers, body)

    @contextlib.contextmanager
    def _time_limit(self):
        """Shut this session's connections down when the time limit runs out, and report it as such."""
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            for sock in list(self._sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self.timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        except (*NETWORK_ERRORS, http.client.HTTPException):
            if expired.is_set():
                raise _PageError(self._time_limit_reason()) from None
            raise
        finally:
            timer.cancel()
        if expired.is_set():  # the body may have ended early because the socket was shut
            raise _PageError(self._time_limit_reason())

    def _open(self, url: str, headers: dict, obey_robots: bool = True) -> requests.Response:
        """The response at url (body not read yet), following redirects by hand: same host only, at most MAX_REDIRECTS."""
        seen = {url}
        for _ in range(MAX_REDIRECTS + 1):
            response = self.session.get(url, headers=headers, stream=True, allow_redirects=False, timeout=self.timeout)
            if not response.is_redirect:
                return response
            response.close()
            target = urldefrag(urljoin(url, response.headers["Location"])).url
            if not _same_origin(target, url):
                raise _PageError(f"redirect to another host: {target}")
            if target in seen:
                raise _PageError(f"redirect loop at {target}")
            if obey_robots:
                self._check_robots(target)
            seen.add(target)
            url = target
        raise _PageError(f"too many redirects (more than {MAX_REDIRECTS})")

    def _read(self, response: requests.Response) -> bytes:
        """The body, decompressed here and never beyond the size cap (the time limit is _time_limit's)."""
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.max_bytes and not response.headers.get("Content-Encoding"):
            raise _PageError(self._too_large())
        decoder = _Decoder(response.headers.get("Content-Encoding", ""))
        body = bytearray()
        while chunk := response.raw.read1(READ_SIZE, decode_content=False):
            body += decoder.decompress(chunk, self.max_bytes + 1 - len(body))
            if len(body) > self.max_bytes or decoder.overflowed:
                raise _PageError(self._too_large())
        return bytes(body)

    def _robots_for(self, url: str) -> tuple["_Robots", str | None]:
        origin = _origin(url)
        if origin not in self._robots:
            self._robots[origin] = self._read_robots(urljoin(url, "/robots.txt"))
        return self._robots[origin]

    def _check_robots(self, url: str) -> None:
        rules, problem = self._robots_for(url)
        if not rules.can_fetch(self.user_agent, url):
            raise _PageError(f"not fetched: {problem}" if problem else "disallowed by robots.txt")

    def _read_robots(self, robots_url: str) -> tuple["_Robots", str | None]:
        """The rules, and why robots.txt could not be read if so.

        As RFC 9309 says: a missing robots.txt (4xx) allows everything;
        401/403, a server error or an unreachable server disallows everything.
        """
        rules = _Robots(robots_url)
        try:
            response = self._download(robots_url, {}, obey_robots=False)
        except _PageError as exc:
            rules.disallow_all = True
            return rules, f"robots.txt: {exc.reason}"
        except NETWORK_ERRORS as exc:
            rules.disallow_all = True
            return rules, f"robots.txt: {self._network_error(exc)}"
        status, body = response.status, response.body
        if 200 <= status < 300:
            rules.parse(_decode(body, None).splitlines())
        elif 400 <= status < 500 and status not in (401, 403):
            rules.allow_all = True
        else:
            rules.disallow_all = True
            return rules, f"robots.txt answered HTTP {status}"
        return rules, None

    def _sitemap_pages(self, sitemap_url: str, base_url: str, warnings: list[str]) -> list[str]:
        """The sitemap's page URLs that lie under base_url's folder."""
        folder = folder_of(base_url)
        locs = self._sitemap_locs(sitemap_url, base_url, warnings, follow_index=True)
        inside = [url for url in locs if url.startswith(folder)]
        outside = [url for url in locs if not url.startswith(folder)]
        if outside:
            warnings.append(f"sitemap {sitemap_url}: {len(outside)} entries outside {folder} skipped, e.g. {outside[0]}")
        return inside

    def _sitemap_locs(self, url: str, base_url: str, warnings: list[str], follow_index: bool) -> list[str]:
        """The <loc> URLs of a urlset, or of the urlsets a sitemap index lists; _PageError when one cannot be used."""
        try:
            if not _same_origin(url, base_url):
                raise _PageError(f"not on {site_of(base_url)}, not fetched")
            self._check_robots(url)
            root = ET.fromstring(self._download(url, {}, check=_check_status).body)
        except _PageError as exc:
            raise _PageError(f"sitemap {url}: {exc.reason}") from None
        except NETWORK_ERRORS as exc:
            raise _PageError(f"sitemap {url}: {self._network_error(exc)}") from None
        except ET.ParseError as exc:
            raise _PageError(f"sitemap {url}: not valid XML ({exc})") from None
        # Only each entry's own <loc>: the image and video extensions nest their own *:loc deeper.
        locs = [
            urldefrag(urljoin(url, field.text.strip())).url
            for entry in root
            for field in entry
            if _local_name(field.tag) == "loc" and field.text and field.text.strip()
        ]
        kind = _local_name(root.tag)
        if kind == "urlset":
            return locs
        if kind == "sitemapindex" and follow_index:
            return [page for child in locs for page in self._sitemap_locs(child, base_url, warnings, follow_index=False)]
        if kind == "sitemapindex":
            raise _PageError(f"sitemap {url}: a sitemap index inside a sitemap index is not followed")
        raise _PageError(f"sitemap {url}: <{kind}> is neither a urlset nor a sitemapindex")

    def _network_error(self, exc: Exception) -> str:
        """What went wrong, in a few words: the root cause, not requests' chain of wrappers."""
        causes: list[BaseException] = []
        cause: object = exc
        while isinstance(cause, BaseException) and cause not in causes:
            causes.append(cause)
            cause = cause.__cause__ or cause.__context__ or getattr(cause, "reason", None)
        root = causes[-1]  # urllib3's NewConnectionError is also a TimeoutError: look at the root first
        if isinstance(root, ConnectionRefusedError):
            return "connection refused"
        if isinstance(root, socket.gaierror):
            return "host name not found"
        if isinstance(root, ssl.SSLError):
            return f"TLS error: {one_line(root)[:120]}"
        if any(isinstance(cause, (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)) for cause in causes):
            return self._time_limit_reason()
        return f"connection failed: {one_line(root)[:160]}"

    def site_problem(self, url: str) -> str | None:
        """Why nothing on url's site may be fetched (its robots.txt could not be read), or None."""
        rules, problem = self._robots_for(url)
        return problem if problem and rules.disallow_all else None

    def _time_limit_reason(self) -> str:
        return f"timed out after {self.timeout:g}s"

    def _too_large(self) -> str:
        return f"page is larger than the size cap of {self.max_bytes} bytes"


@dataclass
class _Response:
    status: int
    headers: Mapping[str, str]  # requests' CaseInsensitiveDict
    body: bytes


class _Robots(RobotFileParser):
    """A site's robots.txt rules, with the two flags RobotFileParser sets in __init__ and can_fetch reads, which its type
    stubs leave out."""

    allow_all: bool
    disallow_all: bool


class _Decoder:
    """gzip / deflate / identity, decompressed in bounded steps: never more than asked for at once."""

    def __init__(self, encoding: str):
        encoding = encoding.strip().lower()
        if encoding in ("", "identity"):
            self._zlib = None
        elif encoding in ("gzip", "x-gzip", "deflate"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
        else:
            raise _PageError(f"unsupported content encoding {encoding!r}")
        self.overflowed = False

    def decompress(self, data: bytes, room: int) -> bytes:
        if self._zlib is None:
            return data
        try:
            out = self._zlib.decompress(data, max(room, 1))
        except zlib.error as exc:
            raise _PageError(f"broken {exc}") from None
        self.overflowed = bool(self._zlib.unconsumed_tail)  # more than `room` bytes were waiting
        return out


class _GuardedAdapter(requests.adapters.HTTPAdapter):
    """An adapter whose connections record their sockets, so a time limit can shut them down."""

    def __init__(self, sockets: weakref.WeakSet):
        self._registry = sockets
        super().__init__()

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        registry = self._registry

        class Connection(urllib3.connection.HTTPConnection):
            def connect(self):
                super().connect()
                registry.add(self.sock)

        class SecureConnection(urllib3.connection.HTTPSConnection):
            def connect(self):
                super().connect()
                registry.add(self.sock)

        self.poolmanager.pool_classes_by_scheme = {
            "http": type("Pool", (urllib3.HTTPConnectionPool,), {"ConnectionCls": Connection}),
            "https": type("SecurePool", (urllib3.HTTPSConnectionPool,), {"ConnectionCls": SecureConnection}),
        }


def _check_page(response: requests.Response) -> None:
    """A page worth reading: 304, or a 2xx HTML or text response."""
    if response.status_code == 304:
        return
    _check_status(response)
    media_type, _ = _content_type(response.headers.get("Content-Type"))
    if media_type not in HTML_TYPES | TEXT_TYPES:
        raise _PageError(f"unsupported content type {media_type or '(none)'}")


def _check_status(response: requests.Response) -> None:
    if response.status_code in (404, 410):
        raise _PageError(f"HTTP {response.status_code}", status="gone")
    if not 200 <= response.status_code < 300:
        raise _PageError(f"HTTP {response.status_code}")


def _content_type(header: str | None) -> tuple[str, str | None]:
    """(media type, charset) of a Content-Type header; ("", None) when there is none."""
    if not header:
        return "", None
    message = Message()
    message["Content-Type"] = header
    return message.get_content_type(), message.get_content_charset()


def _decode(body: bytes, charset: str | None) -> str:
    """The declared charset if it decodes the body, else UTF-8, else charset-normalizer's best guess."""
    for encoding in filter(None, (charset, "utf-8")):
        try:
            return body.decode(encoding).removeprefix("\ufeff")
        except (LookupError, UnicodeDecodeError):
            continue
    guess = charset_normalizer.from_bytes(body).best()
    return str(guess) if guess else body.decode("utf-8", errors="replace")


def _http_date(value: str | None) -> tuple[str, float] | None:
    """An HTTP date (Last-Modified) as (ISO 8601 UTC text, epoch seconds); None if absent or unreadable."""
    if not value:
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return dates.from_timestamp(moment.timestamp())


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, the unit of "same host"; None for anything else."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _same_origin(url: str, other: str) -> bool:
    origin = _origin(url)
    return origin is not None and origin == _origin(other)


def site_of(url: str) -> str:
    """scheme://host[:port] of a URL: how messages name a site."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def below_base(url: str, base_url: str) -> str:
    """The page's URL below the base URL's folder ("user-guide/sync-options/"), else its path: how a page is shown,
    and what a source's exclude patterns match (its path part)."""
    folder = folder_of(base_url)
    return url[len(folder) :] if url.startswith(folder) else urlsplit(url).path.lstrip("/")


def folder_of(url: str) -> str:
    """The folder relative pages resolve against: http://h/docs/ for both http://h/docs/ and http://h/docs/index.html."""
    return urljoin(urldefrag(url).url, ".")


def _local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
