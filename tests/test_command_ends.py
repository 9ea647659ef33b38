"""How a command ends when it is stopped (Ctrl-C, SIGTERM), and what a quiet (nightly) run leaves on stderr."""

import hashlib
import json
import signal
import subprocess
import sys
import time

import pytest

from conftest import SCRIPTS, add_source, index_docs, run_script
from rag_search.core import cli
from webserver import DocsSite

pytestmark = pytest.mark.processes  # real signals to real commands


def digest(folder) -> str:
    """The bytes of every file under `folder`, by relative path."""
    sha = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        sha.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()


def bulk_notes(folder, count=300):
    """Enough distinct notes that embedding them takes a few seconds: an index run that can be caught mid-way."""
    folder.mkdir()
    for n in range(count):
        (folder / f"note-{n:03}.md").write_text(f"# Note {n}\n\nHost h{n} runs service s{n * 7919 % 1000} in rack {n % 13}; "
                                                f"its backup window opens at {n % 24}:{n % 60:02} and it pages team t{n % 5}.\n")


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_index_run_exits_with_its_code_and_json_and_leaves_the_published_index_alone(example_data, tmp_path, signum,
                                                                                              code):
    bulk_notes(tmp_path / "bulk")
    root = example_data / "personal"
    published = (root / "CURRENT").read_text().strip()
    before = digest(root / "generations" / published)
    process = subprocess.Popen([sys.executable, str(SCRIPTS / "index_personal.py"), "--data-dir", str(example_data),
                                str(tmp_path / "bulk")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not list((root / "generations").glob(".*.work")):  # the run is writing its next generation
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.02)
    time.sleep(0.3)  # past the imports, into the embedding (a stop during an import: the test below)
    assert process.poll() is None, process.communicate()
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == code, (stdout, stderr)
    error = json.loads(stdout)["error"]
    assert error["code"] == code and error["message"] and error["hint"], error
    assert stderr.splitlines()[-1].startswith("error: ") and "hint: " in stderr.splitlines()[-1], stderr
    assert (root / "CURRENT").read_text().strip() == published
    assert [path.name for path in (root / "generations").iterdir()] == [published], "the unfinished work is removed"
    assert digest(root / "generations" / published) == before


def test_a_ctrl_c_that_comes_while_a_native_module_is_imported_is_an_interruption_too(capsys):
    """pybind11 modules (onnxruntime) turn the KeyboardInterrupt of their import into ImportError("initialization failed")."""
    def importing():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc

    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        assert cli.run(importing) == 130
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["code"], error["type"]) == (130, "Interrupted")
def test_quiet_runs_keep_off_stderr_what_every_run_repeats_and_the_summary_reports(state_dir, tmp_path):
    """The nightly timer's runs (--quiet): no doc source registered, a sitemap listing pages outside the docs folder, a
    file skipped or left out as a credential file each night. The summary has them; stderr keeps real problems."""
    data = tmp_path / "data"
    no_sources = index_docs(data, "--all", "--quiet")
    assert no_sources.code == 0 and no_sources.json["sources"] == [], no_sources
    assert no_sources.stderr == ""
    (state_dir / "broken.json").write_text('{"half": ')
    (state_dir / ".env").write_text("API_KEY=not-really\n")
    gone = tmp_path / "unplugged"
    gone.mkdir()
    assert run_script("index_personal.py", "--data-dir", data, state_dir, gone, "--quiet").code == 0
    gone.rmdir()
    for _ in range(2):  # the second night repeats the first
        personal = run_script("index_personal.py", "--data-dir", data, "--quiet")
        assert personal.code == 0, personal
        assert personal.json["skipped"] and personal.json["secret_files"] == 1
        assert personal.json["missing_roots"] == [str(gone)]
        assert personal.stderr.splitlines() == [line for line in personal.stderr.splitlines() if str(gone) in line], \
            "a missing root is a real problem, still said"
        assert personal.stderr
    with DocsSite() as site:
        add_source("--id", "argocd", "--name", "Argo CD", "--type", "web", "--base-url", site.url, "--sitemap", "sitemap.xml")
        for _ in range(2):
            docs = index_docs(data, "--all", "--quiet")
            assert docs.code == 0, docs
            assert docs.stderr == ""
            assert "entries outside" in docs.json["sources"][0]["notes"][0]
        loud = index_docs(data, "--all")
    assert "entries outside" in loud.stderr, "without --quiet the notes are still said"
