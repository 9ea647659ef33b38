"""From an HTML page to markdown: its main content, its title, and its headings' anchors.

The anchors let a chunk made from the markdown link to its section of the page:
anchor_key gives a heading the same key whether read from the HTML or from the
markdown made from it. trafilatura and lxml are imported when first used, so
importing this module costs nothing on the search path.
"""


def html_to_markdown(html: str) -> tuple[str | None, str | None]:
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


def heading_anchors(html: str) -> dict[str, str]:
    """anchor_key(heading text) -> the id a link to that heading uses: the heading's own id, the id of the section it
    opens (Sphinx), or its permalink's fragment (MkDocs, Sphinx headerlinks). Headings without one are left out."""
    import lxml.html

    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return {}
    anchors: dict[str, str] = {}
    for heading in tree.iter("h1", "h2", "h3", "h4", "h5", "h6"):
        parent = heading.getparent()
        permalink = next((href[1:] for href in heading.xpath(".//a/@href") if href.startswith("#") and len(href) > 1), None)
        opens_section = parent is not None and parent.tag in ("section", "div") and parent.get("id") and parent.index(heading) == 0
        anchor = heading.get("id") or (parent.get("id") if opens_section else None) or permalink
        key = anchor_key(heading.text_content())
        if anchor and key:
            anchors.setdefault(key, anchor)
    return anchors


def anchor_key(text: str) -> str:
    """A heading's text as HTML and the markdown made from it both give it: no markup, pilcrows or case."""
    return " ".join("".join(char for char in text if char.isalnum() or char.isspace()).lower().split())
