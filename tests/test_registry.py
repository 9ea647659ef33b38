"""The sources.json registry: validation, unknown fields, atomic and safe writes."""

import builtins
import errno
import io
import json

import pytest

from rag_search.core.errors import ConfigError
from rag_search.sources import registry

GIT = {"id": "k0s", "name": "k0s Documentation", "type": "git", "url": "https://github.com/k0sproject/k0s.git",
       "path": "docs/", "glob": "**/*.md", "version": "v1.30.0"}
WEB = {"id": "argocd", "name": "ArgoCD Documentation", "type": "web",
       "base_url": "https://argo-cd.readthedocs.io/en/stable/", "pages": ["user-guide/sync-options/"]}
LOCAL = {"id": "runbooks", "name": "Runbooks", "type": "local", "path": "~/runbooks"}


def write(path, data):
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_valid_registry_loads(tmp_path):
    reg = registry.load(write(tmp_path / "sources.json", {"sources": [GIT, WEB, LOCAL]}))
    assert [s.id for s in reg.sources] == ["k0s", "argocd", "runbooks"]
    assert reg.get("argocd").pages == ("user-guide/sync-options/",)
    assert (reg.get("k0s").path, reg.get("k0s").version) == ("docs", "v1.30.0"), "typed and normalised once, on load"
    assert reg.get("runbooks").path.is_absolute()


def test_a_missing_registry_is_empty(tmp_path):
    assert registry.load(tmp_path / "none.json").sources == []


@pytest.mark.parametrize(
    "sources, message",
    [
        ([{**GIT, "type": "svn"}], 'source #1 ("k0s"): "type" must be one of git, local, web'),
        ([{k: v for k, v in GIT.items() if k != "url"}], 'source #1 ("k0s"): "url" is missing'),
        ([{k: v for k, v in WEB.items() if k != "base_url"}], '"base_url" is missing'),
        ([{k: v for k, v in GIT.items() if k != "name"}], '"name" is missing'),
        ([{k: v for k, v in GIT.items() if k != "id"}], 'source #1 ("?"): "id" is missing'),
        ([GIT, {**WEB, "id": "k0s"}], 'source #2 ("k0s"): duplicate "id"'),
        ([{**GIT, "id": "../etc"}], '"id" must be a slug'),
        ([{**GIT, "id": "K0s"}], '"id" must be a slug'),
        ([{**GIT, "id": ".hidden"}], '"id" must be a slug'),
        ([{**GIT, "url": "ext::sh -c touch% /tmp/pwned"}], '"url" must use https, ssh, git or file'),
        ([{**GIT, "url": "--upload-pack=touch /tmp/x"}], '"url" must not start with "-"'),
        ([{**WEB, "base_url": "ftp://example.org/"}], '"base_url" must be an http or https URL'),
        ([{**WEB, "pages": "user-guide/"}], '"pages" must be a list'),
        ([{k: v for k, v in WEB.items() if k != "pages"}], 'needs "pages"'),
        ([{**GIT, "version": 1.3}], '"version" must be a string'),
        ([{**GIT, "version": "--upload-pack=touch /tmp/x"}], '"version" \'--upload-pack=touch /tmp/x\' is not a git tag'),
        ([{**GIT, "path": "docs\n"}], '"path" must not contain control characters'),
        ([{**GIT, "globs": ["**/*.rst"]}], 'give "globs" (a list) and not also "glob"'),
        ([{**LOCAL, "globs": "**/*.md"}], '"globs" must be a list of strings'),
        ([{**LOCAL, "exclude": []}], '"exclude" must not be empty'),
        ([{**WEB, "exclude": ["blog/\n"]}], '"exclude" must not contain control characters'),
        (["k0s"], "source #1 is not an object"),
    ],
)
def test_each_validation_error_names_the_source_and_field(tmp_path, sources, message):
    path = write(tmp_path / "sources.json", {"sources": sources})
    with pytest.raises(ConfigError) as caught:
        registry.load(path)
    assert message in str(caught.value)
    assert "sources.json" in str(caught.value)


@pytest.mark.parametrize("content", ['{"sources": [', "[]", '{"sources": {}}', "\xff\xfe"])
def test_malformed_files_are_config_errors(tmp_path, content):
    path = tmp_path / "sources.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(ConfigError):
        registry.load(path)


def test_unknown_fields_survive_a_rewrite(tmp_path):
    path = write(tmp_path / "sources.json", {"comment": "mine", "sources": [{**GIT, "owner": "platform team"}]})
    registry.update(path, lambda reg: reg.add(LOCAL))
    data = json.loads(path.read_text())
    assert data["comment"] == "mine"
    assert data["sources"][0]["owner"] == "platform team"
    assert [s["id"] for s in data["sources"]] == ["k0s", "runbooks"]


def test_a_concurrent_edit_is_never_lost(tmp_path):
    """The change is applied to what is on disk when it is written: a compare-and-swap, retried."""
    path = write(tmp_path / "sources.json", {"sources": [GIT]})
    attempts = []

    def change(reg):
        attempts.append(len(attempts))
        if len(attempts) == 1:
            write(path, {"sources": [GIT, WEB]})  # someone edits the file meanwhile
        reg.add(LOCAL)

    registry.update(path, change)
    assert len(attempts) == 2
    assert [s["id"] for s in json.loads(path.read_text())["sources"]] == ["k0s", "argocd", "runbooks"]


class _DiskFull:
    """A file whose writes stop halfway with ENOSPC, as on a full disk."""

    def __init__(self, handle):
        self._handle = handle

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._handle.close()

    def write(self, data):
        self._handle.write(data[: len(data) // 2])
        self._handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_write_that_fails_halfway_leaves_the_old_file_whole_and_no_temp_files(tmp_path, monkeypatch):
    folder = tmp_path / "references"
    folder.mkdir()
    path = write(folder / "sources.json", {"sources": [GIT]})
    before = path.read_bytes()
    real_open = io.open

    def open_on_a_full_disk(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        return handle if set(mode) <= {"r", "b", "t"} else _DiskFull(handle)

    with monkeypatch.context() as patch:
        patch.setattr(io, "open", open_on_a_full_disk)  # os.fdopen and Path.open
        patch.setattr(builtins, "open", open_on_a_full_disk)
        with pytest.raises(OSError, match="No space left"):
            registry.update(path, lambda reg: reg.add(WEB))
    assert path.read_bytes() == before
    assert [s.id for s in registry.load(path).sources] == ["k0s"]
    registry.update(path, lambda reg: reg.add(WEB))
    assert [s.id for s in registry.load(path).sources] == ["k0s", "argocd"]
    leftovers = [p.name for p in folder.iterdir() if p.name not in ("sources.json", ".sources.json.lock")]
    assert leftovers == []


def test_an_invalid_change_is_never_written(tmp_path):
    path = write(tmp_path / "sources.json", {"sources": [GIT]})
    before = path.read_text()
    with pytest.raises(ConfigError):
        registry.update(path, lambda reg: reg.add({**WEB, "id": "k0s"}))
    assert path.read_text() == before
