"""Fetching the pages of a "web" doc source: polite, bounded and same-host only.

This module never writes the index. It turns a base URL, a page list and an
optional sitemap into a listing of page URLs (incomplete when the sitemap cannot
be read), and one URL (plus what the index remembers about it) into a FetchedPage. Requests never leave base_url's host, obey
robots.txt, and are capped in time and size, so one bad page can neither hang
nor flood an index run; fetch() reports a bad page instead of raising.
"""

import datetime as dt
import functools
import logging
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from email.message import Message
from email.utils import parsedate_to_datetime
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import charset_normalizer
import requests
import urllib3

from .. import __version__, dates
from ..errors import one_line
from ..indexer import SourceDocument, content_hash
from ..reconcile import Gone, Listed, Listing, Loaded, Skip, Unchanged
from ..specs import WebSource

log = logging.getLogger("rag_search")

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


class _PageError(Exception):
    """Why a page (or sitemap) was not fetched; status is what fetch() reports."""

    def __init__(self, reason: str, status: str = "failed"):
        super().__init__(reason)
        self.reason = reason
        self.status = status


class WebFetcher:
    """One session per index run: robots.txt is read once per host and connections are reused."""

    def __init__(self, timeout: float = 20.0, max_bytes: int = 5 * 1024 * 1024, max_pages: int = 1000, user_agent: str = USER_AGENT):
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_pages = max_pages
        self.user_agent = user_agent
        self.session = requests.Session()
        self.session.headers["User-Agent"] = user_agent
        self._robots: dict[tuple, tuple[RobotFileParser, str | None]] = {}

    def close(self) -> None:
        self.session.close()

    def page_urls(self, base_url: str, pages: list[str], sitemap: str | None = None) -> tuple[list[str], list[str], str | None]:
        """(absolute URLs to index, warnings, why the list may be incomplete or None).

        pages are relative to base_url (urljoin); the optional sitemap URL is
        relative to base_url or absolute, and its <loc> entries are added.
        Pages must be on base_url's host, sitemap entries also under its
        folder; others are dropped with a warning. Duplicates are removed,
        order is kept, and the list is capped at max_pages. A sitemap that
        cannot be fetched or read makes the list incomplete.
        """
        if _origin(base_url) is None:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        warnings: list[str] = []
        urls = []
        for page in pages:
            url = urldefrag(urljoin(base_url, page)).url
            if _same_origin(url, base_url):
                urls.append(url)
            else:
                warnings.append(f"page {url} is not on {_site(base_url)}: skipped")
        problem = None
        if sitemap:
            try:
                urls += self._sitemap_pages(urldefrag(urljoin(base_url, sitemap)).url, base_url, warnings)
            except _PageError as exc:
                problem = exc.reason
        urls = list(dict.fromkeys(urls))
        if len(urls) > self.max_pages:
            warnings.append(f"{len(urls)} pages found; only the first {self.max_pages} are used (max_pages)")
            urls = urls[: self.max_pages]
        return urls, warnings, problem

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
        deadline = time.monotonic() + self.timeout
        headers = {}
        if previous.etag:
            headers["If-None-Match"] = previous.etag
        if previous.last_modified:
            headers["If-Modified-Since"] = previous.last_modified
        with self._open(url, deadline, headers) as response:
            if response.status_code == 304:
                return FetchedPage(
                    url, "unchanged", etag=previous.etag, last_modified=previous.last_modified, date=_http_date(previous.last_modified)
                )
            _check_status(response)
            media_type, charset = _content_type(response.headers.get("Content-Type"))
            if media_type not in HTML_TYPES | TEXT_TYPES:
                raise _PageError(f"unsupported content type {media_type or '(none)'}")
            text = _decode(self._read(response, deadline), charset)
            etag, last_modified = response.headers.get("ETag"), response.headers.get("Last-Modified")
        if media_type in HTML_TYPES:
            markdown, title = _html_to_markdown(text)
            if not markdown:
                raise _PageError("no main content found")
        else:
            markdown, title = text, None
        return FetchedPage(
            url, "changed", markdown=markdown, title=title, etag=etag, last_modified=last_modified, date=_http_date(last_modified)
        )

    def _open(self, url: str, deadline: float, headers: dict, obey_robots: bool = True) -> requests.Response:
        """The response at url (body not read yet), following redirects by hand: same host only, at most MAX_REDIRECTS."""
        seen = {url}
        for _ in range(MAX_REDIRECTS + 1):
            remaining = min(self.timeout, deadline - time.monotonic())
            if remaining <= 0:
                raise _PageError(self._time_limit())
            response = self.session.get(url, headers=headers, stream=True, allow_redirects=False, timeout=(remaining, remaining))
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

    def _read(self, response: requests.Response, deadline: float) -> bytes:
        """The body, streamed so that a huge or endless one stops at the size and time caps.

        read1 returns whatever has arrived, so a server that trickles bytes
        cannot keep us waiting past the deadline (iter_content would block
        until a whole chunk arrived).
        """
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            raise _PageError(self._too_large())
        body = bytearray()
        while chunk := response.raw.read1(READ_SIZE, decode_content=True):
            body += chunk
            if len(body) > self.max_bytes:
                raise _PageError(self._too_large())
            if time.monotonic() > deadline:
                raise _PageError(self._time_limit())
        return bytes(body)

    def _check_robots(self, url: str) -> None:
        origin = _origin(url)
        if origin not in self._robots:
            self._robots[origin] = self._read_robots(urljoin(url, "/robots.txt"))
        rules, problem = self._robots[origin]
        if not rules.can_fetch(self.user_agent, url):
            raise _PageError(f"disallowed by robots.txt: it could not be read ({problem})" if problem else "disallowed by robots.txt")

    def _read_robots(self, robots_url: str) -> tuple[RobotFileParser, str | None]:
        """The rules, and why robots.txt could not be read if so.

        As RFC 9309 says: a missing robots.txt (4xx) allows everything;
        401/403, a server error or an unreachable server disallows everything.
        """
        rules = RobotFileParser(robots_url)
        deadline = time.monotonic() + self.timeout
        try:
            with self._open(robots_url, deadline, {}, obey_robots=False) as response:
                status = response.status_code
                body = self._read(response, deadline) if response.ok else b""
        except _PageError as exc:
            rules.disallow_all = True
            return rules, exc.reason
        except NETWORK_ERRORS as exc:
            rules.disallow_all = True
            return rules, self._network_error(exc)
        if 200 <= status < 300:
            rules.parse(_decode(body, None).splitlines())
        elif 400 <= status < 500 and status not in (401, 403):
            rules.allow_all = True
        else:
            rules.disallow_all = True
            return rules, f"HTTP {status}"
        return rules, None

    def _sitemap_pages(self, sitemap_url: str, base_url: str, warnings: list[str]) -> list[str]:
        """The sitemap's page URLs that lie under base_url's folder."""
        folder = _folder(base_url)
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
                raise _PageError(f"not on {_site(base_url)}, not fetched")
            self._check_robots(url)
            deadline = time.monotonic() + self.timeout
            with self._open(url, deadline, {}) as response:
                _check_status(response)
                root = ET.fromstring(self._read(response, deadline))
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
        if isinstance(exc, (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)):
            return f"timed out after {self.timeout:g}s"
        if isinstance(exc, requests.ConnectionError):
            return f"connection failed: {one_line(exc)}"
        return one_line(exc)

    def _time_limit(self) -> str:
        return f"gave up after {self.timeout:g}s (time limit per page)"

    def _too_large(self) -> str:
        return f"page is larger than the size cap of {self.max_bytes} bytes"


