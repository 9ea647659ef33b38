"""Filters, the per-file cap, the keyword search and the token budget, stage by stage (ranking: test_ranking.py)."""

from conftest import call_script, hit
from rag_search.core.config import load_settings
from rag_search.search.retrieval import Searcher, SearchOptions, SearchResult, _cap_per_file
from rag_search.serve import output
from rag_search.store import lexical
from rag_search.store.catalog import Catalog
from rag_search.store.records import ChunkRecord, DocumentRecord, Evidence, Filters
from rag_search.store.vectors import where as _where


def test_per_file_cap():
    hits = [hit("1", "a.md"), hit("2", "a.md"), hit("3", "a.md"), hit("4", "b.md"), hit("5", "a.md", collection="personal")]
    assert [h.id for h in _cap_per_file(hits, 2)] == ["1", "2", "4", "5"]
    assert [h.id for h in _cap_per_file(hits, 1)] == ["1", "4", "5"]
    assert len(_cap_per_file(hits, 0)) == 5


def answer(*hits, metadata_only=False, explain=False) -> dict:
    return output.result_payload(SearchResult("q", list(hits), ["docs"], 10), metadata_only=metadata_only, explain=explain)


def test_explain_shows_the_evidence_in_the_order_the_stages_set_it():
    """--explain prints a hit's evidence in the order retrieval, ranking and the answer set it: a cosine of the dense list
    beside its rank, one looked up for page evidence after the keyword evidence, one looked up for the answer only last."""
    dense = Evidence(dense_rank=3, cosine=0.61, lexical_rank=1, bm25=7.5, rrf=0.16, page_score=0.2, page_bonus=0.0, page_chunks=1)
    assert list(dense.shown()) == ["dense_rank", "cosine", "lexical_rank", "bm25", "rrf", "page_score", "page_bonus", "page_chunks"]
    looked_up = Evidence(lexical_rank=2, bm25=3.25, identifier="led517", cosine=0.4, page_cosine=0.5, rrf=0.08, relevance=0.2)
    assert list(looked_up.shown()) == ["lexical_rank", "bm25", "identifier", "cosine", "page_cosine", "rrf", "relevance"]
    looked_up.cosine_after_ranking = True
    assert list(looked_up.shown()) == ["lexical_rank", "bm25", "identifier", "page_cosine", "rrf", "relevance", "cosine"]
    assert looked_up.shown()["cosine"] == 0.4 and Evidence().shown() == {}
    assert hit("1", dense=1, score=0.7).explain == {"dense_rank": 1, "cosine": 0.7}


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
        match = lexical.match_expression(lexical.query_terms(query))
        return [row[0] for row in catalog.keyword_search(match.expression, 10, Filters(**filters))]

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


def test_a_large_index_scores_only_the_chunks_a_rarer_term_selects(tmp_path):
    """At 200k chunks most of a warm search's time once went to scoring every chunk that holds a common query word
    ("controller"). Past the budget the most common terms only add to the score of chunks a rarer term selects, and
    those rank and score as in the plain keyword search."""
    catalog = Catalog(tmp_path / "catalog.sqlite")
    add(catalog, "guide", "k0s", [f"the controller runs part {n} of the cluster" for n in range(30)])
    add(catalog, "tls", "k0s", ["rotate the controller certificate before it expires", "certificates are kept in a secret",
                                "the controller certificate, rotated yearly by the controller"])
    terms = lexical.query_terms("how do I rotate the controller certificate?")
    assert catalog.common_terms(terms, budget=10) == {"controller"}
    assert catalog.common_terms(terms, budget=100) == set(), "the whole index is within the budget"
    assert catalog.common_terms(["controller"], budget=10) == set(), "the rarest term always selects"

    plain = catalog.keyword_search(lexical.match_expression(terms).expression, 50, Filters())
    restricted = lexical.match_expression(terms, frozenset({"controller"}))
    found = catalog.keyword_search(restricted.expression, 50, Filters())
    assert len(plain) == 33 and {chunk_id for chunk_id, _ in plain[:3]} == {"tls:0", "tls:1", "tls:2"}
    assert [chunk_id for chunk_id, _ in found] == [chunk_id for chunk_id, _ in plain[:3]]
    assert [round(score / restricted.scale, 6) for _, score in found] == [round(score, 6) for _, score in plain[:3]]


def test_search_past_the_keyword_budget_keeps_the_plain_scores(example_index):
    """The budget as search.py applies it: fewer keyword matches, each with the rank and BM25 score it has without."""
    searcher = Searcher(load_settings(data_dir=str(example_index)), "personal")
    query = "k0s cluster upgrade alerting"
    try:
        plain = searcher.search(query, SearchOptions(mode="lexical", keyword_budget=0, top_k=50, per_file=0)).hits
        budgeted = searcher.search(query, SearchOptions(mode="lexical", keyword_budget=3, top_k=50, per_file=0)).hits
    finally:
        searcher.close()
    scores = {found.id: found.explain["bm25"] for found in plain}
    assert 0 < len(budgeted) < len(plain), "the budget left the most common terms out of the match"
    assert [found.id for found in budgeted] == [found.id for found in plain if found.id in {kept.id for kept in budgeted}]
    assert all(found.explain["bm25"] == scores[found.id] for found in budgeted)


