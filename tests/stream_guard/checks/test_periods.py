"""The period a figure is stated for."""

from __future__ import annotations

from stream_guard.checks.periods import period_of
from stream_guard.text.quantities import extract_quantities


def periods(text: str) -> list[tuple[str, str | None]]:
    return [(q.text, (d.text if (d := period_of(text, q)) else None)) for q in extract_quantities(text)]


def test_a_figure_takes_the_period_of_its_own_clause() -> None:
    assert periods("In Q3 2025, revenue was $4.2 million, up from $3.6 million in Q2 2025.") == [
        ("$4.2 million", "Q3 2025"), ("$3.6 million", "Q2 2025")]
    assert periods("Sales reached 1,200 units in 2023 and 1,500 units in 2024.") == [
        ("1,200", "2023"), ("1,500", "2024")]


def test_an_opening_phrase_sets_the_period_of_the_sentence() -> None:
    assert periods("For fiscal 2024, the company reported 300 stores.") == [("300", "2024")]
    # A clause that says more than the period does not scope a figure in the next clause.
    assert periods("Revenue was $3.6 million in the second quarter of 2025 and $4.2 million in the third.") == [
        ("$3.6 million", "second quarter of 2025"), ("$4.2 million", None)]


def test_no_period_or_two_periods_give_none() -> None:
    assert periods("The plan costs $20 per month.") == [("$20", None)]
    assert periods("Between 2023 and 2024, 300 stores opened.")[0][1] is None
