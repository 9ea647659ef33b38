"""From evidence to an order (ranking.py): fusion, page evidence, recency, release history."""

import time
from dataclasses import replace

from conftest import call_script, hit
from rag_search.search.ranking import asks_about_history, implied_recency_days, rank
from rag_search.search.retrieval import SearchOptions

PLAIN = SearchOptions(lead=0.0)  # reciprocal rank fusion alone


def test_reciprocal_rank_fusion_rewards_agreement():
    candidates = {
        "both": hit("both", dense=2, lexical_rank=2),
        "dense-only": hit("dense-only", dense=1),
        "lexical-only": hit("lexical-only", lexical_rank=1),
    }
    order = rank(candidates, PLAIN)
    assert order[0] == "both"
    assert candidates["both"].explain["rrf"] == round(2 / (PLAIN.rrf_k + 2), 6)
    assert set(order[1:]) == {"dense-only", "lexical-only"}


def test_fusion_weights_and_k():
    candidates = {"d": hit("d", dense=1), "l": hit("l", lexical_rank=1)}
    assert rank(candidates, SearchOptions(lead=0.0, dense_weight=2.0))[0] == "d"
    assert rank(candidates, SearchOptions(lead=0.0, lexical_weight=2.0))[0] == "l"


def test_single_modes_keep_their_own_order():
    """Three orders that all differ, so a single mode that fell back to fusion is seen."""
    candidates = {
        "p": hit("p", score=0.9, dense=1, lexical_rank=2, bm25=6.0),
        "q": hit("q", score=0.7, dense=2, lexical_rank=3, bm25=3.0),
        "r": hit("r", score=0.5, dense=3, lexical_rank=1, bm25=9.0),
    }
    assert rank(candidates, PLAIN) == ["p", "r", "q"]  # 1/11+1/12, 1/13+1/11, 1/12+1/13
    assert rank(candidates, SearchOptions(mode="dense")) == ["p", "q", "r"]
    assert rank(candidates, SearchOptions(mode="lexical")) == ["r", "p", "q"]


def test_a_keyword_match_that_stands_out_earns_a_lead():
    """An exact identifier scores far above every other keyword match; ranks alone hide that gap (on the
    mixed bench, keyword search put the record first for more personal questions than hybrid did)."""
    candidates = {
        "near": hit("near", "near.md", score=0.5, dense=1, lexical_rank=2, bm25=5.0),
        "exact": hit("exact", "exact.md", score=0.4, dense=3, lexical_rank=1, bm25=30.0),
    }
    assert rank(candidates, PLAIN)[0] == "near"
    assert rank(candidates, SearchOptions())[0] == "exact"


def test_a_chunk_first_in_both_rankings_beats_a_page_whose_best_chunk_is_weaker_in_both():
    """A page's evidence once grew with its length, so a long page of fair sections beat the record
    that is first in both lists. In either collection, whatever its page bonus (documentation's is larger)."""
    for collection in ("personal", "docs"):
        candidates = {"record": hit("record", "memory/m-7.json", collection, score=0.63, dense=1, lexical_rank=1,
                                    heading="m-7", kind="json")}
        for n in range(2, 9):  # the strongest page weaker in both: ranks 2, 3, 4... in both lists, all close in meaning
            candidates[f"page-{n}"] = hit(f"page-{n}", "metrics.md", collection, score=0.62 - n / 100, dense=n,
                                          lexical_rank=n, heading=f"Metrics > Part {n}")
        assert rank(candidates, SearchOptions())[0] == "record", collection


def test_a_documentation_page_of_several_strong_sections_outranks_one_that_matches_in_one():
    """A documentation page that answers usually matches in several sections, while a pointer to it ("see
    the blog post on why we don't use Envoy") matches in one; its supporting sections count for more than a note's."""
    candidates = {"pointer": hit("pointer", "overview.md", score=0.6, dense=1, lexical_rank=2, heading="Overview > How")}
    candidates["answer"] = hit("answer", "envoy.md", score=0.55, dense=5, lexical_rank=1, heading="Why > Intro")
    for n in range(3):  # three more sections of the answering page, found by both retrievers, close in meaning
        candidates[f"answer-{n}"] = hit(f"answer-{n}", "envoy.md", score=0.5, dense=20 + n, lexical_rank=20 + n,
                                        heading=f"Why > Part {n}")
    assert rank(candidates, PLAIN)[0] == "answer"
    assert rank(candidates, SearchOptions(lead=0.0, docs_page_bonus=PLAIN.page_bonus, docs_page_support=2))[0] == "pointer"


