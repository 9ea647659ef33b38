"""A new doc source answers before it is all embedded: its first index is published in parts (whole documents each
time), says how far it got, and a killed run leaves what it published for the next run to finish. A large update of an
indexed source is published in parts too (every minute)."""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SCRIPTS, add_source, call_script, index_docs

pytestmark = pytest.mark.processes  # index runs, one killed

FAULTRUN = Path(__file__).with_name("faultrun.py")
PAGES = 120  # six sections each: over FLUSH_CHUNKS (512), so the run writes twice


def handbook(folder: Path) -> Path:
    folder.mkdir()
    for n in range(PAGES):
        sections = "\n\n".join(f"## Step {s}\n\nOn host {n}, step {s} rotates the volume{n}x{s} keys and checks the "
                               f"replica lag of shard {s}." for s in range(6))
        (folder / f"host-{n:03}.md").write_text(f"# Host {n}\n\n{sections}\n")
    return folder


def search(data: Path, *args: str) -> dict:
    result = call_script("search.py", "--data-dir", data, "--index", "docs", "--top-k", "5", *args)
    assert result.code == 0, result
    return result.json


@pytest.mark.parametrize("first", [True, False], ids=["the first docs index", "a source added to the index"])
def test_a_first_index_killed_after_its_first_part_answers_from_it_and_the_next_run_finishes(first, tmp_path):
    sources, data = tmp_path / "sources.json", tmp_path / "data"
    if not first:
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "faq.md").write_text("# FAQ\n\nThe handbook covers every host.\n")
        add_source("--sources", sources, "--id", "faq", "--name", "FAQ", "--type", "local", "--path", tmp_path / "notes")
        assert index_docs(data, "--sources", sources, "--all").code == 0
    pages = handbook(tmp_path / "handbook")
    add_source("--sources", sources, "--id", "handbook", "--name", "Handbook", "--type", "local", "--path", pages)
    killed = subprocess.run([sys.executable, str(FAULTRUN), "kill@rag_search.store.store_writer.StoreWriter.write#2",
                             str(SCRIPTS / "index_docs.py"), "--data-dir", str(data), "--sources", str(sources), "--all"],
                            capture_output=True, text=True)
    assert killed.returncode != 0 and "faultrun:" in killed.stderr, killed.stderr

    early = search(data, "rotate the volume3x2 keys on host 3")
    assert early["results"] and early["results"][0]["file"] == "handbook/host-003.md", early
    indexed, of = (int(word) for word in early["partial"]["handbook"].split()[::2][:2])
    assert 0 < indexed < of == PAGES, early["partial"]
    status = call_script("status.py", "--data-dir", data, "--sources", sources)
    assert status.code == 0, status
    handbook_status = next(source for source in status.json["doc_sources"] if source["id"] == "handbook")
    assert handbook_status["partial"] == early["partial"]["handbook"] and handbook_status["documents"] == indexed

    finished = index_docs(data, "--sources", sources, "--all")
    assert finished.code == 0, finished
    summary = next(source for source in finished.json["sources"] if source["id"] == "handbook")
    assert summary["added"] == PAGES - indexed, "the next run loads only what was not published"
    late = search(data, "rotate the volume118x4 keys on host 118")
    assert "partial" not in late and late["results"][0]["file"] == "handbook/host-118.md", late
    status = call_script("status.py", "--data-dir", data, "--sources", sources).json
    assert "partial" not in next(source for source in status["doc_sources"] if source["id"] == "handbook")

    whole = tmp_path / "whole"
    assert index_docs(whole, "--sources", sources, "--all").code == 0
    for mode in ("dense", "hybrid"):
        for question in ("replica lag of shard 5 on host 77", "rotate keys of volume12x1"):
            parts, at_once = (search(where, "--mode", mode, question)["results"] for where in (data, whole))
            assert [(r["id"], r["score"]) for r in parts] == [(r["id"], r["score"]) for r in at_once], (mode, question)


def test_a_first_index_done_with_a_page_that_failed_is_not_partial_any_more(tmp_path, isolated_home):
    """Every page was tried: the source's status says which failed, and answers no longer say "so far"."""
    from webserver import DocsSite, Page

    data = tmp_path / "data"
    with DocsSite() as site:
        names = [f"host-{n}/" for n in range(30)]
        for n, name in enumerate(names):
            sections = "".join(f"<h2>Step {s}</h2><p>On host {n}, step {s} rotates the volume{n}x{s} keys.</p>" for s in range(6))
            site.pages[f"/docs/{name}"] = Page(f"<html><body><article><h1>Host {n}</h1>{sections}</article></body></html>")
        site.pages["/docs/broken/"] = Page("down", "text/plain", status=500)
        add_source("--id", "fleet", "--name", "Fleet", "--type", "web", "--base-url", site.url, "--pages", *names, "broken/")
        run = index_docs(data, "--all")
    assert run.code == 9 and run.json["sources"][0]["status"] == "partial", run
    assert "partial" not in search(data, "rotate the volume3x2 keys on host 3")


def test_a_large_update_killed_after_its_first_part_answers_from_both_versions_and_the_next_run_finishes(tmp_path):
    """Every page of an indexed source changes: the run publishes a part once a minute has passed (made 0 s here);
    until it is done, each page answers whole from one version (the new one for those published, the old one for the
    rest)."""
    sources, data = tmp_path / "sources.json", tmp_path / "data"
    pages = handbook(tmp_path / "handbook")
    add_source("--sources", sources, "--id", "handbook", "--name", "Handbook", "--type", "local", "--path", pages)
    assert index_docs(data, "--sources", sources, "--all").code == 0
    for page in sorted(pages.iterdir()):
        page.write_text(page.read_text().replace("rotates the volume", "revokes the tokens of volume"))
    killed = subprocess.run([sys.executable, str(FAULTRUN), "set@rag_search.index.indexer.CHECKPOINT_SECONDS=0",
                             "kill@rag_search.store.store_writer.StoreWriter.write#2",
                             str(SCRIPTS / "index_docs.py"), "--data-dir", str(data), "--sources", str(sources), "--all"],
                            capture_output=True, text=True)
    assert killed.returncode != 0 and "faultrun:" in killed.stderr, killed.stderr

    early = search(data, "revokes the tokens of volume3x2 on host 3")
    assert early["results"][0]["file"] == "handbook/host-003.md" and "revokes" in early["results"][0]["chunk"], early
    indexed, of = (int(word) for word in early["partial"]["handbook"].split()[::2][:2])
    assert 0 < indexed < of == PAGES, early["partial"]
    old = search(data, "--mode", "lexical", "rotates the volume118x4 keys on host 118")
    assert old["results"][0]["file"] == "handbook/host-118.md", "a page not reached yet answers as it was"
    texts = [result["chunk"] for result in search(data, "--mode", "lexical", "--top-k", "20", "host 118 step")["results"]
             if result["file"] == "handbook/host-118.md"]
    assert texts and all("rotates" in text for text in texts), "one version of a page, never a mix"

    finished = index_docs(data, "--sources", sources, "--all")
    assert finished.code == 0, finished
    assert finished.json["sources"][0]["updated"] == PAGES - indexed, "the next run loads only what was not published"
    late = search(data, "revokes the tokens of volume118x4 on host 118")
    assert "partial" not in late and "revokes" in late["results"][0]["chunk"], late
