"""Include stubs in documentation pages, replaced by the text they include.

Doc sites assemble pages from shared pieces, and indexed as written such a page
holds only the stub line. The forms understood: MkDocs markdown-include
`{!path!}`, pymdownx snippets `--8<-- "path"` (a line, or a block of paths
between two `--8<--` lines), FastAPI's code includes `{* path hl[3] ln[1:10] *}`
(`ln` picks lines), mkdocs-include-markdown `{% include-markdown "path" %}`
and Jinja's `{% include "path" %}`, Hugo's `{{< readfile file="path" >}}`, and
Docusaurus MDX imports (`import Part from './_part.mdx'` shown as `<Part />`); in reStructuredText,
`.. include::` and Sphinx's `.. literalinclude::` (resolve_rst_includes).
A markdown or text file is included as text; any other (`.py`, `.yaml`) as a
code block in its language, unless the stub already lies in one.

A stub is replaced when its file lies inside the root (the source's folder, a
git source's whole checkout): relative to the page, else to one of the page's
parent folders up to the root, which is how MkDocs and Hugo resolve paths
against their docs folder. Includes nest up to MAX_DEPTH. A stub naming a file
that is missing, outside the root or in its `.git`, a credential file or too
large stays as written and is reported.
"""

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import TypeVar

from ..safety.secrets import is_secret_file
from .markdown import code_lines, split_front_matter

MAX_DEPTH = 4
AnyPath = TypeVar("AnyPath", bound=PurePath)  # a file on disk, or a path in a git tree
# Included as text; a file of any other suffix is code, fenced in the language its suffix names.
INCLUDED_AS_TEXT = frozenset({"", ".md", ".markdown", ".mdx", ".txt"})
LANGUAGES = {".py": "python", ".yml": "yaml", ".js": "javascript", ".ts": "typescript", ".sh": "bash", ".rs": "rust",
             ".rb": "ruby", ".kt": "kotlin", ".h": "c", ".hpp": "cpp", ".cc": "cpp"}


class _Stub:
    """A stub's pattern and a text that every match of it holds: a page without that text is not scanned. Scanning
    line by line is what costs (0.065 s a pattern over 2,000 pages); looking for the text is a C substring search."""

    def __init__(self, holds: str, pattern: str, flags: int = 0):
        self.holds = holds
        self.pattern = re.compile(pattern, flags)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(text) if self.holds in text else iter(())

    def sub(self, replace: Callable[[re.Match[str]], str], text: str) -> str:
        return self.pattern.sub(replace, text) if self.holds in text else text


_MARKDOWN_INCLUDE = _Stub("{!", r"\{!\s*([^!\s{}]+?)\s*!\}")
_SNIPPET_LINE = _Stub("--8<--", r"^([ \t]*)--8<--[ \t]+(?:\"([^\"\n]+)\"|'([^'\n]+)'|([^\s\"';]+))[ \t]*$", re.MULTILINE)
_SNIPPET_BLOCK = _Stub("--8<--", r"^([ \t]*)--8<--[ \t]*\n((?:[ \t]*[^\s\"']*[ \t]*\n)+?)[ \t]*--8<--[ \t]*$", re.MULTILINE)
_JINJA_INCLUDE = _Stub("{%", r"^([ \t]*)\{%-?\s*include(?:-markdown)?\s+[\"']([^\"'\n]+)[\"'][^%\n]*-?%\}", re.MULTILINE)
_HUGO_READFILE = _Stub("readfile", r"^([ \t]*)\{\{[<%]\s*readfile\s+(?:file=)?\"([^\"\n]+)\"[^>%\n]*[>%]\}\}", re.MULTILINE)
_CODE_INCLUDE = _Stub("{*", r"^([ \t]*)\{\*[ \t]*([^\s*]+)((?:[ \t]+\w+\[[^\]\n]*\])*)[ \t]*\*\}[ \t]*$", re.MULTILINE)
_MDX_IMPORT = _Stub("import", r"^import\s+([A-Z]\w*)\s+from\s+[\"']([^\"'\n]+\.mdx?)[\"'];?[ \t]*\n?", re.MULTILINE)
_LINE_RANGES = re.compile(r"\bln\[([\d:,\s]*)\]")
_BACKTICK_RUN = re.compile(r"^[ \t]*(`{3,})", re.MULTILINE)


@dataclass
class Expansion:
    """The page with its includes in place, the files they came from, and the stubs left as written (with why)."""

    text: str
    unresolved: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    included: int = 0
    included_bytes: int = 0


