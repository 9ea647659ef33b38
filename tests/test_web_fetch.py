"""Fetching web doc sources from a local fake site: content, caps, same-host rules, robots.txt, sitemaps."""

import subprocess
import sys

import pytest

from conftest import SCRIPTS
from rag_search import __version__
from rag_search.sources.fetch import USER_AGENT, PageState, WebFetcher
from webserver import LAST_MODIFIED, NOTES, SYNC_OPTIONS, DocsSite, Page


@pytest.fixture
def site():
    with DocsSite() as running:
        yield running


@pytest.fixture
def fetcher():
    web = WebFetcher(timeout=1, max_bytes=50_000)
    yield web
    web.close()


@pytest.fixture
def sent(fetcher, monkeypatch) -> list[str]:
    """Every URL the fetcher requests, redirect hops and robots.txt included."""
    urls: list[str] = []
    get = fetcher.session.get
    monkeypatch.setattr(fetcher.session, "get", lambda url, **kwargs: urls.append(url) or get(url, **kwargs))
    return urls


def test_user_agent_names_the_tool_on_every_request(site, fetcher):
    assert USER_AGENT == f"rag-search/{__version__} (local documentation indexer)"
    fetcher.fetch(site.url + "install/")
    assert [hit.path for hit in site.hits] == ["/robots.txt", "/docs/install/"]
    assert {hit.headers["User-Agent"] for hit in site.hits} == {USER_AGENT}


def test_html_page_becomes_markdown_without_boilerplate(site, fetcher):
    page = fetcher.fetch(site.url + "sync-options/")
    assert page.status == "changed" and page.error is None
    assert page.url == site.url + "sync-options/"
    assert page.title == "Sync Options | Argo CD"
    assert page.markdown.startswith("# Sync Options\n")
    assert "\n## Automated Sync Policy\n" in page.markdown and "\n### Self-Heal\n" in page.markdown
    assert "```\nspec:\n  syncPolicy:\n    automated:\n      selfHeal: true\n```" in page.markdown
    for boilerplate in ("Argo CD Documentation", "Getting started", "Overview", "Blog", "Copyright", "Privacy"):
        assert boilerplate not in page.markdown
    assert page.etag == site.pages["/docs/sync-options/"].etag
    assert page.last_modified == LAST_MODIFIED
    assert page.date == ("2025-01-15T10:00:00Z", 1736935200.0)


def test_markdown_is_kept_as_is(site, fetcher):
    page = fetcher.fetch(site.url + "notes.md")
    assert (page.status, page.markdown, page.title) == ("changed", NOTES, None)


@pytest.mark.parametrize(
    "content_type, body, expected",
    [
        ("text/plain; charset=iso-8859-1", "Café crème, naïve".encode("latin-1"), "Café crème, naïve"),
        ("text/markdown", "# Café crème\n".encode(), "# Café crème\n"),  # no charset: UTF-8, not requests' ISO-8859-1
        (
            "text/html; charset=iso-8859-1",
            "<html><head><title>Café</title></head><body><article><h1>Crème brûlée</h1><p>Très bien.</p></article></body></html>".encode(
                "latin-1"
            ),
            "# Crème brûlée\n\nTrès bien.",
        ),
    ],
    ids=["plain-latin1", "markdown-no-charset", "html-latin1"],
)
def test_body_is_decoded_with_the_declared_charset_else_utf8(site, fetcher, content_type, body, expected):
    site.pages["/docs/page"] = Page(body, content_type)
    page = fetcher.fetch(site.url + "page")
    assert page.status == "changed", page.error
    assert page.markdown == expected


def test_unchanged_page_answers_304_to_a_conditional_get(site, fetcher):
    first = fetcher.fetch(site.url + "sync-options/")
    again = fetcher.fetch(site.url + "sync-options/", PageState(etag=first.etag, last_modified=first.last_modified))
    assert again.status == "unchanged" and again.markdown is None
    assert (again.etag, again.last_modified) == (first.etag, first.last_modified)
    assert site.statuses("/docs/sync-options/") == [200, 304]
    headers = site.requests("/docs/sync-options/")[1].headers
    assert headers["If-None-Match"] == first.etag and headers["If-Modified-Since"] == LAST_MODIFIED


def test_if_modified_since_alone_is_enough(site, fetcher):
    page = fetcher.fetch(site.url + "install/", PageState(last_modified=LAST_MODIFIED))
    assert page.status == "unchanged"
    assert "If-None-Match" not in site.requests("/docs/install/")[0].headers