def _html_to_markdown(html: str) -> tuple[str | None, str | None]:
    """(main content as markdown, <title>): trafilatura drops navigation, header and footer boilerplate."""
    import trafilatura  # slow to import; the search path must not pay for it

    tree = trafilatura.load_html(html)
    if tree is None:
        return None, None
    title = " ".join((tree.findtext(".//head/title") or "").split()) or None
    markdown = trafilatura.extract(
        tree,
        output_format="markdown",
        include_formatting=True,
        include_links=False,
        include_tables=True,
        include_comments=False,
        with_metadata=False,
    )
    return markdown, title


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


def _site(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _folder(url: str) -> str:
    """The folder relative pages resolve against: http://h/docs/ for both http://h/docs/ and http://h/docs/index.html."""
    return urljoin(urldefrag(url).url, ".")


def _local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def web_listing(spec: WebSource, fetcher: WebFetcher) -> Listing:
    """The source's pages; a page is loaded by a conditional GET (unchanged pages are not downloaded again)."""
    urls, warnings, problem = fetcher.page_urls(spec.base_url, list(spec.pages), spec.sitemap)
    for warning in warnings + ([problem] if problem else []):
        log.warning("%s: %s", spec.id, warning)
    documents = [Listed(f"{spec.id}:{url}", url, None, functools.partial(_load_page, spec, url, fetcher)) for url in urls]
    return Listing(documents, complete=problem is None, problem=problem, details={"pages": len(urls)})


def _load_page(spec: WebSource, url: str, fetcher: WebFetcher, previous) -> Loaded:
    page = fetcher.fetch(url, PageState(**previous.state) if previous and previous.state else None)
    state = {"etag": page.etag, "last_modified": page.last_modified}
    if page.status == "unchanged":
        return Unchanged(None, state)
    if page.status == "gone":
        return Gone(page.error)
    if page.status == "failed":
        raise Skip(page.error, failed=True)
    text = page.markdown
    if page.title and not text.lstrip().startswith("# "):
        text = f"# {page.title}\n\n{text}"
    return SourceDocument(
        key=f"{spec.id}:{url}",
        source_id=spec.id,
        file=f"{spec.id}/{_relative(url, spec.base_url)}",
        kind="markdown",
        text=text,
        content_hash=content_hash(text.encode("utf-8")),
        metadata={"url": url},
        fallback_date=page.date,
        state=state,
    )


def _relative(url: str, base_url: str) -> str:
    """The page's path below the base URL's folder, for display ("user-guide/sync-options/")."""
    folder = _folder(base_url)
    return url[len(folder) :] if url.startswith(folder) else urlsplit(url).path.lstrip("/")