def resolve_includes(text: str, page: Path, root: Path, max_bytes: int) -> Expansion:
    """`text` (the page at `page`, under `root`) with every include stub that can be resolved replaced by its file's text.

    Files larger than `max_bytes` are not included, and the includes add at most `max_bytes` bytes (UTF-8) to the page:
    every copy is counted, at every level, so a part used many times cannot multiply past it.
    """
    expansion = Expansion(text)
    page = page.resolve()
    expansion.text = _expand(text, page, root.resolve(), max_bytes, expansion, (page,), 0)
    return expansion


def _expand(text: str, page: Path, root: Path, max_bytes: int, expansion: Expansion, stack: tuple[Path, ...], width: int) -> str:
    """`text` with its stubs replaced; `width` is the indent the enclosing includes will add to each of its lines."""
    def fits(target: str, body: str, indent: str = "") -> bool:
        return _fits(expansion, target, body, width + len(indent), max_bytes)

    def include(target: str, indent: str = "", in_code: bool = True, options: str = "") -> str | None:
        """The included text (indented like the stub), or None to keep the stub. A code file is fenced unless the stub
        lies `in_code`; `options` are a code include's (`ln[1:10]`)."""
        read = _read(target, page, root, max_bytes, stack, expansion)
        if read is None:
            return None
        found, whole = read
        as_code = found.suffix.lower() not in INCLUDED_AS_TEXT
        body = (_lines_of_code_include(whole, options) if as_code else split_front_matter(whole)[1]).strip("\n")
        if as_code and not in_code:
            body = _fenced(body, found.suffix.lower())
        if not fits(target, body, indent):
            return None
        nested = None if as_code else functools.partial(_expand, page=found, root=root, max_bytes=max_bytes,
                                                        expansion=expansion, stack=(*stack, found), width=width + len(indent))
        return _placed(body, found, indent, expansion, nested)

    def one(match: re.Match, indent_group: int | None, target_group: int, options_group: int | None = None) -> str:
        target = next(group for group in match.groups()[target_group - 1 :] if group)
        indent = match.group(indent_group) if indent_group else ""
        options = match.group(options_group) if options_group else ""
        included = include(target.strip(), indent, _in_code(match), options)
        return match.group(0) if included is None else included

    def snippet_block(match: re.Match) -> str:
        targets = [line.strip() for line in match.group(2).splitlines() if line.strip() and not line.strip().startswith(";")]
        parts = [part for target in targets if (part := include(target, match.group(1), _in_code(match))) is not None]
        return "\n".join(parts) if targets and len(parts) == len(targets) else match.group(0)

    text = _CODE_INCLUDE.sub(lambda m: one(m, 1, 2, 3), text)
    text = _SNIPPET_BLOCK.sub(snippet_block, text)
    text = _SNIPPET_LINE.sub(lambda m: one(m, 1, 2), text)
    text = _MARKDOWN_INCLUDE.sub(lambda m: one(m, None, 1), text)
    text = _JINJA_INCLUDE.sub(lambda m: one(m, 1, 2), text)
    text = _HUGO_READFILE.sub(lambda m: one(m, 1, 2), text)
    return _mdx_imports(text, include, fits)


def _in_code(match: re.Match) -> bool:
    """Whether a stub lies in a code block of the text it was found in (a snippet inside a fence is code already)."""
    return match.string.count("\n", 0, match.start()) in _code_lines(match.string)


_code_lines = functools.lru_cache(maxsize=2)(code_lines)  # one page's passes each ask; its text is hashed once


def _lines_of_code_include(text: str, options: str) -> str:
    """The lines `ln[1:10,15:20]` picks (from 1, both ends included; `ln[5:]` to the end), else the whole text."""
    ranges = _LINE_RANGES.search(options)
    if not ranges:
        return text
    lines = text.splitlines()
    picked: list[str] = []
    for part in filter(None, (part.strip() for part in ranges.group(1).split(","))):
        first, _, last = part.partition(":")
        start = int(first) if first.isdigit() else 1
        end = int(last) if last.isdigit() else (len(lines) if ":" in part else start)
        picked.extend(lines[max(start, 1) - 1 : end])
    return "\n".join(picked)


def _fenced(code: str, suffix: str) -> str:
    """`code` as a fenced block in the language `suffix` names, its fence longer than any backtick run inside."""
    fence = "`" * max([3, *(len(run) + 1 for run in _BACKTICK_RUN.findall(code))])
    return f"{fence}{LANGUAGES.get(suffix, suffix.lstrip('.'))}\n{code}\n{fence}"