def test_changed_page_is_fetched_again(site, fetcher):
    first = fetcher.fetch(site.url + "sync-options/")
    site.pages["/docs/sync-options/"].body = SYNC_OPTIONS.replace("selfHeal: true", "selfHeal: false")
    again = fetcher.fetch(site.url + "sync-options/", PageState(etag=first.etag, last_modified=first.last_modified))
    assert again.status == "changed"
    assert "selfHeal: false" in again.markdown and again.etag != first.etag
    assert site.statuses("/docs/sync-options/") == [200, 200]


def test_unreadable_last_modified_leaves_date_empty(site, fetcher):
    site.pages["/docs/install/"].last_modified = "last Tuesday"
    page = fetcher.fetch(site.url + "install/")
    assert (page.status, page.last_modified, page.date) == ("changed", "last Tuesday", None)


@pytest.mark.parametrize("path, error", [("missing/", "HTTP 404"), ("removed/", "HTTP 410")])
def test_missing_pages_are_gone(site, fetcher, path, error):
    page = fetcher.fetch(site.url + path)
    assert (page.status, page.error, page.markdown) == ("gone", error, None)


def test_server_error_fails(site, fetcher):
    site.pages["/docs/install/"] = Page("oops", "text/plain", status=500)
    page = fetcher.fetch(site.url + "install/")
    assert (page.status, page.error) == ("failed", "HTTP 500")


def test_connection_error_fails_without_raising(site, fetcher):
    assert fetcher.fetch(site.url + "install/").status == "changed"  # robots.txt is read now
    site.stop()
    page = fetcher.fetch(site.url + "notes.md")
    assert (page.status, page.error) == ("failed", "connection refused")


def test_not_http_url_fails(fetcher):
    page = fetcher.fetch("ftp://127.0.0.1/docs/")
    assert (page.status, page.error) == ("failed", "not an http(s) URL: ftp://127.0.0.1/docs/")


def test_slow_server_times_out(site, fetcher):
    page = fetcher.fetch(site.url + "slow/")
    assert (page.status, page.error) == ("failed", "timed out after 1s")


def test_endless_page_stops_at_the_time_limit(site, fetcher):
    page = fetcher.fetch(site.url + "endless/")
    assert (page.status, page.error) == ("failed", "timed out after 1s")


@pytest.mark.parametrize("path", ["huge/", "huge-declared/"])  # streamed past the cap / Content-Length over it
def test_huge_page_stops_at_the_size_cap(site, fetcher, path):
    page = fetcher.fetch(site.url + path)
    assert (page.status, page.error) == ("failed", "page is larger than the size cap of 50000 bytes")


def test_same_host_redirect_is_followed(site, fetcher):
    page = fetcher.fetch(site.url + "moved/")
    assert page.status == "changed" and page.url == site.url + "moved/"
    assert "kubectl apply -n argocd -f install.yaml" in page.markdown
    assert site.statuses("/docs/moved/") == [302] and site.statuses("/docs/install/") == [200]


@pytest.mark.parametrize(
    "path, error, requests",
    [
        ("loop/", "redirect loop at {url}loop/", 1),
        ("hop/1/", "too many redirects (more than 5)", 6),
    ],
)
def test_redirect_loops_and_chains_fail(site, fetcher, path, error, requests):
    page = fetcher.fetch(site.url + path)
    assert (page.status, page.error) == ("failed", error.format(url=site.url))
    assert len(site.hits) == 1 + requests  # robots.txt, then the page and its hops


def test_redirect_to_another_host_is_not_followed(site, fetcher, sent):
    page = fetcher.fetch(site.url + "away/")
    # Following it would have failed to resolve example.invalid instead.
    assert (page.status, page.error) == ("failed", "redirect to another host: http://example.invalid/docs/")
    assert sent == [site.origin + "/robots.txt", site.url + "away/"]


def test_robots_txt_disallows_pages_and_redirect_targets(site, fetcher):
    for path in ("private/", "sneaky/"):
        page = fetcher.fetch(site.url + path)
        assert (page.status, page.error) == ("failed", "disallowed by robots.txt")
    assert site.requests("/docs/private/") == []
    assert fetcher.fetch(site.url + "install/").status == "changed"
    assert len(site.requests("/robots.txt")) == 1  # once per host and fetcher


