"""reStructuredText read by docutils into sections (rst.py), its includes resolved by the loader (includes.py)."""

import re
import time
from pathlib import Path

import pytest

from conftest import call_script
from rag_search.text.includes import expand_page
from rag_search.text.parsing import kind_of, parse

DOCS_RST = Path(__file__).resolve().parents[2] / "shared" / "bench" / "docs-rst"
MAX = 1_000_000
FENCE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1$", re.MULTILINE | re.DOTALL)
MARKUP_IN_PROSE = re.compile(r"^\s*\.\. [\w:-]+::|:[\w+-]+(?::[\w+-]+)*:`|^\s*\.\. _|^([=\-~^\"'`#*+])\1{3,}\s*$", re.MULTILINE)


def rst(text: str, name: str = "page.rst"):
    return parse("rst", text, name)


def paths_and_texts(text: str) -> list[tuple[str, str]]:
    return [(" > ".join(section.path), section.text) for section in rst(text).sections]


def prose(text: str) -> str:
    return FENCE.sub("", text)


def needs_docs_rst() -> Path:
    if not DOCS_RST.is_dir():
        pytest.skip(f"the Sphinx trees of the benchmark are not here: {DOCS_RST}")
    return DOCS_RST


def test_rst_and_rest_files_are_their_own_kind():
    assert (kind_of("docs/index.rst"), kind_of("NOTES.REST"), kind_of("notes.txt")) == ("rst", "rst", "text")


def test_titles_of_every_adornment_style_nest_under_the_page_title():
    text = """\
=========
 The Guide
=========

Intro.

Install
=======

Steps.

On Linux
--------

apt install it.

Packages
~~~~~~~~

From the archive.

Usage
=====

Run it.
"""
    assert paths_and_texts(text) == [
        ("The Guide", "Intro."),
        ("The Guide > Install", "Steps."),
        ("The Guide > Install > On Linux", "apt install it."),
        ("The Guide > Install > On Linux > Packages", "From the archive."),
        ("The Guide > Usage", "Run it."),
    ]
    assert rst(text).metadata == {"title": "The Guide"}


def test_a_page_without_a_title_is_titled_by_its_file_stem_and_text_before_the_title_goes_under_it():
    assert paths_and_texts("Just a paragraph.\n") == [("page", "Just a paragraph.")]
    parsed = rst(".. _intro:\n\n:orphan:\n\nBefore.\n\nTitle\n=====\n\nAfter.\n", "intro.rst")
    assert [(section.path, section.text) for section in parsed.sections] == [(["Title"], "Before."), (["Title"], "After.")]


def test_code_blocks_literal_blocks_and_doctests_stay_code_with_their_language():
    text = """\
Title
=====

Configure it::

    [pytest]
    addopts = -ra

.. code-block:: python

    def test_one():
        assert 1

.. code-block:: python
   :caption: conftest.py
   :emphasize-lines: 2

   import pytest

>>> print(".. not a directive ::")
.. not a directive ::
"""
    section = rst(text).sections[0]
    assert section.text == (
        "Configure it:\n\n```\n[pytest]\naddopts = -ra\n```\n\n"
        "```python\ndef test_one():\n    assert 1\n```\n\n"
        "conftest.py\n```python\nimport pytest\n```\n\n"
        '```pycon\n>>> print(".. not a directive ::")\n.. not a directive ::\n```')


def test_a_code_sample_holding_a_fence_gets_a_longer_one():
    text = "Title\n=====\n\n.. code-block:: markdown\n\n   ```python\n   x = 1\n   ```\n"
    assert rst(text).sections[0].text == "````markdown\n```python\nx = 1\n```\n````"


def test_roles_are_read_as_their_text():
    text = ("Title\n=====\n\nSee :ref:`the fixture guide <fixtures>`, :func:`pytest.fixture`, :class:`~flask.app.Flask`, "
            ":class:`.Blueprint`, :py:meth:`Session.get`, :doc:`/how-to/usage`, :pep:`8`, ``literal`` and *emphasis* and "
            "`a link <https://x.org>`_.\n")
    assert rst(text).sections[0].text == (
        "See the fixture guide, pytest.fixture, Flask, Blueprint, Session.get, /how-to/usage, PEP 8, `literal` and emphasis and a link.")


def test_toctrees_substitution_definitions_comments_targets_and_index_entries_are_not_text():
    text = """\
.. |project| replace:: Flask

Title
=====

.. toctree::
   :maxdepth: 2

   quickstart
   tutorial

.. index:: single: configuration

.. _config:

.. a comment that says nothing to a reader

.. meta::
   :description: hidden

Configure |project| with a file.
"""
    assert paths_and_texts(text) == [("Title", "Configure Flask with a file.")]


