"""bench/perturb.py: the wrong-citation catch class and where the must-keep variants put their markers."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import perturb  # noqa: E402

CONTEXT = ["Returns are accepted within 14 days of delivery.", "The Pro plan costs $120 per year, billed annually."]


def test_a_wrong_citation_names_a_chunk_holding_none_of_its_sentence_and_is_the_only_marker():
    answer = "Returns are accepted within 14 days of delivery.\nThe Pro plan costs $120 per year."
    cited, right, wrong = perturb.wrong_citation({"answer": answer, "context": CONTEXT})
    assert (right, wrong) == ("[1]", "[2]")
    assert cited == "Returns are accepted within 14 days of delivery [2].\nThe Pro plan costs $120 per year."


def test_no_wrong_citation_without_a_second_chunk_or_one_sharing_nothing():
    answer = "Returns are accepted within 14 days of delivery."
    assert perturb.wrong_citation({"answer": answer, "context": CONTEXT[:1]}) is None
    # "returned" is "returns" in another form: that chunk shares a word, so it is no wrong citation here.
    sharing = [CONTEXT[0], "Items returned after a sale become store credit."]
    assert perturb.wrong_citation({"answer": answer, "context": sharing}) is None


def test_markers_go_on_sentences_not_on_list_numbers_or_list_introductions():
    answer = "Here is what the passages say:\n\n1. Returns are accepted within 14 days. 2. The Pro plan costs $120 per year."
    cited = perturb._cite_each({"answer": answer, "context": CONTEXT}, lambda i: f"[{i + 1}]")
    assert cited == ("Here is what the passages say: 1. Returns are accepted within 14 days [1]. "
                     "2. The Pro plan costs $120 per year [2].")
