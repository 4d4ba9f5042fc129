from __future__ import annotations

import pytest

from stream_guard.heal.recalibrate import recalibrate_confidence


def test_patch_boosts_confidence():
    assert recalibrate_confidence("contradiction_patch", 0.50, "x") == pytest.approx(0.65)


def test_patch_caps_at_080():
    assert recalibrate_confidence("contradiction_patch", 1.00, "x") == pytest.approx(0.80)
    assert recalibrate_confidence("contradiction_patch", 0.90, "x") == pytest.approx(0.80)


def test_scrub_multiplies_by_085():
    assert recalibrate_confidence("entity_scrub", 0.70, "x") == pytest.approx(0.595)


def test_rewrite_rescored_hedged_scores_lower_than_assertive():
    hedged = recalibrate_confidence("grounding_rewrite", 0.9, "According to the provided information: returns are accepted in 14 days.")
    assertive = recalibrate_confidence("grounding_rewrite", 0.9, "Returns are definitely accepted in 14 days, absolutely.")
    assert hedged < 0.5 < assertive


def test_unknown_strategy_keeps_original():
    assert recalibrate_confidence("no_healing_needed", 0.42, "x") == 0.42


@pytest.mark.parametrize("text", [
    "According to the provided information: returns are accepted in 14 days.",
    "Returns are definitely accepted in 14 days, absolutely. It may be possible in May 2020.",
    "Perhaps it is always  guaranteed ’n’ certain; 100% sure, it might be.",
    "",
])
def test_a_rewrite_measured_by_its_re_inspection_gets_the_same_confidence(text):
    # The healer passes the re-inspection's confidence score instead of reading the text again: the same value.
    from stream_guard.checks.confidence import ConfidenceCheck
    from stream_guard.config.detector import DetectorConfig
    from stream_guard.text.inspection import Inspection

    measured = ConfidenceCheck(DetectorConfig()).run(Inspection.build("", [], text)).score
    assert recalibrate_confidence("grounding_rewrite", 0.9, text, measured) == recalibrate_confidence(
        "grounding_rewrite", 0.9, text)
