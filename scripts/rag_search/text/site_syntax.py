"""Site generators' syntax taken out of a markdown page, their text kept, before it is cut into sections.

Read as written, a page of a MkDocs, Docusaurus or Hugo site carries syntax no reader
searches by, in its headings (`## Lifespan { #lifespan }`) and around its text. What
goes, and what stays:

- MkDocs attr_list anchors on headings: the anchor leaves the heading (heading_anchor);
- admonitions, Docusaurus `:::note Title` … `:::` and MkDocs `!!! note "Title"` /
  `??? tip` (body indented): the markers go, the title stays as a line, the body is
  dedented (an indented body would read as code);
- MDX: `import … from '…'` and `export const …` blocks go; lines of nothing but JSX
  component tags (`<Tabs>`, `<TabItem value="a" label="Linux">`) go, their `label` or
  `title` kept as a line; `<Note>text</Note>` keeps its text;
- Hugo shortcodes: `{{< highlight go >}}` … `{{< /highlight >}}` becomes a code fence,
  `{{< ref "x" >}}` / `relref` its target, any other its title, caption or label and
  its quoted words (`{{< command-output "You should see:" >}}`), else nothing.

Lines inside code fences are left as they are (but for the dedent of the admonition
holding them).
"""

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_ATTRIBUTE = r"(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))"  # `#id`, `.class`, `key=value`
_HEADING_ATTRIBUTES = re.compile(rf"\{{:?[ \t]*({_ATTRIBUTE}(?:[ \t]+{_ATTRIBUTE})*)[ \t]*\}}[ \t]*")
_ANCHOR = re.compile(r"(?:^|\s)#([\w:.-]+)")
_MKDOCS_ADMONITION = re.compile(r"^([ \t]*)(?:!!!|\?\?\?\+?)[ \t]+[\w-]+(?:[ \t]+[\w-]+)*[ \t]*(?:\"([^\"]*)\")?[ \t]*$")
_DOCUSAURUS_OPEN = re.compile(r"^[ \t]*(:{3,})[ \t]*([A-Za-z][\w-]*)[ \t]*(?:\[([^\]\n]*)\]|[ \t]+([^{\s][^\n]*?))?[ \t]*$")
_DOCUSAURUS_CLOSE = re.compile(r"^[ \t]*(:{3,})[ \t]*$")
_ESM = re.compile(r"^(?:import[ \t]+(?:[\w*{][^\n]*?[ \t]+from[ \t]*)?[\"']|import[ \t]*\{|"
                  r"export[ \t]+(?:const|let|var|function|default|class|async)\b|export[ \t]*\{)")
_JSX_TAG = r"</?[A-Z][\w.]*(?:\s[^<>]*?)?/?>"
_JSX_LINE = re.compile(rf"^[ \t]*(?:{_JSX_TAG}[ \t]*)+$")
_JSX_PAIR = re.compile(r"<([A-Z][\w.]*)(?:\s[^<>]*?)?>([^<>\n]*)</\1>")
_JSX_LABEL = re.compile(r"\b(?:label|title)=(?:\"([^\"]*)\"|'([^']*)'|\{\"([^\"]*)\"\})")
_SHORTCODE = re.compile(r"\{\{([<%])[ \t]*(/?)[ \t]*([\w-]+)((?:[^{}\n]|\{[^{}\n]*\})*?)[ \t]*[>%]\}\}")
_HIGHLIGHT_OPEN = re.compile(r"^[ \t]*\{\{[<%][ \t]*highlight[ \t]+([\w+#.-]*)[^}\n]*[>%]\}\}[ \t]*$")
_HIGHLIGHT_CLOSE = re.compile(r"^[ \t]*\{\{[<%][ \t]*/[ \t]*highlight[ \t]*[>%]\}\}[ \t]*$")
_SHORTCODE_TEXT = re.compile(r"\b(?:title|caption|label)=\"([^\"]*)\"|(?<![=\w])\"([^\"]*\s[^\"]*)\"")
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'|(\S+)")


def heading_anchor(heading: str) -> tuple[str, str | None]:
    """A heading less its attr_list (`Lifespan { #lifespan }`, `Usage {#usage .new}`), and the anchor it named."""
    brace = heading.rfind("{")  # the last brace only: a search from each one would take quadratic time
    match = _HEADING_ATTRIBUTES.fullmatch(heading, brace) if brace > 0 else None
    if not match or not heading[:brace].strip():
        return heading, None
    anchor = _ANCHOR.search(" " + match.group(1))
    return heading[:brace].rstrip(), anchor.group(1) if anchor else None


