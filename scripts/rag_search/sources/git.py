"""Git doc sources: a cached partial, sparse, shallow clone per source, listed by blob id.

The clone lives in <data dir>/sources/<id>/repo and holds only what is needed:
the fetched commit (and those fetched since) with its trees but no file contents
it has not needed (`--filter=blob:none`: blobs are fetched when needed), checked
out sparsely to `path` and the files its pages include from elsewhere in the
repository (which files those are is kept by page blob, STUBS, so only new pages
are scanned for include stubs); not the repository's history
(bench/bench_clone_size.py). Files over max_file_bytes are never checked out:
the blobs of the files to index are fetched in one request and their sizes read
first. A refresh fetches `version` (tag, branch or commit; the default branch
when absent) into a ref of its own (FETCHED), so the remote sends only what was
added since (nothing when it has not moved), and lists the files of that commit
with their blob ids: a file whose blob (and those of the files it includes) is
the one indexed is not read, its chunks only take the new commit, version and
URL (`_provenance`); only new blobs are read and embedded.

Each file is dated by its last commit. The dates of the fetched commit's files
are kept beside the clone (DATES, with each file's blob); a refresh dates the
files that the commits fetched since changed by walking those commits, and
keeps the others' dates. Only when a file cannot be dated so (a new source, a
history rewritten from a commit no longer held, a clone of an earlier version)
is the history without blobs fetched into a folder of its own, walked once with
`git log`, and removed. Clones of earlier versions without our ref (one commit
deep, or fetched whole at each refresh) are replaced on their next refresh.

User data never becomes an option: the version is a checked ref name
(specs.py), and every command that carries a URL, ref or path ends options
first (--end-of-options, or -- before paths). Git never prompts: a remote that
wants credentials fails at once. Index runs hold the docs write lock, so no
other git process of ours can be in a clone: lock files found there were left
by a killed run and are removed.
"""

import functools
import json
import logging
import posixpath
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, cast
from urllib.parse import urlsplit

from ..core import dates
from ..core.atomic import write_atomically
from ..core.errors import SourceFailed
from ..index.indexer import SourceDocument, content_hash
from ..index.reconcile import Listed, Listing, Skip
from ..safety.secrets import is_secret_file, warn_secret_files
from ..text.includes import candidates, expand_page, stub_targets
from ..text.parsing import kind_of
from .files import SkipFile, listed_kind, read_text, suffix_of
from .specs import GitSource

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
PACK_LIMIT = 8  # packs in a clone that make it repack into one
FETCHED = "refs/rag-search/fetched"  # the source's version as last fetched: what the clone has, for the next fetch
DATES = "dates.json"  # beside the clone: {"commit": id, "files": {path: [blob id, last commit time]}} of that commit's files
HISTORY = "history"  # beside the clone: the history without blobs, fetched to date files, removed once walked
STUBS = "stubs.json"  # beside the clone: {page blob id: [files its include stubs name]} of the fetched commit's pages


def git_listing(spec: GitSource, cache_dir: Path, max_bytes: int, state: dict | None,
                moved: Callable[[], None] = lambda: None) -> Listing:
    """Fetch the source's version and list the files to index, identified by blob id; `moved` is called as soon as the
    fetch shows a commit other than the one indexed (`state`), before the files are checked out.

    Files over `max_bytes` are never checked out (left out of the sparse checkout);
    they are reported as skipped.
    """
    repo, held = _prepare_clone(cache_dir / "repo", spec)  # held: the commit the last run fetched, which the clone holds
    commit = _fetch(repo, spec.version, first=held is None)
    if commit != (state or {}).get("commit"):
        moved()
    _prune_packs(repo)
    found = _tree_files(repo, commit, spec)
    tree, secret_files = found.files, found.secret_files
    oversized = _oversized(repo, commit, tree, max_bytes)
    _check_out(repo, commit, spec.path, oversized)
    worktree = Path(repo.working_dir)
    if included := _included_elsewhere(worktree, tree, spec.path, found.blobs, cache_dir / STUBS):
        too_large = set(_oversized(repo, commit, {path: found.blobs[path] for path in included}, max_bytes))
        _check_out(repo, commit, spec.path, oversized, [path for path in included if path not in too_large])
    warn_secret_files(spec.id, secret_files)
    skipped = [{"file": f"{spec.id}/{path}", "key": f"{spec.id}:{path}",
                "reason": f"larger than the {max_bytes // 1024} KiB limit (max_file_bytes): never checked out"} for path in oversized]
    for path in oversized:
        del tree[path]
    context = {
        "commit": commit,
        "doc_version": spec.version or _default_branch(repo) or "default branch",
        "dates": _file_dates(repo, cache_dir, spec, commit, tree, held),
        "worktree": worktree,
    }
    documents = [Listed(f"{spec.id}:{path}", f"{spec.id}/{path}", blob, functools.partial(_load, spec, path, blob, context, max_bytes))
                 for path, blob in tree.items()]
    details = {"files": len(tree), "commit": commit, "previous_commit": (state or {}).get("commit"),
               "doc_version": context["doc_version"], "secret_files": len(secret_files),
               **({"seen": found.unselected} if not documents and not skipped else {})}
    provenance = {"version": context["doc_version"], "commit": commit, "url": spec.url}  # in every page's metadata
    return Listing(documents, skipped=skipped, state={"commit": commit}, details=details, context=provenance,
                   dependency=found.blobs.get, deselected=functools.partial(_deselected, spec),
                   provenance=functools.partial(_provenance, spec, context))


