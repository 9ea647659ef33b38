"""reStructuredText to sections: docutils parses the page, a walk of its doctree gives heading paths and text.

Titles of every adornment style nest as docutils nests them, and the page's first title is its title, as a
Markdown page's `#` is. The text is what a reader of the built page sees: roles as their text (`:ref:` its
title), literal blocks, code blocks and doctests as fenced code with their language, lists, tables and
admonitions as text. Toctrees, substitution definitions, comments, targets, index and meta entries are no
prose and stay out. Sphinx's roles and directives are unknown to docutils: a role is read as its text
(_roles_as_text), a directive from the error docutils leaves in its place, which holds the directive as written
(_Reader.directive). Includes are resolved before parsing, by the loader (includes.py). A page docutils cannot
read is plain text, with a warning naming it.
"""

import ast
import copy
import functools
import re
import textwrap
from collections.abc import Callable
from pathlib import PurePosixPath

from docutils import nodes
from docutils.frontend import Values, get_default_settings
from docutils.parsers.rst import Parser, roles, states
from docutils.utils import new_document, unescape

from ..core.errors import one_line
from .sections import MAX_RENDER_DEPTH, ParsedFile, Section, with_title

LINE_LIMIT = 10_000  # docutils' own line_length_limit: it parses nothing of a page with a longer line

# What docutils may do on its own is nothing beyond the text: no file read, no raw HTML, no message written anywhere.
SETTINGS = {"file_insertion_enabled": False, "raw_enabled": False, "report_level": 5, "halt_level": 5,
            "warning_stream": False, "_disable_config": True, "input_encoding": "utf-8", "syntax_highlight": "none",
            "line_length_limit": LINE_LIMIT, "pep_references": False, "rfc_references": False}

# Directives that say how to build the site, not what it says: left out with their content.
DROPPED = frozenset("""toctree index meta highlight currentmodule module py:module py:currentmodule include literalinclude
    raw tabularcolumns sectionauthor moduleauthor codeauthor testsetup testcleanup default-domain default-role
    towncrier-draft-entries autosummary image figure""".split())
# Directives whose content is code (shown as written), and the language of those that name none.
CODE = {"code": "", "code-block": "", "sourcecode": "", "testcode": "python", "testoutput": "", "doctest": "pycon",
        "ipython": "ipython", "parsed-literal": "", "prompt": ""}
# Directives whose argument is a build condition or a style, not text: their content is kept, the argument left out.
NO_ARGUMENT_TEXT = frozenset({"only", "ifconfig", "tabs", "rst-class", "container", "class"})
# Sphinx's labels for directives about versions (as the built page shows them), and for a few admonitions, with how
# many words of the directive's first line are its argument (the version); the rest of the line is content.
LABELS = {"versionadded": ("Added in version", 1), "versionchanged": ("Changed in version", 1),
          "deprecated": ("Deprecated since version", 1), "versionremoved": ("Removed in version", 1),
          "seealso": ("See also", 0), "todo": ("To do", 0)}
# The tags an HTML build of a Sphinx site has, for `.. only:: not latex` (kept) and `.. only:: latex` (left out).
HTML_TAGS = frozenset({"html", "format_html", "builder_html"})
# Options whose value a reader sees (a code block's caption, a setting's type and default), shown as `type: value` (a
# caption as its value); all others are syntax.
TEXT_OPTIONS = ("caption", "type", "default")

_DIRECTIVE = re.compile(r"\.\.[ \t]+([\w:.+-]+?)[ \t]*::(?:[ \t]+(.*))?$")
_OPTION = re.compile(r"^:([\w-]+):(?:[ \t]+(.*))?$")
_BACKTICKS = re.compile(r"`{3,}")
_WORD = re.compile(r"\w")
# Nodes that are no text of the page: among blocks, and inside a paragraph.
_SKIPPED = (nodes.comment, nodes.target, nodes.substitution_definition, nodes.pending, nodes.raw, nodes.image, nodes.meta,
            nodes.transition, nodes.label, nodes.decoration)
_SKIPPED_INLINE = (nodes.footnote_reference, nodes.raw, nodes.image, nodes.system_message)


def parse_rst(text: str, name: str) -> ParsedFile:
    """A section per title, the page's first title its title (else the file's stem); plain text if docutils fails."""
    try:
        if any(len(line) > LINE_LIMIT for line in text.splitlines()):
            raise ValueError(f"a line is longer than {LINE_LIMIT} characters")
        document = _doctree(text, name)
        sections, first_title = _Reader(document, substitutions=_Substitutions(room=len(text))).sections()
    except Exception as exc:  # any failure of the parser on one page (a bug, a recursion limit) leaves it plain text
        warning = f"read as plain text, not as reStructuredText: {type(exc).__name__}: {one_line(exc)}"  # logged after the file
        return ParsedFile([Section([name], text)], {"title": name}, [warning])
    title = first_title or PurePosixPath(name).stem
    for section in sections:
        section.path = with_title(title, section.path)
    return ParsedFile(sections, {"title": title})


