"""One answer from both collections (relevance.py): each keeps its own order, the likelier answer comes first, a likely
answer of either is shown in the first three, and what is not shown is counted."""

import json
import shutil

from conftest import EXAMPLES, add_source, call_script, hit, index_docs
from rag_search.search import relevance


def record(chunk_id, score, dense, lexical_rank=None, collection="personal", file=None):
    return hit(chunk_id, file or f"{chunk_id}.md", collection, score=score, dense=dense, lexical_rank=lexical_rank)


def strong_notes(count):
    """The user's notes, each found by both retrievers and close in meaning."""
    return [record(f"note-{n}", 0.72 - 0.01 * n, n, n) for n in range(1, count + 1)]


def weak_pages(count, best=0.42):
    """Documentation pages by meaning only."""
    return [record(f"page-{n}", best - 0.01 * n, n, collection="docs") for n in range(1, count + 1)]


def pages_found_by_both(count, best):
    return [record(f"page-{n}", best - 0.01 * n, n, n, "docs") for n in range(1, count + 1)]


def test_each_collection_keeps_its_own_order():
    mine = [record("a", 0.50, 2, 1), record("b", 0.62, 1), record("c", 0.40, 3, 2)]
    pages = [record("x", 0.45, 3, 1, "docs"), record("y", 0.70, 1, 2, "docs"), record("z", 0.60, 2, collection="docs")]
    order, _ = relevance.merge({"personal": mine, "docs": pages}, top_k=5)
    assert [found.id for found in order if found.collection == "personal"] == ["a", "b", "c"]
    assert [found.id for found in order if found.collection == "docs"] == ["x", "y", "z"]


def test_the_collection_more_likely_to_answer_comes_first_either_way():
    order, _ = relevance.merge({"personal": strong_notes(3), "docs": weak_pages(3)}, top_k=5)
    assert order[0].collection == "personal"
    notes = [record(f"note-{n}", 0.30 - 0.01 * n, n) for n in range(1, 4)]  # far from the question, by meaning only
    pages = [record(f"page-{n}", 0.78 - 0.01 * n, n, n, "docs") for n in range(1, 4)]  # close, found by both
    order, _ = relevance.merge({"personal": notes, "docs": pages}, top_k=5)
    assert order[0].collection == "docs"
    assert all(found.evidence.relevance is not None for found in order), "--explain shows each result's chance"


# A model of closeness alone (a chance of 0.5 at a cosine of 0.5), to see the merge's rules apart from the fitted weights.
BY_COSINE = {name: (10.0,) + (0.0,) * (len(relevance.FEATURES) - 1) + (-5.0,) for name in ("personal", "docs")}


def test_a_likely_answer_of_the_other_collection_is_shown_in_the_first_three():
    """Five notes likelier to answer than the documentation's best would take the first five places; the page, likely
    enough, takes the third."""
    pages = pages_found_by_both(3, best=0.66)
    order, _ = relevance.merge({"personal": strong_notes(5), "docs": pages}, 5, 0.1, BY_COSINE, 0.0)
    assert [found.id for found in order[:4]] == ["note-1", "note-2", "page-1", "note-3"]
    order, _ = relevance.merge({"personal": strong_notes(5), "docs": pages}, 5, 1.0, BY_COSINE, 0.0)
    assert order.index(pages[0]) == 5, "without the place, its chance alone puts it after the notes"


def test_likely_answers_below_the_cut_are_counted_per_collection():
    pages = pages_found_by_both(3, best=0.66) + [record(f"far-{n}", 0.25, 3 + n, collection="docs") for n in range(1, 4)]
    _, more = relevance.merge({"personal": strong_notes(5), "docs": pages}, 3, 0.1, BY_COSINE, 0.0)
    assert more == {"personal": 3, "docs": 2}, "two strong pages below the cut are counted, three far ones not"


def test_the_answer_says_what_the_other_collection_had_below_the_cut(tmp_path):
    """search.py over both collections: a documentation set whose pages answer the question well, asked for one
    result, says how many more are likely answers; --index personal says nothing of it."""
    state, pages = tmp_path / "state", tmp_path / "docs"
    shutil.copytree(EXAMPLES, state)
    pages.mkdir()
    for n, topic in enumerate(("self-heal", "automated sync", "pruning", "sync waves", "sync windows")):
        (pages / f"argocd-{n}.md").write_text(f"# ArgoCD {topic}\n\nArgoCD {topic}: when ArgoCD self-heal is enabled, "
                                              f"ArgoCD reverts manual changes made to the cluster ({topic}). "
                                              "Self-heal is disabled by default and is set under syncPolicy.automated.\n")
    data, sources = tmp_path / "data", tmp_path / "sources.json"
    assert call_script("index_personal.py", "--data-dir", data, "--quiet", state).code == 0
    add_source("--sources", sources, "--data-dir", data, "--id", "argocd", "--name", "ArgoCD", "--type", "local",
               "--path", pages)
    assert index_docs(data, "--sources", sources, "--all").code == 0
    question = "why is ArgoCD self-heal disabled?"
    both = call_script("search.py", "--data-dir", data, "--top-k", "1", question)
    assert both.code == 0, both
    answer = json.loads(both.stdout)
    assert answer["more"]["docs"] >= 1, answer
    alone = json.loads(call_script("search.py", "--data-dir", data, "--index", "personal", "--top-k", "1", question).stdout)
    assert "more" not in alone


def test_the_users_record_first_in_both_lists_comes_before_a_page_a_little_closer_in_meaning():
    """The personal head start's default, from the side that hurts: the user's record, first in both of its lists, comes
    before a documentation page whose cosine is 0.15 higher; without the head start the page comes first."""
    def lists():
        return {"personal": [record("mine", 0.50, 1, 1)] + [record(f"note-{n}", 0.40, n, n) for n in (2, 3)],
                "docs": [record("page", 0.65, 1, 1, "docs")] + [record(f"page-{n}", 0.55, n, n, "docs") for n in (2, 3)]}
    assert relevance.merge(lists(), 5)[0][0].id == "mine"
    assert relevance.merge(lists(), 5, head_start=0.0)[0][0].id == "page"
