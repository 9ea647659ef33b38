"""Fusion, filters, the per-file cap and the token budget, stage by stage."""

import time

from rag_search import lexical, output
from rag_search.catalog import Catalog
from rag_search.records import ChunkRecord, DocumentRecord, Filters, Hit
from rag_search.retrieval import SearchOptions, SearchResult, _cap_per_file, _rank
from rag_search.vectors import where as _where


def hit(chunk_id, file="a.md", collection="docs", score=0.5, text="x", dense=None, lexical_rank=None, bm25=None, date_ts=None,
        heading=None, kind=None):
    explain = {}
    if dense is not None:
        explain["dense_rank"] = dense
    if lexical_rank is not None:
        explain.update(lexical_rank=lexical_rank, bm25=bm25 if bm25 is not None else 10.0 / lexical_rank)
    metadata = {"file": file, **({"heading": heading} if heading else {}), **({"kind": kind} if kind else {})}
    if date_ts is not None:
        metadata["date_ts"] = date_ts
    return Hit(chunk_id, collection, score, text, metadata, explain)


def test_reciprocal_rank_fusion_rewards_agreement():
    candidates = {
        "both": hit("both", dense=2, lexical_rank=2),
        "dense-only": hit("dense-only", dense=1),
        "lexical-only": hit("lexical-only", lexical_rank=1),
    }
    order = _rank(candidates, ["dense-only", "both"], ["lexical-only", "both"], SearchOptions())
    assert order[0] == "both"
    assert candidates["both"].explain["rrf"] == round(2 / (SearchOptions().rrf_k + 2), 6)
    assert set(order[1:]) == {"dense-only", "lexical-only"}


def test_fusion_weights_and_k():
    candidates = {"d": hit("d", dense=1), "l": hit("l", lexical_rank=1)}
    assert _rank(candidates, ["d"], ["l"], SearchOptions(dense_weight=2.0))[0] == "d"
    assert _rank(candidates, ["d"], ["l"], SearchOptions(lexical_weight=2.0))[0] == "l"


def test_single_modes_keep_their_own_order():
    """Three orders that all differ, so a single mode that fell back to fusion is seen."""
    candidates = {
        "p": hit("p", score=0.9, dense=1, lexical_rank=2, bm25=6.0),
        "q": hit("q", score=0.7, dense=2, lexical_rank=3, bm25=3.0),
        "r": hit("r", score=0.5, dense=3, lexical_rank=1, bm25=9.0),
    }
    dense_order, lexical_order = ["p", "q", "r"], ["r", "p", "q"]
    assert _rank(candidates, dense_order, lexical_order, SearchOptions()) == ["p", "r", "q"]  # 1/11+1/12, 1/13+1/11, 1/12+1/13
    assert _rank(candidates, dense_order, lexical_order, SearchOptions(mode="dense")) == dense_order
    assert _rank(candidates, dense_order, lexical_order, SearchOptions(mode="lexical")) == lexical_order


def test_recency_favours_newer_personal_chunks_only():
    now = time.time()
    candidates = {
        "old": hit("old", collection="personal", dense=1, date_ts=now - 400 * 86400),
        "new": hit("new", collection="personal", dense=2, date_ts=now - 1 * 86400),
        "doc": hit("doc", collection="docs", dense=3, date_ts=now - 900 * 86400),
    }
    options = SearchOptions(recency_half_life_days=30)
    order = _rank(candidates, ["old", "new", "doc"], [], options)
    assert order.index("new") < order.index("old")
    assert "recency" not in candidates["doc"].explain
    assert _rank(candidates, ["old", "new", "doc"], [], SearchOptions())[:2] == ["old", "new"]


def test_a_page_answering_in_many_sections_beats_one_lucky_chunk():
    candidates = {
        "lucky": hit("lucky", "lucky.md", dense=1, lexical_rank=1, heading="Lucky"),
        "cmp-1": hit("cmp-1", "compare.md", dense=2, heading="Compare > Speed"),
        "cmp-2": hit("cmp-2", "compare.md", lexical_rank=2, heading="Compare > Safety"),
        "cmp-3": hit("cmp-3", "compare.md", dense=3, lexical_rank=3, heading="Compare > Cost"),
    }
    dense_order, lexical_order = ["lucky", "cmp-1", "cmp-3"], ["lucky", "cmp-2", "cmp-3"]
    order = _rank(candidates, dense_order, lexical_order, SearchOptions())
    assert order == ["cmp-3", "cmp-1", "cmp-2", "lucky"], "the page comes first, its best chunk first"
    explain = candidates["cmp-1"].explain
    assert (explain["page_sections"], explain["page_chunks"]) == (3, 3)
    assert explain["page_score"] == round(1 / 12 + 1 / 12 + 2 / 13, 6)  # k=10: ranks 2, 2 and 3+3; "lucky" has 2/11
    assert _rank(candidates, dense_order, lexical_order, SearchOptions(page_decay=0))[0] == "lucky", "0 ranks by the best chunk"