@dataclass
class _Admonition:
    """An open admonition: MkDocs' ends at a line indented less than its body; Docusaurus' at its closing colons."""

    indent: int  # the opener's; a MkDocs body is indented 4 more
    colons: int  # Docusaurus: the opener's colons; 0 for MkDocs
    dedent: int | None = None  # what its body lines lose (set by the first of them)


def plain(body: str) -> str:
    """The page with the site syntax above taken out, line by line; never inside code fences."""
    out: list[str] = []
    open_admonitions: list[_Admonition] = []
    fence: str | None = None  # the open fence's marker; "highlight" inside a Hugo highlight shortcode
    in_esm = False
    for raw in body.split("\n"):
        line = _dedented(raw, open_admonitions) if open_admonitions else raw
        start = line.lstrip()[:1]
        if not (start or fence or in_esm):
            out.append(line)
        elif fence:
            out.append(_fence_line(line, fence))
            fence = None if _closes(line, fence) else fence
        elif in_esm or (start in "ie" and not open_admonitions and _ESM.match(line)):
            in_esm = bool(start)
        elif start in "`~" and (opening := _FENCE.match(line)):
            fence = opening.group(1)
            out.append(line)
        elif start == "{" and (highlight := _HIGHLIGHT_OPEN.match(line)):
            fence = "highlight"
            out.append("```" + highlight.group(1))
        elif start in "!?:<" or "{{" in line or "<" in line:
            out.extend(_prose_line(line, raw, open_admonitions))
        else:
            out.append(line)
    return "\n".join(out)


def _dedented(line: str, open_admonitions: list[_Admonition]) -> str:
    """The line less the indent of the admonitions around it; closes MkDocs admonitions it is not indented for."""
    indent = len(line) - len(line.lstrip(" \t"))
    while line.strip() and open_admonitions and open_admonitions[-1].colons == 0 and indent < open_admonitions[-1].indent + 4:
        open_admonitions.pop()
    for admonition in open_admonitions:
        if admonition.dedent is None and line.strip():
            admonition.dedent = (4 if admonition.colons == 0 else min(4, indent)) if indent >= 4 else 0
    strip = sum(admonition.dedent or 0 for admonition in open_admonitions)
    return line[min(strip, indent) :]


def _fence_line(line: str, fence: str) -> str:
    return "```" if fence == "highlight" and _HIGHLIGHT_CLOSE.match(line) else line


def _closes(line: str, fence: str) -> bool:
    if fence == "highlight":
        return bool(_HIGHLIGHT_CLOSE.match(line))
    stripped = line.strip()
    return stripped.startswith(fence) and not stripped.strip(fence[0])


def _prose_line(line: str, raw: str, open_admonitions: list[_Admonition]) -> list[str]:
    """What a line outside code becomes: an admonition's title, nothing, or its text less the syntax around it."""
    indent = len(raw) - len(raw.lstrip(" \t"))
    if mkdocs := _MKDOCS_ADMONITION.match(line):
        open_admonitions.append(_Admonition(indent, 0))
        return [mkdocs.group(2), ""] if mkdocs.group(2) else [""]
    if docusaurus := _DOCUSAURUS_OPEN.match(line):
        open_admonitions.append(_Admonition(indent, len(docusaurus.group(1))))
        title = docusaurus.group(3) or docusaurus.group(4)
        return [title, ""] if title else [""]
    closing = _DOCUSAURUS_CLOSE.match(line)
    if closing and any(admonition.colons for admonition in open_admonitions):
        while open_admonitions and open_admonitions.pop().colons == 0:
            pass
        return [""]
    if _JSX_LINE.match(line):
        labels = [next(group for group in label.groups() if group is not None) for label in _JSX_LABEL.finditer(line)]
        return [" ".join(labels)]
    return [_SHORTCODE.sub(_shortcode_text, _JSX_PAIR.sub(r"\2", line)) if "<" in line or "{{" in line else line]


def _shortcode_text(match: re.Match) -> str:
    """A Hugo shortcode's text: a ref's target, else its title, caption, label and quoted words."""
    closing, name, arguments = match.group(2), match.group(3), match.group(4)
    if closing:
        return ""
    if name in ("ref", "relref"):
        target = _QUOTED.search(arguments)
        return next((group for group in target.groups() if group is not None), "") if target else ""
    return " ".join(text for found in _SHORTCODE_TEXT.finditer(arguments) for text in found.groups() if text)
