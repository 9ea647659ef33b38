"""Include stubs of MkDocs, pymdownx snippets, Hugo and Docusaurus, resolved inside the source's folder."""

import time

import pytest

from rag_search.text.includes import expand_page, resolve_includes

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


FORMS = [
    '--8<-- "includes/business.md"',
    "--8<-- 'includes/business.md'",
    "--8<-- includes/business.md",
    "--8<--\nincludes/business.md\n--8<--",
    "{!includes/business.md!}",
    '{% include-markdown "includes/business.md" %}',
    '{% include "../includes/business.md" %}',
    '{{< readfile file="/includes/business.md" >}}',
    '{{% readfile "includes/business.md" markdown="true" %}}',
]


@pytest.mark.parametrize("stub", FORMS)
def test_each_form_is_replaced_by_the_included_text_without_its_front_matter(site, stub):
    result = expand(site, f"# Page\n\n{stub}\n\nAfter.\n")
    assert result.text == "# Page\n\nTraefik for business applications.\n\nAfter.\n"
    assert (result.included, result.unresolved) == (1, [])


def test_every_match_of_a_stub_holds_the_text_that_lets_a_page_be_scanned():
    """A page without a stub's text is not scanned for that stub (includes._Stub): every form it finds must hold it."""
    from rag_search.text import includes

    stubs = {name: value for name, value in vars(includes).items() if isinstance(value, includes._Stub)}
    samples = [*FORMS, "{* ../../docs_src/events/tutorial003.py hl[3] ln[2:3,11:] *}", "import Part from './_part.mdx'",
               '  {%- include "a.md" -%}', "  --8<-- \"a.md\"\n"]
    matched = set()
    for name, stub in stubs.items():
        for text in samples:
            for match in stub.pattern.finditer(f"# Page\n\n{text}\n"):
                assert stub.holds in match.group(0), (name, text)
                matched.add(name)
    assert matched == set(stubs) and len(stubs) == 7, sorted(set(stubs) - matched)


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


@pytest.mark.parametrize("stub", FORMS)
def test_each_form_stops_at_the_budget_and_says_so(site, stub):
    result = expand(site, f"# Page\n\n{stub}\n\n{stub}\n", max_bytes=60)
    assert result.text == f"# Page\n\nTraefik for business applications.\n\n{stub}\n"
    assert [problem.split(" ", 1)[1] for problem in result.unresolved] == ["(include budget of 60 bytes used up)"]


def test_a_docusaurus_part_counts_at_every_usage(site):
    text = "import Part from './_part.mdx'\n\n<Part />\n\n<Part />\n"
    result = expand(site, text, max_bytes=40)
    assert result.text == "import Part from './_part.mdx'\n\nThe SDK installs a chart.\n\n<Part />\n"
    assert result.unresolved == ["./_part.mdx (include budget of 40 bytes used up)"]


def test_the_indent_given_to_included_lines_counts_against_the_budget(site):
    (site / "includes" / "lines.md").write_text("x\n" * 100)
    text = " " * 40 + '--8<-- "includes/lines.md"\n'
    assert expand(site, text, max_bytes=1000).text == text


def test_parts_used_many_times_at_every_level_stay_within_the_budget(site):
    """A reporter's 12 KB of MDX parts, each using the next many times, expanded to 123 million characters."""
    for level in range(3):
        (site / "guide" / f"_level{level}.mdx").write_text(
            f"import Next from './_level{level + 1}.mdx'\n\n" + "Some words.\n<Next />\n" * 50)
    (site / "guide" / "_level3.mdx").write_text("A paragraph that every level repeats, long enough to add up quickly.\n")
    text = "import Top from './_level0.mdx'\n\n" + "<Top />\n" * 50
    started = time.monotonic()
    result = expand(site, text, max_bytes=100_000)
    assert time.monotonic() - started < 10
    assert len(text) < len(result.text) <= len(text) + 100_000
    assert "./_level2.mdx (include budget of 100000 bytes used up)" in result.unresolved


def test_the_files_included_are_listed_once_in_the_order_first_included(site):
    (site / "includes" / "outer.md").write_text("Outer.\n{!includes/inner.md!}\n{!includes/business.md!}\n")
    (site / "includes" / "inner.md").write_text("Inner.\n")
    text = "import Part from './_part.mdx'\n{!includes/outer.md!}\n{!includes/nowhere.md!}\n{!includes/business.md!}\n<Part />\n"
    listed = [site / "includes" / name for name in ("outer.md", "inner.md", "business.md")] + [site / "guide" / "_part.mdx"]
    assert expand(site, text).files == [path.resolve() for path in listed]


def test_expand_page_returns_the_files_it_included_and_leaves_other_kinds_alone(site):
    page = site / "guide" / "page.md"
    assert expand_page("markdown", "{!includes/business.md!}", page, site, MAX) == (
        "Traefik for business applications.", [], [(site / "includes" / "business.md").resolve()])
    assert expand_page("code", "{!includes/business.md!}", page, site, MAX) == ("{!includes/business.md!}", [], [])


@pytest.fixture
def repo(tmp_path):
    """FastAPI's layout: pages in docs/en/docs, their code in docs_src at the repository's root."""
    (tmp_path / "docs" / "en" / "docs" / "tutorial").mkdir(parents=True)
    (tmp_path / "docs_src" / "events").mkdir(parents=True)
    (tmp_path / "docs_src" / "events" / "tutorial003.py").write_text("".join(f"line {n}\n" for n in range(1, 13)))
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "wf.yaml").write_text("---\napiVersion: argoproj.io/v1alpha1\nkind: Workflow\n")
    return tmp_path


def test_fastapis_code_include_is_the_files_lines_as_a_fenced_block(repo):
    page = repo / "docs" / "en" / "docs" / "tutorial" / "events.md"
    text = "## Lifespan { #lifespan }\n\n{* ../../docs_src/events/tutorial003.py hl[3] ln[2:3,11:] *}\n\nAfter.\n"
    result = resolve_includes(text, page, repo, MAX)
    assert result.text == "## Lifespan { #lifespan }\n\n```python\nline 2\nline 3\nline 11\nline 12\n```\n\nAfter.\n"
    assert result.files == [(repo / "docs_src" / "events" / "tutorial003.py").resolve()]


def test_a_snippet_of_code_is_fenced_in_its_language_unless_it_is_in_a_fence_already(repo):
    page = repo / "docs" / "workflows.md"
    text = '--8<-- "examples/wf.yaml"\n\n```yaml title="examples/wf.yaml"\n--8<-- "examples/wf.yaml:2"\n```\n'
    body = "---\napiVersion: argoproj.io/v1alpha1\nkind: Workflow"
    assert resolve_includes(text, page, repo, MAX).text == f'```yaml\n{body}\n```\n\n```yaml title="examples/wf.yaml"\n{body}\n```\n'


def test_a_code_include_outside_the_root_or_in_git_stays_and_is_reported(repo):
    (repo / ".git").mkdir()
    (repo / ".git" / "config.py").write_text("x = 1\n")
    page = repo / "docs" / "en" / "docs" / "index.md"
    text = "{* ../../docs_src/nowhere.py *}\n{* ../../.git/config.py *}\n"
    result = resolve_includes(text, page, repo / "docs", MAX)
    assert result.text == text
    assert result.unresolved == ["../../docs_src/nowhere.py (not found inside the source)",
                                 "../../.git/config.py (not found inside the source)"]
    assert resolve_includes(text, page, repo, MAX).unresolved[1] == "../../.git/config.py (inside .git)"
