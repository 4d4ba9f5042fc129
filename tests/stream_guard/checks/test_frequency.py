from __future__ import annotations

from contradictions import found_by

from stream_guard.checks.frequency import analyze_frequency

DOSAGE = "Adults: take one 500 mg tablet twice daily with food for ten days."


found = found_by(analyze_frequency)


def test_another_frequency_is_a_contradiction_naming_both() -> None:
    assert found(DOSAGE, "Adults take one tablet three times daily with food.") == [
        ("frequency", "three times daily", "twice daily")]
    assert found("Massage the scalp at least once a week.", "Massage the scalp up to once a week.") == [
        ("frequency", "up to once a week", "at least once a week")]


def test_an_equivalent_frequency_agrees() -> None:
    assert found(DOSAGE, "Adults take one tablet every 12 hours with food.") == []
    assert found(DOSAGE, "Adults take one tablet two times a day with food.") == []


def test_a_source_s_bare_adverb_of_period_is_once_per_period() -> None:
    # "billed annually" states once a year: "twice a year" contradicts it, with both values named; "once a year"
    # agrees.
    billing = "The Business plan is billed annually in advance."
    assert found(billing, "The Business plan is billed twice a year in advance.") == [
        ("frequency", "twice a year", "annually")]
    assert found(billing, "The Business plan is billed once a year in advance.") == []
