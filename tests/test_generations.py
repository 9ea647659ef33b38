"""Index generations: searches read a complete index while the next one is built, whatever happens to the run."""

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import SCRIPTS, run_script, store_contents
from rag_search.generations import CURRENT, GENERATIONS, _acquire_write_lock
from rag_search.store import Store


def index(data, root, *args):
    return run_script("index_personal.py", "--data-dir", data, root, *args)


def generations(data):
    return sorted(path.name for path in (data / GENERATIONS).iterdir())


def comparable(data, collection="personal"):
    """Chunk id -> (text, metadata without indexed_at): equal for equal content, however it was built."""
    return {
        chunk_id: (chunk["text"], {k: v for k, v in chunk["metadata"].items() if k != "indexed_at"})
        for chunk_id, chunk in store_contents(data, collection).items()
    }


def test_each_changing_run_publishes_a_generation_and_old_ones_go_when_unread(state_dir, tmp_path):
    data = tmp_path / "data"
    assert index(data, state_dir).json["published"] is True
    assert (data / CURRENT).read_text().strip() == "g000001"
    assert index(data, state_dir).json["published"] is False, "nothing changed, nothing published"

    reader = Store.open_for_reading(data)  # a search that is still reading g000001
    (state_dir / "notes" / "new.md").write_text("# New\n\nA note about the MinIO bucket policy.\n")
    assert index(data, state_dir).json["published"] is True
    assert (data / CURRENT).read_text().strip() == "g000002"
    assert "g000001" in generations(data), "a generation being read is kept"
    assert reader.collection("personal").count() > 0, "the reader still answers from its generation"
    reader.close()

    index(data, state_dir)  # every run collects what no one reads
    assert generations(data) == ["g000002", "g000002.lock"]


def test_a_second_index_run_waits_then_gives_up_with_exit_8(state_dir, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    lock = _acquire_write_lock(data, 0)
    try:
        started = time.monotonic()
        result = index(data, state_dir, "--wait", "1")
        assert result.code == 8, result
        assert 1 <= time.monotonic() - started < 30
        assert f"pid {os.getpid()}" in result.stderr and "--wait" in result.stderr
    finally:
        os.close(lock)
    assert index(data, state_dir).code == 0


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

    assert (data / CURRENT).read_text().strip() == "g000001"
    assert comparable(data) == before, "the published index is untouched"
    found = run_script("search.py", "--data-dir", data, "ArgoCD self-heal")
    assert found.code == 0 and found.json["results"], found

    assert index(data, state_dir).code == 0
    assert not [name for name in generations(data) if name.startswith(".")], "the next run cleans up"
    rebuilt = tmp_path / "rebuilt"
    assert index(rebuilt, state_dir, "--full").code == 0
    assert comparable(data) == comparable(rebuilt)


@pytest.fixture
def small_disk(tmp_path):
    """A 200 MB tmpfs (needs root); the test is skipped where it cannot be mounted."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200m", "tmpfs", str(mount_point)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root?)")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=True)


def test_a_full_disk_mid_run_fails_clearly_and_the_previous_generation_still_serves(state_dir, small_disk):
    data = small_disk / "data"
    assert index(data, state_dir).code == 0
    generation = sum(path.stat().st_size for path in (data / GENERATIONS / "g000001").rglob("*") if path.is_file())
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    with open(small_disk / "filler", "wb") as filler:  # leave room to copy the generation, not to grow it
        filler.write(b"\0" * (free - generation - 300 * 1024))
    rng = random.Random(3)
    for number in range(60):  # about 1 MB of new chunks, more than the room left
        (state_dir / f"bulk-{number:03d}.md").write_text(f"# Bulk {number}\n\n" + " ".join(str(rng.random()) for _ in range(600)))

    result = index(data, state_dir)
    assert result.code == 7, result
    assert result.json["error"]["type"] == "DiskFull" and "previous index still serves" in result.stderr
    assert (data / CURRENT).read_text().strip() == "g000001"
    assert generations(data) == ["g000001", "g000001.lock"], "the failed run's work folder is gone"
    found = run_script("search.py", "--data-dir", data, "why is ArgoCD self-heal off?")
    assert found.code == 0 and found.json["results"][0]["file"] in ("notes/argocd-setup.md", "memory/decisions.json")
