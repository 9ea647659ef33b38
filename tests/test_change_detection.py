"""One change-detection contract: a document's identity covers every input of its indexed text.

An edit to an included file reaches the page that includes it, and a git source that moves to a new version or commit
gives its unchanged files the new version, commit and URL, without --full and without embedding them again.
"""

import shutil
import subprocess

from conftest import add_source, call_script, index_docs, store_contents
from gitrepo import GitRepo


def chunks_of(data, file, collection="docs"):
    return {chunk_id: chunk for chunk_id, chunk in store_contents(data, collection).items() if chunk["metadata"]["file"] == file}


def test_an_edit_to_an_included_file_reaches_the_page_that_includes_it(tmp_path):
    docs = tmp_path / "docs"
    (docs / "_snippets").mkdir(parents=True)
    (docs / "_snippets" / "port.md").write_text("The admin console listens on port 9443.\n")
    (docs / "install.md").write_text('# Install\n\nStart the server.\n\n--8<-- "_snippets/port.md"\n')
    add_source("--id", "handbook", "--name", "Handbook", "--type", "local", "--path", docs)
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    assert "9443" in " ".join(chunk["text"] for chunk in chunks_of(data, "handbook/install.md").values())

    (docs / "_snippets" / "port.md").write_text("The admin console listens on port 7443 since version 2.\n")
    again = index_docs(data, "--all")
    assert again.code == 0, again
    assert again.json["sources"][0]["updated"] == 1, again.json
    text = " ".join(chunk["text"] for chunk in chunks_of(data, "handbook/install.md").values())
    assert "7443" in text and "9443" not in text


def test_unchanged_git_files_follow_the_source_to_its_new_version(tmp_path, keep_previous):  # the last run catches up
    repo = GitRepo(tmp_path / "origin")
    repo.write({"docs/upgrade.md": "# Upgrade\n\nTake an etcd snapshot first.\n",
                "docs/network.md": "# Network\n\nkube-router programs the routes with BGP.\n"})
    first = repo.commit("v1 docs", tag="v1")
    repo.write({"docs/upgrade.md": "# Upgrade\n\nTake an etcd snapshot first, then drain the node.\n"})
    second = repo.commit("v2 docs", tag="v2")
    add_source("--id", "k0s", "--name", "k0s", "--type", "git", "--url", repo.url, "--path", "docs/", "--version", "v1")
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    before = chunks_of(data, "k0s/docs/network.md")
    assert {chunk["metadata"]["commit"] for chunk in before.values()} == {first}

    assert call_script("add_doc_source.py", "--update", "--id", "k0s", "--version", "v2").code == 0
    moved = index_docs(data, "--all")
    assert moved.code == 0, moved
    after = chunks_of(data, "k0s/docs/network.md")
    assert set(after) == set(before), "an unchanged file keeps its chunks (and their vectors)"
    for chunk_id, chunk in after.items():
        assert (chunk["metadata"]["commit"], chunk["metadata"]["doc_version"]) == (second, "v2"), chunk["metadata"]
        assert chunk["metadata"]["indexed_at"] == before[chunk_id]["metadata"]["indexed_at"], "not read nor indexed again"
        assert chunk["text"] == before[chunk_id]["text"]
    assert chunks_of(data, "k0s/docs/upgrade.md"), "the changed file is indexed"
    summary = moved.json["sources"][0]
    assert summary["embedded"] == 1, "only the changed section of upgrade.md is embedded"
    kept = (data / "docs" / "generations" / "g000001" / "catalog.sqlite").stat().st_ino  # the generation before, kept
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "extra.md").write_text("# Extra\n\nA page of another source.\n")
    add_source("--id", "extra", "--name", "Extra", "--type", "local", "--path", notes)
    assert index_docs(data, "--all").code == 0, "the next run brings the generation before the published one up to date"
    current = (data / "docs" / "CURRENT").read_text().strip()
    assert (data / "docs" / "generations" / current / "catalog.sqlite").stat().st_ino == kept, "g000001 was taken"
    caught_up = chunks_of(data, "k0s/docs/network.md")
    assert {chunk["metadata"]["commit"] for chunk in caught_up.values()} == {second}, "its new commit, caught up in place"
    assert caught_up == after