def _mdx_imports(text: str, include: Callable[[str], str | None], fits: Callable[[str, str], bool]) -> str:
    """Docusaurus: each `<Part />` becomes the part's text while the budget lasts, and `import Part from './_part.mdx'` goes
    once no usage is left."""
    for match in list(_MDX_IMPORT.finditer(text)):
        name, target = match.groups()
        usage = re.compile(rf"<{name}(?:\s[^<>]*)?/>")
        usages = len(usage.findall(text))
        included = include(target) if usages else None
        if included is None:
            continue
        placed = 1
        while placed < usages and fits(target, included):
            placed += 1
        if placed == usages:
            text = text.replace(match.group(0), "", 1)

        def part_text(_usage: re.Match, included: str = included) -> str:
            return included

        text = usage.sub(part_text, text, count=placed)
    return text


def _placed(body: str, found: Path, indent: str, expansion: Expansion, nested: Callable[[str], str] | None) -> str:
    """An included body counted, its file remembered (a change to it changes the page), its own stubs expanded by
    `nested` (None: a literal include), and indented like its stub."""
    expansion.included += 1
    if found not in expansion.files:
        expansion.files.append(found)
    if nested is not None:
        body = nested(body)
    return "\n".join(indent + line if line else line for line in body.splitlines())


def _fits(expansion: Expansion, target: str, body: str, indent: int, max_bytes: int) -> bool:
    """Counts what one more copy of `body` (its lines indented by `indent`) adds to the page, or reports the stub if
    the budget cannot take it."""
    size = len(body.encode()) + indent * sum(1 for line in body.splitlines() if line)
    if expansion.included_bytes + size > max_bytes:
        expansion.unresolved.append(f"{target} (include budget of {max_bytes} bytes used up)")
        return False
    expansion.included_bytes += size
    return True


def _read(target: str, page: Path, root: Path, max_bytes: int, stack: tuple[Path, ...], expansion: Expansion) -> tuple[Path, str] | None:
    """(the file a stub names, its text), or None with the stub reported."""
    found, problem = _find(target, page, root, max_bytes, stack)
    if found is not None:
        try:
            return found, found.read_text(encoding="utf-8-sig", errors="replace")
        except OSError as exc:
            problem = f"unreadable: {exc.strerror}"
    expansion.unresolved.append(f"{target} ({problem})")
    return None


def _find(target: str, page: Path, root: Path, max_bytes: int, stack: tuple[Path, ...]) -> tuple[Path | None, str | None]:
    """The file a stub names, searched from the page's folder up to the root; or the reason there is none."""
    name = _file_name(target)
    if "://" in name:
        return None, "a URL"
    if is_secret_file(PurePosixPath(name).name):
        return None, "a credential file"
    if len(stack) > MAX_DEPTH:
        return None, f"includes nested deeper than {MAX_DEPTH}"
    for candidate in candidates(name, page, root):
        try:  # a name too long for the file system raises from is_file() too
            resolved = candidate.resolve()
            if not (resolved.is_file() and resolved.is_relative_to(root)):
                continue
            size = resolved.stat().st_size
        except (OSError, RuntimeError):
            continue
        if ".git" in resolved.relative_to(root).parts:
            return None, "inside .git"
        if resolved in stack:
            return None, "includes itself"
        if size > max_bytes:
            return None, "too large (max_file_bytes)"
        return resolved, None
    return None, "not found inside the source"


def _file_name(target: str) -> str:
    """The file a stub's target names: less a snippet's `:lines` suffix."""
    return target.split(":", 1)[0] if ":" in target and not target.startswith(("http:", "https:")) else target


def candidates(name: str, page: AnyPath, root: AnyPath) -> list[AnyPath]:
    """Where a stub's file may lie, in order: beside the page, then under each of its folders up to the root."""
    relative = name.removeprefix("@site/").lstrip("/")
    folder = page.parent
    found = [page.parent / name] if not name.startswith("/") else []
    while True:
        found.append(folder / relative)
        if folder == root or root not in folder.parents:
            return found
        folder = folder.parent


def stub_targets(text: str) -> list[str]:
    """The files a page's stubs name (one level: not those its included files name), for a sparse git checkout to
    fetch before the page is read."""
    found = [next(group for group in match.groups()[1:] if group) for pattern in (_CODE_INCLUDE, _SNIPPET_LINE, _JINJA_INCLUDE,
             _HUGO_READFILE) for match in pattern.finditer(text)]
    found += [line.strip() for match in _SNIPPET_BLOCK.finditer(text) for line in match.group(2).splitlines() if line.strip()]
    found += [match.group(1) for match in _MARKDOWN_INCLUDE.finditer(text)] + [match.group(2) for match in _MDX_IMPORT.finditer(text)]
    return [_file_name(target.strip()) for target in found if target]


