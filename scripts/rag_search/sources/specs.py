"""Doc source specs: typed values, validated once, when the registry is loaded or a source is added.

Everything a source carries may reach a git command line or a URL, so the
checks are strict: ids are slugs (they name folders), a git `version` follows
git's own ref rules and can never start with "-", URLs use known schemes, and
no field may hold control characters.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

from ..core.config import expand
from ..core.errors import ConfigError

ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
GIT_SCHEMES = {"https", "ssh", "git", "file"}
SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:[^/].*")  # git@github.com:owner/repo.git
# A source without globs: Markdown pages (MDX: Docusaurus) and reStructuredText ones (Sphinx).
DEFAULT_GLOBS = ("**/*.md", "**/*.mdx", "**/*.markdown", "**/*.rst", "**/*.rest")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")

# Per type: required fields and optional ones. Every value is a string but those in LIST_FIELDS, lists of strings.
# `glob` (one string) is what entries written before `globs` hold; it still loads.
FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "git": {"required": ("url",), "optional": ("path", "globs", "glob", "exclude", "version")},
    "web": {"required": ("base_url",), "optional": ("pages", "sitemap", "exclude")},
    "local": {"required": ("path",), "optional": ("globs", "glob", "exclude")},
}
LIST_FIELDS = ("pages", "globs", "exclude")
STATUS_FIELDS = ("last_indexed", "last_commit", "last_attempt", "last_error", "last_status")  # written by index runs


def path_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a path (relative, "/"-separated) matches one of `patterns`, in gitignore syntax."""
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns).match_file


@dataclass(frozen=True)
class Selection:
    """The files of a git or local source that are indexed: those that match a glob and no exclude pattern
    (gitignore syntax, relative to the source's folder). Narrowing it removes the files it leaves out on purpose,
    which the no-shrink rule does not take for an outage (reconcile.py)."""

    globs: tuple[str, ...] = DEFAULT_GLOBS
    exclude: tuple[str, ...] = ()

    def selects(self, path: str) -> bool:
        return self._included(path) and not self._excluded(path)

    def described(self) -> str:
        """`**/*.md, **/*.rst` (and `but not changelog*`), for messages."""
        return ", ".join(self.globs) + (f" but not {', '.join(self.exclude)}" if self.exclude else "")

    @cached_property
    def _included(self) -> Callable[[str], bool]:
        return path_matcher(self.globs)

    @cached_property
    def _excluded(self) -> Callable[[str], bool]:
        return path_matcher(self.exclude)


@dataclass(frozen=True)
class GitSource:
    id: str
    name: str
    url: str
    path: str = ""  # folder in the repository, without leading or trailing "/"
    selection: Selection = Selection()  # relative to path
    version: str | None = None  # tag, branch or commit; None: the default branch
    type = "git"


@dataclass(frozen=True)
class WebSource:
    id: str
    name: str
    base_url: str
    pages: tuple[str, ...] = ()  # relative to base_url
    sitemap: str | None = None  # relative to base_url or absolute
    exclude: tuple[str, ...] = ()  # gitignore patterns over a page's URL path below base_url's folder
    type = "web"


@dataclass(frozen=True)
class LocalSource:
    id: str
    name: str
    path: Path
    selection: Selection = Selection()
    type = "local"


SourceSpec = GitSource | WebSource | LocalSource


