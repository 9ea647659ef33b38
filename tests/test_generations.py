"""Index generations: searches read a complete index while the next one is built, whatever happens to the run.

Each collection has its own generations (<data>/personal/, <data>/docs/): a run
that changes one never copies or risks the other.
"""

import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import SCRIPTS, call_script, files_in_store, fill, marked_data_dir, run_script, store_contents


def index(data, root, *args):
    return call_script("index_personal.py", "--data-dir", data, root, *args)


def personal(data):
    return data / "personal"


def generations(data, collection="personal"):
    return sorted(path.name for path in (data / collection / "generations").iterdir())


def current(data, collection="personal"):
    return (data / collection / "CURRENT").read_text().strip()


def comparable(data, collection="personal"):
    """Chunk id -> (text, metadata without indexed_at): equal for equal content, however it was built."""
    return {
        chunk_id: (chunk["text"], {k: v for k, v in chunk["metadata"].items() if k != "indexed_at"})
        for chunk_id, chunk in store_contents(data, collection).items()
    }


def add_note(state_dir, name="new.md", text="# New\n\nA note about the MinIO bucket policy.\n"):
    (state_dir / "notes" / name).write_text(text)


def test_each_changing_run_publishes_a_generation_and_old_ones_go_when_unread(state_dir, tmp_path):
    data = tmp_path / "data"
    assert index(data, state_dir).json["published"] is True
    assert current(data) == "g000001"
    assert not (data / "docs").exists(), "a personal run never creates or copies the docs index"
    assert index(data, state_dir).json["published"] is False, "nothing changed, nothing published"

    reader = os.open(personal(data) / "generations" / "g000001", os.O_RDONLY)  # a search still reading g000001
    fcntl.flock(reader, fcntl.LOCK_SH)
    add_note(state_dir)
    assert index(data, state_dir).json["published"] is True
    assert current(data) == "g000002"
    assert "g000001" in generations(data), "a generation being read is kept"
    os.close(reader)

    index(data, state_dir, "--full")  # every run collects what no one reads
    assert generations(data) == ["g000003"]


def test_a_run_that_changes_nothing_copies_nothing(state_dir, tmp_path):
    """Plan before copy: the published generation is copied only once a run has something to write."""
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    probe = personal(data) / "generations" / current(data) / "copy-probe"
    os.mkfifo(probe)  # copying a named pipe fails, so a run that copies the generation cannot pass unnoticed

    unchanged = index(data, state_dir)
    assert unchanged.code == 0, unchanged
    assert unchanged.json["published"] is False
    searched = call_script("search.py", "--data-dir", data, "--index", "personal", "MinIO bucket policy")
    assert searched.code == 0, searched  # the refresh before a search finds nothing to do

    add_note(state_dir)
    changed = index(data, state_dir)
    assert changed.code != 0 and "copy-probe" in changed.stderr, "a run with something to write copies the generation"
    probe.unlink()
    assert index(data, state_dir).json["published"] is True