def test_a_git_sources_page_includes_code_from_outside_its_path_and_an_edit_to_it_reaches_the_page(tmp_path):
    """FastAPI's layout: `--path docs/en/docs`, the code its tutorials include in docs_src at the repository's root."""
    repo = GitRepo(tmp_path / "origin")
    repo.write({"docs/en/docs/tutorial/events.md": "# Events\n\n## Lifespan { #lifespan }\n\nStart a model.\n\n"
                                                   "{* ../../docs_src/events/tutorial003.py ln[1:2] *}\n",
                "docs_src/events/tutorial003.py": "def lifespan(app):\n    load_the_ml_model()\n    yield\n",
                "docs_src/unused.py": "never_checked_out = True\n"})
    repo.commit("docs")
    add_source("--id", "fastapi", "--name", "FastAPI", "--type", "git", "--url", repo.url, "--path", "docs/en/docs")
    data = tmp_path / "data"
    first = index_docs(data, "--all")
    assert first.code == 0, first
    chunks = chunks_of(data, "fastapi/docs/en/docs/tutorial/events.md")
    assert [(chunk["metadata"]["heading"], chunk["text"]) for chunk in chunks.values()] == [
        ("Events > Lifespan", "Start a model.\n\n```python\ndef lifespan(app):\n    load_the_ml_model()\n```")]
    checkout = next((data / "sources").glob("*/repo"))
    assert (checkout / "docs_src/events/tutorial003.py").is_file() and not (checkout / "docs_src/unused.py").exists()

    repo.write({"docs_src/events/tutorial003.py": "def lifespan(app):\n    load_the_llm()\n    yield\n"})
    repo.commit("code")
    again = index_docs(data, "--all")
    assert again.code == 0, again
    assert again.json["sources"][0]["updated"] == 1, again.json
    assert "load_the_llm()" in " ".join(chunk["text"] for chunk in chunks_of(data, "fastapi/docs/en/docs/tutorial/events.md").values())


def _objects_in(clone) -> int:
    """Objects the clone holds, packed or loose: what its fetches brought (a fetch that cannot say what it has brings
    the whole history again, in a new pack)."""
    counts = dict(line.split(": ") for line in subprocess.run(["git", "-C", str(clone), "count-objects", "-v"], check=True,
                                                                  capture_output=True, text=True).stdout.splitlines())
    return int(counts["count"]) + int(counts["in-pack"])


def test_a_refresh_fetches_only_what_the_remote_added(tmp_path):
    repo = GitRepo(tmp_path / "origin")
    for n in range(20):  # a history of 20 commits over 60 pages
        repo.write({f"docs/{part}/page-{n}.md": f"# Page {n} of {part}\n\nStep {n} of the {part} guide.\n" for part in "abc"})
        repo.commit(f"pages {n}")
    add_source("--id", "guide", "--name", "Guide", "--type", "git", "--url", repo.url, "--path", "docs")
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    clone = next((data / "sources").glob("*/repo"))
    held = _objects_in(clone)

    repo.write({"docs/a/page-3.md": "# Page 3 of a\n\nStep 3 of the a guide, rewritten.\n"})
    repo.commit("one page")
    again = index_docs(data, "--all")
    assert again.code == 0, again
    assert again.json["sources"][0]["updated"] == 1, again.json
    assert _objects_in(clone) - held <= 6, "one commit, its trees (docs, docs/a, the root) and one blob"
    assert index_docs(data, "--all").code == 0
    assert _objects_in(clone) - held <= 6, "a refresh with nothing new brings nothing"


def test_a_git_source_says_it_will_write_only_when_its_commit_moved(tmp_path):
    """git_listing calls `moved` once the fetch shows a commit the index does not have (the run then loads ChromaDB
    while git checks the files out); a refresh with nothing new must not pay for that."""
    from rag_search.sources.git import git_listing
    from rag_search.sources.specs import GitSource

    origin = GitRepo(tmp_path / "origin")
    origin.write({"docs/a.md": "# A\n\nalpha\n"})
    origin.commit("first")
    spec = GitSource("proj", "Project", origin.url, "docs")
    calls = []

    def listing(state):
        return git_listing(spec, tmp_path / "cache", 1 << 20, state, moved=lambda: calls.append(state))

    first = listing(None)
    assert len(calls) == 1
    listing(first.state)
    assert len(calls) == 1, "a refresh with nothing new said it would write"
    origin.write({"docs/b.md": "# B\n\nbeta\n"})
    origin.commit("second")
    listing(first.state)
    assert len(calls) == 2


