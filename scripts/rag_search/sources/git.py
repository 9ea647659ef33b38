"""Git doc sources: a cached shallow, sparse clone per source, listed by blob id.

The clone lives in <data dir>/sources/<id>/repo and holds only what is needed:
one commit deep, blobs fetched lazily, checked out sparsely to `path`. A refresh
fetches `version` (tag, branch or commit; the default branch when absent) and
lists the files of that commit with their blob ids: a file whose blob is the one
indexed is unchanged and not read; only new blobs are read and embedded.

User data never becomes an option: the version is a checked ref name
(specs.py), and every command that carries a URL, ref or path ends options
first (--end-of-options, or -- before paths). Git never prompts: a remote that
wants credentials fails at once. Index runs hold the docs write lock, so no
other git process of ours can be in a clone: lock files found there were left
by a killed run and are removed.
"""

import functools
import logging
import re
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from .. import dates
from ..errors import SourceFailed
from ..indexer import SourceDocument, content_hash
from ..parsing import kind_of
from ..reconcile import Listed, Listing, Skip
from ..secrets import is_secret_file, warn_secret_files
from ..specs import GitSource
from .files import SkipFile, read_text

log = logging.getLogger("rag_search")

FETCH_TIMEOUT_SECONDS = 900
NO_PROMPT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # never ask on a terminal
    "GIT_ASKPASS": "true",  # an askpass that answers nothing: credentials fail fast
    "SSH_ASKPASS": "true",
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ConnectTimeout=30",
    "GCM_INTERACTIVE": "never",
}
# Abort transfers that stall rather than hang the daily run; never run a remote helper of the `ext` kind.
GIT_OPTIONS = ["-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=60", "-c", "advice.detachedHead=false",
               "-c", "protocol.ext.allow=never"]
FORGE_BLOB_URLS = {
    "github.com": "https://github.com/{project}/blob/{commit}/{path}",
    "gitlab.com": "https://gitlab.com/{project}/-/blob/{commit}/{path}",
    "codeberg.org": "https://codeberg.org/{project}/src/commit/{commit}/{path}",
    "bitbucket.org": "https://bitbucket.org/{project}/src/{commit}/{path}",
}
_SPARSE_SPECIAL = re.compile(r"([\\*?\[!#])")


def git_listing(spec: GitSource, cache_dir: Path, max_bytes: int, state: dict | None) -> Listing:
    """Fetch the source's version and list the files to index, identified by blob id.

    Blobs over `max_bytes` are never downloaded (a blob:limit filter) nor checked out
    (left out of the sparse checkout); they are reported as skipped.
    """
    repo = _prepare_clone(cache_dir / "repo", spec)
    commit = _fetch(repo, spec.version, max_bytes)
    tree, secret_files = _tree_files(repo, commit, spec.path, spec.glob)
    oversized = _oversized(repo, commit, tree)
    _check_out(repo, commit, spec.path, oversized)
    warn_secret_files(spec.id, secret_files)
    skipped = [{"file": f"{spec.id}/{path}", "key": f"{spec.id}:{path}",
                "reason": f"larger than the {max_bytes // 1024} KiB limit (max_file_bytes): never downloaded"} for path in oversized]
    for path in oversized:
        del tree[path]
    context = {
        "commit": commit,
        "doc_version": spec.version or _default_branch(repo) or "default branch",
        "date": _commit_date(repo, commit),
        "worktree": Path(repo.working_dir),
    }
    documents = [Listed(f"{spec.id}:{path}", f"{spec.id}/{path}", blob, functools.partial(_load, spec, path, blob, context, max_bytes))
                 for path, blob in tree.items()]
    details = {"files": len(tree), "commit": commit, "previous_commit": (state or {}).get("commit"),
               "doc_version": context["doc_version"], "secret_files": len(secret_files)}
    return Listing(documents, skipped=skipped, state={"commit": commit}, details=details)


def _load(spec: GitSource, path: str, blob: str, context: dict, max_bytes: int, previous) -> SourceDocument:
    try:
        text = read_text(context["worktree"] / path, max_bytes)
    except SkipFile as exc:
        raise Skip(str(exc)) from None
    return SourceDocument(
        key=f"{spec.id}:{path}",
        source_id=spec.id,
        file=f"{spec.id}/{path}",
        kind=kind_of(path),
        text=text,
        content_hash=content_hash(text.encode("utf-8")),
        identity=blob,
        metadata={
            "repo_path": path,
            "commit": context["commit"],
            "doc_version": context["doc_version"],
            "url": browse_url(spec.url, context["commit"], path),
            "path": str(context["worktree"] / path),
        },
        fallback_date=context["date"],
        documentation=True,
    )


def browse_url(remote: str, commit: str, path: str) -> str | None:
    """A web link to the file at this commit on a known forge (GitHub, GitLab, Codeberg, Bitbucket)."""
    match = re.match(r"^[\w.-]+@([\w.-]+):(.+)$", remote)
    if match:
        host, project = match.group(1), match.group(2)
    else:
        parts = urlsplit(remote)
        if parts.scheme not in ("https", "http", "ssh", "git"):
            return None
        host, project = (parts.hostname or "").lower(), parts.path.strip("/")
    project = project.removesuffix(".git").strip("/")
    template = FORGE_BLOB_URLS.get(host)
    if not template or not project:
        return None
    return template.format(project=project, commit=commit, path=path)