def test_directives_docutils_does_not_know_keep_their_text_and_drop_their_syntax():
    text = """\
Title
=====

.. versionadded:: 8.0
   The ``--strict`` flag.

.. deprecated:: 3.0 Use :func:`other` instead.

.. autofunction:: flask.url_for

.. confval:: addopts
   :type: args
   :default: ""

   Extra command line options.

.. note:: Docutils' own admonition.

.. seealso:: :ref:`Other page <other>`

.. only:: latex

   Only in the PDF.

.. only:: not latex

   Only on the web.

.. some-extension-directive:: its argument
   :an-option: value

   Its content, with a role :user:`someone`.

.. tab:: Python

   .. code-block:: python

      x = 1
"""
    assert rst(text).sections[0].text == "\n\n".join([
        "Added in version 8.0: The `--strict` flag.",
        "Deprecated since version 3.0: Use other instead.",
        "flask.url_for",
        'addopts\ntype: args\ndefault: ""',
        "Extra command line options.",
        "Note: Docutils' own admonition.",
        "See also: Other page",
        "Only on the web.",
        "its argument\nIts content, with a role someone.",
        "Python\n```python\nx = 1\n```",
    ])


def test_lists_tables_and_fields_are_text():
    text = """\
Title
=====

* first
* second with ``code``

  - nested

#. one
#. two

--verbose, -v  Say more.

:param name: the name
:returns: nothing

=====  =====
a      b
=====  =====
1      2
=====  =====
"""
    assert rst(text).sections[0].text == (
        "- first\n- second with `code`\n  - nested\n\n1. one\n2. two\n\n--verbose, -v: Say more.\n\n"
        "param name: the name\nreturns: nothing\n\na | b\n1 | 2")


@pytest.mark.parametrize("text", [
    "\n\n".join(" " * depth + "quote" for depth in range(600)),  # block quotes nested past the recursion limit
    "Title\n=====\n\n" + "word " * 3000,  # a line longer than docutils reads
], ids=["nested", "long-line"])
def test_a_page_docutils_cannot_read_is_plain_text_with_a_warning(text):
    parsed = rst(text, "broken.rst")
    assert [(section.path, section.text) for section in parsed.sections] == [(["broken.rst"], text)]
    assert len(parsed.warnings) == 1 and parsed.warnings[0].startswith("read as plain text, not as reStructuredText")


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "docs"
    (root / "example").mkdir(parents=True)
    (root / "_part.rst").write_text("Shared part\n-----------\n\nShared text with :ref:`a role <x>`.\n")
    (root / "example" / "conftest.py").write_text("import pytest\n# start\n\n@pytest.fixture\ndef db():\n    return 1\n# end\n")
    (tmp_path / "outside.rst").write_text("Outside the source.\n")
    return root


def test_include_and_literalinclude_are_resolved_within_the_source(site):
    page = site / "guide" / "page.rst"
    text = """\
Guide
=====

.. include:: ../_part.rst

.. literalinclude:: /example/conftest.py
   :language: python
   :start-after: # start
   :end-before: # end

.. include:: ../example/conftest.py
   :literal:
   :lines: 1

.. include:: ../../outside.rst
"""
    expanded, warnings, files = expand_page("rst", text, page, site, MAX)
    assert files == [(site / "_part.rst").resolve(), (site / "example" / "conftest.py").resolve()]
    assert warnings == ["include stub(s) kept as written: ../../outside.rst (not found inside the source)"]
    sections = parse("rst", expanded, "page.rst").sections
    assert [(section.path, section.text) for section in sections] == [
        (["Guide", "Shared part"], "Shared text with a role.\n\n```python\n@pytest.fixture\ndef db():\n    return 1\n```\n\n"
                                   "```py\nimport pytest\n```")]


def test_rst_includes_take_the_budget_and_refuse_themselves(site):
    (site / "loop.rst").write_text("Loop.\n\n.. include:: loop.rst\n")
    (site / "tiny.rst").write_text("Tiny.\n")
    expanded, warnings, _ = expand_page("rst", ".. include:: loop.rst\n\n.. include:: tiny.rst\n", site / "page.rst", site, 30)
    assert expanded == "Loop.\n\n.. include:: loop.rst\n\n.. include:: tiny.rst\n"
    assert warnings == ["include stub(s) kept as written: loop.rst (includes itself), tiny.rst (include budget of 30 bytes used up)"]