@pytest.mark.processes
def test_a_second_index_run_waits_then_gives_up_with_exit_8(state_dir, tmp_path):
    data = marked_data_dir(tmp_path / "data")
    personal(data).mkdir()
    with open(personal(data) / "write.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write(json.dumps({"pid": os.getpid(), "since": "now"}))
        lock.flush()
        started = time.monotonic()
        result = run_script("index_personal.py", "--data-dir", data, state_dir, "--wait", "1")  # another pid than the holder's
        assert result.code == 8, result
        assert 1 <= time.monotonic() - started < 30
        assert f"pid {os.getpid()}" in result.stderr and "--wait" in result.stderr
    assert index(data, state_dir).code == 0


def test_personal_and_docs_runs_do_not_wait_for_each_other(state_dir, tmp_path):
    data = marked_data_dir(tmp_path / "data")
    (data / "docs").mkdir()
    with open(data / "docs" / "write.lock", "w") as lock:  # a long docs run is in progress
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert index(data, state_dir, "--wait", "0").code == 0


@pytest.mark.processes
def test_a_killed_run_leaves_the_previous_index_serving_and_the_next_run_equals_a_rebuild(state_dir, tmp_path):
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    before = comparable(data)
    rng = random.Random(7)
    words = ["kernel", "volume", "network", "storage", "cluster", "ingress", "backup", "policy", "secret", "quota"]
    for number in range(80):
        text = " ".join(f"{rng.choice(words)}{rng.randint(0, 999)}" for _ in range(300))
        (state_dir / f"bulk-{number:03d}.md").write_text(f"# Bulk note {number}\n\n{text}\n")

    process = subprocess.Popen([sys.executable, str(SCRIPTS / "index_personal.py"), "--data-dir", str(data), str(state_dir)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not any(name.endswith(".work") for name in generations(data)) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.5)  # into the embedding and writing
    process.send_signal(signal.SIGKILL)
    process.wait()

    assert current(data) == "g000001"
    assert comparable(data) == before, "the published index is untouched"
    found = call_script("search.py", "--data-dir", data, "ArgoCD self-heal")
    assert found.code == 0 and found.json["results"], found

    assert index(data, state_dir).code == 0
    assert not [name for name in generations(data) if name.startswith(".")], "the next run cleans up"
    rebuilt = tmp_path / "rebuilt"
    assert index(rebuilt, state_dir, "--full").code == 0
    assert comparable(data) == comparable(rebuilt)


@pytest.mark.parametrize("garbage", ["", "\n", "g00000x\n", "../../etc\n", "\x00\xff"])
def test_a_garbled_current_falls_back_to_the_newest_generation_and_loses_nothing(garbage, state_dir, tmp_path):
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    before = comparable(data)
    (personal(data) / "CURRENT").write_bytes(garbage.encode("utf-8", "surrogateescape") if isinstance(garbage, str) else garbage)

    found = call_script("search.py", "--data-dir", data, "why is ArgoCD self-heal off?")
    assert found.code == 0 and found.json["results"], found
    assert "CURRENT" in found.stderr

    result = index(data, state_dir)
    assert result.code == 0, result
    assert "CURRENT" in result.stderr
    assert current(data) in generations(data)
    assert comparable(data) == before, "nothing was lost or rebuilt from nothing"
    assert result.json["embedded"] == 0


def test_a_missing_generation_folder_or_lock_file_is_not_fatal(state_dir, tmp_path, keep_previous):
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    add_note(state_dir)
    assert index(data, state_dir).code == 0
    assert "g000001" in generations(data)  # an older generation is still there (kept for the next small change)…
    shutil.rmtree(personal(data) / "generations" / "g000002")  # …and the current one is gone
    for lock in (personal(data) / "generations").glob("*.lock"):
        lock.unlink()

    found = call_script("search.py", "--data-dir", data, "why is ArgoCD self-heal off?")
    assert found.code == 0 and found.json["results"], found
    assert "g000001" in found.stderr

    assert index(data, state_dir).code == 0
    assert "notes/new.md" in files_in_store(data)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reading through the held folder needs /proc")
def test_a_store_reads_the_generation_it_locked_after_another_collection_is_renamed_into_place(example_data, tmp_path):
    """A copy of a collection renamed over the one a store reads has a g000001 too: the store, whose vectors open on
    first use, still reads the generation it locked (ChromaDB opened by path would find the other's files), and it
    says the published index is no longer its own."""
    from rag_search.core.config import load_settings
    from rag_search.store.records import Filters, Hit
    from rag_search.store.store import Store

    other_notes = tmp_path / "other-notes"
    other_notes.mkdir()
    (other_notes / "zebra.md").write_text("# Zebra migration\n\nThe zebracorn cluster moved to rack 7.\n")
    assert index(tmp_path / "other", other_notes).code == 0
    store = Store.open_for_reading(load_settings(data_dir=str(example_data)), "personal")
    try:
        assert not store.is_stale()
        chunks = {chunk.id: chunk for chunk in store.all_chunks()}
        shutil.copytree(personal(tmp_path / "other"), tmp_path / "restored")
        personal(example_data).rename(tmp_path / "replaced")
        (tmp_path / "restored").rename(personal(example_data))
        assert generations(example_data) == ["g000001"]

        vector = np.random.default_rng(7).standard_normal(store.built_as()["dimension"]).astype(np.float32)
        vector /= np.linalg.norm(vector)
        nearest = store.dense(vector, 5, Filters())
        scored = store.fill_scores([Hit(chunk_id, "personal", 0.0, chunk.text, chunk.metadata) for chunk_id, chunk in chunks.items()],
                                   vector)
        assert len(nearest) == 5 and {hit.id for hit in nearest} <= set(chunks)
        assert {hit.id for hit in scored} == set(chunks)
        assert store.is_stale()
    finally:
        store.close()


def test_a_full_disk_mid_run_fails_clearly_and_the_previous_generation_still_serves(state_dir, small_disk):
    data = small_disk / "data"
    assert index(data, state_dir).code == 0
    generation = sum(path.stat().st_size for path in (personal(data) / "generations" / "g000001").rglob("*") if path.is_file())
    fill(small_disk, leave_bytes=generation + 300 * 1024)  # room to copy the generation, not to grow it
    rng = random.Random(3)
    for number in range(60):  # about 1 MB of new chunks, more than the room left
        (state_dir / f"bulk-{number:03d}.md").write_text(f"# Bulk {number}\n\n" + " ".join(str(rng.random()) for _ in range(600)))

    result = index(data, state_dir)
    assert result.code == 7, result
    assert result.json["error"]["type"] == "DiskFull"
    assert f"in {data}" in result.stderr and " MB" in result.stderr and "free" in result.stderr
    assert "--full" not in result.stderr, "a full disk is not repaired by rebuilding"
    assert current(data) == "g000001"
    assert generations(data) == ["g000001"], "the failed run's work folder is gone"
    found = call_script("search.py", "--data-dir", data, "why is ArgoCD self-heal off?")
    assert found.code == 0 and found.json["results"][0]["file"] in ("notes/argocd-setup.md", "memory/decisions.json")


@pytest.mark.processes
def test_searches_answer_on_a_full_disk(state_dir, small_disk):
    data = small_disk / "data"
    assert index(data, state_dir).code == 0
    before = run_script("search.py", "--data-dir", data, "why is ArgoCD self-heal off?")
    assert before.code == 0, before
    fill(small_disk)
    for _ in range(2):
        found = run_script("search.py", "--data-dir", data, "why is ArgoCD self-heal off?")
        assert found.code == 0, found
        assert [r["file"] for r in found.json["results"]] == [r["file"] for r in before.json["results"]]


@pytest.mark.processes
def test_a_sqlite_file_copied_while_another_process_writes_it_is_a_committed_state(tmp_path):
    """Searches write ChromaDB's SQLite file as they open it; a generation copied meanwhile must still be consistent.

    The writer's transaction outgrows its cache, so uncommitted pages already overwrite committed ones in the file
    when the copy starts."""
    import sqlite3

    from rag_search.store.generations import copy_sqlite

    source = tmp_path / "busy.sqlite"
    with contextlib.closing(sqlite3.connect(source)) as db:
        db.execute("CREATE TABLE rows (n INTEGER, payload TEXT)")
        db.executemany("INSERT INTO rows VALUES (?, ?)", ((i, "x" * 500) for i in range(5000)))
        db.commit()
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('PRAGMA cache_size = 5')\n"
        "db.execute('BEGIN')\n"
        "db.execute(\"UPDATE rows SET payload = 'y' || substr(payload, 2)\")\n"
        "print('spilled', flush=True)\n"
        "time.sleep(1)\n"
        "db.execute('COMMIT')\n"
    ), str(source)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "spilled"
        target = tmp_path / "copy.sqlite"
        copy_sqlite(source, target)
        with contextlib.closing(sqlite3.connect(target)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert db.execute("SELECT COUNT(DISTINCT substr(payload, 1, 1)) FROM rows").fetchone()[0] == 1, "half a transaction"
    finally:
        writer.kill()
        writer.wait()


def test_chromadb_holds_vectors_and_filter_fields_while_text_and_metadata_live_in_the_catalog(example_data):
    """ChromaDB given the text and metadata stored each chunk three times over (with its own full-text index): half of
    an index's size, copied by every run that writes. Now it keeps ids, vectors and what filters need; results still
    carry the text and metadata, read from the catalog."""
    import chromadb
    from chromadb.config import Settings

    folder = personal(example_data) / "generations" / current(example_data) / "chroma"
    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    stored = client.get_collection("personal").get(include=["documents", "metadatas"])
    assert stored["ids"] and stored["documents"] == [None] * len(stored["ids"])
    assert set().union(*(metadata.keys() for metadata in stored["metadatas"])) <= {"source_id", "date_ts", "type", "tags"}
    assert any("source_id" in metadata for metadata in stored["metadatas"])

    result = call_script("search.py", "--data-dir", example_data, "--index", "personal", "--mode", "dense", "--top-k", "3",
                        "--since", "2000-01-01", "MinIO bucket policy")
    assert result.code == 0, result
    hits = result.json["results"]
    assert hits and all(hit["chunk"].strip() and hit["file"] and hit["metadata"]["date"] for hit in hits)


def test_a_reopened_index_replays_few_writes_into_its_vector_graph(tmp_path):
    """ChromaDB persists its HNSW graph only every `sync_threshold` writes; every process that opens the index replays
    the writes since into the graph first (by default up to 999: 1-2 s at 100k chunks, paid by each cold search and
    twice by each index run). A small threshold keeps that replay short."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for number in range(250):
        (notes / f"note-{number:03}.md").write_text(f"# Note {number}\n\nThe backup of volume {number} runs at night.\n")
    data = tmp_path / "data"
    assert index(data, notes).code == 0
    db = sqlite3.connect(f"file:{personal(data) / 'generations' / current(data) / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True)
    synced = dict(db.execute("SELECT s.scope, m.seq_id FROM segments s JOIN max_seq_id m ON m.segment_id = s.id").fetchall())
    db.close()
    assert synced["METADATA"] >= 250, synced  # every write reached the metadata segment
    assert synced["METADATA"] - synced.get("VECTOR", 0) < 100, synced


def test_an_index_of_the_earlier_layout_is_rebuilt_with_its_own_vectors(state_dir, tmp_path):
    """Catalog schema 6 moved the text out of ChromaDB, so every index of schema 5 is rebuilt once. Its vectors are still
    right for its texts (same model, graph and chunking): the rebuild takes them by text hash instead of embedding
    everything again, which at 200k chunks is an hour."""
    import chromadb
    from chromadb.config import Settings

    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    contents = store_contents(data)
    generation = personal(data) / "generations" / current(data)
    client = chromadb.PersistentClient(path=str(generation / "chroma"), settings=Settings(anonymized_telemetry=False))
    collection = client.get_collection("personal", embedding_function=None)  # made like schema 5: text and metadata in it
    stored = collection.get(include=["embeddings"])
    ids = stored["ids"]
    collection.update(ids=ids, embeddings=stored["embeddings"], documents=[contents[i]["text"] for i in ids],
                      metadatas=[contents[i]["metadata"] for i in ids])
    fingerprint = json.loads(collection.metadata["rag_search_fingerprint"])
    collection.modify(metadata={**collection.metadata, "rag_search_fingerprint": json.dumps({**fingerprint, "schema": 5})})
    del collection, client
    db = sqlite3.connect(generation / "catalog.sqlite")
    db.execute("PRAGMA user_version = 5")
    db.close()

    rebuilt = index(data, state_dir)
    assert rebuilt.code == 0, rebuilt
    assert rebuilt.json["rebuilt"] is True and rebuilt.json["chunks"] == len(ids)
    assert rebuilt.json["embedded"] == 0, rebuilt.json
    assert comparable(data) == {i: (c["text"], {k: v for k, v in c["metadata"].items() if k != "indexed_at"}) for i, c in contents.items()}
    before = dict(zip(ids, stored["embeddings"], strict=True))
    now = vectors_by_id(data)  # the new generation: a path of its own, so no cached client serves it
    assert all(np.allclose(vector, before[i]) for i, vector in now.items()), "each its own vector"


@pytest.mark.parametrize("damage", ["keyword row", "vector"])
def test_a_work_generation_that_disagrees_with_itself_is_never_published(damage, state_dir, tmp_path):
    """Verification before publishing: catalog, keyword index and vectors must hold the same chunks."""
    sys.path.insert(0, str(SCRIPTS))
    from rag_search.core.config import load_settings
    from rag_search.core.errors import StoreError
    from rag_search.model.embedding import find_model
    from rag_search.store.store import fingerprint
    from rag_search.store.store_writer import StoreWriter

    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    before, published = comparable(data), current(data)
    settings = load_settings(data_dir=str(data))
    store = StoreWriter.open(settings, "personal", fingerprint(find_model(), settings.embedding))
    try:
        keys = sorted(store.documents())
        assert store.remove(keys[:1]) > 0
        if damage == "keyword row":
            db = sqlite3.connect(store.folder / "catalog.sqlite")
            with db:
                db.execute("DELETE FROM chunk_terms WHERE rowid = (SELECT MIN(num) FROM chunks)")
            db.close()
        else:
            survivor = store.document_chunks(keys[1])[0].id
            store._vectors.index.delete([survivor])
        with pytest.raises(StoreError, match="inconsistent"):
            store.commit()
    finally:
        store.close()
    assert current(data) == published and comparable(data) == before


def vectors_by_id(data, generation=None, collection="personal"):
    """{chunk id: vector} as ChromaDB holds them in a generation (default: the current one)."""
    import chromadb
    from chromadb.config import Settings

    folder = data / collection / "generations" / (generation or current(data, collection)) / "chroma"
    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    stored = client.get_collection(collection, embedding_function=None).get(include=["embeddings"])
    return dict(zip(stored["ids"], np.asarray(stored["embeddings"]), strict=True))


def catalog_inode(data, generation):
    return (personal(data) / "generations" / generation / "catalog.sqlite").stat().st_ino


def test_a_small_index_is_copied_at_each_run_not_kept_twice(state_dir, tmp_path):
    """Keeping the generation before the published one, to bring it up to date instead of copying, doubles the data
    dir; below KEEP_PREVIOUS_FROM a copy costs less (bench_docs_refresh.py: a 22 MB docs index gained 22.6 MB at its
    first refresh). Such an index holds one generation at rest, and each change is copied."""
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    add_note(state_dir)
    assert index(data, state_dir).json["published"] is True
    assert generations(data) == ["g000002"]
    another_change(state_dir)
    assert index(data, state_dir).json["published"] is True
    assert generations(data) == ["g000003"]
    found = call_script("search.py", "--data-dir", data, "--index", "personal", "--mode", "dense", "where do the Grafana dashboards live?")
    assert found.code == 0 and found.json["results"][0]["file"].endswith("other.md"), found


def two_generations(data, state_dir):
    """g000001, then g000002 built from it with a small change: g000002 records what it added and keeps g000001 (in
    tests that ask for keep_previous)."""
    assert index(data, state_dir).code == 0
    add_note(state_dir)
    assert index(data, state_dir).json["published"] is True
    assert generations(data) == ["g000001", "g000002"], "the predecessor of a small change is kept"


def another_change(state_dir):
    add_note(state_dir, "other.md", "# Other\n\nThe Grafana dashboards live in the monitoring folder.\n")
    (state_dir / "notes" / "new.md").unlink()


def test_a_small_change_brings_the_older_generation_up_to_date_instead_of_copying_the_index(state_dir, tmp_path, keep_previous):
    """A copy costs in proportion to the whole index (at 200k chunks a gigabyte written, flushed and deleted), however
    small the change. The generation before the current one is taken instead and given the current one's changes."""
    data = tmp_path / "data"
    two_generations(data, state_dir)
    older, before = catalog_inode(data, "g000001"), vectors_by_id(data)
    another_change(state_dir)
    assert index(data, state_dir).json["published"] is True
    assert generations(data) == ["g000002", "g000003"]
    assert catalog_inode(data, "g000003") == older, "g000001's folder became g000003"

    rebuilt = tmp_path / "rebuilt"
    assert index(rebuilt, state_dir, "--full").code == 0
    assert comparable(data) == comparable(rebuilt)
    after, fresh = vectors_by_id(data), vectors_by_id(rebuilt)
    assert after.keys() == fresh.keys()
    assert all(np.array_equal(after[i], before[i]) for i in after.keys() & before.keys()), "kept chunks keep their vectors"
    cosine = {i: float(np.dot(after[i], fresh[i]) / np.linalg.norm(after[i]) / np.linalg.norm(fresh[i])) for i in after}
    assert min(cosine.values()) > 0.95, "every chunk has its own text's vector"
    found = call_script("search.py", "--data-dir", data, "--index", "personal", "--mode", "dense", "where do the Grafana dashboards live?")
    assert found.code == 0 and found.json["results"][0]["file"].endswith("other.md"), found


def test_an_older_generation_a_search_holds_is_copied_around_not_taken(state_dir, tmp_path, keep_previous):
    data = tmp_path / "data"
    two_generations(data, state_dir)
    older, before = catalog_inode(data, "g000001"), comparable(data)
    reader = os.open(personal(data) / "generations" / "g000001", os.O_RDONLY)  # a long search still reading g000001
    fcntl.flock(reader, fcntl.LOCK_SH)
    try:
        another_change(state_dir)
        assert index(data, state_dir).json["published"] is True
        assert catalog_inode(data, "g000001") == older and catalog_inode(data, "g000003") != older
    finally:
        os.close(reader)
    rebuilt = tmp_path / "rebuilt"
    assert index(rebuilt, state_dir, "--full").code == 0
    assert comparable(data) == comparable(rebuilt) != before


def test_an_older_generation_that_cannot_be_brought_up_to_date_is_replaced_by_a_copy(state_dir, tmp_path, keep_previous):
    data = tmp_path / "data"
    two_generations(data, state_dir)
    shutil.rmtree(personal(data) / "generations" / "g000001" / "chroma")
    another_change(state_dir)
    result = index(data, state_dir)
    assert result.code == 0 and result.json["published"] is True, result
    assert "copying the current one instead" in result.stderr
    rebuilt = tmp_path / "rebuilt"
    assert index(rebuilt, state_dir, "--full").code == 0
    assert comparable(data) == comparable(rebuilt)
    assert vectors_by_id(data).keys() == vectors_by_id(rebuilt).keys()


def test_status_reports_the_disk_a_collection_takes_with_the_generation_kept_for_small_changes(state_dir, tmp_path, keep_previous):
    data = tmp_path / "data"
    two_generations(data, state_dir)
    result = call_script("status.py", "--data-dir", data)
    assert result.code == 0, result
    personal_status = result.json["collections"]["personal"]
    kept = sum(path.stat().st_size for path in (personal(data) / "generations" / "g000001").rglob("*") if path.is_file())
    assert personal_status["disk_bytes"] >= personal_status["size_bytes"] + kept


def page_vectors_agree(data) -> int:
    """Check every document's stored page vector against its chunks' vectors in ChromaDB (their normalised mean);
    returns the number of documents checked."""
    vectors = vectors_by_id(data)
    with sqlite3.connect(personal(data) / "generations" / current(data) / "catalog.sqlite") as db:
        chunks: dict[str, list[str]] = {}
        for chunk_id, key in db.execute("SELECT id, doc_key FROM chunks"):
            chunks.setdefault(key, []).append(chunk_id)
        stored = dict(db.execute("SELECT key, vector FROM documents"))
    assert set(stored) == set(chunks)
    for key, blob in stored.items():
        mean = np.mean([vectors[chunk_id] for chunk_id in chunks[key]], axis=0)
        assert np.allclose(np.frombuffer(blob, dtype=np.float32), mean / np.linalg.norm(mean), atol=1e-5), key
    return len(stored)


def test_each_document_keeps_the_mean_of_its_chunks_vectors_through_changes(state_dir, tmp_path):
    """Every document keeps its page vector, the normalised mean of its chunks' vectors (documentation pages
    rank by its cosine), in the catalog when the document is written. A document that changes in part keeps the vectors
    of its unchanged chunks (not embedded again), and a small change brings the generation before up to date by copying
    rows: both must keep it right."""
    data = tmp_path / "data"
    assert index(data, state_dir).code == 0
    assert page_vectors_agree(data) > 5
    runbook = state_dir / "notes" / "k0s-cluster.md"
    for n in range(2):
        runbook.write_text(runbook.read_text() + f"\n## Afterwards {n}\n\nTell the on-call channel the release is unstuck.\n")
        changed = index(data, state_dir)
        assert changed.code == 0 and 0 < changed.json["embedded"] < changed.json["chunks"], changed.json
        page_vectors_agree(data)


def test_touching_a_page_sets_its_fields_in_each_chunk_and_nothing_else(tmp_path):
    """Catalog.touch, which restamps every unchanged page of a moved git source: the fields given are set in each of the
    page's chunks (a None value removes one), the chunks' other fields and other pages stay as they were."""
    from rag_search.store.catalog import Catalog
    from rag_search.store.records import ChunkRecord, DocumentRecord

    def page(n):
        key = f"docs:page-{n}.md"
        chunks = [ChunkRecord(f"{key}:{i}", i, f"page {n} part {i}", f"page {n} part {i}", f"{key}{i}",
                              {"source_id": "docs", "file": key, "heading": f"Über {i}", "commit": "c0", "url": f"u{n}"})
                  for i in range(3)]
        return DocumentRecord(key, "docs", key, f"blob-{n}|c0", f"hash-{n}", len(chunks), "t0"), chunks

    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.write([page(n) for n in range(3)])
    catalog.touch([("docs:page-1.md", "blob-1|c1", {"etag": "x"}, {"commit": "c1", "url": None, "doc_version": "v2"}),
                   ("docs:page-2.md", "blob-2|c1", None, None)])
    touched = [chunk.metadata for chunk in catalog.document_chunks("docs:page-1.md")]
    assert touched == [{"source_id": "docs", "file": "docs:page-1.md", "heading": f"Über {i}", "commit": "c1", "doc_version": "v2"}
                       for i in range(3)]
    assert [chunk.metadata["commit"] for n in (0, 2) for chunk in catalog.document_chunks(f"docs:page-{n}.md")] == ["c0"] * 6
    catalog.close()


def test_catching_up_after_a_commit_rewrites_the_changed_page_alone(tmp_path):
    """A git commit that edits one page of many gives every other page only a new commit (its identity and provenance
    move, its text stays). The generation before the published one, brought up to date (Catalog.catch_up), takes the
    edited page's chunks and the other pages' new provenance: its catalog grows by about one page, not by the index
    (every page's chunk and keyword rows deleted and written again grew a 22 MB index by up to 1.6 MB a commit)."""
    from rag_search.store.catalog import Catalog
    from rag_search.store.records import ChunkRecord, DocumentRecord

    def page(n, commit, words):
        key = f"docs:page-{n}.md"
        chunks = [ChunkRecord(f"{key}:{i}:{words}", i, text := f"page {n} section {i} " + words * 60, text, f"{key}{i}{words}",
                              {"source_id": "docs", "file": key, "commit": commit}) for i in range(20)]
        return DocumentRecord(key, "docs", key, f"blob-{n}-{words}|{commit}", f"hash-{n}-{words}", len(chunks), "t0"), chunks

    published, previous = tmp_path / "published.sqlite", tmp_path / "previous.sqlite"
    for path in (published, previous):
        catalog = Catalog(path)
        catalog.write([page(n, "c0", "lorem ipsum dolor ") for n in range(60)])
        catalog.close()
    catalog = Catalog(published)
    catalog.touch([(f"docs:page-{n}.md", f"blob-{n}-lorem ipsum dolor |c1", None, {"commit": "c1"}) for n in range(1, 60)])
    catalog.write([page(0, "c1", "edited words here ")])
    catalog.close()
    size = previous.stat().st_size
    reader, behind = Catalog(published, writable=False), Catalog(previous)
    keys, removed, added = reader.difference(previous)
    behind.catch_up(published, keys)
    assert len(removed) == len(added) == 20
    assert [chunk.metadata["commit"] for chunk in behind.document_chunks("docs:page-7.md")] == ["c1"] * 20
    assert behind.all_chunks() == reader.all_chunks()
    reader.close()
    behind.close()
    one_page = sum(len(chunk.text) for chunk in page(0, "c1", "edited words here ")[1])
    assert previous.stat().st_size - size < 3 * one_page, (size, previous.stat().st_size, one_page)
