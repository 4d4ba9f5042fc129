from __future__ import annotations

from contradictions import found_by

from stream_guard.checks.exceptions import analyze_exceptions

OFFICE = "The office is open every day except public holidays."


found = found_by(analyze_exceptions)


def test_including_what_the_source_excepts_is_a_contradiction() -> None:
    assert found(OFFICE, "The office is open every day, including public holidays.") == [
        ("exception", "including public holidays", "except public holidays")]
    assert found("All prices include VAT.", "All prices are excluding VAT.") == [
        ("exception", "excluding VAT", "include VAT")]


def test_the_same_exception_agrees_and_another_thing_is_not_compared() -> None:
    assert found(OFFICE, "The office is open every day except on public holidays.") == []
    assert found(OFFICE, "The office is open every day, including weekends.") == []
