"""Site generators' syntax (MkDocs, Docusaurus, MDX, Hugo) out of markdown pages, their text kept (text/site_syntax.py)."""

from pathlib import Path

import pytest

from rag_search.text.parsing import parse

DOCS_FAQ = Path(__file__).resolve().parents[2] / "shared" / "bench" / "docs-faq"
needs_docs_faq = pytest.mark.skipif(not DOCS_FAQ.is_dir(), reason="the docs-faq pages are read in place from ../shared/bench")


def sections_of(text: str, name: str = "page.md") -> list[tuple[list[str], str]]:
    return [(section.path, section.text) for section in parse("markdown", text, name).sections]


def test_an_attr_list_anchor_leaves_the_heading_and_is_kept_as_the_sections_anchor():
    parsed = parse("markdown", "# Events\n\n## Lifespan { #lifespan }\n\nStartup and shutdown.\n\n"
                   "## Usage {#usage .new data-x=1}\n\nCall it.\n\n## Braces {kept}\n\nAs written.\n", "events.md")
    assert [(s.path, s.text, s.metadata) for s in parsed.sections] == [
        (["Events", "Lifespan"], "Startup and shutdown.", {"anchor": "lifespan"}),
        (["Events", "Usage"], "Call it.", {"anchor": "usage"}),
        (["Events", "Braces {kept}"], "As written.", {}),
    ]


@needs_docs_faq
def test_linkerds_anchored_check_headings_read_without_their_anchor():
    page = DOCS_FAQ / "linkerd/linkerd.io/content/docs/tasks/troubleshooting.md"
    parsed = parse("markdown", page.read_text(), page.name)
    viz = [s for s in parsed.sections if s.metadata.get("anchor") == "l5d-viz-metrics-api"]
    assert viz and viz[0].path[-1] == "√ viz extension self-check"
    assert not any("{#" in part for s in parsed.sections for part in s.path)


def test_docusaurus_admonitions_keep_their_title_and_body_and_lose_their_colons():
    text = ("# Tablespaces\n\n:::info[Important]\n    This example assumes you're familiar with\n    partitioning.\n:::\n\n"
            ":::note Mind the owner\nThe owner must exist.\n\n::::tip\nNested.\n::::\n:::\n\nAfter.\n")
    assert sections_of(text) == [(["Tablespaces"], "Important\n\nThis example assumes you're familiar with\npartitioning.\n\n\n"
                                                   "Mind the owner\n\nThe owner must exist.\n\n\nNested.\n\n\n\nAfter.")]


@needs_docs_faq
def test_cloudnative_pgs_indented_admonitions_are_prose_not_code():
    page = DOCS_FAQ / "cloudnative-pg/docs/src/tablespaces.md"
    text = "\n".join(section.text for section in parse("markdown", page.read_text(), page.name).sections)
    assert ":::" not in text
    assert "Important\n\nThis example assumes you're familiar with\n[PostgreSQL declarative partitioning]" in text


def test_mkdocs_admonitions_keep_their_title_and_their_dedented_body_with_its_code():
    text = ('# Extend\n\n??? note "Plugin Catalog Access"\n    You can reach the catalog.\n\n    ```yaml\n    a: 1\n    ```\n\n'
            '!!! warning\n    Careful.\n\n    !!! tip "Inner"\n        Deeper.\n\n## Next\n\nText.\n')
    assert sections_of(text) == [
        (["Extend"], "Plugin Catalog Access\n\nYou can reach the catalog.\n\n```yaml\na: 1\n```\n\n\nCareful.\n\nInner\n\nDeeper."),
        (["Extend", "Next"], "Text."),
    ]


@needs_docs_faq
def test_traefiks_admonitions_read_as_prose():
    page = DOCS_FAQ / "traefik/docs/content/extend/extend-traefik.md"
    first = parse("markdown", page.read_text(), page.name).sections[1]
    assert "??? note" not in first.text and "Plugin Catalog Access\n\nYou can reach the [Plugin Catalog]" in first.text


def test_mdx_imports_exports_and_component_tags_go_their_text_stays():
    text = ("---\ntitle: Install\n---\nimport Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n\n"
            "export const meta = {\n  a: 1,\n};\n\n# Install\n\n<Tabs groupId=\"os\">\n<TabItem value=\"linux\" label=\"Linux\">\n\n"
            "Run apt. A <Highlight color=\"red\">marked</Highlight> word and List<String> stay.\n\n</TabItem>\n</Tabs>\n\n"
            "```js\nimport x from 'y';\n<Tabs>\n```\n")
    assert sections_of(text, "install.mdx") == [
        (["Install"], "Linux\n\nRun apt. A marked word and List<String> stay.\n\n\n\n\n```js\nimport x from 'y';\n<Tabs>\n```")]


@needs_docs_faq
def test_helms_doc_card_list_page_keeps_only_its_prose():
    page = DOCS_FAQ / "helm/versioned_docs/version-3/chart_best_practices/index.mdx"
    text = "\n".join(section.text for section in parse("markdown", page.read_text(), page.name).sections)
    assert "import" not in text and "DocCardList" not in text and text.endswith("override our suggestions here.")


def test_a_shell_export_line_is_prose_not_an_mdx_export():
    assert sections_of("# Env\n\nexport ETCDCTL_API=3 sets the API version.\n") == [
        (["Env"], "export ETCDCTL_API=3 sets the API version.")]


def test_hugo_shortcodes_lose_their_syntax_and_keep_their_text():
    text = ('# Install\n\n{{% notice note %}}\nPoetry needs Python 3.9.\n{{% /notice %}}\n\n'
            'See [the file]({{< relref "pyproject#requires-python" >}}).\n\n'
            '{{< command-output "You should see:" >}}\n\n{{% alert title="When migrating" color="info" %}}\nMigrate.\n'
            '{{% /alert %}}\n\n{{< youtube abc123 >}}\n\n{{< highlight go >}}\n{{< note >}} stays code\n'
            '{{< /highlight >}}\n')
    assert sections_of(text) == [(["Install"], "Poetry needs Python 3.9.\n\n\nSee [the file](pyproject#requires-python).\n\n"
                                               "You should see:\n\nWhen migrating\nMigrate.\n\n\n\n\n```go\n{{< note >}} stays code\n```")]


def test_site_syntax_inside_a_code_fence_is_code():
    text = "# Docs\n\n~~~md\n:::note Title\n!!! tip\n{{< ref \"x\" >}}\nimport A from 'a';\n<Tabs>\n~~~\n"
    assert sections_of(text) == [(["Docs"], text.split("\n\n", 1)[1].strip())]


def test_get_finds_a_section_by_its_heading_without_the_anchor(tmp_path):
    from conftest import add_source, call_script, index_docs

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "events.md").write_text("# Lifespan Events\n\n## Lifespan { #lifespan }\n\nLoad the model before the app starts.\n\n"
                                    "## Alternative Events (deprecated) { #alternative-events-deprecated }\n\nUse startup.\n")
    add_source("--id", "fastapi", "--name", "FastAPI", "--type", "local", "--path", docs)
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    found = call_script("get.py", "--data-dir", data, "fastapi/events.md", "--section", "Lifespan")
    assert found.code == 0, found
    assert found.json["section"] == "Lifespan Events > Lifespan" and "Load the model" in found.json["text"]
    assert "{ #" not in " ".join(found.json["outline"])