def _provenance(spec: GitSource, context: dict, key: str) -> dict:
    """What a page's chunks say of where it comes from, which moves with the source while its text stays (_load)."""
    path = key.split(":", 1)[1]
    return {"commit": context["commit"], "doc_version": context["doc_version"], "url": browse_url(spec.url, context["commit"], path)}


def _deselected(spec: GitSource, key: str) -> bool:
    """Whether the source's path and selection leave out the indexed document `key` ("<id>:<path in the repository>")."""
    path = PurePosixPath(key.split(":", 1)[1])
    if spec.path and not path.is_relative_to(spec.path):
        return True
    return not spec.selection.selects(path.relative_to(spec.path).as_posix() if spec.path else path.as_posix())


def _load(spec: GitSource, path: str, blob: str, context: dict, max_bytes: int, previous) -> SourceDocument:
    try:
        text, encoding = read_text(context["worktree"] / path, max_bytes)
    except SkipFile as exc:
        raise Skip(str(exc)) from None
    kind = listed_kind(path)
    # A page may include any file of the repository, not only of `path` (FastAPI's code lies beside its docs folder).
    text, warnings, included = expand_page(kind, text, context["worktree"] / path, context["worktree"], max_bytes)
    worktree = context["worktree"].resolve()
    return SourceDocument(
        key=f"{spec.id}:{path}",
        source_id=spec.id,
        file=f"{spec.id}/{path}",
        kind=kind,
        text=text,
        content_hash=content_hash(text.encode("utf-8")),
        identity=blob,
        metadata={
            "repo_path": path,
            **_provenance(spec, context, f"{spec.id}:{path}"),
            "path": str(context["worktree"] / path),
            **({"encoding": encoding} if encoding else {}),
        },
        fallback_date=context["dates"][path],
        documentation=True,
        warnings=warnings,
        depends=[included_path.relative_to(worktree).as_posix() for included_path in included],
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
    """An initialised repository with `origin` at the source's URL, checking out only its path, and the commit its
    last fetch left in FETCHED (None in a new clone)."""
    import git

    try:
        repo, held = None, None
        if (folder / ".git").is_dir():
            _remove_stale_locks(folder / ".git")
            repo = git.Repo(folder)
            held = _ref(repo, FETCHED)
            if held is None:  # one commit deep, or with the whole history fetched again each time: as earlier versions cloned
                log.info("%s: replacing the clone in %s made by an earlier version", spec.id, folder)
                shutil.rmtree(folder)
                repo = None
        if repo is None:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            repo = git.Repo.init(folder)
        repo.git.update_environment(**NO_PROMPT_ENV)
        if "origin" not in [remote.name for remote in repo.remotes]:
            repo.git.remote("add", "--end-of-options", "origin", spec.url)
        elif repo.remotes.origin.url != spec.url:
            repo.git.remote("set-url", "--end-of-options", "origin", spec.url)
    except (git.GitError, OSError) as exc:
        raise SourceFailed(f"cannot prepare the clone in {folder}: {_git_message(exc)}") from None
    return repo, held


def _ref(repo, ref: str) -> str | None:
    """The commit id `ref` names, read from the ref alone (nothing is fetched); None when there is no such ref."""
    import git

    try:
        return repo.git.execute(["git", "rev-parse", "--verify", "--quiet", "--end-of-options", ref]) or None
    except git.GitCommandError:
        return None


def _remove_stale_locks(git_dir: Path) -> None:
    """Lock files left in the clone by a killed run (index.lock, shallow.lock, refs…): nobody else can hold them."""
    stale = sorted(path for path in git_dir.rglob("*.lock") if path.is_file())
    for path in stale:
        path.unlink()
    if stale:
        log.warning("removed git lock file(s) left by an interrupted run: %s", ", ".join(str(path) for path in stale))


def _fetch(repo, version: str | None, first: bool) -> str:
    """Fetch `version` (or the default branch) without file contents, the `first` time one commit deep; returns the
    commit id.

    What was fetched is kept as FETCHED, so the next fetch tells the remote what the clone has: it brings only the
    commits, trees and blobs added since, nothing when the remote has not moved, and follows a force push (`+`).
    """
    import git

    ref = version or "HEAD"
    started = time.monotonic()
    try:
        repo.git.execute(["git", *GIT_OPTIONS, "fetch", "--quiet", "--filter=blob:none", *(["--depth=1"] if first else []),
                          "--end-of-options", "origin", f"+{ref}:{FETCHED}"], kill_after_timeout=FETCH_TIMEOUT_SECONDS)
        commit = repo.git.rev_parse("--verify", "--end-of-options", f"{FETCHED}^{{commit}}")
    except git.GitCommandError as exc:
        if time.monotonic() - started >= FETCH_TIMEOUT_SECONDS:
            raise SourceFailed(f"git fetch of {ref} timed out after {FETCH_TIMEOUT_SECONDS} s") from None
        raise SourceFailed(f"git fetch of {ref} failed: {_git_message(exc)}") from None
    return commit


def _prune_packs(repo) -> None:
    """One pack for the clone once it holds PACK_LIMIT: the fetches of earlier versions, which could not say what the
    clone had, brought the whole history again each time (a pack each); a failure only leaves them for the next run."""
    import git

    packs = Path(repo.git_dir) / "objects" / "pack"
    if len(list(packs.glob("*.pack"))) < PACK_LIMIT:
        return
    try:
        repo.git.execute(["git", *GIT_OPTIONS, "repack", "-a", "-d", "-q"], kill_after_timeout=FETCH_TIMEOUT_SECONDS)
    except git.GitCommandError as exc:
        log.warning("could not repack the clone in %s: %s", repo.working_dir, _git_message(exc))


def _oversized(repo, commit: str, tree: dict[str, str], max_bytes: int) -> list[str]:
    """Paths of `tree` whose blob is over `max_bytes`.

    The clone holds no file contents it has not needed: the blobs of the files to
    index that it lacks are fetched in one request (the checkout would fetch them
    anyway, one request each) so that their sizes are known before anything is
    written to the worktree. Blobs a run already fetched are not fetched again.
    """
    import git

    blobs = sorted(set(tree.values()))
    try:
        listed = repo.git.rev_list("--objects", "--missing=print", "--no-walk", "--end-of-options", commit)  # never fetches
        missing = {line[1:] for line in listed.splitlines() if line.startswith("?")}
        wanted = [blob for blob in blobs if blob in missing]
        if wanted:
            _git_with_lines(repo, ["-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                                   "--recurse-submodules=no", "--filter=blob:none", "--stdin", "origin"], wanted)
        output = _git_with_lines(repo, ["cat-file", "--batch-check=%(objectname) %(objectsize)"], blobs) if blobs else ""
    except git.GitCommandError as exc:
        raise SourceFailed(f"git fetch of the files to index failed: {_git_message(exc)}") from None
    sizes = {name: int(size) for name, size in (line.split() for line in output.splitlines())}
    return sorted(path for path, blob in tree.items() if sizes[blob] > max_bytes)


def _check_out(repo, commit: str, prefix: str, left_out: list[str], included: list[str] | tuple = ()) -> None:
    """Check out `commit`, only `prefix` and the files its pages include (sparse), and never the files `left_out`."""
    import git

    patterns = (["/" + _sparse_escape(prefix) + "/" if prefix else "/*"] + ["/" + _sparse_escape(path) for path in included]
                + ["!/" + _sparse_escape(path) for path in left_out])
    try:
        _git_with_lines(repo, ["sparse-checkout", "set", "--no-cone", "--stdin"], patterns)
        repo.git.execute(["git", *GIT_OPTIONS, "checkout", "--quiet", "--force", "--detach", commit])
    except git.GitCommandError as exc:
        raise SourceFailed(f"git checkout of {commit[:12]} failed: {_git_message(exc)}") from None


def _included_elsewhere(worktree: Path, pages: dict[str, str], prefix: str, blobs: dict[str, str], record: Path) -> list[str]:
    """The files outside `prefix` that its markdown pages' include stubs name (includes.stub_targets, resolved as
    includes.candidates does), which a sparse checkout of `prefix` leaves out; none when the whole tree is checked out."""
    wanted: set[str] = set()
    for page, names in (_stub_names(worktree, pages, record) if prefix else {}).items():
        for name in names:
            paths = (posixpath.normpath(candidate.as_posix()) for candidate in candidates(name, PurePosixPath(page), PurePosixPath(".")))
            found = next((path for path in paths if path in blobs), None)
            if found and not found.startswith(prefix + "/"):
                wanted.add(found)
    return sorted(wanted)


def _stub_names(worktree: Path, pages: dict[str, str], record: Path) -> dict[str, list[str]]:
    """{markdown page: what its include stubs name}. What a page names depends on its blob alone, so it is kept by blob
    in `record`: a refresh reads and scans only new blobs (scanning 2,000 pages took 0.15 s of every refresh), and
    writes the record only when the pages' blobs changed."""
    kept = _read_stubs(record)
    now: dict[str, list[str]] = {}
    named: dict[str, list[str]] = {}
    for page, blob in pages.items():
        if listed_kind(page) != "markdown":
            continue
        if blob in kept:
            now[blob] = kept[blob]
        elif blob not in now:
            try:
                now[blob] = stub_targets((worktree / page).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
        named[page] = now[blob]
    if now != kept:
        try:
            write_atomically(record, json.dumps(now))
        except OSError as exc:
            log.warning("could not keep the pages' include stubs in %s (%s): the next refresh scans every page again", record, exc)
    return named


def _read_stubs(path: Path) -> dict[str, list[str]]:
    """STUBS as written, or {} when it is missing or not what _stub_names writes."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(kept, dict) and all(isinstance(names, list) and all(isinstance(name, str) for name in names)
                                          for names in kept.values()):
            return kept
    except (OSError, ValueError):
        pass
    return {}


def _git_with_lines(repo, arguments: list[str], lines: list[str]) -> str:
    """Run git with `lines` on its stdin: no argument-length limit, and data there is never read as an option."""
    with tempfile.TemporaryFile() as stdin:
        stdin.write(("\n".join(lines) + "\n").encode("utf-8"))
        stdin.seek(0)
        return repo.git.execute(["git", *GIT_OPTIONS, *arguments], istream=stdin, kill_after_timeout=FETCH_TIMEOUT_SECONDS)


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


def _file_dates(repo, cache_dir: Path, spec: GitSource, commit: str, tree: dict[str, str],
                held: str | None) -> dict[str, tuple[str, float]]:
    """Each file of `tree` dated by its last commit: from the commits fetched since the dated one (DATES) when they
    changed it, else from DATES when its blob is the one dated there, else from the history (fetched once, HISTORY);
    a file none of them reaches gets the commit's own date. Keeps the result in DATES for the next refresh.

    The commits since are walked only when the dated commit is the one the clone `held` before this fetch: the walk
    must stop there, for the clone's oldest commit shows every file as added."""
    known = _read_dates(cache_dir / DATES)
    found: dict[str, float] = {}
    if known.get("commit") and known["commit"] == held:
        found = last_commit_times(Path(repo.git_dir), commit, held, spec.path, set(tree)) or {}
    files = known.get("files", {})
    for path, blob in tree.items():
        if path not in found and files.get(path, [None])[0] == blob:
            found[path] = files[path][1]
    if undated := set(tree) - set(found):
        found.update(_history_dates(cache_dir / HISTORY, spec, commit, undated))
    if undated := set(tree) - set(found):
        fallback = float(repo.git.show("-s", "--format=%ct", "--end-of-options", commit))
        found.update(dict.fromkeys(undated, fallback))
    now = {"commit": commit, "files": {path: [blob, found[path]] for path, blob in tree.items()}}
    if now != known:  # a refresh with nothing new writes nothing
        try:
            write_atomically(cache_dir / DATES, json.dumps(now))
        except OSError as exc:
            log.warning("%s: could not keep the files' dates (%s): the next refresh fetches the history again", spec.id, exc)
    return {path: dates.from_timestamp(found[path]) for path in tree}


def _read_dates(path: Path) -> dict:
    """DATES as written, or {} when it is missing or not what _file_dates writes."""
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        files = known["files"]
        if isinstance(known["commit"], str) and all(isinstance(blob, str) and isinstance(seconds, (int, float))
                                                    for blob, seconds in files.values()):
            return known
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return {}


def _history_dates(folder: Path, spec: GitSource, commit: str, paths: set[str]) -> dict[str, float]:
    """Dates of `paths` from the history of `commit` without blobs, fetched into `folder` and removed after the walk."""
    import git

    shutil.rmtree(folder, ignore_errors=True)
    try:
        history = git.Repo.init(folder, bare=True)
        history.git.update_environment(**NO_PROMPT_ENV)
        history.git.execute(["git", *GIT_OPTIONS, "fetch", "--quiet", "--filter=blob:none", "--end-of-options", spec.url,
                             f"+{spec.version or 'HEAD'}:{FETCHED}"], kill_after_timeout=FETCH_TIMEOUT_SECONDS)
        walked = last_commit_times(folder, commit, None, spec.path, paths)
        if walked is None:
            log.warning("%s: the history fetched to date the files does not hold %s: they take the commit's date", spec.id, commit[:12])
        return walked or {}
    except (git.GitError, OSError) as exc:
        log.warning("%s: could not fetch the history to date the files (%s): they take the commit's date", spec.id, _git_message(exc))
        return {}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def last_commit_times(git_dir: Path, commit: str, since: str | None, prefix: str, paths: set[str]) -> dict[str, float] | None:
    """The last commit time of each of `paths` among the commits of `commit` not in `since`, from one `git log` walk
    that stops once all are found; None when git cannot walk them (a commit it does not hold).

    `git log -z --format=%x00%ct --name-only` writes, per commit, an empty field,
    the commit time, then the changed paths (the first one after a newline).
    """
    command = ["git", f"--git-dir={git_dir}", *GIT_OPTIONS, "log", "--format=%x00%ct", "-z", "--name-only", "--no-renames",
               "--end-of-options", commit, *([f"^{since}"] if since else []), "--", prefix or "."]
    undated, found = set(paths), {}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    output = cast(IO[bytes], process.stdout)
    try:
        seconds, expect_time, pending = 0.0, False, b""
        while undated and (block := output.read(65536)):
            *fields, pending = (pending + block).split(b"\0")
            for field in fields:
                if field == b"":
                    expect_time = True
                elif expect_time:
                    seconds, expect_time = float(field), False
                elif (path := field.removeprefix(b"\n").decode("utf-8", "surrogateescape")) in undated:
                    found[path] = seconds
                    undated.discard(path)
    finally:
        process.kill()
        code = process.wait()
    return found if code == 0 or not undated else None


@dataclass
class _Tree:
    files: dict[str, str] = field(default_factory=dict)  # {path: blob id} of the files to index
    secret_files: list[str] = field(default_factory=list)  # left out: they hold credentials
    blobs: dict[str, str] = field(default_factory=dict)  # {path: blob id} of every regular file of the repository
    # (what a page may include)
    unselected: Counter = field(default_factory=Counter)  # suffixes of the files not indexed: what an empty source saw


def _tree_files(repo, commit: str, spec: GitSource) -> _Tree:
    """The regular files under the source's path that its selection takes (relative to the path) and that we can
    parse, and the rest of what the tree holds (_Tree)."""
    prefix = spec.path
    output = repo.git.ls_tree("-r", "-z", "--full-tree", commit)
    tree = _Tree()
    for entry in filter(None, output.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind != "blob":  # a submodule
            continue
        under_prefix = not prefix or path.startswith(prefix + "/")
        if is_secret_file(path.rsplit("/", 1)[-1]):
            tree.secret_files += [path] if under_prefix else []
            continue
        if mode not in ("100644", "100755"):  # a symlink
            continue
        tree.blobs[path] = blob
        relative = path[len(prefix) :].lstrip("/") if prefix else path
        if not under_prefix:
            continue
        if kind_of(path) and spec.selection.selects(relative):
            tree.files[path] = blob
        else:
            tree.unselected[suffix_of(path)] += 1
    return tree


def _git_message(exc: Exception) -> str:
    """The most telling line of a git error: its first fatal:/error: line, else its first line."""
    stderr = str(getattr(exc, "stderr", "") or exc)
    lines = [line.strip().removeprefix("stderr: ").strip("'\" ") for line in stderr.splitlines()]
    lines = [line for line in lines if line and "filtering not recognized" not in line]
    telling = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (telling or lines or [str(exc)])[0]