def test_robots_txt_rules_for_our_user_agent_apply(site, fetcher):
    site.pages["/robots.txt"] = Page("User-agent: rag-search\nDisallow: /docs/install/\n\nUser-agent: *\nDisallow:\n", "text/plain")
    assert fetcher.fetch(site.url + "install/").error == "disallowed by robots.txt"
    assert fetcher.fetch(site.url + "private/").status == "changed"


@pytest.mark.parametrize(
    "status, error",
    [
        (404, None),  # no robots.txt: everything allowed
        (410, None),
        (401, "not fetched: robots.txt answered HTTP 401"),
        (403, "not fetched: robots.txt answered HTTP 403"),
        (503, "not fetched: robots.txt answered HTTP 503"),  # RFC 9309: unreachable is complete disallow
    ],
)
def test_robots_txt_status_decides_for_the_whole_host(site, fetcher, status, error):
    site.pages["/robots.txt"] = Page("", "text/plain", status=status)
    page = fetcher.fetch(site.url + "private/")
    assert page.error == error
    assert page.status == ("failed" if error else "changed")


def test_unreachable_robots_txt_disallows_everything(site, fetcher):
    site.stop()
    page = fetcher.fetch(site.url + "install/")
    assert page.status == "failed"
    assert page.error == "not fetched: robots.txt: connection refused"


def test_slow_robots_txt_times_out_and_disallows(site, fetcher):
    site.slow_paths.add("/robots.txt")
    page = fetcher.fetch(site.url + "install/")
    assert (page.status, page.error) == ("failed", "not fetched: robots.txt: timed out after 1s")


def test_unsupported_content_type_fails(site, fetcher):
    page = fetcher.fetch(site.url + "image.png")
    assert (page.status, page.error) == ("failed", "unsupported content type image/png")


def test_html_without_main_content_fails(site, fetcher):
    page = fetcher.fetch(site.url + "empty/")
    assert (page.status, page.error) == ("failed", "no main content found")


def test_a_text_page_served_empty_fails(site, fetcher):
    """An empty answer is taken for a broken server, not an emptied page: what was indexed from the page stays."""
    site.pages["/docs/blank.md"] = Page(" \n", "text/markdown; charset=utf-8")
    page = fetcher.fetch(site.url + "blank.md")
    assert (page.status, page.error) == ("failed", "empty page")


def test_page_urls_are_absolute_same_host_unique_and_ordered(site, fetcher):
    pages = ["install/", "sync-options/", "./install/", "install/#log-in", "/blog/", "notes.md"]
    off_host = ["http://example.invalid/docs/x/", "https://127.0.0.1/docs/", f"http://127.0.0.1:{site.httpd.server_port + 1}/docs/"]
    found = fetcher.page_urls(site.url, pages + off_host)
    urls, warnings, problem = found.urls, found.warnings, found.problem
    assert problem is None
    assert urls == [site.url + "install/", site.url + "sync-options/", site.origin + "/blog/", site.url + "notes.md"]
    assert warnings == [f"page {url} is not on {site.origin}: skipped" for url in off_host]
    assert site.hits == []  # listing pages fetches nothing


def test_sitemap_adds_its_pages_under_the_base_folder(site, fetcher, sent):
    found = fetcher.page_urls(site.url, ["notes.md", "install/"], sitemap="sitemap.xml")
    urls, warnings, problem = found.urls, found.warnings, found.problem
    assert problem is None, "entries outside the base folder are a warning, not a gap"
    assert urls == [site.url + "notes.md", site.url + "install/", site.url + "sync-options/"]
    assert warnings == [f"sitemap {site.url}sitemap.xml: 2 entries outside {site.url} skipped, e.g. http://example.invalid/docs/elsewhere/"]
    assert sent == [site.origin + "/robots.txt", site.url + "sitemap.xml"]


def test_sitemap_index_is_followed_one_level(site, fetcher):
    found = fetcher.page_urls(site.url, [], sitemap=site.url + "sitemap-index.xml")
    assert found.urls == [site.url + "sync-options/", site.url + "install/", site.url + "notes.md"]


def test_sitemap_index_inside_an_index_is_not_followed(site, fetcher):
    site.pages["/docs/more-sitemap.xml"] = site.pages["/docs/sitemap-index.xml"]
    found = fetcher.page_urls(site.url, [], sitemap="sitemap-index.xml")
    assert found.urls == [], "an unusable part makes the whole sitemap unusable: the listing is incomplete"
    assert found.problem == f"sitemap {site.url}more-sitemap.xml: a sitemap index inside a sitemap index is not followed"


