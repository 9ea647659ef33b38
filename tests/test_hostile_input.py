"""Hostile input end to end: the run goes on, says why it skipped, and loses nothing.

Each test indexes a root, adds one hostile thing and a good note, and indexes
again: the hostile thing is skipped with a one-line reason (or indexed, for odd
but valid names), the run exits 0, the new note is indexed and the earlier files
are still there. Invalid UTF-8 and NUL bytes in file contents are covered end to
end by test_cli_index_personal.py; here only file names that are not UTF-8.
"""

import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import SCRIPTS, call_script, files_in_store, run_script
from gitrepo import GitRepo

pytestmark = pytest.mark.processes  # a hang or a prompt ends a process, not the suite

EARLIER = {
    "alpha.md": "# Alpha\n\nThe alpha note says the backups run at two in the morning.",
    "beta.json": json.dumps({"decisions": [{"date": "2025-03-01", "decision": "Use Longhorn for volumes"}]}),
}
SIZE_LIMIT = "larger than the 4096 KiB limit (max_file_bytes)"


def index(data, root):
    return run_script("index_personal.py", "--data-dir", data, root, timeout=60)  # a hang fails the test


@pytest.fixture
def indexed(tmp_path):
    """A root indexed once: (root, data dir)."""
    root = tmp_path / "root"
    root.mkdir()
    for name, text in EARLIER.items():
        (root / name).write_text(text)
    data = tmp_path / "data"
    assert index(data, root).code == 0
    return root, data


def index_again(root, data):
    """Index with a good note beside the hostile input; it and the earlier files must all be in the store."""
    (root / "later.md").write_text("# Later\n\nA note added beside the hostile input.")
    result = index(data, root)
    assert result.code == 0, result
    assert set(EARLIER) | {"later.md"} <= set(files_in_store(data))
    return result


def assert_skipped(result, path, reason):
    """In the summary's skipped list, and one line on stderr."""
    assert {"file": str(path), "reason": reason} in result.json["skipped"]
    assert f"warning: skipped {path}: {reason}" in result.stderr.splitlines()


def test_a_200_mb_file_is_skipped_by_its_size(indexed):
    root, data = indexed
    huge = root / "huge.md"
    huge.touch()
    os.truncate(huge, 200 * 1024 * 1024)  # sparse: no disk space, no time
    result = index_again(root, data)
    assert_skipped(result, huge, SIZE_LIMIT)


def test_a_5_mb_single_line_is_skipped_by_its_size(indexed):
    root, data = indexed
    line = root / "one-line.txt"
    line.write_text("lorem " * 900_000)
    result = index_again(root, data)
    assert_skipped(result, line, SIZE_LIMIT)


def test_a_fifo_is_skipped_and_never_opened(indexed):
    root, data = indexed
    os.mkfifo(root / "pipe.md")  # opening it for reading would block until a writer came
    result = index_again(root, data)
    assert_skipped(result, root / "pipe.md", "not a regular file")


def test_symlink_loops_do_not_hang(indexed):
    root, data = indexed
    (root / "sub").mkdir()
    (root / "sub" / "inner.md").write_text("# Inner\n\nOnly once in the index.")
    (root / "sub" / "up").symlink_to("..")  # a directory loop: never followed
    (root / "a.md").symlink_to("b.md")
    (root / "b.md").symlink_to("a.md")
    result = index_again(root, data)
    assert_skipped(result, root / "a.md", "symlink loop")
    assert_skipped(result, root / "b.md", "symlink loop")
    assert [file for file in files_in_store(data) if "inner.md" in file] == ["sub/inner.md"]


def test_odd_but_valid_names_are_indexed_and_found(indexed):
    root, data = indexed
    weird = "weird\nname ✓ ﬁ e\u0301 (NFD) 🙂.md"
    rtl = "הערות \u202etxt.md"  # Hebrew, then a right-to-left override
    (root / weird).write_text("# Weird\n\nThe zanzibarquokka migrates in spring.")
    (root / rtl).write_text("# RTL\n\nThe marmaladeheron nests by the river.")
    result = index_again(root, data)
    assert result.json["added"] == 3 and result.json["skipped"] == []
    for word, name in (("zanzibarquokka", weird), ("marmaladeheron", rtl)):
        found = call_script("search.py", "--data-dir", data, "--mode", "lexical", word)
        assert found.code == 0, found
        assert found.json["results"][0]["file"] == name


def test_names_that_are_not_utf8_are_skipped(indexed):
    root, data = indexed
    root_bytes = os.fsencode(root)
    with open(root_bytes + b"/caf\xe9.md", "w") as handle:
        handle.write("# Latin-1 name\n\nbody")
    os.mkdir(root_bytes + b"/dossier-\xff")
    with open(root_bytes + b"/dossier-\xff/note.md", "w") as handle:
        handle.write("# Inside\n\nbody")
    result = index_again(root, data)
    assert_skipped(result, root / "caf\\xe9.md", "file name is not valid UTF-8")
    assert_skipped(result, root / "dossier-\\xff", "folder name is not valid UTF-8")


class _AuthWall(BaseHTTPRequestHandler):
    """Answers everything with 401 Basic, as a private repository does."""

    def do_GET(self):
        self.server.hits.append(self.path)
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def auth_wall(tmp_path):
    """A git remote over https on 127.0.0.1 (self-signed certificate) that wants credentials: its URL."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"],
        check=True, capture_output=True,
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AuthWall)
    server.hits = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_git_remote_that_wants_credentials_fails_fast_and_never_prompts(auth_wall, tmp_path, isolated_home):
    data = tmp_path / "data"
    good = GitRepo(tmp_path / "good-origin")
    good.write({"docs/guide.md": "# Guide\n\nThe frobnicator is configured in frob.yaml."})
    good.commit("docs")
    assert call_script("add_doc_source.py", "--id", "good", "--name", "Good", "--type", "git", "--url", good.url).code == 0
    assert call_script("index_docs.py", "--data-dir", data, "--all").code == 0
    good.write({"docs/later.md": "# Later\n\nAdded while the private remote is registered."})
    good.commit("more docs")
    url = f"https://127.0.0.1:{auth_wall.server_port}/repo.git"
    assert call_script("add_doc_source.py", "--id", "private", "--name", "Private", "--type", "git", "--url", url).code == 0

    env = {**os.environ, "GIT_SSL_NO_VERIFY": "1", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    started = time.monotonic()
    with open(out, "w") as stdout, open(err, "w") as stderr:
        # stdin stays open and is never written: a prompt would wait on it until the timeout.
        proc = subprocess.Popen([sys.executable, SCRIPTS / "index_docs.py", "--data-dir", data, "--all"],
                                stdin=subprocess.PIPE, stdout=stdout, stderr=stderr, env=env, cwd=isolated_home)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("index_docs.py hung on a remote that wants credentials")
        finally:
            proc.stdin.close()
    elapsed = time.monotonic() - started

    assert code == 9, err.read_text()
    assert elapsed < 20
    assert auth_wall.hits, "git must have asked the server"
    summaries = {summary["id"]: summary for summary in json.loads(out.read_text())["sources"]}
    assert summaries["private"]["status"] == "failed"
    assert "authentication failed" in summaries["private"]["error"].lower()
    assert "private failed" in err.read_text()
    assert (summaries["good"]["status"], summaries["good"]["added"]) == ("ok", 1)
    assert set(files_in_store(data, "docs")) == {"good/docs/guide.md", "good/docs/later.md"}