def test_a_refresh_scans_for_include_stubs_only_the_pages_it_has_not_scanned(tmp_path, monkeypatch):
    """Which files outside the path the pages include is known by page blob (git.STUBS): a refresh reads and scans only
    new blobs for stubs, and a page that starts to include a file outside the path still gets it checked out; a
    damaged record is scanned again."""
    from rag_search.sources import git
    from rag_search.sources.specs import GitSource
    from rag_search.text import includes

    origin = GitRepo(tmp_path / "origin")
    origin.write({"docs/a.md": "# A\n\nalpha\n", "docs/b.md": "# B\n\n{* ../src/b.py *}\n", "src/b.py": "b = 1\n",
                  "src/c.py": "c = 2\n"})
    origin.commit("first")
    spec = GitSource("proj", "Project", origin.url, "docs")
    scanned = []
    monkeypatch.setattr(git, "stub_targets", lambda text: scanned.append(text) or includes.stub_targets(text))
    checkout = tmp_path / "cache" / "repo"

    first = git.git_listing(spec, tmp_path / "cache", 1 << 20, None)
    assert len(scanned) == 2 and (checkout / "src/b.py").is_file() and not (checkout / "src/c.py").exists()
    git.git_listing(spec, tmp_path / "cache", 1 << 20, first.state)
    assert len(scanned) == 2, "a refresh with nothing new scanned the pages again"
    origin.write({"docs/a.md": "# A\n\n{* ../src/c.py *}\n"})
    origin.commit("second")
    git.git_listing(spec, tmp_path / "cache", 1 << 20, first.state)
    assert len(scanned) == 3 and (checkout / "src/b.py").is_file() and (checkout / "src/c.py").is_file()
    (tmp_path / "cache" / git.STUBS).write_text("{not json")
    git.git_listing(spec, tmp_path / "cache", 1 << 20, first.state)
    assert len(scanned) == 5 and (checkout / "src/c.py").is_file()


def test_a_force_pushed_history_is_followed(tmp_path):
    repo = GitRepo(tmp_path / "origin")
    repo.write({"docs/deploy.md": "# Deploy\n\nUse the blue-green rollout.\n"})
    repo.commit("first")
    repo.write({"docs/deploy.md": "# Deploy\n\nUse the canary rollout.\n"})
    repo.commit("second")
    add_source("--id", "ops", "--name", "Ops", "--type", "git", "--url", repo.url, "--path", "docs")
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.write({"docs/deploy.md": "# Deploy\n\nUse the rolling update.\n"})
    repo.commit("rewritten")
    again = index_docs(data, "--all")
    assert again.code == 0, again
    text = " ".join(chunk["text"] for chunk in chunks_of(data, "ops/docs/deploy.md").values())
    assert "rolling update" in text and "canary" not in text


def test_the_packs_of_earlier_full_fetches_are_pruned(tmp_path):
    """Clones of earlier versions fetched the whole history again at each new commit: one more pack each time."""
    repo = GitRepo(tmp_path / "origin")
    repo.git("config", "uploadpack.allowFilter", "true")
    repo.write({f"docs/page-{n}.md": f"# Page {n}\n\nStep {n}.\n" for n in range(30)})
    repo.commit("pages")
    add_source("--id", "guide", "--name", "Guide", "--type", "git", "--url", repo.url, "--path", "docs")
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    clone = next((data / "sources").glob("*/repo"))
    for n in range(10):
        repo.write({"docs/page-0.md": f"# Page 0\n\nStep 0, take {n}.\n"})
        repo.commit(f"take {n}")
        subprocess.run(["git", "-C", str(clone), "fetch", "-q", "--filter=blob:none", "origin", "HEAD"], check=True)
    assert len(list((clone / ".git/objects/pack").glob("*.pack"))) > 8
    assert index_docs(data, "--all").code == 0
    assert len(list((clone / ".git/objects/pack").glob("*.pack"))) <= 2, "one, and the blobs of the new page checked out"
    assert _objects_in(clone) < 120, "the history once: 11 commits, their trees and the blobs checked out"


