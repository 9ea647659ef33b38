"""Git doc sources: a cached shallow, sparse clone per source, refreshed incrementally.

The clone lives in <data dir>/sources/<id>/repo and holds only what is needed:
one commit deep, blobs fetched lazily, checked out sparsely to `path`. A refresh
fetches `version` (tag, branch or commit; the default branch when absent) and
applies `git diff` between the last indexed commit and the new one: added and
modified files are re-embedded, deleted ones removed, renames handled. Without a
usable previous commit, the indexed files are compared with the tree by blob id,
so unchanged files are still not re-embedded.

Git never prompts: a remote that wants credentials fails at once.
"""

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .. import dates
from ..errors import SourceFailed
from ..indexer import IndexWriter, SourceDocument
from ..parsing import ParseError, kind_of
from ..secrets import is_secret_file, warn_secret_files
from .files import SkipFile, read_text

log = logging.getLogger("rag_search")

INDEXED_REF = "refs/rag-search/indexed"  # keeps the last indexed commit from garbage collection
FETCH_TIMEOUT_SECONDS = 900
NO_PROMPT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # never ask on a terminal
    "GIT_ASKPASS": "true",  # an askpass that answers nothing: credentials fail fast
    "SSH_ASKPASS": "true",
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ConnectTimeout=30",
    "GCM_INTERACTIVE": "never",
}
# Abort transfers that stall rather than hang the daily run.
GIT_OPTIONS = ["-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=60", "-c", "advice.detachedHead=false"]
FORGE_BLOB_URLS = {
    "github.com": "https://github.com/{project}/blob/{commit}/{path}",
    "gitlab.com": "https://gitlab.com/{project}/-/blob/{commit}/{path}",
    "codeberg.org": "https://codeberg.org/{project}/src/commit/{commit}/{path}",
    "bitbucket.org": "https://bitbucket.org/{project}/src/{commit}/{path}",
}


@dataclass
class TreeFile:
    path: str  # path in the repository
    blob: str  # git object id: the content identity


