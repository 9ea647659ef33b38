"""The "web" doc source: a base URL, a page list and an optional sitemap, fetched by fetch.py.

This module never writes the index. It lists the source's pages (incomplete when
the sitemap cannot be read) and loads each by a conditional GET, so an unchanged
page is not downloaded again; the markdown of each page indexed is kept in the
data dir (pages.py), and a chunk's URL points at its section where the page has
an anchor for it. A page is fetched by its URL and named everywhere else (its key,
file, url and saved copy) by the URL with its secrets redacted (`?token=…`).
"""

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from ..core.errors import SourceFailed
from ..core.progress import ROUTINE
from ..index.indexer import SourceDocument, content_hash
from ..index.reconcile import Gone, Listed, Listing, Loaded, Skip, Unchanged
from ..safety import secrets
from ..text.chunking import HEADING_SEPARATOR
from ..text.html_markdown import anchor_key
from .fetch import PageState, WebFetcher, below_base, site_of
from .pages import remove_page, save_page
from .specs import WebSource, path_matcher

log = logging.getLogger("rag_search")


def web_listing(spec: WebSource, fetcher: WebFetcher, data_dir: Path) -> Listing:
    """The source's pages; a page is loaded by a conditional GET (unchanged pages are not downloaded again).
    The markdown of each page indexed is kept in the data dir (pages.py)."""
    excluded = path_matcher(spec.exclude) if spec.exclude else None
    found = fetcher.page_urls(spec.base_url, list(spec.pages), spec.sitemap, excluded)
    urls, warnings, problem = found.urls, found.warnings, found.problem
    for warning in warnings:  # the same each run: the summary's "notes"
        log.warning("%s: %s", spec.id, warning, extra=ROUTINE)
    if problem:
        log.warning("%s: %s", spec.id, problem)
    unreachable = fetcher.site_problem(spec.base_url)
    if unreachable:  # said once for the source, not once a page
        raise SourceFailed(f"{site_of(spec.base_url)}: {unreachable}; none of its {len(urls)} page(s) was fetched and "
                           "what was indexed from them is kept")
    documents = []
    for url in urls:
        shown = secrets.redact(url)[0]
        documents.append(Listed(f"{spec.id}:{shown}", shown, None, functools.partial(_load_page, spec, url, shown, fetcher, data_dir)))
    notes = [secrets.redact(warning)[0] for warning in warnings]  # a page's URL may carry a token
    details = {"pages": len(urls), **({"excluded": found.excluded} if spec.exclude else {}), **({"notes": notes} if notes else {})}
    return Listing(documents, complete=problem is None, problem=problem, details=details,
                   deselected=functools.partial(_deselected, spec, excluded))


def _deselected(spec: WebSource, excluded: Callable[[str], bool] | None, key: str) -> bool:
    """Whether the source's exclude patterns now leave out the indexed page `key` ("<id>:<URL>")."""
    return excluded is not None and excluded(urlsplit(below_base(key.removeprefix(f"{spec.id}:"), spec.base_url)).path)


def _load_page(spec: WebSource, url: str, shown: str, fetcher: WebFetcher, data_dir: Path, previous) -> Loaded:
    page = fetcher.fetch(url, PageState(**previous.state) if previous and previous.state else None)
    state = {"etag": page.etag, "last_modified": page.last_modified}
    if page.status == "unchanged":
        return Unchanged(None, state)
    if page.status == "gone":
        remove_page(data_dir, spec.id, shown)
        return Gone(page.error or "gone")
    if page.status == "failed":
        raise Skip(page.error or "failed", failed=True)
    text = page.markdown or ""  # set when the page changed
    if page.title and not text.lstrip().startswith("# "):
        text = f"# {page.title}\n\n{text}"
    digest = content_hash(text.encode("utf-8"))
    anchors = page.anchors or {}
    return SourceDocument(
        key=f"{spec.id}:{shown}",
        source_id=spec.id,
        file=f"{spec.id}/{below_base(shown, spec.base_url)}",
        kind="markdown",
        text=text,
        content_hash=digest,
        metadata={"url": shown},
        fallback_date=page.date,
        state=state,
        documentation=True,
        section_metadata=functools.partial(_section_url, shown, anchors) if anchors else None,
        keep_indexed=functools.partial(save_page, data_dir, spec.id, shown, digest),
    )


def _section_url(url: str, anchors: dict[str, str], heading: str) -> dict:
    """A chunk's URL points at its section where the page has an anchor for it (the heading path's last part)."""
    anchor = anchors.get(anchor_key(heading.rsplit(HEADING_SEPARATOR, 1)[-1]))
    return {"url": f"{url}#{anchor}"} if anchor else {}