def test_a_long_documentation_page_of_many_fair_sections_does_not_outrank_one_of_a_few_strong_ones():
    """docs_page_support's default, from the side that hurts: a page's bonus counts its best few other sections, so a
    long reference page that mentions the question in eight fair sections stays below a guide that answers it in three
    strong ones; counting every section, length wins."""
    candidates = {"guide": hit("guide", "guide.md", score=0.6, dense=1, lexical_rank=2, heading="Guide > Intro"),
                  "reference": hit("reference", "reference.md", score=0.6, dense=2, lexical_rank=1, heading="Ref > A")}
    for n in range(2):
        candidates[f"guide-{n}"] = hit(f"guide-{n}", "guide.md", score=0.58, dense=3 + n, lexical_rank=3 + n,
                                       heading=f"Guide > Part {n}")
    for n in range(8):
        candidates[f"reference-{n}"] = hit(f"reference-{n}", "reference.md", score=0.5, dense=12 + n, lexical_rank=12 + n,
                                           heading=f"Ref > Option {n}")
    assert rank(candidates, PLAIN)[0] == "guide"
    assert rank(candidates, replace(PLAIN, docs_page_support=8))[0] == "reference"


def test_of_two_documentation_pages_with_equal_sections_the_one_closer_as_a_whole_comes_first():
    """A pointer page ("for backups, see the backup guide") matches the question in one sentence while the
    page it points to is about the question throughout; retrieval gives each documentation page its closeness as a
    whole (the cosine of its chunks' mean vector), which ranks the candidate pages as a third list."""
    candidates = {"pointer": hit("pointer", "overview.md", score=0.6, dense=1, lexical_rank=2, heading="Overview > Backups"),
                  "guide": hit("guide", "backup.md", score=0.58, dense=2, lexical_rank=1, heading="Backup > Snapshots")}
    candidates["pointer"].evidence.page_cosine = 0.31
    candidates["guide"].evidence.page_cosine = 0.55
    assert rank(candidates, replace(PLAIN, docs_page_closeness=0.0))[0] == "pointer", "tied: the first seen"
    assert rank(candidates, PLAIN)[0] == "guide"
    assert candidates["guide"].explain["page_closeness"] == round(PLAIN.docs_page_closeness / (PLAIN.rrf_k + 1), 6)
    assert candidates["pointer"].explain["page_closeness"] == round(PLAIN.docs_page_closeness / (PLAIN.rrf_k + 2), 6)


def test_a_page_bonus_orders_pages_within_their_collection_but_not_the_collections():
    """Documentation pages earn more from their sections than the user's records, which have one: between the two
    collections the strongest chunk each has still to show decides, so the record first in both of its lists comes
    before a documentation page whose best chunk is weaker, whatever that page's bonus."""
    candidates = {
        "mine": hit("mine", "decisions.json", "personal", score=0.60, dense=1, lexical_rank=1, heading="[3]", kind="json"),
        "top": hit("top", "top.md", "docs", score=0.63, dense=1, lexical_rank=2, heading="Top"),
        "guide": hit("guide", "guide.md", "docs", score=0.62, dense=2, lexical_rank=1, heading="Guide > A"),
    }
    for n in range(3, 6):
        candidates[f"guide-{n}"] = hit(f"guide-{n}", "guide.md", "docs", score=0.6, dense=n, lexical_rank=n,
                                       heading=f"Guide > {n}")
    order = rank(candidates, PLAIN)
    assert order[0] == "mine"
    assert order.index("guide") < order.index("top"), "within the docs, the page of several strong sections first"


def test_supporting_sections_count_only_when_strong_in_both_signals():
    """Two pages with equal best sections: a second section found by both retrievers and close in meaning adds a
    bounded bonus; one only the keyword search found, or one far in meaning, adds nothing."""
    candidates = {
        "weak-1": hit("weak-1", "weak.md", score=0.6, dense=2, lexical_rank=3, heading="Weak > A"),
        "weak-2": hit("weak-2", "weak.md", lexical_rank=4, heading="Weak > B"),  # keyword only: closeness unknown
        "weak-3": hit("weak-3", "weak.md", score=0.1, dense=5, lexical_rank=5, heading="Weak > C"),  # far in meaning
        "strong-1": hit("strong-1", "strong.md", score=0.6, dense=3, lexical_rank=2, heading="Strong > A"),
        "strong-2": hit("strong-2", "strong.md", score=0.55, dense=6, lexical_rank=6, heading="Strong > B"),
    }
    assert rank(candidates, PLAIN)[0] == "strong-1"
    assert candidates["weak-1"].explain["page_bonus"] == 0
    assert candidates["strong-1"].explain["page_bonus"] == round(PLAIN.docs_page_bonus * 2 / (PLAIN.rrf_k + 6), 6)