def test_get_reads_one_section_of_an_rst_page_and_the_index_run_names_a_page_read_as_plain_text(tmp_path):
    notes = tmp_path / "state" / "docs"
    notes.mkdir(parents=True)
    (notes / "deploy.rst").write_text(
        "Deploying\n=========\n\nChoose a server.\n\nWith Gunicorn\n-------------\n\nRun ``gunicorn -w 4 app:app``.\n\n"
        ".. code-block:: bash\n\n   pip install gunicorn\n\nWith uWSGI\n----------\n\nUse :ref:`the uwsgi guide <uwsgi>`.\n")
    (notes / "broken.rst").write_text("Broken\n======\n\n" + "word " * 3000)
    data = tmp_path / "data"
    indexed = call_script("index_personal.py", "--data-dir", data, tmp_path / "state", cwd=tmp_path)
    assert indexed.code == 0, indexed
    assert "docs/broken.rst: read as plain text, not as reStructuredText" in indexed.stderr
    result = call_script("get.py", "--data-dir", data, "docs/deploy.rst", "--section", "with gunicorn")
    assert result.code == 0, result
    assert result.json["section"] == "Deploying > With Gunicorn"
    assert result.json["outline"] == ["Deploying", "Deploying > With Gunicorn", "Deploying > With uWSGI"]
    assert "gunicorn -w 4" in result.json["text"] and "```bash\npip install gunicorn\n```" in result.json["text"]
    assert "uwsgi guide" not in result.json["text"] and "----" not in result.json["text"]


def test_the_sphinx_trees_read_with_headings_and_no_markup_left_in_prose():
    root = needs_docs_rst()
    pages = [root / "flask/docs/quickstart.rst", root / "requests/docs/user/quickstart.rst", root / "pytest/doc/en/how-to/fixtures.rst"]
    for page in pages:
        parsed = parse("rst", page.read_text(encoding="utf-8"), page.name)
        assert parsed.warnings == [] and len(parsed.sections) > 10, page
        assert all(len(section.path) >= 2 for section in parsed.sections[1:]), page
        leftover = [section.path for section in parsed.sections if MARKUP_IN_PROSE.search(prose(section.text))]
        assert leftover == [], page
    quickstart = parse("rst", pages[0].read_text(encoding="utf-8"), "quickstart.rst")
    assert quickstart.metadata["title"] == "Quickstart"
    routing = next(section for section in quickstart.sections if section.path == ["Quickstart", "Routing"])
    assert "@app.route('/')" in routing.text and "```" in routing.text


def test_substitutions_add_at_most_the_pages_length_however_often_a_long_one_is_used():
    """A page of 1,000 references to a definition of 10,000 characters would grow to 10 MB."""
    definition = "\n   ".join(["word " * 20] * 100)
    text = f".. |long| replace:: {definition}\n\nTitle\n=====\n\n" + "|long|\n" * 1000
    parsed = rst(text)
    assert parsed.warnings == []
    assert len(parsed.sections[0].text) <= 2 * len(text) and parsed.sections[0].text.count("word") >= 2000


def test_runs_of_spaces_inside_a_paragraph_take_linear_time():
    """A paragraph of 300 lines each padded with 9,000 spaces took 12 s: a regex that joined its lines backtracked."""
    text = ("a" + " " * 9000 + "b\n") * 300
    started = time.monotonic()
    section = rst(text).sections[0]
    assert time.monotonic() - started < 5
    assert section.text == " ".join(["a" + " " * 9000 + "b"] * 300)


def test_an_include_line_padded_with_spaces_is_read_in_linear_time(site):
    """20 include lines each with 9,000 spaces inside took 20 s: the pattern that found the path backtracked."""
    text = (".. include:: _part" + " " * 9000 + "x.rst\n") * 20
    started = time.monotonic()
    expanded, warnings, _ = expand_page("rst", text, site / "page.rst", site, MAX)
    assert time.monotonic() - started < 5
    assert expanded == text and len(warnings) == 1


def test_a_role_padded_with_spaces_is_read_in_linear_time():
    """20 roles each holding 9,000 spaces took 7 s: the pattern that finds `Title <target>` backtracked."""
    text = "".join(f":ref:`a{' ' * 9000}b`\nand :ref:`Title{' ' * 9000}<target>`\n\n" for _ in range(20))
    started = time.monotonic()
    sections = rst(text).sections
    assert time.monotonic() - started < 5
    assert sections[0].text.split("\n\n") == [f"a{' ' * 9000}b and Title"] * 20