@functools.cache
def _settings() -> Values:
    """docutils' defaults with SETTINGS, made once (0.6 ms a time); each document gets a copy."""
    settings = get_default_settings(Parser)
    for key, value in SETTINGS.items():
        setattr(settings, key, value)
    return settings


def _doctree(text: str, name: str) -> nodes.document:
    """The page's doctree as the parser leaves it: no transform runs (none resolves anything we read)."""
    document = new_document(name, copy.copy(_settings()))
    Parser(inliner=_roles_as_text()).parse(text, document)
    return document


def _roles_as_text() -> states.Inliner:
    """docutils' inliner, reading a role it does not know (Sphinx's :ref:, :func:, :doc:, :py:meth:…) as its text.
    The method is replaced on the instance: the inliner builds its patterns from its class's own attributes, so a
    subclass of it does not work."""
    inliner = states.Inliner()

    def interpreted(rawsource: str, text: str, role: str, lineno: int) -> tuple[list, list]:
        role_fn = roles.role(role, inliner.language, lineno, inliner.reporter)[0] if role else None
        read = role_fn(role, rawsource, text, lineno, inliner) if role_fn else ([], [])
        if role_fn is None or any(isinstance(node, nodes.problematic) for node in read[0]):  # :pep:`8#anchor` too
            return [nodes.inline(rawsource, role_text(text))], []
        return read

    inliner.interpreted = interpreted
    return inliner


def role_text(text: str) -> str:
    """What Sphinx shows of a role: the title of `Title <target>`, the last part of `~a.b.c`, `.Flask` without its dot
    (a lookup from the current module), the rest as written."""
    opening = text.rfind("<")  # `Title <target>`, as Sphinx reads it: the last `<`, not escaped, and a title before it
    if text.endswith(">") and opening > 0 and text[opening - 1] != "\x00" and text[:opening].strip():
        return unescape(text[:opening].rstrip())
    shown = text.removeprefix("!").lstrip(".")
    if shown.startswith("~"):
        shown = shown[1:].rsplit(".", 1)[-1]
    return unescape(shown)


def fenced(code: str, language: str = "") -> str:
    """Code as a Markdown fence (longer than any run of backticks inside), so the chunker treats it as code."""
    marks = "`" * max([3, *(len(run) + 1 for run in _BACKTICKS.findall(code))])
    code = code.lstrip("\n").rstrip()
    return f"{marks}{language}\n{code}\n{marks}"