def test_a_history_rewritten_with_the_indexed_commit_gone_everywhere_is_compared_in_full(tmp_path):
    """The commit the index was built from exists nowhere any more (upstream rewrote and pruned it, and the clone was
    lost): files are compared by blob id, so the refresh needs no old commit, and unchanged pages are not embedded again."""
    repo = GitRepo(tmp_path / "origin")
    repo.write({"docs/deploy.md": "# Deploy\n\nUse the canary rollout.\n",
                "docs/network.md": "# Network\n\nkube-router programs the routes with BGP.\n"})
    indexed = repo.commit("first")
    add_source("--id", "ops", "--name", "Ops", "--type", "git", "--url", repo.url, "--path", "docs")
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    network = chunks_of(data, "ops/docs/network.md")

    repo.git("checkout", "-q", "--orphan", "rewritten")  # a new root: nothing of the old history is kept
    repo.write({"docs/deploy.md": "# Deploy\n\nUse the rolling update.\n"})
    rewritten = repo.commit("rewritten from scratch")
    repo.git("branch", "-q", "-M", "main")
    repo.git("reflog", "expire", "--expire=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    assert repo.git("cat-file", "-t", rewritten) == "commit"
    assert subprocess.run(["git", "-C", str(repo.path), "cat-file", "-e", indexed]).returncode != 0, "the old commit is gone"
    for clone in (data / "sources").glob("*/repo"):
        shutil.rmtree(clone)

    again = index_docs(data, "--all")
    assert again.code == 0, again
    summary = again.json["sources"][0]
    assert (summary["updated"], summary["embedded"]) == (1, 1), summary
    text = " ".join(chunk["text"] for chunk in chunks_of(data, "ops/docs/deploy.md").values())
    assert "rolling update" in text and "canary" not in text
    after = chunks_of(data, "ops/docs/network.md")
    assert set(after) == set(network) and {chunk["metadata"]["commit"] for chunk in after.values()} == {rewritten}


def test_the_clone_holds_the_docs_and_not_the_history_of_a_large_repository(tmp_path):
    """A docs folder in a repository of long history: the clone keeps one commit of it (and those fetched since), and
    the files are still dated by their last commit, from the history fetched once and dropped."""
    repo = GitRepo(tmp_path / "origin")
    repo.git("config", "uploadpack.allowFilter", "true")
    repo.write({"docs/install.md": "# Install\n\nDownload the binary.\n", "docs/tuning.md": "# Tuning\n\nRaise the heartbeat.\n"})
    repo.commit("docs", date="2021-01-05T10:00:00Z")
    for n in range(30):  # the code's history, which the docs never need
        repo.write({f"src/module_{n % 7}.py": f"VALUE = {n}\n"})
        repo.commit(f"code {n}", date=f"2022-02-{n % 28 + 1:02d}T10:00:00Z")
    repo.write({"docs/tuning.md": "# Tuning\n\nRaise the heartbeat and the election timeout.\n"})
    repo.commit("tuning", date="2023-06-01T10:00:00Z")
    add_source("--id", "big", "--name", "Big", "--type", "git", "--url", repo.url, "--path", "docs")
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    clone = next((data / "sources").glob("*/repo"))

    def commits_held() -> int:
        return int(subprocess.run(["git", "-C", str(clone), "rev-list", "--count", "refs/rag-search/fetched"], check=True,
                                  capture_output=True, text=True).stdout)

    def dates() -> dict:
        return {chunk["metadata"]["file"]: chunk["metadata"]["date"] for chunk in store_contents(data, "docs").values()}

    assert commits_held() == 1
    assert dates() == {"big/docs/install.md": "2021-01-05T10:00:00Z", "big/docs/tuning.md": "2023-06-01T10:00:00Z"}
    assert not (clone.parent / "history").exists(), "the history fetched to date the files is dropped"

    repo.write({"docs/install.md": "# Install\n\nDownload the binary and check it.\n", "src/module_0.py": "VALUE = -1\n"})
    repo.commit("install", date="2024-02-02T10:00:00Z")
    repo.write({"src/module_1.py": "VALUE = -2\n"})
    repo.commit("code again", date="2024-03-03T10:00:00Z")
    assert index_docs(data, "--all").json["sources"][0]["updated"] == 1
    assert commits_held() == 3, "the commits since the last fetch, not the history"
    assert dates() == {"big/docs/install.md": "2024-02-02T10:00:00Z", "big/docs/tuning.md": "2023-06-01T10:00:00Z"}
    assert index_docs(data, "--all", "--full").code == 0
    assert dates() == {"big/docs/install.md": "2024-02-02T10:00:00Z", "big/docs/tuning.md": "2023-06-01T10:00:00Z"}, \
        "a rebuild dates unchanged files as before"


def test_a_commit_embeds_its_new_texts_with_the_model_loaded_beside_git_before_it_reads_the_vectors_it_reuses(
        tmp_path, monkeypatch):
    """A commit's write mostly waits: on the vectors' library (loaded in a thread once the source moved) and on the
    model. So the model loads in a thread of its own beside git's checkout, and the texts nothing holds are embedded
    first, while the library goes on loading; the vectors of the texts the index holds are read after. A text the catalog
    holds whose vector cannot be read is embedded too, and the run publishes."""
    import threading

    from rag_search.model.embedding import OnnxEmbedder
    from rag_search.store.store_writer import StoreWriter

    events = []

    def spied(name, method, log):
        def spy(self, *args):
            events.append(log(args))
            return method(self, *args)
        monkeypatch.setattr(name, method.__name__, spy)

    spied(OnnxEmbedder, OnnxEmbedder.__init__, lambda args: ("load", threading.current_thread().name))
    spied(OnnxEmbedder, OnnxEmbedder.embed, lambda args: ("embed", len(args[0])))
    spied(StoreWriter, StoreWriter.reusable_vectors, lambda args: ("reuse", len(args[0])))
    repo = GitRepo(tmp_path / "origin")
    sections = {"Drain": "Drain each node before its kubelet restarts.", "Snapshot": "Take an etcd snapshot first."}
    page = lambda names: "# Upgrade\n\n" + "".join(f"## {name}\n\n{sections[name]}\n\n" for name in names)  # noqa: E731
    repo.write({"docs/upgrade.md": page(["Drain", "Snapshot"])})
    repo.commit("v1")
    add_source("--id", "k0s", "--name", "k0s", "--type", "git", "--url", repo.url, "--path", "docs/")
    data = tmp_path / "data"
    assert index_docs(data, "--all").code == 0
    lost = next(chunk_id for chunk_id, chunk in chunks_of(data, "k0s/docs/upgrade.md").items() if "etcd" in chunk["text"])
    _drop_vector(data, lost)

    sections["Back up"] = "Back up the data directory."
    repo.write({"docs/upgrade.md": page(["Back up", "Drain", "Snapshot"])})  # the two known sections move down
    repo.commit("v2")
    events.clear()
    moved = index_docs(data, "--all")
    assert moved.code == 0, moved
    assert events[0][0] == "load" and events[0][1].startswith("load the model"), events
    assert events[1:] == [("embed", 1), ("reuse", 2), ("embed", 1)], "new text first, then the kept, then the lost one"
    assert moved.json["sources"][0]["embedded"] == 2, moved.json
    assert sorted(chunk["text"] for chunk in chunks_of(data, "k0s/docs/upgrade.md").values()) == sorted(sections.values())


def _drop_vector(data, chunk_id) -> None:
    """Delete one chunk's vector from the published docs index behind the catalog's back."""
    import chromadb
    from chromadb.config import Settings

    generation = (data / "docs" / "CURRENT").read_text().strip()
    folder = data / "docs" / "generations" / generation / "chroma"
    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    client.get_collection("docs", embedding_function=None).delete(ids=[chunk_id])