def _prepare_clone(folder: Path, spec: GitSource):
    """An initialised repository with `origin` at the source's URL, checking out only its path."""
    import git

    try:
        if (folder / ".git").is_dir():
            _remove_stale_locks(folder / ".git")
            repo = git.Repo(folder)
        else:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            repo = git.Repo.init(folder)
        repo.git.update_environment(**NO_PROMPT_ENV)
        if "origin" not in [remote.name for remote in repo.remotes]:
            repo.git.remote("add", "--end-of-options", "origin", spec.url)
        elif repo.remotes.origin.url != spec.url:
            repo.git.remote("set-url", "--end-of-options", "origin", spec.url)
    except (git.GitError, OSError) as exc:
        raise SourceFailed(f"cannot prepare the clone in {folder}: {_git_message(exc)}") from None
    return repo


def _remove_stale_locks(git_dir: Path) -> None:
    """Lock files left in the clone by a killed run (index.lock, shallow.lock, refs…): nobody else can hold them."""
    stale = sorted(path for path in git_dir.rglob("*.lock") if path.is_file())
    for path in stale:
        path.unlink()
    if stale:
        log.warning("removed git lock file(s) left by an interrupted run: %s", ", ".join(str(path) for path in stale))


def _fetch(repo, version: str | None, max_bytes: int) -> str:
    """Fetch `version` (or the default branch) one commit deep, without blobs over `max_bytes`; returns the commit id."""
    import git

    ref = version or "HEAD"
    started = time.monotonic()
    try:
        repo.git.execute(
            ["git", *GIT_OPTIONS, "fetch", "--quiet", "--depth", "1", f"--filter=blob:limit={max_bytes}", "--end-of-options",
             "origin", ref],
            kill_after_timeout=FETCH_TIMEOUT_SECONDS,
        )
        commit = repo.git.rev_parse("--verify", "FETCH_HEAD^{commit}")
    except git.GitCommandError as exc:
        if time.monotonic() - started >= FETCH_TIMEOUT_SECONDS:
            raise SourceFailed(f"git fetch of {ref} timed out after {FETCH_TIMEOUT_SECONDS} s") from None
        raise SourceFailed(f"git fetch of {ref} failed: {_git_message(exc)}") from None
    return commit


def _oversized(repo, commit: str, tree: dict[str, str]) -> list[str]:
    """Paths of `tree` whose blob the fetch left out for its size (git lists them as missing; nothing is fetched)."""
    output = repo.git.rev_list("--objects", "--missing=print", commit)
    missing = {line[1:] for line in output.splitlines() if line.startswith("?")}
    return sorted(path for path, blob in tree.items() if blob in missing)


def _check_out(repo, commit: str, prefix: str, left_out: list[str]) -> None:
    """Check out `commit`, only `prefix` (sparse) and never the files `left_out`."""
    import git

    patterns = ["/" + _sparse_escape(prefix) + "/" if prefix else "/*"] + ["!/" + _sparse_escape(path) for path in left_out]
    try:
        with tempfile.TemporaryFile() as stdin:  # patterns on stdin: no argument limit, never read as options
            stdin.write(("\n".join(patterns) + "\n").encode("utf-8"))
            stdin.seek(0)
            repo.git.execute(["git", "sparse-checkout", "set", "--no-cone", "--stdin"], istream=stdin)
        repo.git.execute(["git", *GIT_OPTIONS, "checkout", "--quiet", "--force", "--detach", commit])
    except git.GitCommandError as exc:
        raise SourceFailed(f"git checkout of {commit[:12]} failed: {_git_message(exc)}") from None


def _sparse_escape(path: str) -> str:
    """A path as a sparse-checkout pattern that matches only itself (gitignore syntax)."""
    return _SPARSE_SPECIAL.sub(r"\\\1", path)


def _default_branch(repo) -> str | None:
    import git

    try:
        output = repo.git.execute(["git", *GIT_OPTIONS, "ls-remote", "--symref", "origin", "HEAD"], kill_after_timeout=60)
    except git.GitCommandError:
        return None
    match = re.search(r"^ref: refs/heads/(\S+)\s+HEAD", output, re.MULTILINE)
    return match.group(1) if match else None


def _commit_date(repo, commit: str) -> tuple[str, float]:
    return dates.from_timestamp(int(repo.git.show("-s", "--format=%ct", commit)))


def _tree_files(repo, commit: str, prefix: str, glob: str) -> tuple[dict[str, str], list[str]]:
    """{path: blob id} of the files to index: regular files under `prefix` matching `glob` (relative to
    `prefix`) that we can parse. Also the paths of files left out because they hold credentials."""
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines([glob])
    output = repo.git.ls_tree("-r", "-z", "--full-tree", commit, "--", prefix or ".")
    files, secret_files = {}, []
    for entry in filter(None, output.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind != "blob":  # a submodule
            continue
        if is_secret_file(path.rsplit("/", 1)[-1]):
            secret_files.append(path)
            continue
        if mode not in ("100644", "100755"):  # a symlink
            continue
        relative = path[len(prefix) :].lstrip("/") if prefix else path
        if kind_of(path) and spec.match_file(relative):
            files[path] = blob
    return files, secret_files


def _git_message(exc: Exception) -> str:
    """The most telling line of a git error: its first fatal:/error: line, else its first line."""
    stderr = str(getattr(exc, "stderr", "") or exc)
    lines = [line.strip().removeprefix("stderr: ").strip("'\" ") for line in stderr.splitlines()]
    lines = [line for line in lines if line and "filtering not recognized" not in line]
    telling = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (telling or lines or [str(exc)])[0]
