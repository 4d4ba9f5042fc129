from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stream_guard.checks.relevance import RelevanceCheck, question_terms
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import FindingType

TAX = "Keep tax records for 3 years from the date you filed your original return."


def run(question: str, context, threshold: float = 0.25):
    return RelevanceCheck(DetectorConfig(relevance_threshold=threshold)).run(Inspection.build(question, context, "a"))


def test_relevant_context_scores_high() -> None:
    result = run("How long should I keep my tax records?", [TAX])
    assert result.name == "relevance"
    assert result.score >= 0.9
    assert not result.flagged
    assert result.findings == ()


def test_unrelated_context_is_flagged() -> None:
    result = run("How long should I keep my tax records?", ["Preheat the oven and whisk the eggs with sugar."])
    assert result.score < 0.25
    assert result.flagged
    [finding] = result.findings
    assert finding.type is FindingType.UNSUPPORTED
    assert finding.kind == "irrelevant_context"
    assert "'tax'" in finding.evidence


def test_empty_question_scores_one() -> None:
    result = run("", ["anything at all"])
    assert result.score == 1.0
    assert not result.flagged


def test_empty_context_scores_zero_and_is_flagged() -> None:
    result = run("How long should I keep my tax records?", [])
    assert result.score == 0.0
    assert result.flagged
    assert "no context" in result.findings[0].evidence


def test_question_words_are_not_terms() -> None:
    assert set(question_terms("How long do you have to keep tax records?")) == {"keep", "tax", "record"}


def test_question_without_subject_words_is_not_judged() -> None:
    assert not run("What is it?", ["Preheat the oven."]).flagged


def test_terms_covered_together_score_higher_than_scattered() -> None:
    question = "Which oven temperature for sourdough bread?"
    together = run(question, ["Bake sourdough bread at an oven temperature of 250 C.", "Unrelated text."])
    scattered = run(question, ["The oven is new.", "Temperature varies.", "Sourdough bread is sour."])
    assert together.score > scattered.score
    assert scattered.details["context_coverage"] == together.details["context_coverage"] == 1.0


def test_partial_coverage_is_proportional() -> None:
    result = run("Tax records retention for lighthouse keepers", [TAX])
    assert 0.2 < result.score < 0.8
    assert set(result.details["missing_terms"]) == {"retention", "lighthouse", "keepers"}


@given(st.text(max_size=200), st.lists(st.text(max_size=200), max_size=3))
def test_arbitrary_text_never_crashes_and_stays_bounded(question: str, context: list[str]) -> None:
    result = run(question, context)
    assert 0.0 <= result.score <= 1.0


def test_judged_once_per_event_and_the_same_for_a_repaired_answer(monkeypatch) -> None:
    check = RelevanceCheck(DetectorConfig(relevance_threshold=0.25))
    inspection = Inspection.build("How long should I keep my tax records?", ["Preheat the oven.", TAX], "Forever.")
    first = check.run(inspection)
    judged: list[str] = []
    monkeypatch.setattr("stream_guard.checks.relevance.question_terms",
                        lambda q: judged.append(q) or question_terms(q))
    repaired = check.run(inspection.with_answer("Three years from the date you filed."))
    assert judged == []  # the question and context are those already judged
    assert (repaired.score, repaired.flagged, repaired.findings, repaired.details) == (
        first.score, first.flagged, first.findings, first.details)
    other = check.run(Inspection.build("How long should I keep my tax records?", ["Preheat the oven."], "x"))
    assert judged and other.flagged  # another event is judged afresh
