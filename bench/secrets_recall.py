#!/usr/bin/env python3
"""Do credentials reach the index? A hostile corpus indexed through the scripts, then searched for leaks.

bench/secrets_corpus.py plants fake, well-formed credentials (and hard negatives that
must survive) in notes, JSON, JSONL, YAML, text and HTML. This indexes them the way a
user would: a personal root, a git source (a repository made here, cloned over
file://), a local folder, and a web source (the HTML served on 127.0.0.1). Then a
credential counts as leaked if it, or any 12-character run of it, is

- stored anywhere in the data dir (every file's bytes, SQLite and HNSW files included,
  case-insensitively), except the git clone of the source repository, which is the
  user's own repository, not the index; or
- in a search result (text or metadata) for its context words or for its prefix.

It also counts redactions per 1,000 chunks on real documentation (docs-faq, each of its
14 doc sets as one git or web source indexes it, and as strictly as personal notes are
redacted), on an API-reference corpus (bench/secrets_apidocs.py: four gateways' docs,
full of credential-shaped examples) and on SciFact abstracts, read in place, chunked by
the product: every one is a false positive. Documentation is redacted as the index
writer does it: a value another document of the same source shows is a documented
default (secrets.SourceCensus), and a document redacted before the second one showed
it is redacted again. The real keys pasted into the API corpus must all be redacted.

    .venv/bin/python bench/secrets_recall.py [--seed 0] [--keep DIR] [--json FILE]
    .venv/bin/python bench/secrets_recall.py --only-false-positives
"""

import argparse
import functools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))
sys.path.insert(0, str(PROJECT / "bench"))

from secrets_apidocs import generate as generate_apidocs  # noqa: E402
from secrets_corpus import credentials, generate, negatives  # noqa: E402

SCRIPTS = PROJECT / "scripts"
SHARED = PROJECT.parent / "shared" / "bench"
WINDOW = 12
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.org"}


def run(script: str, *args, env: dict) -> dict:
    completed = subprocess.run([sys.executable, str(SCRIPTS / script), *map(str, args)], capture_output=True, text=True, env=env)
    if completed.returncode not in (0, 9):
        raise SystemExit(f"{script} failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return json.loads(completed.stdout)


def index_corpus(root: Path, data: Path, env: dict) -> None:
    """The four channels, indexed by the scripts."""
    import os

    git_env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root / "git")], check=True, env=git_env)
    subprocess.run(["git", "-C", str(root / "git"), "add", "-A"], check=True, env=git_env)
    subprocess.run(["git", "-C", str(root / "git"), "commit", "-q", "-m", "docs"], check=True, env=git_env)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root / "web")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}/"
        pages = (root / "web" / "pages.txt").read_text().split()
        every = "**/*"
        run("add_doc_source.py", "--id", "repo", "--name", "Repo", "--type", "git", "--url", f"file://{root / 'git'}",
            f"--glob={every}", env=env)
        run("add_doc_source.py", "--id", "folder", "--name", "Folder", "--type", "local", "--path", root / "local", f"--glob={every}",
            env=env)
        run("add_doc_source.py", "--id", "site", "--name", "Site", "--type", "web", "--base-url", base, "--pages", *pages, env=env)
        run("index_personal.py", "--data-dir", data, root / "personal", env=env)
        summary = run("index_docs.py", "--data-dir", data, "--all", env=env)
        failed = [s for s in summary["sources"] if s["status"] != "ok"]
        if failed:
            raise SystemExit(f"sources did not index: {failed}")
    finally:
        server.shutdown()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def secret_windows(root: Path, planted) -> dict[str, list[str]]:
    """{value: its 12-character runs that only the secret has}: runs also found in the corpus once every credential
    is removed (the base64 of "-----BEGIN" starts both a key and a certificate) or in a redaction marker prove nothing."""
    public = "\n".join(path.read_text(errors="replace") for path in root.rglob("*") if path.is_file())
    for item in planted:
        public = public.replace(item.value, " ")
    public = (public + " ".join(f"[REDACTED:{item.kind}]" for item in planted)).lower()
    return {item.value: [window for i in range(max(1, len(item.value) - WINDOW + 1))
                         if (window := item.value[i : i + WINDOW]).lower() not in public] for item in planted}


