"""Server mode: the same scripts against a real `chroma run` server on 127.0.0.1."""

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import run_script

pytestmark = pytest.mark.processes  # the scripts against a `chroma run` server (a session fixture: the guard cannot see it start)

TOKEN = "Bearer s3cret-for-tests"


class AuthProxy(BaseHTTPRequestHandler):
    """A reverse proxy that wants a bearer token, as one would put in front of Chroma (it has no auth)."""

    upstream_port = 0

    def relay(self):
        if self.headers.get("Authorization") != TOKEN:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization", "connection")}
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=30)
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = relay

    def log_message(self, *args):
        pass


def test_index_on_one_machine_and_search_from_another(chroma_server, state_dir, tmp_path):
    url, _ = chroma_server
    writer, reader = tmp_path / "writer", tmp_path / "reader"
    result = run_script("index_personal.py", "--chroma-url", url, "--data-dir", writer, state_dir)
    assert result.code == 0, result
    assert result.json["published"] is True and result.json["chunks"] > 10
    assert not list(writer.glob("personal/generations/g*/chroma/*.sqlite3")), "the vectors live on the server"

    found = run_script("search.py", "--data-dir", reader, "--top-k", "1", "why is ArgoCD self-heal off?",
                       env={"RAG_SEARCH_CHROMA_URL": url})
    assert found.code == 0, found
    assert found.json["results"][0]["file"] in ("notes/argocd-setup.md", "memory/decisions.json")
    exact = run_script("search.py", "--data-dir", reader, "--mode", "lexical", "--top-k", "1", "selfHeal",
                       env={"RAG_SEARCH_CHROMA_URL": url})
    assert exact.json["results"][0]["file"] == "notes/argocd-setup.md", "keyword search works from the server's chunks"

    (state_dir / "notes" / "zebra.md").write_text("# Zebra\n\nThe xylophonist-zebra token appears only here.\n")
    assert run_script("index_personal.py", "--chroma-url", url, "--data-dir", writer, state_dir).code == 0
    fresh = run_script("search.py", "--data-dir", reader, "--mode", "lexical", "--top-k", "1", "xylophonist",
                       env={"RAG_SEARCH_CHROMA_URL": url})
    assert fresh.json["results"][0]["file"] == "notes/zebra.md", "the keyword copy follows the server"


def test_headers_reach_an_authenticating_proxy(chroma_server, state_dir, tmp_path):
    _, port = chroma_server
    AuthProxy.upstream_port = port
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), AuthProxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    proxied = f"http://127.0.0.1:{proxy.server_port}"
    try:
        refused = run_script("index_personal.py", "--chroma-url", proxied, "--data-dir", tmp_path / "a", state_dir)
        assert refused.code == 7, refused
        assert "cannot reach the Chroma server" in refused.stderr
        allowed = run_script("index_personal.py", "--chroma-url", proxied, "--data-dir", tmp_path / "a", state_dir,
                             env={"RAG_SEARCH_CHROMA_HEADERS": f'{{"Authorization": "{TOKEN}"}}'})
        assert allowed.code == 0, allowed
    finally:
        proxy.shutdown()


@pytest.mark.parametrize(
    "args, env, code, message",
    [
        (["--chroma-url", "ftp://127.0.0.1:1"], {}, 6, "must be http(s)://host[:port]"),
        (["--chroma-url", "http://127.0.0.1:1/some/path"], {}, 6, "with no path"),
        ([], {"RAG_SEARCH_CHROMA_URL": "http://127.0.0.1:1", "RAG_SEARCH_CHROMA_HEADERS": "{not json"}, 6, "not valid JSON"),
        (["--chroma-url", "http://127.0.0.1:1"], {}, 7, "cannot reach the Chroma server at http://127.0.0.1:1"),
    ],
)
def test_bad_server_settings(state_dir, tmp_path, args, env, code, message):
    result = run_script("index_personal.py", *args, "--data-dir", tmp_path / "data", state_dir, env=env)
    assert result.code == code, result
    assert message in result.stderr


def test_the_keyword_copy_keeps_a_file_whose_chunks_span_two_pages():
    from rag_search.store.server_vectors import keyword_documents

    def chunk(chunk_id, text, file, ord_):
        return (chunk_id, text, {"source_id": "personal", "file": file, "chunk_index": ord_, "heading": "Notes"}, None)

    documents = keyword_documents([chunk("a:0", "first part", "a.md", 0), chunk("a:1", "second part", "a.md", 1),
                                   chunk("a:2", "third part", "a.md", 2), chunk("b:0", "other file", "b.md", 0)])
    by_file = {record.file: [chunk.id for chunk in chunks] for record, chunks in documents}
    assert by_file == {"a.md": ["a:0", "a:1", "a:2"], "b.md": ["b:0"]}
    assert documents[0][1][0].embed_text.startswith("Notes"), "the heading is part of the keyword text, as when indexing"


def test_the_keyword_copy_leaves_out_a_lead_in_as_indexing_does():
    """A continuation shown from its sentence's start is embedded and keyword-indexed from the overlap's start."""
    from rag_search.store.server_vectors import keyword_documents

    metadata = {"source_id": "docs", "file": "a.md", "chunk_index": 1, "heading": "Notes", "embedded_from": 15}
    (_, records), = keyword_documents([("a:1", "The lead-in is replicas reconcile.", metadata, None)])
    assert records[0].embed_text == "Notes\n\nreplicas reconcile."


