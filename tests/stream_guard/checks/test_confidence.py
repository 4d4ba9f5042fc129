from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from stream_guard.checks import confidence
from stream_guard.checks.confidence import ConfidenceCheck, confidence_score, marker_counts
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.inspection import Inspection


def run(answer: str, **overrides: float):
    return ConfidenceCheck(DetectorConfig(**overrides)).run(Inspection.build("q", ["ctx"], answer))


def test_assertive_answer_scores_high_and_is_flagged() -> None:
    result = run("The refund window is definitely 30 days, as clearly stated. It is guaranteed.")
    assert result.name == "confidence"
    assert result.score > 0.75
    assert result.flagged


def test_hedged_answer_scores_low() -> None:
    result = run("I think the window might be 30 days, but perhaps it is possibly shorter.")
    assert result.score < 0.5
    assert not result.flagged


def test_plain_answer_is_neutral() -> None:
    assert run("The refund window is 30 days from delivery.").score == 0.5


def test_score_bounded_for_saturated_inputs() -> None:
    for text in ["definitely " * 50, "might " * 50, "Definitely.", "Maybe.", "clearly might"]:
        assert 0.0 <= confidence_score(text) <= 1.0


def test_empty_string_is_neutral_and_not_flagged() -> None:
    result = run("")
    assert result.score == 0.5
    assert not result.flagged
    assert confidence_score("   ") == 0.5


def test_unicode_answer_handled() -> None:
    assert confidence_score("日本語のテキスト 🤔 — definitely “quoted”") > 0.5
    assert 0.0 <= run("Ünïcödé ünd émojis 🎉").score <= 1.0


def test_phrase_markers_count_once() -> None:
    assertive, _ = marker_counts("As clearly stated in the policy.")
    assert assertive == ["clearly stated"]


def test_month_may_is_not_a_hedge() -> None:
    _, hedging = marker_counts("The sale ended on May 5 and it may return.")
    assert hedging == ["may"]


def test_density_is_normalised_by_length() -> None:
    short = confidence_score("This is definitely right.")
    long = confidence_score("This is definitely right. " + "The plan includes storage and support. " * 10)
    assert short > long > 0.5


def test_threshold_comes_from_config() -> None:
    text = "It is clearly the answer, " + "with several ordinary words in the sentence " * 3
    score = confidence_score(text)
    assert 0.5 < score < 0.75
    assert not run(text).flagged
    assert run(text, confidence_threshold=score - 0.01).flagged


def test_check_score_matches_raw_function() -> None:
    text = "Absolutely, the answer is always yes, although it might vary."
    assert run(text).score == confidence_score(text)


@given(st.text(max_size=400))
def test_arbitrary_text_never_crashes_and_stays_bounded(text: str) -> None:
    result = run(text)
    assert 0.0 <= result.score <= 1.0
    assert 0.0 <= confidence_score(text) <= 1.0


@given(st.lists(st.sampled_from(["may", "May 5", "MAY\n2020", "mayor", "may\t1", "maybe", "’", "I", " ", "1"]),
                max_size=10).map("".join) | st.text(max_size=40))
def test_the_month_gate_normalises_as_the_pattern_alone_did(text: str) -> None:
    assert confidence._normalize(text) == confidence._MONTH_MAY_RE.sub("_", text.lower().replace("’", "'"))


def _plain_pattern(markers: tuple[str, ...]) -> re.Pattern[str]:
    """The markers as one plain alternation, longest first: what the grouped pattern must find."""
    alternatives = "|".join(re.escape(m).replace(r"\ ", r"\s+") for m in sorted(markers, key=len, reverse=True))
    return re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])")


_PLAIN_ASSERTIVE = _plain_pattern(confidence.ASSERTIVE_MARKERS)
_PLAIN_HEDGING = _plain_pattern(confidence.HEDGING_MARKERS)


def _ungated(text: str) -> tuple[list[str], list[str]]:
    """marker_counts without its word gate and its grouping: both plain alternations run over every text."""
    folded = confidence._normalize(text)
    return ([m.group() for m in _PLAIN_ASSERTIVE.finditer(folded)], [m.group() for m in _PLAIN_HEDGING.finditer(folded)])


_PIECES = [*confidence.ASSERTIVE_MARKERS, *confidence.HEDGING_MARKERS, *(m.upper() for m in confidence.ASSERTIVE_MARKERS),
           "no  doubt", "in\nfact", "rest\tassured", "i’m not sure", "100 %", "mayor", "factor", "measure",
           "un", "x", "'", "’", " ", "\n", ".", "%", "1", "May 5"]


@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join) | st.lists(st.sampled_from(_PIECES), max_size=8).map(" ".join)
       | st.text(max_size=60))
def test_the_gated_grouped_patterns_find_what_the_plain_alternations_found(text: str) -> None:
    assert confidence.marker_counts(text) == _ungated(text)


def test_every_marker_holds_a_gate_word_and_the_gate_skips_plain_text() -> None:
    for markers, gate in ((confidence.ASSERTIVE_MARKERS, confidence._ASSERTIVE_GATE),
                          (confidence.HEDGING_MARKERS, confidence._HEDGING_GATE)):
        assert all(any(word in marker for word in gate) for marker in markers)
    assert not any(word in "the store opens at nine and closes at five." for word in confidence._ASSERTIVE_GATE)