def test_a_section_split_into_chunks_counts_once_and_records_stand_alone():
    long_section = {f"long-{i}": hit(f"long-{i}", "long.md", dense=i + 2, lexical_rank=i + 2, heading="Long > Part")
                    for i in range(3)}
    candidates = {"short": hit("short", "short.md", dense=1, heading="Short"), **long_section}
    assert rank(candidates, SearchOptions())[0] == "long-0", "the long section's best chunk is found by both retrievers"
    assert candidates["long-0"].explain["page_bonus"] == 0, "its other chunks are the same section"
    records = {f"r{i}": hit(f"r{i}", "decisions.json", dense=i + 2, heading=f"decisions.json > [{i}]", kind="json") for i in range(3)}
    candidates = {"note": hit("note", "note.md", dense=1, heading="Note"), **records}
    assert rank(candidates, SearchOptions()) == ["note", "r0", "r1", "r2"], "records are not summed"


def test_recency_raises_recent_personal_chunks_and_never_lowers_older_ones():
    """Recency once only lowered personal scores, so older records fell behind documentation."""
    now = time.time()
    candidates = {
        "old": hit("old", "old.md", "personal", score=0.6, dense=1, date_ts=now - 400 * 86400),
        "new": hit("new", "new.md", "personal", score=0.59, dense=2, date_ts=now - 1 * 86400),
    }
    assert rank(candidates, SearchOptions()) == ["old", "new"]
    assert rank(candidates, SearchOptions(recency_half_life_days=30)) == ["new", "old"]
    assert candidates["old"].explain["recency"] >= 1.0, "an older record keeps its evidence"
    page = {"doc": hit("doc", "doc.md", "docs", score=0.6, dense=1, date_ts=now - 1 * 86400)}
    rank(page, SearchOptions(recency_half_life_days=30))
    assert "recency" not in page["doc"].explain, "documentation is not ranked by its age"


def test_a_question_about_a_recent_time_ranks_recent_personal_chunks_higher():
    """"What did I push yesterday?" asks for the newest of similar records; without a time in the question, no
    recency (the mixed bench's "yesterday's session" question lost its record to an older one)."""
    assert implied_recency_days("which chart package did I push in yesterday's session?") == 2
    assert implied_recency_days("last week's lesson about the CI cache") == 7
    assert implied_recency_days("what changed this month in our alerting?") == 30
    assert implied_recency_days("what did we decide recently about caching?") == 14
    assert implied_recency_days("How do I configure the rate limit middleware?") is None
    assert implied_recency_days("the last good revision of the release") is None


def test_search_applies_the_recency_a_question_implies_unless_one_is_set(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    # For the plain question the older note matches better, first in both lists; yesterday's comes second in both.
    # Three unrelated notes too: in a collection of two every term is in half of it, which BM25 weighs at about zero.
    (notes / "old.md").write_text("---\ndate: 2023-03-01\n---\n# Which chart we pushed to the registry\n\n"
                                  "We pushed the chart api-gateway 1.4.0 to the registry after the release review.\n")
    yesterday = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 86400))  # a date alone: its age grew with the hour
    (notes / "new.md").write_text(f"---\ndate: {yesterday}\n---\n# Friday\n\nPushed the billing chart 2.0.1 to our registry.\n")
    for topic in ("dentist appointment on Tuesday", "the garden needs water", "book club reads Dune next"):
        (notes / f"{topic.split()[1]}.md").write_text(f"# Note\n\nRemember: {topic}.\n")
    data = tmp_path / "data"
    assert call_script("index_personal.py", "--data-dir", data, notes).code == 0
    asked = call_script("search.py", "--data-dir", data, "--explain", "--index", "personal",
                       "which chart did we push to the registry yesterday?")
    assert asked.code == 0, asked
    assert asked.json["results"][0]["file"] == "new.md"
    assert all("recency" in result["explain"] for result in asked.json["results"])
    plain = call_script("search.py", "--data-dir", data, "--explain", "--index", "personal", "which chart did we push to the registry?")
    assert plain.json["results"][0]["file"] == "old.md"
    assert not any("recency" in result["explain"] for result in plain.json["results"])