class _Reader:
    """A doctree's text, block by block; a directive docutils does not know is read from its source (a fragment)."""

    def __init__(self, document: nodes.document, depth: int = 0, substitutions: "_Substitutions | None" = None):
        self.document = document
        self.depth = depth
        self.substitutions = substitutions or _Substitutions()
        self.substitutions.definitions.update(document.substitution_defs)

    def sections(self) -> tuple[list[Section], str | None]:
        """(a Section per title with the text under it, the page's first title)."""
        found: list[Section] = []

        def visit(parent: nodes.Element, path: list[str]) -> None:
            body = [child for child in parent.children if not isinstance(child, (nodes.section, nodes.title))]
            if parent is self.document:
                body = _without_page_fields(body)
            text = "\n\n".join(block for child in body for block in self.blocks(child) if block.strip())
            if _WORD.search(text):
                found.append(Section(path, text))
            for child in parent.children:
                if isinstance(child, nodes.section):
                    visit(child, [*path, self.title(child)])

        visit(self.document, [])
        first = next((child for child in self.document.children if isinstance(child, nodes.section)), None)
        return found, self.title(first) if first is not None else None

    def title(self, section: nodes.Element) -> str:
        heading = next((child for child in section.children if isinstance(child, nodes.title)), None)
        return self.inline(heading, code_marks=False) if heading is not None else ""

    def blocks(self, node: nodes.Node) -> list[str]:
        """The node's text as blocks (paragraphs, lists, fences), to be joined by blank lines."""
        if isinstance(node, _SKIPPED) or (isinstance(node, nodes.topic) and "contents" in node["classes"]):
            return []
        if isinstance(node, nodes.system_message):
            return self.directive(node)
        if isinstance(node, (nodes.literal_block, nodes.doctest_block, nodes.math_block)):
            return [fenced(node.astext(), _language(node))]
        if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            return [self.list_text(node)]
        if isinstance(node, nodes.definition_list):
            return [self.definition(item) for item in node.children]
        if isinstance(node, (nodes.field_list, nodes.option_list)):
            return ["\n".join(self.field(item) for item in node.children)]
        if isinstance(node, nodes.table):
            return [self.table(node)]
        if isinstance(node, nodes.line_block):
            return ["\n".join(self.inline(line) if isinstance(line, nodes.line) else self.joined(line) for line in node.children)]
        if isinstance(node, nodes.Admonition):
            return self.admonition(node)
        if isinstance(node, nodes.TextElement):
            return [self.inline(node)]
        return [block for child in node.children for block in self.blocks(child)]

    def joined(self, node: nodes.Node, separator: str = "\n") -> str:
        return separator.join(block for block in self.blocks(node) if block.strip())

    def inline(self, node: nodes.Node, code_marks: bool = True) -> str:
        """A paragraph's text on one line: markup gone, ``literals`` in backticks (unless `code_marks` is off)."""
        return " ".join(line.strip() for line in self._inline_parts(node, code_marks).split("\n")).strip()

    def _inline_parts(self, node: nodes.Node, code_marks: bool, in_substitution: bool = False) -> str:
        if isinstance(node, nodes.Text):
            return str(node)
        if isinstance(node, _SKIPPED_INLINE):
            return ""
        if isinstance(node, nodes.substitution_reference) and not in_substitution:
            text = self.substitutions.expand(node.get("refname", ""), lambda found: self._inline_parts(found, code_marks, True))
            if text is not None:
                return text
        text = "".join(self._inline_parts(child, code_marks, in_substitution) for child in node.children)
        return f"`{text}`" if code_marks and isinstance(node, nodes.literal) and text else text

    def list_text(self, node: nodes.Element) -> str:
        """`- item` (or `1. item`) lines; what else an item holds (a nested list, a paragraph) is indented under it, but
        for code, which stays where a fence is read as one."""
        first = node.get("start", 1)
        numbered = isinstance(node, nodes.enumerated_list)
        items = []
        for number, item in enumerate(node.children, start=first):
            blocks = [block for block in self.blocks(item) if block.strip()] or [""]
            lead = "\n" if "`" * 3 in blocks[0] else ""
            rest = [block if "`" * 3 in block else textwrap.indent(block, "  ") for block in blocks[1:]]
            items.append("\n".join([(f"{number}. " if numbered else "- ") + lead + blocks[0], *rest]))
        return "\n".join(items)

    def definition(self, item: nodes.Node) -> str:
        """A definition list's item: its term (and classifiers) on a line, its definition below."""
        terms = [self.inline(child) for child in item.children if isinstance(child, (nodes.term, nodes.classifier))]
        definitions = [self.joined(child) for child in item.children if isinstance(child, nodes.definition)]
        return "\n".join(part for part in (" : ".join(terms), *definitions) if part)

    def field(self, item: nodes.Node) -> str:
        """A field (`:param x: …`) or a command-line option, as `name: text`."""
        if isinstance(item, nodes.option_list_item):
            options = ", ".join(_option(option) for option in item.findall(nodes.option))
            description = " ".join(self.joined(child, " ") for child in item.children if isinstance(child, nodes.description))
            return f"{options}: {description}" if description else options
        name = " ".join(self.inline(child) for child in item.children if isinstance(child, nodes.field_name))
        body = " ".join(self.joined(child, " ") for child in item.children if isinstance(child, nodes.field_body))
        return f"{name}: {body}" if body else name

    def table(self, node: nodes.Element) -> str:
        """A table as its rows, a line each with its cells between ` | `, under its title."""
        titles = [self.inline(child) for child in node.children if isinstance(child, nodes.title)]
        rows = [" | ".join(self.joined(entry, " ") for entry in row.children) for row in node.findall(nodes.row)]
        return "\n".join([*titles, *rows])

    def admonition(self, node: nodes.Element) -> list[str]:
        """`Note: text`; a generic admonition's own title is its label."""
        titles = [self.inline(child) for child in node.children if isinstance(child, nodes.title)]
        label = titles[0] if titles else node.tagname.capitalize()
        body = [block for child in node.children if not isinstance(child, nodes.title) for block in self.blocks(child)]
        return labelled(label, body, ": ")

    def directive(self, message: nodes.system_message) -> list[str]:
        """A directive docutils left as an error (unknown to it, or with an option it does not take), from its source:
        code kept as code, a directive about the build left out, any other read as its argument and content."""
        source = next((child.astext() for child in message.children if isinstance(child, nodes.literal_block)), "")
        first, _, rest = source.partition("\n")
        match = _DIRECTIVE.match(first)
        if match is None:  # a construct docutils could not read (a malformed table): kept as written, if an error
            return [fenced(source)] if source.strip() and message["level"] >= 3 else []
        name, argument = match.group(1).lower(), (match.group(2) or "").strip()
        if name in DROPPED or (name == "only" and not shown_in_html(argument)):
            return []
        block = textwrap.dedent(rest)
        if name in LABELS:  # `.. versionadded:: 2.0 text` or `.. seealso:: text`: the text is content
            kept = LABELS[name][1]
            words = argument.split(None, kept)
            argument, block = " ".join(words[:kept]), "\n".join([" ".join(words[kept:]), block])
        options, content = _options_and_content(block)
        shown = "\n".join(options[key] if key == "caption" else f"{key}: {options[key]}" for key in TEXT_OPTIONS if options.get(key))
        if name in CODE:
            return ["\n".join(filter(None, [shown, fenced(content, argument or CODE[name]) if content.strip() else ""]))]
        label = f"{LABELS[name][0]} {argument}".strip() if name in LABELS else "" if name in NO_ARGUMENT_TEXT else argument
        body = [shown, *self.fragment(content)]
        return labelled(label, body, ": " if name in LABELS else "\n")

    def fragment(self, content: str) -> list[str]:
        """A directive's content, parsed as reStructuredText of its own (as written, past MAX_RENDER_DEPTH of them)."""
        if not content.strip():
            return []
        if self.depth >= MAX_RENDER_DEPTH:
            return [content.strip()]
        document = _doctree(content, self.document.get("source", ""))
        reader = _Reader(document, self.depth + 1, self.substitutions)
        return [block for child in document.children for block in reader.fragment_blocks(child)]

    def fragment_blocks(self, node: nodes.Node) -> list[str]:
        """Blocks of a fragment, where a title is a line of text (a directive's content is no section of the page)."""
        if isinstance(node, nodes.section):
            return [self.title(node), *(block for child in node.children[1:] for block in self.fragment_blocks(child))]
        return self.blocks(node)


