"""Fault injection: kill or fail an index run at each step of a flush and of publishing.

Whatever step a run dies at, searches keep answering, and the next run ends with
exactly what a full rebuild gives, locally and against a Chroma server. Faults are injected by tests/faultrun.py, which patches one
named step of the real code in the script's own process.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SCRIPTS, run_script, server_collection, store_contents

pytestmark = pytest.mark.processes  # index runs killed or failed at each step, then run again

FAULTRUN = Path(__file__).with_name("faultrun.py")

FLUSH_STEPS = [
    "rag_search.store.vectors.VectorIndex.add",
    "rag_search.store.catalog.Catalog.write",
    "rag_search.store.vectors.VectorIndex.delete",
]
PUBLISH_STEPS = [
    "rag_search.store.store_writer.StoreWriter.verify",
    "rag_search.core.atomic.fsync_tree",
    "rag_search.store.generations.install",
    "rag_search.store.generations.point_current",
    "rag_search.store.generations.collect_garbage#2",  # #1 is the clean-up when the run starts
]
SERVER_STEPS = [
    "rag_search.store.server_vectors.ServerJournal.record",
    "rag_search.store.vectors.VectorIndex.stamp",
    "rag_search.store.server_vectors.ServerJournal.clear",
]
NOTES = {
    "keep.md": "# Keep\n\nThe backup job runs at 02:00 and keeps seven daily snapshots.\n",
    "edit.md": "# Edit\n\nThe ingress controller is Traefik with the default entry points.\n",
    "gone.md": "# Gone\n\nThe legacy VPN uses OpenVPN on port 1194.\n",
    "long.md": "# Long\n\n" + "\n\n".join(f"## Part {n}\n\nParagraph {n} about storage class {n} and its reclaim policy."
                                         for n in range(12)),
}


PRISTINE_MTIME, CHANGED_MTIME = 1_700_000_000, 1_700_100_000  # fixed: dates come from mtimes and must match a rebuild


def change(root: Path) -> None:
    """One run's worth of change: an edit, an addition, a deletion, a long file reshuffled."""
    (root / "edit.md").write_text("# Edit\n\nThe ingress controller is now ingress-nginx, since March.\n")
    (root / "added.md").write_text("# Added\n\nThe MinIO bucket policy allows read-only access from the CI runners.\n")
    (root / "gone.md").unlink()
    (root / "long.md").write_text(NOTES["long.md"].replace("## Part 3", "## Part three").replace("Paragraph 7", "Paragraph seven"))
    for name in ("edit.md", "added.md", "long.md"):
        os.utime(root / name, (CHANGED_MTIME, CHANGED_MTIME))


def reset_root(root: Path) -> Path:
    """The notes as they were before the change, always at the same path (keys carry the path)."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for name, text in NOTES.items():
        (root / name).write_text(text)
        os.utime(root / name, (PRISTINE_MTIME, PRISTINE_MTIME))
    return root


def comparable(data: Path, server: str | None = None) -> dict:
    drop = ("indexed_at", "owner")
    return {chunk_id: (chunk["text"], {k: v for k, v in chunk["metadata"].items() if k not in drop})
            for chunk_id, chunk in store_contents(data, "personal", server).items()}


def faulty_run(fault: str, data: Path, root: Path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FAULTRUN), fault, "index_personal.py", "--data-dir", str(data), *extra, str(root)],
                          capture_output=True, text=True, timeout=300, cwd=SCRIPTS)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    """A baseline index of the notes, and what a full rebuild of the changed notes gives."""
    base = tmp_path_factory.mktemp("faults")
    root = reset_root(base / "root")
    data = base / "data"
    assert run_script("index_personal.py", "--data-dir", data, root).code == 0
    change(root)
    rebuilt = base / "rebuilt"
    assert run_script("index_personal.py", "--data-dir", rebuilt, root).code == 0
    return {"root": root, "data": data, "expected": comparable(rebuilt), "before": comparable(data)}


def check_recovery(result, data: Path, root: Path, expected: dict, before: dict, server: str | None = None) -> None:
    extra = ["--chroma-url", server] if server else []
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    seen = comparable(data, server)
    if server is None:
        assert seen in (before, expected), "searches see the old index or the new one, nothing between"
    else:  # a server applies writes at once: searches may see part of the run, but never lose what is published
        assert before.items() <= seen.items() or expected.items() <= seen.items()
    found = run_script("search.py", "--data-dir", data, *extra, "how long are backups kept?")
    assert found.code == 0 and found.json["results"], found
    again = run_script("index_personal.py", "--data-dir", data, *extra, root)
    assert again.code == 0, again
    assert comparable(data, server) == expected


@pytest.mark.parametrize("action", ["kill", "fail"])
@pytest.mark.parametrize("step", FLUSH_STEPS + PUBLISH_STEPS)
def test_a_local_run_dies_at_any_step_and_the_next_run_converges(step, action, scenario, tmp_path):
    data, root = tmp_path / "data", reset_root(scenario["root"])
    shutil.copytree(scenario["data"], data)
    change(root)
    if action == "fail" and step.endswith("collect_garbage#2"):
        pytest.skip("a failure after publishing is only a warning")
    result = faulty_run(f"{action}@{step}", data, root)
    assert "faultrun:" in result.stderr, "the step was reached"
    check_recovery(result, data, root, scenario["expected"], scenario["before"])


@pytest.fixture
def server(chroma_server):
    """The session's Chroma server with no collections left by other tests."""
    import chromadb

    url, port = chroma_server
    client = chromadb.HttpClient(host="127.0.0.1", port=port)
    for collection in client.list_collections():
        client.delete_collection(collection.name)
    return url


