from __future__ import annotations

import pytest

from stream_guard.heal.grounding_rewrite import (
    PREFIX_FIGURES,
    PREFIX_GENERAL,
    PREFIX_POLICY,
    choose_prefix,
    rewrite,
    select_sentences,
)
from stream_guard.text.inspection import Inspection

RESEARCH = [
    "Recent studies show transformer models achieve 94% accuracy on NER tasks.",
    "Fine-tuning on domain-specific data improves performance by 12-18%.",
    "The benchmark dataset contains 50,000 annotated examples.",
]


def test_rebuilds_from_context_with_a_figures_prefix():
    inspection = Inspection.build(
        "Who published the key research on transformer NER performance?",
        RESEARCH,
        "Dr. James Harrison published it in arXiv:2204.09876.",
    )
    result = rewrite(inspection)
    assert result.text is not None
    assert result.text.startswith(PREFIX_FIGURES + " ")
    assert RESEARCH[0] in result.text
    assert "Harrison" not in result.text
    assert result.changes[0].kind == "rewrite"


def test_question_overlap_ranks_first_and_document_order_is_kept():
    context = [
        "Shipping is free on orders over $50.",
        "Returns are accepted within 14 days of purchase.",
        "Our offices are closed on public holidays.",
        "Refunds for returns are issued to the original payment method.",
    ]
    chosen = select_sentences(Inspection.build("How do returns and refunds work?", context, ""), limit=2)
    assert chosen == [context[1], context[3]]


def test_answer_overlap_breaks_ties():
    context = ["Plan A includes email support for customers.", "Plan B includes phone support for customers."]
    inspection = Inspection.build("What support is included?", context, "You get phone support.")
    assert select_sentences(inspection, limit=1) == [context[1]]


def test_unrelated_context_offers_nothing():
    inspection = Inspection.build("What is the warranty?", ["Our cafeteria serves lunch daily."], "Two years.")
    assert rewrite(inspection).text is None


def test_empty_context_offers_nothing():
    assert rewrite(Inspection.build("What is the warranty?", [], "Two years.")).text is None


@pytest.mark.parametrize(
    "text, prefix",
    [
        ("The Pro plan costs $120 per year.", PREFIX_FIGURES),
        ("Returns are accepted within 14 days.", PREFIX_FIGURES),
        ("Accuracy reached 94% on the benchmark.", PREFIX_FIGURES),
        ("Our refund policy requires the original receipt.", PREFIX_POLICY),
        ("Follow the escalation procedure for outages.", PREFIX_POLICY),
        ("The office is located in Berlin.", PREFIX_GENERAL),
    ],
)
def test_prefix_follows_what_the_context_holds(text, prefix):
    assert choose_prefix(text) == prefix


def test_chunk_objects_are_accepted():
    from stream_guard.wire.events import Chunk

    inspection = Inspection.build("Where is the office?", (Chunk("a", "The office is located in Berlin."),), "Paris.")
    assert rewrite(inspection).text == f"{PREFIX_GENERAL} The office is located in Berlin."


@pytest.mark.parametrize("crawled", [
    "Tiling costs vary on the lower end of the price range.ost a tiling job and we will look for tilers.",
    "tiling costs vary with the size of the bathroom floor.",  # a chunk cut mid-word
    "3  Tiling costs less with large tiles than with mosaics.",  # a list number left from the web page
    "I loved the tiling they did in my bathroom last spring.",
    'The tiler said "it will cost more than expected" to us.',
])
def test_a_chunk_that_is_not_clean_prose_is_never_copied_and_the_rewrite_says_why(crawled):
    inspection = Inspection.build("How much does tiling cost?", [crawled], "Tiling costs $5,000 on average.")
    result = rewrite(inspection)
    assert result.text is None
    assert [c.kind for c in result.changes] == ["refused"]
    assert "clean prose" in result.changes[0].description


def test_clean_sentences_beside_crawl_artefacts_are_still_used():
    context = ["Tiling costs vary on the lower end of the price range.ost a tiling job.",
               "A typical bathroom tiling job costs between $800 and $2,000."]
    result = rewrite(Inspection.build("How much does tiling cost?", context, "Tiling costs $5,000 on average."))
    assert result.text is not None and context[1] in result.text and ".ost" not in result.text


def test_what_a_sentence_is_on_its_own_is_kept_per_context_and_what_fits_the_answer_is_judged_per_answer():
    # The quotation (and its "us") reads like the answer that quotes it in the first person, not like the plain
    # one: the per-context memory of each sentence's own cleanliness must not carry one answer's verdict over to
    # the other, in either order.
    context = ['The tiler said "it will cost more than expected" to us.',
               "A typical bathroom tiling job costs between $800 and $2,000."]
    plain = "Tiling costs $5,000 on average."
    quoting = 'I loved the tiling. The tiler said "it will cost more than expected" and it costs $5,000.'
    for answers in ((plain, quoting, plain), (quoting, plain, quoting)):
        texts = [rewrite(Inspection.build("How much does tiling cost?", context, a)).text or "" for a in answers]
        assert [context[0] in text for text in texts] == [a == quoting for a in answers]
        assert all(context[1] in text for text in texts)
