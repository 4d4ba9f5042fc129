from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView
from stream_guard.checks.exceptions import analyze_exceptions
from stream_guard.text.inspection import Inspection

OFFICE = "The office is open every day except public holidays."


def found(context: str, answer: str) -> list[tuple[str | None, str | None, str | None]]:
    view = ContradictionView(Inspection.build("", context, answer))
    return [(f.kind, f.answer_value, f.source_value) for f in analyze_exceptions(view)]


def test_including_what_the_source_excepts_is_a_contradiction() -> None:
    assert found(OFFICE, "The office is open every day, including public holidays.") == [
        ("exception", "including public holidays", "except public holidays")]
    assert found("All prices include VAT.", "All prices are excluding VAT.") == [
        ("exception", "excluding VAT", "include VAT")]


def test_the_same_exception_agrees_and_another_thing_is_not_compared() -> None:
    assert found(OFFICE, "The office is open every day except on public holidays.") == []
    assert found(OFFICE, "The office is open every day, including weekends.") == []