def sync_git(writer: IndexWriter, source: dict, cache_dir: Path, max_bytes: int, full: bool = False) -> dict:
    """Refresh the clone, index what changed since the last complete run; returns the summary."""
    source_id = source["id"]
    prefix = _clean_prefix(source.get("path", ""))
    repo = _prepare_clone(cache_dir / "repo", source["url"], prefix)
    version = source.get("version")
    commit = _fetch(repo, version)
    doc_version = version or _default_branch(repo) or "default branch"
    commit_date = _commit_date(repo, commit)

    settings = {"url": source["url"], "path": prefix, "glob": source.get("glob", "**/*.md")}
    state = writer.store.catalog.source_state(writer.name, source_id)
    previous = state.get("commit") if state and not full and state.get("settings") == settings else None
    if previous and not _has_commit(repo, previous):
        log.warning("%s: commit %s is no longer in the clone; comparing the whole tree", source_id, previous[:12])
        previous = None

    tree, secret_files = _tree_files(repo, commit, prefix, settings["glob"])
    warn_secret_files(source_id, secret_files)
    known = writer.known_documents(source_id)
    counts = {"added": 0, "updated": 0, "renamed": 0, "deleted": 0}
    skipped: list[dict] = []
    worktree = Path(repo.working_dir)

    def key(path: str) -> str:
        return f"{source_id}:{path}"

    def put(path: str, count: str | None = None) -> None:
        """(Re)index one file of the new tree; `count` overrides added/updated (renames)."""
        document = SourceDocument(
            key=key(path),
            source_id=source_id,
            file=f"{source_id}/{path}",
            kind=kind_of(path),
            text="",
            content_hash=tree[path].blob,
            metadata={
                "repo_path": path,
                "commit": commit,
                "doc_version": doc_version,
                "url": browse_url(source["url"], commit, path),
                "path": str(worktree / path),
            },
            fallback_date=commit_date,
        )
        try:
            document.text = read_text(worktree / path, max_bytes)
            for warning in writer.put(document):
                log.warning("%s/%s: %s", source_id, path, warning)
        except (SkipFile, ParseError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            log.warning("skipped %s/%s: %s", source_id, path, reason)
            skipped.append({"file": path, "reason": reason})
            return
        counts[count or ("updated" if key(path) in known else "added")] += 1

    if previous == commit:
        mode = "up to date"
    elif previous:
        mode = "diff"
        for status, old_path, new_path in _diff(repo, previous, commit, prefix):
            was_indexed = key(old_path) in known
            if status == "D":
                if was_indexed:
                    writer.remove(key(old_path))
                    counts["deleted"] += 1
            elif status == "R" and was_indexed:
                writer.remove(key(old_path))
                if new_path in tree:
                    put(new_path, "renamed")
                else:  # renamed out of the glob: gone from the index
                    counts["deleted"] += 1
            elif new_path in tree:
                put(new_path)
    else:
        mode = "full scan"
        for path, file in tree.items():
            indexed = known.get(key(path))
            if full or not indexed or indexed.content_hash != file.blob:
                put(path)
        for old_key in set(known) - {key(path) for path in tree}:
            writer.remove(old_key)
            counts["deleted"] += 1
    counts["unchanged"] = len(tree) - counts["added"] - counts["updated"] - counts["renamed"] - len(skipped)

    writer.flush()
    repo.git.update_ref(INDEXED_REF, commit)
    return {
        "files": len(tree),
        **counts,
        "skipped": skipped,
        "secret_files": len(secret_files),
        "mode": mode,
        "commit": commit,
        "previous_commit": state.get("commit") if state else None,
        "doc_version": doc_version,
        "state": {"commit": commit, "settings": settings},
    }


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


def _prepare_clone(folder: Path, url: str, prefix: str):
    """An initialised repository with `origin` at `url`, checking out only `prefix`."""
    import git

    try:
        if (folder / ".git").is_dir():
            repo = git.Repo(folder)
        else:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            repo = git.Repo.init(folder)
        repo.git.update_environment(**NO_PROMPT_ENV)
        if "origin" in [remote.name for remote in repo.remotes]:
            if repo.remotes.origin.url != url:
                repo.git.remote("set-url", "origin", url)
        else:
            repo.git.remote("add", "origin", url)
        if prefix:
            repo.git.sparse_checkout("set", "--no-cone", f"/{prefix}")
        else:
            repo.git.sparse_checkout("disable")
    except (git.GitError, OSError) as exc:
        raise SourceFailed(f"cannot prepare the clone in {folder}: {_git_message(exc)}") from None
    return repo


def _fetch(repo, version: str | None) -> str:
    """Fetch `version` (or the default branch) one commit deep and check it out; returns the commit id."""
    import git

    ref = version or "HEAD"
    started = time.monotonic()
    try:
        repo.git.execute(
            ["git", *GIT_OPTIONS, "fetch", "--quiet", "--depth", "1", "--filter=blob:none", "origin", ref],
            kill_after_timeout=FETCH_TIMEOUT_SECONDS,
        )
        commit = repo.git.rev_parse("FETCH_HEAD^{commit}")
        repo.git.execute(["git", *GIT_OPTIONS, "checkout", "--quiet", "--force", "--detach", commit])
    except git.GitCommandError as exc:
        if time.monotonic() - started >= FETCH_TIMEOUT_SECONDS:
            raise SourceFailed(f"git fetch of {ref} timed out after {FETCH_TIMEOUT_SECONDS} s") from None
        raise SourceFailed(f"git fetch of {ref} failed: {_git_message(exc)}") from None
    return commit


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


def _has_commit(repo, commit: str) -> bool:
    import git

    try:
        repo.git.cat_file("-e", f"{commit}^{{commit}}")
        return True
    except git.GitCommandError:
        return False


def _tree_files(repo, commit: str, prefix: str, glob: str) -> tuple[dict[str, TreeFile], list[str]]:
    """The files to index: regular files under `prefix` that match `glob` (relative to `prefix`) and
    that we can parse. Also the paths of files left out because they hold credentials, whatever `glob` says."""
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
            files[path] = TreeFile(path, blob)
    return files, secret_files


def _diff(repo, old: str, new: str, prefix: str) -> list[tuple[str, str, str | None]]:
    """(status letter, old path, new path) for each change between two commits under `prefix`."""
    output = repo.git.diff("--name-status", "-M", "-z", "--no-color", old, new, "--", prefix or ".")
    fields = [field for field in output.split("\0") if field != ""]
    changes = []
    i = 0
    while i < len(fields):
        status = fields[i][0]
        if status in ("R", "C"):
            changes.append((status, fields[i + 1], fields[i + 2]))
            i += 3
        else:
            changes.append((status, fields[i + 1], fields[i + 1]))
            i += 2
    return changes


def _clean_prefix(path: str) -> str:
    """`docs/`, `./docs` and `/docs` all mean the folder docs at the top of the repository."""
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise SourceFailed(f'"path" must stay inside the repository: {path!r}')
    return "/".join(parts)


def _git_message(exc: Exception) -> str:
    """The most telling line of a git error: its last non-empty stderr line."""
    stderr = getattr(exc, "stderr", "") or str(exc)
    lines = [line.strip() for line in str(stderr).splitlines() if line.strip() and "filtering not recognized" not in line]
    message = lines[-1] if lines else str(exc)
    return message.removeprefix("stderr: ").strip("'\" ")