def stored_leaks(data: Path, planted, windows: dict[str, list[str]]) -> dict[str, str]:
    """{value: file} for credentials found in the data dir's files (the source clone excepted)."""
    blobs = []
    for path in data.rglob("*"):
        if path.is_file() and not any(part == "repo" for part in path.relative_to(data).parts[:3]):
            blobs.append((path, path.read_bytes().lower()))
    leaks = {}
    for item in planted:
        for window in windows[item.value]:
            needle = window.lower().encode()
            hit = next((path for path, blob in blobs if needle in blob), None)
            if hit:
                leaks[item.value] = str(hit.relative_to(data))
                break
    return leaks


def lost_negatives(data: Path, keep) -> list:
    """Hard negatives whose first or last 12 characters are no longer in the index (a long one may span chunks)."""
    index = b"".join(path.read_bytes().lower() for path in data.rglob("*.sqlite*") if path.is_file())
    return [item for item in keep if any(window.lower().encode() not in index for window in (item.value[:WINDOW], item.value[-WINDOW:]))]


def search_leaks(data: Path, planted, windows: dict[str, list[str]]) -> dict[str, str]:
    """{value: query} for credentials that a search for their context words or prefix returns."""
    from rag_search.core.config import load_settings
    from rag_search.search.retrieval import Searcher, SearchOptions

    searcher = Searcher(load_settings(data_dir=str(data)))
    leaks = {}
    try:
        for item in planted:
            prefix = re.match(r"[A-Za-z]+[_.-]?", item.value)
            for query in filter(None, (item.context_words, prefix.group(0) if prefix else None)):
                hits = searcher.search(query, SearchOptions(top_k=10, per_file=0)).hits
                shown = "\n".join(hit.text + json.dumps(hit.metadata, ensure_ascii=False) for hit in hits).lower()
                if any(window.lower() in shown for window in windows[item.value]):
                    leaks[item.value] = query
                    break
    finally:
        searcher.close()
    return leaks


def false_positives() -> dict:
    """Redactions per 1,000 chunks on docs-faq, the API-reference corpus and SciFact, chunked as the product chunks them;
    and which of the real keys pasted into the API corpus survived."""
    from rag_search.model.embedding import TokenCounter, find_model
    from rag_search.text import parsing
    from rag_search.text.chunking import Chunker
    from rag_search.text.sections import ParseError

    model = find_model()
    chunker = Chunker(TokenCounter(model), model.max_tokens)

    def count(name: str, redacted: str) -> tuple[int, int, list[str]]:
        try:
            chunks = chunker.chunk(parsing.parse("markdown", redacted, name).sections)
        except ParseError:
            return 0, 0, []
        marked = [chunk.text for chunk in chunks if "[REDACTED:" in chunk.embed_text]
        return len(chunks), sum(chunk.embed_text.count("[REDACTED:") for chunk in chunks), marked

    docs: dict[str, dict[str, str]] = {}
    for path in sorted((SHARED / "docs-faq").glob("*/**/*.md*")):
        if path.is_file():
            docs.setdefault(path.relative_to(SHARED / "docs-faq").parts[0], {})[str(path)] = path.read_text(errors="replace")
    apidocs, _ = generate_apidocs()
    with_pasted, pasted = generate_apidocs(pasted=True)
    scifact = [json.loads(line) for line in (SHARED / "scifact" / "corpus.jsonl").read_text().splitlines() if line.strip()]
    scifact_docs = {"scifact": {doc["_id"]: f"# {doc.get('title', '')}\n\n{doc.get('text', '')}" for doc in scifact}}
    corpora = {  # name: ({source: {file: text}}, as documentation from a git or web source?)
        "docs-faq": (docs, True),
        "docs-faq as personal notes": (docs, False),
        "api-reference": (apidocs, True),
        "api-reference as personal notes": (apidocs, False),
        "scifact": (scifact_docs, False),
    }
    report: dict = {}
    for name, (sources, documentation) in corpora.items():
        chunks = redactions = 0
        samples: list[str] = []
        for files in sources.values():
            for file, redacted in redact_source(files, documentation).items():
                n, r, marked = count(Path(file).name, redacted)
                chunks, redactions = chunks + n, redactions + r
                samples += [f"{Path(file).name}: {line.strip()[:160]}" for text in marked for line in text.splitlines()
                            if "[REDACTED:" in line][:2]
        report[name] = {"chunks": chunks, "redactions": redactions, "per_1000_chunks": round(1000 * redactions / max(chunks, 1), 2),
                        "samples": samples[:40]}
    shown = "\n".join(text for files in with_pasted.values() for text in redact_source(files, True).values())
    report["api-reference pasted keys"] = {"pasted": len(pasted), "leaked": sum(value in shown for value in pasted)}
    return report