# The steps that write to the server, and one of the local catalog's (the local test above kills at every step of
# publishing the catalog's generation; against a server that code is the same, and each case costs ~8 s of CI).
@pytest.mark.parametrize("step", FLUSH_STEPS + SERVER_STEPS)
def test_a_server_run_killed_at_any_step_is_rolled_forward_or_back(step, server, scenario, tmp_path):
    data, root = tmp_path / "data", reset_root(scenario["root"])
    assert run_script("index_personal.py", "--data-dir", data, "--chroma-url", server, root).code == 0
    before = comparable(data, server)
    change(root)
    result = faulty_run(f"kill@{step}", data, root, "--chroma-url", server)
    assert "faultrun:" in result.stderr, "the step was reached"
    check_recovery(result, data, root, scenario["expected"], before, server)


def test_a_reused_vector_always_belongs_to_its_text(server, tmp_path):
    """A killed server run must not leave a vector that a later run reuses for other text."""
    data, root = tmp_path / "data", reset_root(tmp_path / "root")
    original = (root / "edit.md").read_text()
    assert run_script("index_personal.py", "--data-dir", data, "--chroma-url", server, root).code == 0
    (root / "edit.md").write_text("# Edit\n\nSomething else entirely: the coffee machine descales on Fridays.\n")
    killed = faulty_run("kill@rag_search.store.catalog.Catalog.write", data, root, "--chroma-url", server)
    assert killed.returncode == -9, killed.stderr
    (root / "copy.md").write_text(original)  # the same text: its vector is reused, not embedded again
    (root / "edit.md").write_text(original)
    assert run_script("index_personal.py", "--data-dir", data, "--chroma-url", server, root).code == 0
    query = "The ingress controller is Traefik with the default entry points."
    found = run_script("search.py", "--data-dir", data, "--chroma-url", server, "--mode", "dense", "--top-k", "2", query)
    assert found.code == 0, found
    assert all(hit["score"] > 0.8 for hit in found.json["results"]), found.json["results"]


def test_server_orphans_owned_by_this_machine_are_found_and_removed(server, tmp_path):
    import chromadb

    data, root = tmp_path / "data", reset_root(tmp_path / "root")
    assert run_script("index_personal.py", "--data-dir", data, "--chroma-url", server, root).code == 0
    owner = (data / "owner").read_text().strip()
    port = int(server.rsplit(":", 1)[1])
    collection = chromadb.HttpClient(host="127.0.0.1", port=port).get_collection(server_collection("personal"))
    collection.add(ids=["orphan-of-ours", "someone-elses"], embeddings=[[0.1] * 384, [0.2] * 384], documents=["orphan", "theirs"],
                   metadatas=[{"owner": owner, "file": "x.md"}, {"owner": "another-machine", "file": "y.md"}])
    (root / "added.md").write_text("# Added\n\nA new note makes the next run publish and verify.\n")
    result = run_script("index_personal.py", "--data-dir", data, "--chroma-url", server, root)
    assert result.code == 0, result
    assert "orphan" in result.stderr
    left = collection.get(ids=["orphan-of-ours", "someone-elses"])["ids"]
    assert left == ["someone-elses"], "only our own orphans are removed"