def test_a_section_split_into_chunks_counts_once_and_records_stand_alone():
    long_section = {f"long-{i}": hit(f"long-{i}", "long.md", dense=i + 2, heading="Long > Part") for i in range(3)}
    candidates = {"short": hit("short", "short.md", dense=1, heading="Short"), **long_section}
    assert _rank(candidates, list(candidates), [], SearchOptions())[0] == "short", "three chunks of one section are one section"
    records = {f"r{i}": hit(f"r{i}", "decisions.json", dense=i + 2, heading=f"decisions.json > [{i}]", kind="json") for i in range(3)}
    candidates = {"note": hit("note", "note.md", dense=1, heading="Note"), **records}
    assert _rank(candidates, list(candidates), [], SearchOptions()) == ["note", "r0", "r1", "r2"], "records are not summed"


def test_per_file_cap():
    hits = [hit("1", "a.md"), hit("2", "a.md"), hit("3", "a.md"), hit("4", "b.md"), hit("5", "a.md", collection="personal")]
    assert [h.id for h in _cap_per_file(hits, 2)] == ["1", "2", "4", "5"]
    assert [h.id for h in _cap_per_file(hits, 1)] == ["1", "4", "5"]
    assert len(_cap_per_file(hits, 0)) == 5


def answer(*hits, metadata_only=False, explain=False) -> dict:
    return output.result_payload(SearchResult("q", list(hits), ["docs"], 10), metadata_only=metadata_only, explain=explain)


def test_token_budget_keeps_the_leading_results_whose_whole_answer_fits():
    whole = answer(hit("1", "a.md", text="a" * 400), hit("2", "b.md", text="b" * 400), hit("3", "c.md", text="c" * 40))
    size = output.answer_tokens(whole)
    kept = output.within_budget(whole, size - 5)
    assert [item["id"] for item in kept["results"]] == ["1", "2"] and kept["truncated"]
    assert output.answer_tokens(kept) <= size - 5
    assert output.within_budget(whole, size) == whole and not whole["truncated"]


def test_a_first_result_larger_than_the_budget_is_cut_to_fit():
    whole = answer(hit("1", text="z" * 4000), hit("2"), explain=True)
    kept = output.within_budget(whole, 300)
    assert [item["id"] for item in kept["results"]] == ["1"] and kept["truncated"]
    assert 300 - 2 <= output.answer_tokens(kept) <= 300, "the chunk is cut no more than it must be"
    assert kept["results"][0]["explain"]["cut_to_budget"] is True
    assert len(whole["results"][0]["chunk"]) == 4000, "the answer given is not changed"


def test_the_budget_counts_only_what_is_printed():
    long = [hit(str(n), f"{n}.md", text="w" * 2000) for n in range(5)]
    with_text = output.within_budget(answer(*long), 600)
    bare = output.within_budget(answer(*long, metadata_only=True), 600)
    assert len(with_text["results"]) == 1 and len(bare["results"]) == 5 and not bare["truncated"]


def test_tokens_are_estimated_from_the_characters_printed():
    assert output.estimate_tokens("abcd" * 10) == 10
    assert output.estimate_tokens("索引" * 10) == 20, "one token a CJK character, not a quarter"


def test_metadata_filter_for_chroma():
    assert _where(Filters()) is None
    assert _where(SearchOptions(sources=["k0s"]).filters) == {"source_id": {"$in": ["k0s"]}}
    assert _where(SearchOptions(sources=["k0s"], since=10.0, until=20.0).filters) == {
        "$and": [{"source_id": {"$in": ["k0s"]}}, {"date_ts": {"$gte": 10.0}}, {"date_ts": {"$lte": 20.0}}]
    }


def add(catalog, key, source_id, texts, date_ts=None):
    record = DocumentRecord(key, source_id, key, None, "hash", len(texts), "now")
    metadata = {"source_id": source_id, **({"date_ts": date_ts} if date_ts is not None else {})}
    chunks = [ChunkRecord(f"{key}:{i}", i, text, text, f"h{key}{i}", metadata) for i, text in enumerate(texts)]
    catalog.write([(record, chunks)])


def test_keyword_search_ranks_filters_and_follows_changes(tmp_path):
    catalog = Catalog(tmp_path / "catalog.sqlite")
    add(catalog, "argo", "argocd", ["Set selfHeal: true to revert drift", "Prune deletes resources"], date_ts=100.0)
    add(catalog, "k0s", "k0s", ["kube-proxy runs on every node"], date_ts=200.0)
    add(catalog, "note", "personal", ["we turned self-heal off"], date_ts=300.0)

    def search(query, **filters):
        return [row[0] for row in catalog.keyword_search(lexical.match_expression(query), 10, Filters(**filters))]

    assert set(search("selfHeal")) == {"argo:0", "note:0"}
    assert search("kube proxy") == ["k0s:0"]
    assert search("kubeproxy") == ["k0s:0"]
    assert search("self heal", sources=("argocd",)) == ["argo:0"]
    assert search("self heal", since=250.0) == ["note:0"]
    assert search("self heal", until=150.0) == ["argo:0"]
    everything = search("self heal resources node", sources=("argocd", "k0s", "personal"))  # a filter that keeps all
    assert search("self heal resources node") == everything and len(everything) == 4

    add(catalog, "argo", "argocd", ["Prune deletes resources"])  # a new version drops the selfHeal chunk
    assert search("selfHeal") == ["note:0"]
    catalog.remove(["note"])
    assert search("selfHeal") == []
    assert catalog.keyword_index_ids() == {"argo:0", "k0s:0"}