@pytest.mark.parametrize(
    "sitemap, warning",
    [
        ("no-such-sitemap.xml", "HTTP 404"),
        ("broken.xml", "not valid XML (no element found: line 1, column 18)"),
        ("notes.md", "not valid XML (not well-formed (invalid token): line 1, column 1)"),
        ("feed.xml", "<feed> is neither a urlset nor a sitemapindex"),
        ("private/sitemap.xml", "disallowed by robots.txt"),
        ("http://example.invalid/sitemap.xml", "not on {origin}, not fetched"),
    ],
)
def test_an_unusable_sitemap_makes_the_listing_incomplete(site, fetcher, sent, sitemap, warning):
    site.pages["/docs/broken.xml"] = Page("<urlset><url><loc>", "application/xml")
    site.pages["/docs/feed.xml"] = Page('<feed xmlns="http://www.w3.org/2005/Atom"/>', "application/atom+xml")
    found = fetcher.page_urls(site.url, ["install/"], sitemap=sitemap)
    assert found.urls == [site.url + "install/"] and found.warnings == []
    assert found.problem is not None, "a sitemap that cannot be used makes the listing incomplete"
    assert found.problem.endswith(": " + warning.format(origin=site.origin))
    assert all(url.startswith(site.origin + "/") for url in sent)


def test_page_list_is_capped_at_max_pages(site):
    found = WebFetcher(max_pages=2).page_urls(site.url, ["a/", "b/", "c/"])
    assert found.urls == [site.url + "a/", site.url + "b/"]
    assert found.warnings == ["3 pages found; only the first 2 are used (max_pages)"]


def test_excluded_pages_are_left_out_before_the_max_pages_cap(site):
    from rag_search.sources.specs import path_matcher

    pages = ["news/2024/", "changelog.html", "a/", "news/2025/", "b/", "guide/changelog/"]
    found = WebFetcher(max_pages=2).page_urls(site.url, pages, excluded=path_matcher(("news/", "changelog*")))
    assert found.urls == [site.url + "a/", site.url + "b/"], "an excluded page uses none of the page budget"
    assert found.excluded == 4 and found.warnings == []


@pytest.mark.parametrize("base_url", ["ftp://example.invalid/docs/", "docs/", "file:///srv/docs/"])
def test_base_url_must_be_http(fetcher, base_url):
    with pytest.raises(ValueError, match="not an http"):
        fetcher.page_urls(base_url, ["install/"])


@pytest.mark.processes
def test_importing_the_module_does_not_import_trafilatura():
    code = "import sys; import rag_search.sources.web; print('trafilatura' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], cwd=SCRIPTS, capture_output=True, text=True, timeout=60)
    assert completed.stdout.strip() == "False", completed.stderr


@pytest.mark.parametrize("path", ["trickle-headers/", "trickle-chunked/", "endless/", "slow/"])
def test_a_server_that_trickles_cannot_hold_a_download_past_its_time_limit(site, fetcher, path):
    """One deadline for the whole download, enforced on the socket, not per read: a byte comes every 50 ms, for a minute
    (then the site gives up, and a fetch without that deadline ends with another outcome)."""
    page = fetcher.fetch(site.url + path)
    assert (page.status, page.error) == ("failed", "timed out after 1s")
    assert fetcher.fetch(site.url + "install/").status == "changed", "the session still works afterwards"


def test_a_gzip_bomb_stops_at_the_size_cap(site, fetcher):
    import tracemalloc

    from webserver import gzip_bomb

    gzip_bomb()  # built before the fetch, not inside its time limit
    tracemalloc.start()
    page = fetcher.fetch(site.url + "gzip-bomb/")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (page.status, page.error) == ("failed", "page is larger than the size cap of 50000 bytes")
    assert peak < 20 * 1024 * 1024, f"decompressing took {peak} bytes"


def test_compressed_pages_are_read(site, fetcher):
    import gzip

    from webserver import SYNC_OPTIONS

    site.pages["/docs/packed/"] = Page(gzip.compress(SYNC_OPTIONS.encode()), encoding="gzip")
    page = fetcher.fetch(site.url + "packed/")
    assert page.status == "changed" and "self-heal" in page.markdown.lower()
