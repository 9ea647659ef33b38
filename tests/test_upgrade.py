"""Upgrades lose nothing: only a run that covers the whole collection rebuilds it.

An index built by an earlier version (here: its stored fingerprint names another chunker) is left as it is by every
partial run: a search's freshness step, memory.py add, index_docs.py --source, add_doc_source.py --index and
index_personal.py ROOT each say `reindex` and change nothing. The runs that cover everything (index_personal.py with its
remembered roots, index_docs.py --all) rebuild it whole.
"""

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import add_source, age_index, call_script, index_docs, published_folder, store_contents
from gitrepo import GitRepo

pytestmark = pytest.mark.processes  # the index aged by another process

OLD_CHUNKING = "v1/window=256/overlap=32"

def stored_chunking(data: Path, collection: str) -> str:
    with sqlite3.connect(f"file:{published_folder(data, collection) / 'catalog.sqlite'}?mode=ro", uri=True) as catalog:
        (state,) = catalog.execute("SELECT state FROM sources WHERE source_id = '@fingerprint'").fetchone()
    return json.loads(state)["chunking"]


def chunk_ids(data: Path, collection: str) -> set[str]:
    return set(store_contents(data, collection))


def docs_repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "origin")
    repo.write({"docs/upgrade.md": "# Upgrading\n\nTake an etcd snapshot before every minor upgrade of the cluster.\n",
                "docs/network.md": "# Networking\n\nkube-router programs the routes between nodes with BGP.\n"})
    repo.commit("docs")
    return repo


def test_after_an_upgrade_partial_runs_keep_everything_and_complete_runs_rebuild(state_dir, tmp_path):
    data = tmp_path / "data"
    env = {"RAG_SEARCH_MEMORY_FILE": str(state_dir / "memory" / "memory.json")}
    journal = tmp_path / "journal"
    journal.mkdir()
    (journal / "week.md").write_text("# This week\n\nMoved the backups to the new bucket on Tuesday.\n")
    assert call_script("index_personal.py", "--data-dir", data, state_dir, journal, env=env).code == 0
    handbook = tmp_path / "handbook"
    handbook.mkdir()
    (handbook / "oncall.md").write_text("# On call\n\nPage the secondary after fifteen minutes without an acknowledgement.\n")
    add_source("--id", "handbook", "--name", "Handbook", "--type", "local", "--path", handbook)
    add_source("--id", "cluster", "--name", "Cluster docs", "--type", "git", "--url", docs_repo(tmp_path).url, "--path", "docs/")
    assert index_docs(data, "--all").code == 0
    personal, docs = chunk_ids(data, "personal"), chunk_ids(data, "docs")
    age_index(data, "personal", chunking=OLD_CHUNKING)
    age_index(data, "docs", chunking=OLD_CHUNKING)

    (state_dir / "notes" / "argocd-setup.md").write_text("# ArgoCD\n\nSelf-heal stays off until the drift alerts are tuned.\n")
    searched = call_script("search.py", "--data-dir", data, "why is self-heal off?", env=env)
    assert searched.code == 0, searched
    assert searched.json["results"], "the published index still answers: model and graph are the same"
    assert "index_personal.py" in searched.json["reindex"]["personal"], searched.json
    assert "reindex" in searched.stderr

    added = call_script("memory.py", "--data-dir", data, "add", "--type", "lesson_learned", "--lesson", "Pin chart versions.", env=env)
    assert added.code == 0, added
    assert added.json["indexed"] is False and "reindex" in added.json, added.json

    one_source = index_docs(data, "--source", "handbook")
    assert one_source.code == 4, one_source
    assert "index_docs.py --all" in one_source.stderr
    third = tmp_path / "third"
    third.mkdir()
    (third / "a.md").write_text("# Third\n\nA third source.\n")
    registered = call_script("add_doc_source.py", "--data-dir", data, "--id", "third", "--name", "Third", "--type", "local",
                            "--path", third, "--index")
    assert registered.code == 4, registered
    one_root = call_script("index_personal.py", "--data-dir", data, state_dir, env=env)
    assert one_root.code == 4, one_root

    assert chunk_ids(data, "personal") == personal, "no partial run changed the personal index"
    assert chunk_ids(data, "docs") == docs, "no partial run changed the docs index"

    rebuilt = call_script("index_personal.py", "--data-dir", data, env=env)
    assert rebuilt.code == 0, rebuilt
    assert rebuilt.json["rebuilt"] is True
    files = {chunk["metadata"]["file"] for chunk in store_contents(data, "personal").values()}
    assert {"notes/argocd-setup.md", "memory/memory.json", "memory/decisions.json", "week.md"} <= files
    assert stored_chunking(data, "personal") != OLD_CHUNKING
    assert index_docs(data, "--all").code == 0
    sources = {chunk["metadata"]["source_id"] for chunk in store_contents(data, "docs").values()}
    assert sources == {"handbook", "cluster"}
    assert stored_chunking(data, "docs") != OLD_CHUNKING
    fresh = call_script("search.py", "--data-dir", data, "why is self-heal off?", env=env)
    assert fresh.code == 0 and "reindex" not in fresh.json, fresh
    assert "drift alerts" in fresh.json["results"][0]["chunk"]


def test_an_index_of_schema_6_answers_without_page_vectors_until_a_complete_run_rebuilds_it(tmp_path):
    """Schema 7 keeps each document's page vector. An index of schema 6 has none: searches still answer
    from it (ranked without page closeness) and say reindex; the next complete run rebuilds it from its own vectors."""
    data = tmp_path / "data"
    handbook = tmp_path / "handbook"
    handbook.mkdir()
    (handbook / "oncall.md").write_text("# On call\n\nPage the secondary after fifteen minutes without an acknowledgement.\n")
    add_source("--id", "handbook", "--name", "Handbook", "--type", "local", "--path", handbook)
    assert index_docs(data, "--all").code == 0
    docs = chunk_ids(data, "docs")
    with sqlite3.connect(published_folder(data, "docs") / "catalog.sqlite") as catalog:
        catalog.execute("ALTER TABLE documents DROP COLUMN vector")
        catalog.execute("PRAGMA user_version = 6")
    age_index(data, "docs", schema=6)

    searched = call_script("search.py", "--data-dir", data, "--index", "docs", "--explain", "when do I page the secondary?")
    assert searched.code == 0, searched
    assert "fifteen minutes" in searched.json["results"][0]["chunk"]
    assert "page_cosine" not in searched.json["results"][0]["explain"]
    assert "index_docs.py" in searched.json["reindex"]["docs"], searched.json

    rebuilt = index_docs(data, "--all")
    assert rebuilt.code == 0, rebuilt
    assert chunk_ids(data, "docs") == docs
    assert sum(source["embedded"] for source in rebuilt.json["sources"]) == 0, rebuilt.json
    fresh = call_script("search.py", "--data-dir", data, "--index", "docs", "--explain", "when do I page the secondary?")
    assert "reindex" not in fresh.json and "page_cosine" in fresh.json["results"][0]["explain"], fresh.json
