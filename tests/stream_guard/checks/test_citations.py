from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stream_guard.checks.citations import CitationCheck, find_markers
from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.events import Chunk
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import FindingType

CONTEXT = [
    "Returns are accepted within 14 days of delivery.",
    "The Pro plan costs $120 per year, billed annually.",
    "Support is available by email on weekdays.",
]
KB = (Chunk("kb-1", CONTEXT[0]), Chunk("kb-2", CONTEXT[1]))


def run(answer: str, context=CONTEXT, citations: tuple[str, ...] = ()):
    return CitationCheck(DetectorConfig()).run(Inspection.build("q", context, answer, citations=citations))


def test_correct_positional_citations_pass() -> None:
    result = run("Returns are accepted within 14 days [1]. The Pro plan costs $120 per year [2].")
    assert result.name == "citations"
    assert result.score == 0.0
    assert not result.flagged
    assert result.details["markers"] == 2
    assert len(result.verified) == 2


def test_marker_naming_no_chunk_is_fabricated() -> None:
    result = run("Returns are accepted within 14 days [7].")
    [finding] = result.findings
    assert finding.type is FindingType.CITATION_MISMATCH
    assert finding.kind == "fabricated_citation"
    assert finding.answer_value == "7"
    assert result.score == 1.0
    assert result.details["fabricated"] == 1


def test_wrong_chunk_names_the_supporting_chunk() -> None:
    result = run("The Pro plan costs $120 per year [1].")
    [finding] = result.findings
    assert finding.kind == "wrong_chunk"
    assert "chunk '2' supports it" in finding.evidence
    assert finding.answer_value == "1" and finding.source_value == "2"
    assert result.details["wrong_chunk"] == 1


def test_wrong_chunk_when_it_holds_none_of_a_sentence_no_chunk_supports() -> None:
    [finding] = run("Returns are handled by dragons [3].").findings
    assert finding.kind == "wrong_chunk"
    assert "holds none of the sentence's content words" in finding.evidence
    assert "no retrieved chunk supports it" in finding.evidence


def test_a_sentence_no_chunk_mentions_is_not_a_wrong_citation() -> None:
    # No chunk would be a better citation: whether the sentence is grounded is the faithfulness check's question.
    assert not run("Dragons guard the warehouse at night [3].").flagged


def test_the_only_chunk_is_never_the_wrong_one_for_an_unsupported_summary() -> None:
    context = ["Reviewers liked the tacos and the horchata; one came back three nights in a row."]
    assert not run("Customers praised the friendly staff and the tacos [1].", context=context).flagged


def test_a_chunk_another_matches_slightly_better_is_not_wrong() -> None:
    # The cited chunk holds 3 of the sentence's 8 content words, the other 5: a better match, not a wrong marker.
    context = ["The Pro plan is for teams.", "The Pro plan costs $120 per year."]
    assert not run("The Pro plan costs $120 per year, billed annually, for teams [1].", context=context).flagged


def test_a_sentence_drawing_on_two_chunks_may_cite_one() -> None:
    context = ["Returns are accepted.", "Refunds reach the original card within five business days; exchanges take 14 days."]
    answer = "Returns are accepted within 14 days and refunds reach the original card within five business days [1]."
    assert not run(answer, context=context).flagged


def test_markers_of_one_sentence_support_it_together() -> None:
    result = run("Returns take 14 days [1] and the Pro plan costs $120 per year [2].")
    assert result.details["markers"] == 2
    assert not result.flagged


def test_a_second_marker_naming_a_chunk_that_only_shares_the_topic_is_wrong() -> None:
    context = ["The Pro plan suits small teams.", "The Pro plan costs $120 per year, billed annually."]
    [finding] = run("The Pro plan costs $120 per year, billed annually [1][2].", context=context).findings
    assert finding.kind == "wrong_chunk"
    assert finding.answer_value == "1" and finding.source_value == "2"


def test_a_marker_naming_a_chunk_with_none_of_the_sentence_is_wrong_beside_a_right_one() -> None:
    [finding] = run("Returns are accepted within 14 days [1][3].").findings
    assert finding.answer_value == "3"


def test_multi_marker_bracket_supports_together() -> None:
    result = run("Returns take 14 days and the Pro plan costs $120 per year [1, 2].")
    assert result.details["markers"] == 2
    assert not result.flagged


def test_range_markers_expand() -> None:
    markers = find_markers(Inspection.build("q", CONTEXT, "Everything is documented [1-3]."))
    assert [m.ref for m in markers] == ["1", "2", "3"]


def test_chunk_id_markers_and_source_prefix() -> None:
    ok = run("Returns are accepted within 14 days [kb-1].", context=KB)
    assert not ok.flagged and ok.details["markers"] == 1
    bad = run("Returns are accepted within 14 days [source: kb-9].", context=KB)
    assert bad.findings[0].kind == "fabricated_citation"
    assert bad.findings[0].answer_value == "kb-9"
    unknown = run("Returns are accepted within 14 days [kb-7].", context=KB)
    assert unknown.findings[0].kind == "fabricated_citation"


def test_non_citation_brackets_are_ignored() -> None:
    answer = (
        "He wrote [sic] that the rule [Note] changed in [2019]; see [the docs](https://example.com) "
        "and [COVID-19] guidance."
    )
    result = run(answer)
    assert result.details["markers"] == 0
    assert result.score == 0.0
    assert not result.flagged


def test_bracketed_word_counts_when_it_is_a_chunk_id() -> None:
    result = run("Returns are accepted within 14 days [sic].", context=[Chunk("sic", CONTEXT[0])])
    assert result.details["markers"] == 1
    assert not result.flagged


def test_marker_after_the_full_stop_belongs_to_the_previous_sentence() -> None:
    result = run("The Pro plan costs $120 per year. [2] Support is by email.")
    assert not result.flagged
    [marker] = find_markers(Inspection.build("q", CONTEXT, "The Pro plan costs $120 per year. [2] Support is by email."))
    assert marker.sentence == "The Pro plan costs $120 per year."


def test_event_citations_must_name_chunks() -> None:
    result = run("Returns are accepted within 14 days.", context=KB, citations=("kb-1", "kb-5"))
    assert result.details["event_citations"] == 2
    assert result.details["total"] == 2
    [finding] = result.findings
    assert finding.kind == "fabricated_citation"
    assert finding.answer_value == "kb-5"
    assert result.score == 0.5


def test_score_is_mismatched_over_total() -> None:
    result = run("Returns are accepted within 14 days [1]. Support is by email [9]. Prices are $120 per year [2].")
    assert result.details == {
        "markers": 3,
        "event_citations": 0,
        "total": 3,
        "mismatched": 1,
        "fabricated": 1,
        "wrong_chunk": 0,
    }
    assert abs(result.score - 1 / 3) < 1e-9


def test_no_markers_scores_zero() -> None:
    result = run("Returns are accepted within 14 days.")
    assert result.score == 0.0
    assert not result.flagged
    assert run("").details["total"] == 0


@given(st.text(max_size=300), st.lists(st.text(max_size=100), max_size=3), st.lists(st.text(max_size=8), max_size=3))
def test_arbitrary_text_never_crashes_and_stays_bounded(answer: str, context: list[str], cited: list[str]) -> None:
    result = run(answer, context=context, citations=tuple(cited))
    assert 0.0 <= result.score <= 1.0
    assert result.details["mismatched"] <= result.details["total"]


def test_a_unicode_digit_citation_names_no_chunk():
    # "²".isdigit() is true but int("²") fails: found by the property test above.
    result = run("Returns take 14 days.", context=["Returns take 14 days."], citations=("²",))
    assert result.flagged