class _Substitutions:
    """A page's substitution definitions and their texts, which its references add up to `room` characters of (the
    page's length): a page of references to one long definition would grow by their product."""

    def __init__(self, room: int = 0):
        self.definitions: dict[str, nodes.Node] = {}
        self.texts: dict[str, str] = {}
        self.room = room

    def expand(self, name: str, render: Callable[[nodes.Node], str]) -> str | None:
        """The text of the definition of `name` (rendered once) while there is room for it, else None."""
        if name not in self.definitions:
            return None
        if name not in self.texts:
            self.texts[name] = render(self.definitions[name])
        text = self.texts[name]
        if len(text) > self.room:
            return None
        self.room -= len(text)
        return text


def shown_in_html(expression: str) -> bool:
    """Whether an HTML build shows the content of `.. only:: expression` (tags joined by and, or, not); an expression
    not read so is shown."""
    def value(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in HTML_TAGS
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not value(node.operand)
        if isinstance(node, ast.BoolOp):
            values = [value(item) for item in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        raise ValueError("not a tag expression")

    try:
        return value(ast.parse(expression.strip(), mode="eval").body)
    except (SyntaxError, ValueError):
        return True


def labelled(label: str, blocks: list[str], separator: str) -> list[str]:
    """`label` before the first block (on a line of its own before code); the label alone if there is no block."""
    blocks = [block for block in blocks if block.strip()]
    if not label:
        return blocks
    if not blocks:
        return [label]
    joint = separator.strip() + "\n" if blocks[0].startswith("`" * 3) else separator
    return [label + joint + blocks[0], *blocks[1:]]


def _without_page_fields(body: list[nodes.Node]) -> list[nodes.Node]:
    """A page's body less a field list that opens it (`:orphan:`, `:tocdepth: 2`): Sphinx reads it as metadata."""
    opening = next((node for node in body if not isinstance(node, _SKIPPED)), None)
    return [node for node in body if node is not opening] if isinstance(opening, nodes.field_list) else body


def _options_and_content(block: str) -> tuple[dict[str, str], str]:
    """A directive's options (the `:name: value` lines that open its block) and its content (the rest)."""
    lines = block.splitlines()
    options: dict[str, str] = {}
    index = 0
    while index < len(lines) and lines[index].strip():
        option = _OPTION.match(lines[index])
        if option is None and not (options and lines[index][:1].isspace()):  # a value that runs on is indented
            break
        if option is not None:
            options[option.group(1).lower()] = (option.group(2) or "").strip()
        index += 1
    return options, textwrap.dedent("\n".join(lines[index:]))


def _language(node: nodes.Element) -> str:
    if isinstance(node, nodes.doctest_block):
        return "pycon"
    if isinstance(node, nodes.math_block):
        return "math"
    return next((name for name in node.get("classes", []) if name != "code"), node.get("language", ""))


def _option(option: nodes.Node) -> str:
    """`--name=VALUE` or `-n VALUE` as written."""
    return "".join(child.get("delimiter", "") + child.astext() if isinstance(child, nodes.option_argument) else child.astext()
                   for child in option.children)