def expand_page(kind: str, text: str, page: Path, root: Path, max_bytes: int) -> tuple[str, list[str], list[Path]]:
    """A loader's step: a markdown or reStructuredText page with its includes in place, a warning naming the stubs kept
    as written, and the files included (a change to one changes the page)."""
    resolve = {"markdown": resolve_includes, "rst": resolve_rst_includes}.get(kind)
    if resolve is None:
        return text, [], []
    expansion = resolve(text, page, root, max_bytes)
    if not expansion.unresolved:
        return expansion.text, [], expansion.files
    shown = ", ".join(expansion.unresolved[:5]) + (f" and {len(expansion.unresolved) - 5} more" if len(expansion.unresolved) > 5 else "")
    return expansion.text, [f"include stub(s) kept as written: {shown}"], expansion.files


# reStructuredText: `.. include:: path` (`:literal:` or `:code: lang` for code) and Sphinx's `.. literalinclude:: path`
# (`:language: lang`), each with the option lines under it. A path starting with `/` is from the source's root, as
# Sphinx reads it from its source folder; `<isonum.txt>` (docutils' own files) is left to the parser, which drops it.
_RST_INCLUDE = re.compile(r"^([ \t]*)\.\.[ \t]+(include|literalinclude)::[ \t]*([^<\s](?:[^\n]*\S)?)[^\S\n]*"
                          r"((?:\n\1[ \t]+:[\w-]+:[^\n]*)*)$", re.MULTILINE)  # the path ends at its last non-space, found once
_RST_OPTION = re.compile(r":([\w-]+):[ \t]*([^\n]*)")
_LINE_RANGE = re.compile(r"(?P<first>\d*)(-?)(?P<last>\d*)")  # 5, 5-10, 20-, -3


def resolve_rst_includes(text: str, page: Path, root: Path, max_bytes: int) -> Expansion:
    """resolve_includes for reStructuredText: an included page in place of its directive (its own includes resolved
    from its folder), an included file of code as a code block of its language; the same root, budget and refusals."""
    expansion = Expansion(text)
    page = page.resolve()
    expansion.text = _expand_rst(text, page, root.resolve(), max_bytes, expansion, (page,), 0)
    return expansion


def _expand_rst(text: str, page: Path, root: Path, max_bytes: int, expansion: Expansion, stack: tuple[Path, ...], width: int) -> str:
    def one(match: re.Match) -> str:
        indent, directive, target = match.group(1), match.group(2), match.group(3)
        options = dict(_RST_OPTION.findall(match.group(4)))
        read = _read(target, page, root, max_bytes, stack, expansion)
        if read is None:
            return match.group(0)
        found, body = read[0], _lines_of_literalinclude(read[1], options)
        literal = directive == "literalinclude" or "literal" in options or "code" in options
        if literal:
            language = options.get("language") or options.get("code") or found.suffix.lstrip(".")
            body = f".. code-block:: {language}\n\n" + "\n".join("   " + line if line.strip() else "" for line in body.splitlines())
        if not _fits(expansion, target, body, width + len(indent), max_bytes):
            return match.group(0)
        nested = None if literal else functools.partial(_expand_rst, page=found, root=root, max_bytes=max_bytes,
                                                        expansion=expansion, stack=(*stack, found), width=width + len(indent))
        return _placed(body, found, indent, expansion, nested)

    return _RST_INCLUDE.sub(one, text)


def _lines_of_literalinclude(text: str, options: dict[str, str]) -> str:
    """The lines of an included file that its options choose, as Sphinx's literalinclude reads them: `:lines: 1,3,5-10,20-`,
    then from the first line holding `:start-after:` (or `:start-at:`) to the next holding `:end-before:` (`:end-at:`).
    An option that does not read so, or a marker not found, chooses all the lines."""
    lines = text.splitlines()
    if "lines" in options:
        chosen: list[str] = []
        for part in options["lines"].split(","):
            numbers = _LINE_RANGE.fullmatch(part.strip())
            if numbers is None or not (numbers["first"] or numbers["last"]):
                return text
            first, dash, last = numbers.groups()
            chosen.extend(lines[int(first or 1) - 1 : int(last) if last else len(lines) if dash else int(first)])
        lines = chosen
    for key, skip in (("start-after", 1), ("start-at", 0)):
        start = next((number for number, line in enumerate(lines) if options.get(key) and options[key] in line), None)
        lines = lines if start is None else lines[start + skip :]
    for key, keep in (("end-before", 0), ("end-at", 1)):
        end = next((number for number, line in enumerate(lines) if options.get(key) and options[key] in line), None)
        lines = lines if end is None else lines[: end + keep]
    return "\n".join(lines)
