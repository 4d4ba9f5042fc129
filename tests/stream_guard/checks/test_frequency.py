from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView
from stream_guard.checks.frequency import analyze_frequency
from stream_guard.text.inspection import Inspection

DOSAGE = "Adults: take one 500 mg tablet twice daily with food for ten days."


def found(context: str, answer: str) -> list[tuple[str | None, str | None, str | None]]:
    view = ContradictionView(Inspection.build("", context, answer))
    return [(f.kind, f.answer_value, f.source_value) for f in analyze_frequency(view)]


def test_another_frequency_is_a_contradiction_naming_both() -> None:
    assert found(DOSAGE, "Adults take one tablet three times daily with food.") == [
        ("frequency", "three times daily", "twice daily")]
    assert found("Massage the scalp at least once a week.", "Massage the scalp up to once a week.") == [
        ("frequency", "up to once a week", "at least once a week")]


def test_an_equivalent_frequency_agrees() -> None:
    assert found(DOSAGE, "Adults take one tablet every 12 hours with food.") == []
    assert found(DOSAGE, "Adults take one tablet two times a day with food.") == []
