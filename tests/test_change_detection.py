"""One change-detection contract: a document's identity covers every input of its indexed text.

An edit to an included file reaches the page that includes it, and a git source that moves to a new version or commit
gives its unchanged files the new version, commit and URL, without --full and without embedding them again.
"""

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


def test_unchanged_git_files_follow_the_source_to_its_new_version(tmp_path):
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
    for chunk in after.values():
        assert (chunk["metadata"]["commit"], chunk["metadata"]["doc_version"]) == (second, "v2"), chunk["metadata"]
    summary = moved.json["sources"][0]
    assert summary["embedded"] == 1, "only the changed section of upgrade.md is embedded"


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