def test_one_long_document_cannot_take_every_keyword_candidate(tmp_path):
    """A 400 KB transcript once filled every candidate slot, so the answer was never considered. The
    cap looks at the best POOL * limit matches (here 20: the transcript's 15 and the lesson)."""
    catalog = Catalog(tmp_path / "catalog.sqlite")
    add(catalog, "transcript", "personal", [f"we talked about the CI cache again, part {n} of the call" for n in range(15)])
    add(catalog, "lesson", "personal", ["Lesson: the CI cache key must include the lockfile hash, or stale wheels come back"])
    match = lexical.match_expression(lexical.query_terms("CI cache")).expression
    uncapped = [row[0] for row in catalog.keyword_search(match, 10, Filters())]
    capped = [row[0] for row in catalog.keyword_search(match, 10, Filters(), per_document=3)]
    assert sum(chunk_id.startswith("transcript:") for chunk_id in uncapped) == 10
    assert capped == [*uncapped[:3], "lesson:0"], "the transcript's best three, then what it hid"


def test_a_section_only_the_keyword_search_found_supports_its_page_by_its_closeness(example_index):
    """Pages stopped summing their sections, and a section outside the dense list (its closeness unknown)
    earned nothing, so a page of several fair sections lost its place (docs-faq Hit@5 0.613 -> 0.600). Hybrid search
    looks up the cosine of such a section before ranking. One candidate per file from each retriever: the ArgoCD note's
    Notifications section comes from the dense list, its introduction (close in meaning too) from the keyword list."""
    searcher = Searcher(load_settings(data_dir=str(example_index)), "personal")
    try:
        hits = searcher.search("argocd sync prometheus alert", SearchOptions(per_file_candidates=1, top_k=50, per_file=0)).hits
    finally:
        searcher.close()
    argocd = [found for found in hits if found.metadata["file"] == "notes/argocd-setup.md"]
    keyword_only = [found for found in argocd if "dense_rank" not in found.explain]
    assert keyword_only and keyword_only[0].explain["cosine"] > 0.4
    assert argocd[0].explain["page_bonus"] > 0


def test_a_keyword_match_of_only_a_term_in_most_chunks_is_no_evidence(tmp_path):
    """"Who is Linkerd for?" leaves one keyword, in nearly every chunk of Linkerd's docs; BM25 gives such a
    term a weight of about zero, yet its list's ranks were fused like any other, so chunks that merely name the product
    (an mTLS task, a certificate runbook) came second and third. Hybrid search leaves such matches out of the fusion;
    keyword mode still answers with them."""
    notes = {
        "audience.md": "# Who uses Zorblat\n\nZorblat is made for platform engineers who run many clusters for other teams.",
        "metrics.md": "# Metrics\n\nZorblat exports Prometheus metrics on port 9090.",
        "upgrade.md": "# Upgrades\n\nUpgrade Zorblat one minor version at a time; read the changelog first.",
        "tls.md": "# TLS\n\nZorblat rotates its certificates every 24 hours.",
        "logs.md": "# Logs\n\nZorblat logs in JSON to standard error.",
    }
    for name, text in notes.items():
        (tmp_path / "state" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "state" / name).write_text(text, encoding="utf-8")
    assert call_script("index_personal.py", "--data-dir", tmp_path / "data", tmp_path / "state").code == 0
    searcher = Searcher(load_settings(data_dir=str(tmp_path / "data")), "personal")
    try:
        hybrid = searcher.search("Who is Zorblat for?", SearchOptions(top_k=5)).hits
        keyword = searcher.search("Who is Zorblat for?", SearchOptions(mode="lexical", top_k=5)).hits
    finally:
        searcher.close()
    assert hybrid[0].metadata["file"] == "audience.md"
    assert not [found.metadata["file"] for found in hybrid if "lexical_rank" in found.explain]
    assert len(keyword) == 5


def test_a_documentation_page_is_as_close_as_its_chunks_mean_and_a_record_as_itself(tmp_path):
    """Each documentation page is given its closeness as a whole, the cosine of its chunks' mean vector. A
    record of a JSON file is a page of its own (ranking), so its closeness is its own, not its file's."""
    docs = tmp_path / "handbook"
    docs.mkdir()
    between = "".join(f"## Part {n}\n\nThe dashboard's colour theme number {n}.\n\n" for n in range(3))  # not joined: far apart
    (docs / "backup.md").write_text(f"# Backups\n\nTake an etcd snapshot every night.\n\n{between}## Restore\n\n"
                                    "Restore the snapshot on a new control plane node.\n", encoding="utf-8")
    (docs / "faq.json").write_text('[{"question": "How do I back up etcd?", "answer": "etcdctl snapshot save."},'
                                   ' {"question": "Which CNI do we ship?", "answer": "kube-router, with BGP."}]', encoding="utf-8")
    sources = tmp_path / "sources.json"
    assert call_script("add_doc_source.py", "--sources", sources, "--id", "handbook", "--name", "Handbook", "--type", "local",
                      "--path", docs, "--glob", "*.*").code == 0
    assert call_script("index_docs.py", "--sources", sources, "--data-dir", tmp_path / "data", "--all").code == 0
    searcher = Searcher(load_settings(data_dir=str(tmp_path / "data")), "docs")
    try:
        hits = searcher.search("how do I back up etcd?", SearchOptions(top_k=10, per_file=0)).hits
    finally:
        searcher.close()
    backup = [found for found in hits if found.metadata["file"] == "handbook/backup.md"]
    records = [found for found in hits if found.metadata["file"] == "handbook/faq.json"]
    assert len(backup) == 2 and len(records) == 2, [(found.metadata["file"], found.id) for found in hits]
    assert backup[0].explain["page_cosine"] == backup[1].explain["page_cosine"] < max(found.score for found in backup)
    for record in records:
        assert record.explain["page_cosine"] == record.explain["cosine"], record.explain


