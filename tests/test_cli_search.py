"""search.py end to end against the example index: schema, relevance, and its error exits."""

import math
import subprocess
import sys

import pytest

from conftest import SCRIPTS, age_index, call_script


def search(data, *args):
    return call_script("search.py", "--data-dir", data, *args)


def test_output_follows_the_design_schema(example_index):
    result = search(example_index, "why is ArgoCD self-heal disabled?", "--top-k", "4")
    assert result.code == 0, result
    payload = result.json
    assert list(payload)[:4] == ["query", "results", "searched_collections", "total_chunks_searched"]
    assert (payload["mode"], payload["truncated"]) == ("hybrid", False)
    assert payload["query"] == "why is ArgoCD self-heal disabled?"
    assert payload["searched_collections"] == ["personal"]
    assert payload["total_chunks_searched"] > 10
    assert [r["rank"] for r in payload["results"]] == [1, 2, 3, 4]
    assert all(0 <= r["score"] <= 1 for r in payload["results"])
    dense = search(example_index, "why is ArgoCD self-heal disabled?", "--mode", "dense").json["results"]
    assert [r["score"] for r in dense] == sorted((r["score"] for r in dense), reverse=True), "dense mode ranks by score"
    for number, item in enumerate(payload["results"]):
        assert list(item) == ["rank", "score", "source", "file", "id", "chunk", "metadata"]
        assert item["source"] == "personal"
        assert item["chunk"] and item["file"] and not item["file"].startswith("/")
        first_of_its_file = item["file"] not in [earlier["file"] for earlier in payload["results"][:number]]
        assert {"heading", "date", "path"} <= set(item["metadata"]) if first_of_its_file else "heading" in item["metadata"]
        assert not {"root", "source_id", "indexed_at", "kind", "chunk_index", "title"} & set(item["metadata"]), "repeats or bookkeeping"


@pytest.mark.parametrize(
    "question, expected",
    [
        ("which text editor do I like to use?", {"preferences.json"}),
        ("why don't we let the gitops tool repair drift automatically?", {"notes/argocd-setup.md", "memory/decisions.json"}),
        ("how do I take one machine out of the cluster safely before repairs?", {"notes/k0s-cluster.md"}),
        ("how to mute notifications while doing planned work", {"notes/prometheus-alerting.md"}),
        ("what did we learn about mocking in unit tests?", {"memory/memory.json"}),
    ],
)
def test_paraphrased_questions_find_the_right_file(example_index, question, expected):
    top = search(example_index, question, "--top-k", "1").json["results"][0]
    assert top["file"] in expected, top


def test_text_format_for_people(example_index):
    result = search(example_index, "Longhorn volumes", "--format", "text", "--top-k", "2")
    assert result.code == 0, result
    assert result.stdout.startswith("1. [")
    assert "searched personal:" in result.stdout


def test_search_before_any_index_exits_3_and_names_the_command(tmp_path):
    result = search(tmp_path / "empty", "anything")
    assert result.code == 3, result
    assert result.json["error"]["code"] == 3
    assert "index_personal.py" in result.stderr


def test_asking_for_an_unbuilt_index_exits_3(example_index):
    result = search(example_index, "k0s upgrade", "--index", "docs")
    assert result.code == 3, result
    assert "index_docs.py" in result.stderr


def test_an_empty_index_is_success_with_no_results(tmp_path):
    empty_root = tmp_path / "empty-root"
    empty_root.mkdir()
    assert call_script("index_personal.py", "--data-dir", tmp_path / "data", empty_root).code == 0
    result = search(tmp_path / "data", "anything at all")
    assert result.code == 0, result
    assert result.json["results"] == []


@pytest.mark.processes
def test_a_store_built_with_another_model_asks_for_a_reindex(example_data):
    age_index(example_data, "personal", model="some-other-model", dimension=768)
    result = search(example_data, "anything")
    assert result.code == 4, result
    assert "some-other-model" in result.stderr and "reindex" in result.stderr
    assert result.json["error"]["type"] == "FingerprintMismatch"


def test_a_data_dir_keeps_its_graph_and_a_rebuild_with_another_one_switches_it(state_dir, tmp_path):
    data = tmp_path / "data"
    float_graph, int8_graph = {"RAG_SEARCH_EMBEDDING": "float"}, {"RAG_SEARCH_EMBEDDING": "int8"}
    assert call_script("index_personal.py", "--data-dir", data, state_dir, env=float_graph).code == 0
    assert search(data, "ArgoCD self-heal").code == 0  # "auto" (the default): the graph the data dir was made with

    result = call_script("search.py", "--data-dir", data, "ArgoCD self-heal", env=int8_graph)
    assert result.code == 4, result
    assert "float graph" in result.stderr and "int8 graph" in result.stderr and "--full" in result.stderr, result.stderr

    rebuilt = call_script("index_personal.py", "--data-dir", data, state_dir, env=int8_graph)
    assert rebuilt.code == 0 and "rebuilding it" in rebuilt.stderr, rebuilt
    assert search(data, "ArgoCD self-heal").code == 0
    assert call_script("search.py", "--data-dir", data, "ArgoCD self-heal", env=float_graph).code == 4  # the switch stuck


def test_bad_arguments_exit_2(example_index):
    assert search(example_index, "q", "--top-k", "0").code == 2
    assert search(example_index, "q", "--index", "everything").code == 2


_SEARCH_AND_LIST_MODULES = """
import runpy, sys
sys.argv = [sys.argv[1], "--data-dir", sys.argv[2], "how is ArgoCD set up?"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as exit:
    assert not exit.code, exit.code
heavy = sorted(m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
"""


@pytest.mark.processes
def test_the_search_path_never_imports_torch(example_index):
    completed = subprocess.run(
        [sys.executable, "-c", _SEARCH_AND_LIST_MODULES, str(SCRIPTS / "search.py"), str(example_index)],
        capture_output=True, text=True, timeout=120, cwd=SCRIPTS,
    )
    assert completed.returncode == 0, completed.stderr
    assert "HEAVY:\n" in completed.stderr, completed.stderr[-500:]


def test_metadata_only_keeps_the_record_fields_its_missing_chunk_would_have_shown(example_index):
    question = ("--type", "decision", "Longhorn persistent volumes")
    full = search(example_index, *question).json["results"]
    bare = search(example_index, "--metadata-only", *question).json["results"]
    assert full and [item["id"] for item in bare] == [item["id"] for item in full]
    for item in bare:
        assert item["chunk"] is None
        assert item["metadata"]["type"] == "decision" and item["metadata"]["tags"], item


def rendered_tokens(result) -> int:
    """The answer as an agent reads it (one line of JSON), at about 4 characters a token."""
    return math.ceil(len(result.stdout.strip()) / 4)


@pytest.mark.parametrize("budget", [300, 700])
def test_max_tokens_budgets_the_whole_answer_as_printed(example_index, budget):
    question = ("--top-k", "10", "--per-file", "0", "how is the cluster set up?")
    whole = search(example_index, *question)
    assert rendered_tokens(whole) > budget, "the test needs an answer larger than the budget"
    cut = search(example_index, "--max-tokens", budget, *question)
    assert cut.code == 0, cut
    assert cut.json["truncated"] is True and cut.json["results"]
    assert rendered_tokens(cut) <= budget, (rendered_tokens(cut), cut.stdout)
    bare = search(example_index, "--metadata-only", "--max-tokens", budget, *question)
    assert rendered_tokens(bare) <= budget
    assert len(bare.json["results"]) > len(cut.json["results"]), "without text, more results fit: only what is printed counts"
