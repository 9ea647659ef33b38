"""search.py --type and --tag: record fields as filters, in every mode, with the date filters."""

import pytest

from conftest import run_script

MODES = ["hybrid", "dense", "lexical"]


def search(data, query, *args):
    result = run_script("search.py", "--data-dir", data, "--index", "personal", "--top-k", "20", "--per-file", "0", query, *args)
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
