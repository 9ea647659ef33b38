"""search.py --type and --tag: record fields as filters, in every mode, with the date filters; a record's bookkeeping
(id, dates, loop, iteration, confidence) as metadata, never as its text."""

import json

import pytest

from conftest import call_script

MODES = ["hybrid", "dense", "lexical"]


def search(data, query, *args):
    result = call_script("search.py", "--data-dir", data, "--index", "personal", "--top-k", "20", "--per-file", "0", query, *args)
    assert result.code == 0, result
    return result.json["results"]


@pytest.mark.parametrize("mode", MODES)
def test_type_keeps_only_records_of_that_type(example_index, mode):
    results = search(example_index, "auth mocks typescript imports argocd", "--mode", mode, "--type", "failure_pattern")
    assert [r["metadata"]["record_id"] for r in results] == ["mem_a1b2"]
    either = search(example_index, "auth mocks typescript imports argocd", "--mode", mode,
                    "--type", "failure_pattern", "--type", "success_pattern")
    assert {r["metadata"]["record_id"] for r in either} == {"mem_a1b2", "mem_e5f6"}


@pytest.mark.parametrize("mode", MODES)
def test_tag_matches_whole_tags_ignoring_case_and_hash(example_index, mode):
    results = search(example_index, "storage volumes registry argocd k0s", "--mode", mode, "--tag", "#K8S")
    found = {r["metadata"].get("record_id") or r["file"] for r in results}
    assert found == {"dec-015", "dec-016", "notes/argocd-setup.md", "notes/k0s-cluster.md"}  # notes' front matter tags count too
    stored = search(example_index, "storage volumes registry argocd k0s", "--mode", mode, "--tag", "#K8S", "--verbose")
    assert stored and all("k8s" in r["metadata"]["tags"] for r in stored)  # compact answers leave out tags the text shows
    assert search(example_index, "storage volumes registry", "--mode", mode, "--tag", "k8") == []  # never part of a tag


@pytest.mark.parametrize("mode", MODES)
def test_every_tag_given_must_be_carried(example_index, mode):
    results = search(example_index, "storage volumes registry", "--mode", mode, "--tag", "k8s", "--tag", "registry")
    assert [r["metadata"]["record_id"] for r in results] == ["dec-016"]


@pytest.mark.parametrize("mode", MODES)
def test_record_filters_combine_with_dates(example_index, mode):
    results = search(example_index, "kubernetes decision storage registry", "--mode", mode, "--type", "decision",
                     "--since", "2025-01-01", "--until", "2025-01-31")
    assert [r["metadata"]["record_id"] for r in results] == ["dec-014"]


BOOKKEEPING = ("id", "loopId", "iteration", "createdAt", "confidence")


@pytest.mark.parametrize("mode", MODES)
def test_a_memory_entrys_bookkeeping_is_shown_as_metadata_and_filters_still_select_it(example_index, mode):
    results = search(example_index, "auth mocks beforeEach", "--mode", mode, "--type", "failure_pattern",
                     "--since", "2026-04-01", "--until", "2026-04-02")
    assert [r["metadata"]["record_id"] for r in results] == ["mem_a1b2"]
    assert not [line for line in results[0]["chunk"].splitlines() if line.split(":")[0] in BOOKKEEPING]
    assert {key: results[0]["metadata"].get(key) for key in ("record_id", "date", "loop_id", "iteration", "confidence")} == {
        "record_id": "mem_a1b2", "date": "2026-04-01T10:42:00Z", "loop_id": "abc123", "iteration": 2, "confidence": 0.9}
    assert search(example_index, "auth mocks beforeEach", "--mode", mode, "--type", "failure_pattern", "--until", "2026-03-31") == []


def test_a_records_bookkeeping_is_not_embedded_nor_keyword_indexed(example_index):
    found = search(example_index, "mem_a1b2 abc123 def456 createdAt loopId", "--mode", "lexical")
    assert "memory/memory.json" not in {r["file"] for r in found}


def test_memory_query_by_loop_reads_the_bookkeeping_from_metadata(example_index, tmp_path):
    result = call_script("memory.py", "--data-dir", example_index, "--memory-file", tmp_path / "none.json", "query",
                        "auth mocks beforeEach", "--loop-id", "abc123")
    assert result.code == 0, result
    assert [{key: entry.get(key) for key in ("id", "loopId", "iteration", "createdAt", "confidence")}
            for entry in result.json["entries"]] == [{"id": "mem_a1b2", "loopId": "abc123", "iteration": 2,
                                                      "createdAt": "2026-04-01T10:42:00Z", "confidence": 0.9}]


def test_a_decisions_file_without_types_matches_type_decision(state_dir, tmp_path):
    path = state_dir / "memory" / "decisions.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({"decisions": [{k: v for k, v in item.items() if k != "type"} for item in data["decisions"]]}))
    data_dir = tmp_path / "data"
    assert call_script("index_personal.py", "--data-dir", data_dir, state_dir).code == 0
    results = search(data_dir, "Longhorn persistent volumes", "--type", "decision")
    assert {r["metadata"]["record_id"] for r in results} == {"dec-014", "dec-015", "dec-016"}
    assert {r["metadata"]["type"] for r in results} == {"decision"}, "the type no chunk shows is in the metadata"