def redact_source(files: dict[str, str], documentation: bool) -> dict[str, str]:
    """{file: text redacted} for one source's documents, as the index writer redacts them (indexer.IndexWriter)."""
    from rag_search.safety import secrets

    census = secrets.SourceCensus()

    def redacted(file: str) -> str:
        documented = census.documented(file) if documentation else None
        return secrets.redact_document("markdown", files[file], documentation, documented)[0]

    out = {file: redacted(file) for file in files}
    for file in census.flipped():
        out[file] = redacted(file)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="work here and keep the corpus and data dir")
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    parser.add_argument("--skip-false-positives", action="store_true", help="only the leak check")
    parser.add_argument("--only-false-positives", action="store_true", help="only the false positives (no index run)")
    args = parser.parse_args()
    if args.only_false_positives:
        report = false_positives()
        for name, row in report.items():
            print(f"{name}: {json.dumps(row) if 'pasted' in row else _line(row)}")
        return 1 if report["api-reference pasted keys"]["leaked"] else 0

    import os

    work = args.keep or Path(tempfile.mkdtemp(prefix="rag-secrets-"))
    try:
        root, data = work / "corpus", work / "data"
        planted = generate(root, args.seed)
        env = {**os.environ, "HOME": str(work / "home"), "RAG_SEARCH_SOURCES": str(work / "sources.json")}
        index_corpus(root, data, env)
        secrets, keep = credentials(planted), negatives(planted)
        windows = secret_windows(root, secrets)
        stored = stored_leaks(data, secrets, windows)
        searched = search_leaks(data, secrets, windows)
        lost = lost_negatives(data, keep)
        leaked = sorted({*stored, *searched})
        report = {
            "credentials": len(secrets), "kinds": len({item.kind for item in secrets}),
            "leaked": len(leaked),
            "leaks": [{"kind": item.kind, "file": item.file, "stored_in": stored.get(item.value), "found_by": searched.get(item.value)}
                      for item in secrets if item.value in leaked],
            "negatives": len(keep), "negatives_lost": [{"kind": item.kind, "value": item.value[:60]} for item in lost],
        }
        if not args.skip_false_positives:
            report["false_positives"] = false_positives()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{report['credentials']} credentials of {report['kinds']} kinds: {report['leaked']} leaked; "
          f"{report['negatives'] - len(report['negatives_lost'])}/{report['negatives']} hard negatives kept")
    for name, row in report.get("false_positives", {}).items():
        print(f"{name}: {json.dumps(row) if 'pasted' in row else _line(row)}")
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    pasted = report.get("false_positives", {}).get("api-reference pasted keys", {}).get("leaked", 0)
    return 1 if report["leaked"] or pasted else 0


def _line(row: dict) -> str:
    return f"{row['redactions']} redactions in {row['chunks']} chunks = {row['per_1000_chunks']} per 1,000 chunks"


if __name__ == "__main__":
    sys.exit(main())