def test_the_default_candidate_cap_leaves_room_for_the_answer_beside_a_long_document(tmp_path):
    """per_file_candidates' default, from the side that hurts: the keyword list of 10 keeps the lesson a 15-chunk
    transcript would push out (it did, on the mixed benchmark's CI cache question, when each file took every slot)."""
    catalog = Catalog(tmp_path / "catalog.sqlite")
    add(catalog, "transcript", "personal", [f"we talked about the CI cache again, part {n} of the call" for n in range(15)])
    add(catalog, "lesson", "personal", ["Lesson: the CI cache key must include the lockfile hash, or stale wheels come back"])
    match = lexical.match_expression(lexical.query_terms("CI cache")).expression
    found = [row[0] for row in catalog.keyword_search(match, 10, Filters(), per_document=SearchOptions().per_file_candidates)]
    assert "lesson:0" in found


def test_a_documentation_set_of_a_few_thousand_chunks_is_searched_on_every_term(tmp_path):
    """keyword_budget's default, from the side that hurts: the budget leaves a question's most common terms out only
    in collections far larger than a documentation set (docs-faq's largest has about 4,200 chunks), where scoring every
    chunk that holds them is most of a search's time; below it, "cache" in every chunk still counts."""
    catalog = Catalog(tmp_path / "catalog.sqlite")
    add(catalog, "reference", "docs", [f"option {n}: how the cache of worker {n} is sized" for n in range(5000)])
    terms = lexical.query_terms("worker cache size")
    assert catalog.common_terms(terms, SearchOptions().keyword_budget) == frozenset()
    assert catalog.common_terms(terms, 1000), "a smaller budget leaves the common terms out"


def test_a_result_near_a_shown_one_of_its_document_is_joined_to_it_with_the_chunks_between(tmp_path):
    """A note cut in six: chunks 0 and 2 ranked, the answer in chunk 1 between them: the first result runs from 0 to 2
    and chunk 2 takes no place of its own; chunk 5, three chunks on, stays a result of its own."""
    import numpy as np

    from rag_search.search.retrieval import shown
    from rag_search.store.records import Hit

    state = tmp_path / "state"
    state.mkdir()
    sections = [f"## Step {n}\n\n" + f"Step {n} of the rollout: " + " ".join(f"detail{n}x{word}" for word in range(40))
                for n in range(6)]
    sections[1] += "\n\nThe canary weight is 15 percent."
    (state / "rollout.md").write_text("# Rollout\n\n" + "\n\n".join(sections) + "\n")
    (state / "other.md").write_text("# Other\n\nA note about something else entirely.\n")
    assert call_script("index_personal.py", "--data-dir", tmp_path / "data", state).code == 0
    searcher = Searcher(load_settings(data_dir=str(tmp_path / "data")), "personal")
    try:
        store = searcher.refresh()["personal"]
        chunks = {(chunk.metadata["file"], chunk.metadata["chunk_index"]): chunk for chunk in store.all_chunks()}
        assert max(index for file, index in chunks if file == "rollout.md") == 5, "one chunk a section"

        def as_hit(file, index):
            chunk = chunks[(file, index)]
            return Hit(chunk.id, "personal", 0.5, chunk.text, chunk.metadata, Evidence(cosine=0.5), chunk.document)

        ranked = [as_hit("rollout.md", 0), as_hit("other.md", 0), as_hit("rollout.md", 2), as_hit("rollout.md", 5)]
        answer = shown({"personal": store}, np.ones(384, dtype=np.float32), ranked, top_k=3, per_file=0)
    finally:
        searcher.close()
    places = [(hit.metadata["file"], hit.metadata["chunk_index"]) for hit in answer]
    assert places == [("rollout.md", 0), ("other.md", 0), ("rollout.md", 5)]
    first = answer[0].text
    assert "canary weight is 15 percent" in first and "detail2x39" in first and "detail3x0" not in first
    assert first.count("detail1x0") == 1 and first.startswith("Step 0 of the rollout"), "no part twice, no heading first"
    assert answer[2].text == chunks[("rollout.md", 5)].text
