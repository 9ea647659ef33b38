"""The graded docs-faq labels and the scoring that bench/eval_docs.py does with them (bench/graded.py)."""

import json
import math
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "bench"))

import graded  # noqa: E402

LABELS = PROJECT / "bench" / "docs_faq_grades.jsonl"


def test_every_label_is_a_grade_with_a_reason_and_every_question_is_judged():
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    assert {row["grade"] for row in rows} == {0, 1, 2}
    assert all(row["reason"].strip() for row in rows)
    assert len({(row["id"], row["file"]) for row in rows}) == len(rows), "a page is judged once per question"
    assert len({row["id"] for row in rows}) == 75


def test_answer_hits_ndcg_and_recall_follow_the_grades():
    grades = {"a.md": 2, "b.md": 1, "c.md": 0, "d.md": 2}
    found = graded.graded_metrics(grades, relevant=["b.md"], ranked=["b.md", "b.md", "x.md", "a.md", "c.md", "d.md"])
    assert found["hit1"] == 0.0 and found["hit5"] == 1.0  # a.md is the 3rd distinct page
    assert found["recall10"] == 1.0 and found["linked5"] == 1.0
    assert found["unjudged5"] == 1.0  # x.md
    dcg = 1 / math.log2(2) + 3 / math.log2(4) + 3 / math.log2(6)  # b (1), a (3), d (3): duplicates count once
    ideal = 3 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    assert found["ndcg10"] == pytest.approx(dcg / ideal)


def test_a_question_no_page_answers_has_no_answer_metrics_but_keeps_its_ndcg():
    found = graded.graded_metrics({"a.md": 1}, relevant=[], ranked=["a.md"])
    assert found["hit1"] is None and found["hit5"] is None and found["recall10"] is None
    assert found["ndcg10"] == 1.0


def test_leave_one_corpus_out_never_chooses_with_the_corpus_it_scores():
    # "fit" is right on corpus x's three questions only, "plain" on y and z. Over every question fit would win (3 of 5);
    # scoring x, LOCO must choose on y and z alone, where plain wins.
    questions = [{"id": f"x{n}", "corpus": "x", "relevant": []} for n in range(3)]
    questions += [{"id": name, "corpus": name, "relevant": []} for name in ("y", "z")]
    grades = {q["id"]: {"good.md": 2} for q in questions}
    rankings = {"plain": {q["id"]: ["bad.md" if q["corpus"] == "x" else "good.md"] for q in questions},
                "fit": {q["id"]: ["good.md" if q["corpus"] == "x" else "bad.md"] for q in questions}}
    assembled, chosen = graded.loco(questions, rankings, grades, ["plain", "fit"])
    assert chosen["x"] == "plain" and assembled["x0"] == ["bad.md"]
    assert chosen["y"] == "fit"  # on x and z, fit is right 3 times of 4