def spec_from_entry(entry, where: str) -> SourceSpec:
    """The typed spec of one registry entry; ConfigError naming `where` and the field otherwise."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} is not an object")
    source_id = entry.get("id")
    where = f'{where} ("{source_id if isinstance(source_id, str) else "?"}")'
    if not isinstance(source_id, str) or not source_id:
        raise ConfigError(f'{where}: "id" is missing')
    if not ID_PATTERN.fullmatch(source_id):
        raise ConfigError(f'{where}: "id" must be a slug of a-z, 0-9, ".", "_" and "-", starting with a letter or digit')
    if not isinstance(entry.get("name"), str) or not entry["name"].strip():
        raise ConfigError(f'{where}: "name" is missing')
    kind = entry.get("type")
    if kind not in FIELDS:
        raise ConfigError(f'{where}: "type" must be one of {", ".join(sorted(FIELDS))}, not {kind!r}')
    fields = _checked_fields(entry, kind, where)
    try:
        if kind == "git":
            return GitSource(source_id, fields["name"], _git_url(fields["url"]), _repo_path(fields.get("path", "")),
                             _selection(fields), _git_ref(fields.get("version")))
        if kind == "web":
            return WebSource(source_id, fields["name"], _web_url(fields["base_url"]), tuple(fields.get("pages", ())),
                             fields.get("sitemap"), _patterns(fields, "exclude"))
        return LocalSource(source_id, fields["name"], expand(fields["path"]), _selection(fields))
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _checked_fields(entry: dict, kind: str, where: str) -> dict:
    """The entry's known fields with their types checked: strings without control characters, pages a list."""
    for field in FIELDS[kind]["required"]:
        if not isinstance(entry.get(field), str) or not entry[field].strip():
            raise ConfigError(f'{where}: "{field}" is missing (required for {kind} sources)')
    for field in ("name", *FIELDS[kind]["required"], *FIELDS[kind]["optional"], *STATUS_FIELDS):
        value = entry.get(field)
        if value is None:
            continue
        listed = field in LIST_FIELDS
        if listed and not isinstance(value, list):
            raise ConfigError(f'{where}: "{field}" must be a list of strings')
        for item in value if listed else [value]:
            if not isinstance(item, str):
                raise ConfigError(f'{where}: "{field}" must be {"a list of strings" if listed else "a string"}')
            if _CONTROL.search(item):
                raise ConfigError(f'{where}: "{field}" must not contain control characters')
    if kind == "web" and not entry.get("pages") and not entry.get("sitemap"):
        raise ConfigError(f'{where}: a web source needs "pages" (paths relative to base_url) or a "sitemap"')
    return {key: entry[key] for key in ("name", *FIELDS[kind]["required"], *FIELDS[kind]["optional"]) if entry.get(key) is not None}


def _git_url(url: str) -> str:
    if url.startswith("-"):
        raise ValueError('"url" must not start with "-"')
    scheme = urlsplit(url).scheme
    if scheme not in GIT_SCHEMES and not SCP_LIKE.match(url):
        raise ValueError(f'"url" must use https, ssh, git or file (or user@host:path), not {scheme or url!r}')
    return url


def _repo_path(path: str) -> str:
    """`docs/`, `./docs` and `/docs` all mean the folder docs at the top of the repository."""
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ValueError(f'"path" must stay inside the repository: {path!r}')
    return "/".join(parts)


def _selection(fields: dict) -> Selection:
    """The entry's globs (or the one `glob` of an older entry; else DEFAULT_GLOBS) and exclude patterns."""
    if "globs" in fields and "glob" in fields:
        raise ValueError('give "globs" (a list) and not also "glob"')
    older = {"globs": [fields["glob"]]} if "glob" in fields else {}
    return Selection(_patterns({**fields, **older}, "globs") or DEFAULT_GLOBS, _patterns(fields, "exclude"))


def _patterns(fields: dict, name: str) -> tuple[str, ...]:
    patterns = tuple(fields.get(name, ()))
    if name in fields and (not patterns or not all(pattern.strip() for pattern in patterns)):
        raise ValueError(f'"{name}" must not be empty nor hold an empty pattern')
    return patterns


def _git_ref(version: str | None) -> str | None:
    """A tag, branch or commit by git's ref rules (git check-ref-format), never an option."""
    if version is None:
        return None
    problem = ref_problem(version)
    if problem:
        raise ValueError(f'"version" {version!r} is not a git tag, branch or commit: {problem}')
    return version


def ref_problem(ref: str) -> str | None:
    """Why `ref` is not a valid git ref name, or None (the rules of git check-ref-format, plus no leading "-")."""
    if not ref:
        return "it is empty"
    if ref.startswith("-"):
        return 'it starts with "-"'
    if _REF_FORBIDDEN.search(ref):
        return "it holds a space, a control character or one of ~ ^ : ? * [ \\"
    if ".." in ref or "@{" in ref or ref == "@":
        return 'it holds "..", "@{" or is "@"'
    if ref.startswith("/") or ref.endswith(("/", ".")) or "//" in ref:
        return 'it starts or ends with "/", ends with "." or holds "//"'
    if any(part.startswith(".") or part.endswith(".lock") for part in ref.split("/")):
        return 'a part starts with "." or ends with ".lock"'
    return None


def _web_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError('"base_url" must be an http or https URL')
    return url
