"""One answer from both collections (relevance.py): each keeps its own order, the likelier answer comes first, the five
shown are those likeliest to hold the user's answer among the first three and a documentation answer among the five,
and what is not shown is counted."""

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


def test_the_five_shown_are_those_likeliest_to_hold_an_answer_of_each():
    """Five notes each likelier to answer than any page would take all five places by chance alone; a third note adds
    less to the chance that the user's answer is shown (0.987 -> 0.998) than a third page adds to the documentation's
    (0.964 -> 0.992), so two notes and three pages are shown, likelier first."""
    pages = pages_found_by_both(3, best=0.66)
    order, _ = relevance.merge({"personal": strong_notes(5), "docs": pages}, 5, BY_COSINE, 0.0)
    assert [found.id for found in order] == ["note-1", "note-2", "page-1", "page-2", "page-3", "note-3", "note-4", "note-5"]


def test_unlikely_notes_chosen_for_the_first_three_are_shown_there_before_likely_pages():
    """Notes of chance 0.12-0.17 and pages of 0.88-0.92: past two pages a third adds next to nothing, and each note
    adds its own chance that the user's answer is among the first three, which is where they are shown."""
    notes = [record(f"note-{n}", 0.35 - 0.01 * n, n) for n in range(1, 6)]
    order, _ = relevance.merge({"personal": notes, "docs": pages_found_by_both(5, best=0.75)}, 5, BY_COSINE, 0.0)
    assert [found.id for found in order[:5]] == ["note-1", "note-2", "note-3", "page-1", "page-2"]


def test_a_note_chosen_for_the_first_three_stays_there_below_a_likelier_page():
    """Chances 0.88 and 0.20 for the notes, 0.50, 0.45 and 0.40 for the pages: the second note comes before the
    second page, which is likelier, because it is worth something only among the first three."""
    notes = [record("note-1", 0.70, 1, 1), record("note-2", 0.36, 2)]
    pages = [record(f"page-{n}", 0.52 - 0.02 * n, n, collection="docs") for n in range(1, 4)]
    order, _ = relevance.merge({"personal": notes, "docs": pages}, 5, BY_COSINE, 0.0)
    assert [found.id for found in order] == ["note-1", "page-1", "note-2", "page-2", "page-3"]


def test_one_result_asked_for_is_the_likeliest_of_either():
    order, _ = relevance.merge({"personal": strong_notes(2), "docs": pages_found_by_both(2, best=0.80)}, 1, BY_COSINE, 0.0)
    assert order[0].id == "page-1"


def test_likely_answers_below_the_cut_are_counted_per_collection():
    pages = pages_found_by_both(3, best=0.66) + [record(f"far-{n}", 0.25, 3 + n, collection="docs") for n in range(1, 4)]
    _, more = relevance.merge({"personal": strong_notes(5), "docs": pages}, 3, BY_COSINE, 0.0)
    assert more == {"personal": 4, "docs": 1}, "of three shown (a note, two pages): a strong page is counted, far ones not"


def test_the_answer_says_what_the_other_collection_had_below_the_cut(tmp_path):
    """search.py over both collections: a documentation set whose pages answer the question well, asked for one
    result, says how many more are likely answers; --index personal says nothing of it."""
    state, pages = tmp_path / "state", tmp_path / "docs"
    shutil.copytree(EXAMPLES, state)
    pages.mkdir()
    for n, topic in enumerate(("self-heal", "automated sync", "pruning", "sync waves", "sync windows")):
        (pages / f"argocd-{n}.md").write_text(f"# ArgoCD {topic}: why self-heal is disabled\n\nArgoCD {topic}: when ArgoCD "
                                              f"self-heal is enabled, ArgoCD reverts manual changes made to the cluster ({topic}). "
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
    before a documentation page whose cosine is 0.20 higher; with a head start of 0.5 the page comes first."""
    def lists():
        return {"personal": [record("mine", 0.50, 1, 1)] + [record(f"note-{n}", 0.40, n, n) for n in (2, 3)],
                "docs": [record("page", 0.70, 1, 1, "docs")] + [record(f"page-{n}", 0.60, n, n, "docs") for n in (2, 3)]}
    assert relevance.merge(lists(), 5)[0][0].id == "mine"
    assert relevance.merge(lists(), 5, head_start=0.5)[0][0].id == "page"
