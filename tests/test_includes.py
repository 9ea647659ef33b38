"""Include stubs of MkDocs, pymdownx snippets, Hugo and Docusaurus, resolved inside the source's folder."""

import pytest

from rag_search.includes import resolve_includes

MAX = 1_000_000


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "docs"
    (root / "includes").mkdir(parents=True)
    (root / "guide").mkdir()
    (root / "includes" / "business.md").write_text("---\ntitle: Part\n---\nTraefik for business applications.\n")
    (root / "guide" / "_part.mdx").write_text("The SDK installs a chart.\n")
    return root


def expand(root, text, page="guide/page.md", max_bytes=MAX):
    return resolve_includes(text, root / page, root, max_bytes)


@pytest.mark.parametrize("stub", [
    '--8<-- "includes/business.md"',
    "--8<-- 'includes/business.md'",
    "--8<-- includes/business.md",
    "--8<--\nincludes/business.md\n--8<--",
    "{!includes/business.md!}",
    '{% include-markdown "includes/business.md" %}',
    '{% include "../includes/business.md" %}',
    '{{< readfile file="/includes/business.md" >}}',
    '{{% readfile "includes/business.md" markdown="true" %}}',
])
def test_each_form_is_replaced_by_the_included_text_without_its_front_matter(site, stub):
    result = expand(site, f"# Page\n\n{stub}\n\nAfter.\n")
    assert result.text == "# Page\n\nTraefik for business applications.\n\nAfter.\n"
    assert (result.included, result.unresolved) == (1, [])


def test_docusaurus_imports_are_inlined_where_the_component_is_used(site):
    text = "import Part from './_part.mdx'\nimport Tabs from '@theme/Tabs';\n\n## Install\n\n<Part />\n"
    assert expand(site, text).text == "import Tabs from '@theme/Tabs';\n\n## Install\n\nThe SDK installs a chart.\n"


def test_an_indented_stub_indents_what_it_includes(site):
    (site / "includes" / "two.md").write_text("line one\n\nline two\n")
    assert expand(site, '!!! note\n    --8<-- "includes/two.md"\n').text == "!!! note\n    line one\n\n    line two\n"


def test_includes_nest_and_a_cycle_stops(site):
    (site / "includes" / "outer.md").write_text('Outer.\n{!includes/inner.md!}\n')
    (site / "includes" / "inner.md").write_text('Inner.\n{!includes/outer.md!}\n')
    result = expand(site, "{!includes/outer.md!}")
    assert result.text == "Outer.\nInner.\n{!includes/outer.md!}"
    assert result.unresolved == ["includes/outer.md (includes itself)"]


@pytest.mark.parametrize(("stub", "problem"), [
    ('--8<-- "includes/nowhere.md"', "not found inside the source"),
    ('--8<-- "../../outside.md"', "not found inside the source"),
    ('--8<-- "includes/.env"', "a credential file"),
    ('--8<-- "https://example.org/x.md"', "a URL"),
    ('--8<-- "includes/big.md"', "too large (max_file_bytes)"),
])
def test_stubs_that_cannot_be_resolved_stay_as_written_and_are_reported(site, stub, problem):
    (site.parent / "outside.md").write_text("outside the source")
    (site / "includes" / ".env").write_text("TOKEN=secret")
    (site / "includes" / "big.md").write_text("x" * 200)
    result = expand(site, f"{stub}\n", max_bytes=100)
    assert result.text == f"{stub}\n"
    assert result.unresolved == [f"{stub.split(chr(34))[1]} ({problem})"]


def test_shell_parameter_expansion_is_not_a_stub(site):
    text = 'for idx in "${!SECRETS[@]}"; do echo; done\n;--8<-- "includes/business.md"\n'
    assert expand(site, text).text == text