def test_the_one_page_holding_an_identifier_of_the_question_is_not_ranked_below_a_page_that_lacks_it():
    """"LED-517 export fix" once ranked the note of LED-482 (closer in meaning, two matching sections) above the one
    note that holds LED-517. Retrieval marks the chunk of the one page holding an identifier of the question; that
    page then comes first, documentation too."""
    candidates = {  # the evidence of that search
        "near-1": hit("near-1", "tickets/led-482.md", "personal", score=0.66, dense=1, lexical_rank=3, bm25=4.8,
                      heading="LED-482 > Follow-up"),
        "near-2": hit("near-2", "tickets/led-482.md", "personal", score=0.59, dense=2, lexical_rank=2, bm25=5.8,
                      heading="LED-482 > Fix"),
        "near-3": hit("near-3", "tickets/led-482.md", "personal", score=0.58, dense=3, lexical_rank=4, bm25=4.1,
                      heading="LED-482 > Symptom"),
        "exact": hit("exact", "tickets/led-517.md", "personal", score=0.56, dense=4, lexical_rank=1, bm25=9.7, heading="LED-517"),
        "other": hit("other", "notes.md", "personal", score=0.47, dense=5, heading="Team notes"),
        "doc": hit("doc", "export.md", "docs", score=0.6, dense=1, lexical_rank=1, heading="Exports"),
    }
    assert rank(candidates, SearchOptions())[0] != "exact"
    candidates["exact"].evidence.identifier = "led517"
    for mode in ("hybrid", "lexical"):
        assert rank(candidates, SearchOptions(mode=mode))[0] == "exact", mode
    assert rank(candidates, SearchOptions(mode="dense"))[0] != "exact"  # meaning alone, as asked
    assert rank(candidates, SearchOptions(exact_identifiers=False))[0] != "exact"


def history_candidates():
    """A changelog entry first in both lists (it names the question's words in passing), and the guide that answers,
    second in both with two supporting sections."""
    candidates = {"entry": hit("entry", "CHANGES.rst", score=0.64, dense=1, lexical_rank=1, heading="Version 2.0.1")}
    candidates["guide"] = hit("guide", "server.rst", score=0.62, dense=2, lexical_rank=2, heading="Server > Reloader")
    for n in range(2):
        candidates[f"guide-{n}"] = hit(f"guide-{n}", "server.rst", score=0.6, dense=3 + n, lexical_rank=3 + n,
                                       heading=f"Server > Part {n}")
    candidates["entry"].metadata["page_kind"] = "changelog"
    for chunk_id in ("guide", "guide-0", "guide-1"):
        candidates[chunk_id].metadata["page_kind"] = "guide"
    return candidates


def test_release_history_weighs_less_with_a_history_penalty_even_when_it_ranks_better_in_both_lists():
    """pytest's changelog came first for questions its guides answer: it matches most words in passing. With
    history_penalty, a changelog chunk's key weighs 1 - penalty, and its page is not lifted back above a guide's by
    ranking better in both lists (which would undo the weight where it matters: the changelog first in both)."""
    assert rank(candidates := history_candidates(), SearchOptions())[0] == "entry", "by default history is not weighed"
    assert "history" not in candidates["entry"].explain
    order = rank(candidates := history_candidates(), SearchOptions(history_penalty=0.5))
    assert order[0] == "guide"
    assert candidates["entry"].explain["history"] == 0.5 and "history" not in candidates["guide"].explain
    fused_only = SearchOptions(docs_page_bonus=0.0, docs_page_closeness=0.0)  # the entry's key alone is the larger
    assert rank(history_candidates(), replace(fused_only, history_penalty=0.05))[0] == "entry", "a small weight, a small effect"
    assert rank(history_candidates(), replace(fused_only, history_penalty=0.5))[0] == "guide"


def test_a_page_without_a_kind_is_not_weighed_as_history():
    """An index built before page kinds: no chunk has one, and the order is as without the penalty."""
    candidates = history_candidates()
    for found in candidates.values():
        del found.metadata["page_kind"]
    assert rank(candidates, SearchOptions(history_penalty=0.9))[0] == "entry"


def test_a_question_about_a_version_a_release_or_a_change_asks_about_history():
    for question in ("what's new in Flask 2.0?", "What changed in 3.1", "which version added async views?",
                     "is send_file deprecated?", "why was the --strict flag removed", "how do I upgrade to pytest 8",
                     "migrate from nose to pytest", "breaking changes in the last release", "new in v2",
                     "since version 7, how are markers registered?", "when was this released?", "changelog of requests"):
        assert asks_about_history(question), question
    for question in ("how do I run a job every weekday at 6:45?", "why keep the lock file in version control",
                     "reload the server when code changes", "how do I change the port?", "since I use Docker, where do logs go?",
                     "parametrize a fixture"):
        assert not asks_about_history(question) or "version" in question, question