def test_a_failed_flush_fails_that_source_only(tmp_path, isolated_home):
    """Vectors written, catalog write failed: that source fails, the others index."""
    data = tmp_path / "data"
    sources = []
    for name in ("good", "bad"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "page.md").write_text(f"# {name} page\n\nThe {name} source documents the {name} widget.\n")
        sources.append({"id": name, "name": name, "type": "local", "path": str(folder)})
    (isolated_home / "sources.json").write_text(json.dumps({"sources": sources}))
    env_run = [sys.executable, str(FAULTRUN), "fail@rag_search.store.catalog.Catalog.write#2", "index_docs.py", "--data-dir", str(data),
               "--all"]
    result = subprocess.run(env_run, capture_output=True, text=True, timeout=300, cwd=SCRIPTS)
    assert result.returncode == 9, result.stdout + result.stderr
    summary = {s["id"]: s for s in json.loads(result.stdout)["sources"]}
    assert summary["good"]["status"] == "ok"
    assert summary["bad"]["status"] == "failed" and "injected fault" in summary["bad"]["error"]
    assert "inconsistent" not in result.stderr
    assert {c["metadata"]["file"] for c in store_contents(data, "docs").values()} == {"good/page.md"}
    again = run_script("index_docs.py", "--data-dir", data, "--all")
    assert again.code == 0, again
    assert {c["metadata"]["file"] for c in store_contents(data, "docs").values()} == {"good/page.md", "bad/page.md"}


def test_a_run_that_changes_nothing_never_opens_the_vectors(tmp_path):
    """Planning reads only the catalog: ChromaDB (a second of imports and opening) is left alone when nothing changed."""
    root = reset_root(tmp_path / "root")
    data = tmp_path / "data"
    assert run_script("index_personal.py", "--data-dir", data, root).code == 0
    unchanged = faulty_run("fail@rag_search.store.vectors.VectorIndex.open_local", data, root)
    assert unchanged.returncode == 0 and "faultrun:" not in unchanged.stderr, unchanged.stderr
    change(root)
    changed = faulty_run("fail@rag_search.store.vectors.VectorIndex.open_local", data, root)
    assert "faultrun:" in changed.stderr and changed.returncode != 0, "a run with something to write opens them"


def test_a_changing_run_loads_the_vectors_once(tmp_path):
    """Opening a collection loads its whole vector graph (0.3 s at 100k chunks, twice that at 200k). A run that writes
    checks its work through the connections it wrote with, instead of opening the new generation a second time."""
    root = reset_root(tmp_path / "root")
    data = tmp_path / "data"
    assert run_script("index_personal.py", "--data-dir", data, root).code == 0
    change(root)
    changed = faulty_run("fail@rag_search.store.vectors.VectorIndex.open_local#2", data, root)
    assert changed.returncode == 0 and "faultrun:" not in changed.stderr, changed.stderr
    assert json.loads(changed.stdout)["published"] is True


KEEP_PREVIOUS = "set@rag_search.store.local_vectors.KEEP_PREVIOUS_FROM=0"  # as an index of 64 MB would: these notes are small
CATCH_UP_STEPS = [
    "rag_search.store.catalog.Catalog.catch_up",
    "rag_search.store.vectors.VectorIndex.delete",  # the first delete and add of a run are the catch-up's
    "rag_search.store.vectors.VectorIndex.add",
]


@pytest.mark.parametrize("action", ["kill", "fail"])
@pytest.mark.parametrize("step", CATCH_UP_STEPS)
def test_a_run_that_dies_bringing_the_older_generation_up_to_date_loses_nothing(step, action, tmp_path):
    """A small change takes the generation before the current one and applies the current one's changes to it
    (generations.py). Killed there, the current generation still serves and the next run converges; failing there, the
    run copies the current generation instead and succeeds."""
    root = reset_root(tmp_path / "root")
    data = tmp_path / "data"
    assert run_script("index_personal.py", "--data-dir", data, root).code == 0
    (root / "keep.md").write_text("# Keep\n\nThe backup job runs at 03:00 and keeps fourteen daily snapshots.\n")
    (root / "warm.md").write_text("# Warm\n\nThe spare node stays powered on for failover drills.\n")
    for name in ("keep.md", "warm.md"):
        os.utime(root / name, (CHANGED_MTIME, CHANGED_MTIME))
    assert faulty_run(KEEP_PREVIOUS, data, root).returncode == 0  # keeps the first generation, to take
    change(root)
    assert run_script("index_personal.py", "--data-dir", tmp_path / "rebuilt", root).code == 0
    expected, before = comparable(tmp_path / "rebuilt"), comparable(data)

    result = faulty_run(f"{action}@{step}", data, root)
    assert "faultrun:" in result.stderr, "the step was reached"
    if action == "kill":
        check_recovery(result, data, root, expected, before)
    else:
        assert result.returncode == 0 and "copying the current one instead" in result.stderr, result.stderr
        assert comparable(data) == expected