def _note(folder, name: str, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder


def test_a_machine_with_another_fingerprint_leaves_the_others_chunks(chroma_server, tmp_path):
    """A machine with another model graph used to recreate the shared collection."""
    url, _ = chroma_server
    int8 = _note(tmp_path / "a-notes", "alpaca.md", "# Alpaca\n\nThe alpacafence runbook lives with machine A.\n")
    floating = _note(tmp_path / "b-notes", "bison.md", "# Bison\n\nThe bisongate runbook lives with machine B.\n")
    assert run_script("index_personal.py", "--chroma-url", url, "--data-dir", tmp_path / "a", int8).code == 0
    other = run_script("index_personal.py", "--chroma-url", url, "--data-dir", tmp_path / "b", floating,
                       env={"RAG_SEARCH_EMBEDDING": "float"})
    assert other.code == 0, other

    found = run_script("search.py", "--chroma-url", url, "--data-dir", tmp_path / "reader", "--mode", "dense", "--top-k", "20",
                       "alpacafence runbook")
    assert found.code == 0, found
    assert "alpaca.md" in [result["file"] for result in found.json["results"]], "machine A's chunks are still on the server"
    _note(int8, "llama.md", "# Llama\n\nA second note of machine A.\n")
    again = run_script("index_personal.py", "--chroma-url", url, "--data-dir", tmp_path / "a", int8)
    assert again.code == 0 and again.json["published"] is True, again


def test_a_writer_whose_collection_vanished_fails_loudly(chroma_server, tmp_path):
    import chromadb

    url, port = chroma_server
    notes = _note(tmp_path / "notes", "yak.md", "# Yak\n\nThe yakshaving runbook.\n")
    assert run_script("index_personal.py", "--chroma-url", url, "--data-dir", tmp_path / "a", notes).code == 0
    client = chromadb.HttpClient(host="127.0.0.1", port=port)
    for collection in client.list_collections():
        if collection.name.startswith("personal"):
            client.delete_collection(collection.name)
    _note(notes, "zebu.md", "# Zebu\n\nAnother note.\n")

    result = run_script("index_personal.py", "--chroma-url", url, "--data-dir", tmp_path / "a", notes)
    assert result.code == 7, result
    assert "no longer has" in result.stderr and "--full" in result.stderr
    rebuilt = run_script("index_personal.py", "--chroma-url", url, "--data-dir", tmp_path / "a", "--full", notes)
    assert rebuilt.code == 0 and rebuilt.json["chunks"] == 2, rebuilt


def test_a_machine_searching_the_server_ranks_documentation_pages_as_the_writer_does(chroma_server, tmp_path):
    """A documentation page's closeness as a whole comes from its page vector. The machine that wrote the
    pages keeps them in its catalog; another machine's keyword copy of the server's chunks computes the same."""
    url, _ = chroma_server
    handbook = _note(tmp_path / "handbook", "backup.md", "# Backups\n\nTake an etcd snapshot every night.\n\n"
                     "## Restore\n\nRestore the snapshot on a new control plane node.\n")
    _note(handbook, "overview.md", "# Overview\n\nFor backups, see the backup guide.\n")
    sources = tmp_path / "sources.json"
    assert run_script("add_doc_source.py", "--sources", sources, "--id", "handbook", "--name", "Handbook", "--type", "local",
                      "--path", handbook).code == 0
    writer, reader = tmp_path / "writer", tmp_path / "reader"
    assert run_script("index_docs.py", "--sources", sources, "--chroma-url", url, "--data-dir", writer, "--all").code == 0
    question = ("--index", "docs", "--explain", "how do I back up the cluster?")
    written = run_script("search.py", "--data-dir", writer, *question, env={"RAG_SEARCH_CHROMA_URL": url})
    copied = run_script("search.py", "--data-dir", reader, *question, env={"RAG_SEARCH_CHROMA_URL": url})
    assert written.code == copied.code == 0, (written, copied)
    closeness = [{result["file"]: result["explain"]["page_cosine"] for result in found.json["results"]} for found in (written, copied)]
    assert set(closeness[0]) == {"handbook/backup.md", "handbook/overview.md"}, closeness
    assert closeness[0] == pytest.approx(closeness[1], abs=1e-3)


def test_another_machine_sees_unchanged_git_pages_move_to_the_new_commit(chroma_server, tmp_path):
    """A Chroma server keeps each chunk's metadata, which other machines read: a git page the new commit left unchanged
    is written again there (locally only its catalog rows take the new commit)."""
    from conftest import store_contents
    from gitrepo import GitRepo

    url, _ = chroma_server
    repo = GitRepo(tmp_path / "origin")
    repo.write({"docs/network.md": "# Network\n\nkube-router programs the routes with BGP.\n",
                "docs/upgrade.md": "# Upgrade\n\nTake an etcd snapshot first.\n"})
    repo.commit("first")
    sources = tmp_path / "sources.json"
    assert run_script("add_doc_source.py", "--sources", sources, "--id", "k0s", "--name", "k0s", "--type", "git",
                      "--url", repo.url, "--path", "docs").code == 0
    writer = tmp_path / "writer"
    assert run_script("index_docs.py", "--sources", sources, "--chroma-url", url, "--data-dir", writer, "--all").code == 0
    repo.write({"docs/upgrade.md": "# Upgrade\n\nTake an etcd snapshot first, then drain the node.\n"})
    second = repo.commit("second")
    assert run_script("index_docs.py", "--sources", sources, "--chroma-url", url, "--data-dir", writer, "--all").code == 0
    seen = store_contents(tmp_path / "reader", "docs", server=url)
    network = [chunk["metadata"] for chunk in seen.values() if chunk["metadata"]["file"] == "k0s/docs/network.md"]
    assert network and all(metadata["commit"] == second for metadata in network), network
