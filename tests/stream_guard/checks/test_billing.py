"""Billing-cycle contradictions."""

from __future__ import annotations

import pytest

from stream_guard.checks.alignment import ContradictionView
from stream_guard.checks.billing import analyze_billing, billing_cycles
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import Finding


def billing(context: str | list[str], answer: str) -> list[Finding]:
    return analyze_billing(ContradictionView(Inspection.build("", context, answer)))


def test_monthly_answer_against_annual_billing() -> None:
    answer = "The Pro plan costs $10 per month, billed monthly. You can cancel your monthly subscription at any time."
    findings = billing("The Pro plan costs $120 per year, billed annually.", answer)
    assert [(f.kind, f.answer_value, f.source_value) for f in findings] == [
        ("billing", "monthly", "annual"),
        ("billing", "monthly", "annual"),
    ]
    assert [f.statement for f in findings] == [
        "The Pro plan costs $10 per month, billed monthly.",
        "You can cancel your monthly subscription at any time.",
    ]


def test_same_cycle_is_clean() -> None:
    assert billing("The Pro plan costs $120 per year, billed annually.", "The Pro plan costs $120 per year.") == []


def test_monthly_price_billed_annually_is_not_a_contradiction() -> None:
    assert billing("The Pro plan costs $10/month, billed annually.", "The Pro plan costs $10 per month.") == []
    assert billing("The Pro plan is billed annually.", "The Pro plan costs $10 a month, billed annually.") == []


def test_cycle_words_outside_billing_are_ignored() -> None:
    assert billing("The company publishes an annual report.", "We send a monthly newsletter.") == []
    assert billing("Annual revenue grew to $3 billion.", "The plan costs $10 per month.") == []


def test_weekly_against_quarterly() -> None:
    findings = billing("Premiums are paid quarterly.", "Premiums are paid weekly.")
    assert [(f.answer_value, f.source_value) for f in findings] == [("weekly", "quarterly")]


def test_plan_specific_cycles() -> None:
    context = "Basic is billed monthly at $10. Pro is billed annually at $100."
    assert [(f.answer_value, f.source_value) for f in billing(context, "Pro is billed monthly at $100.")] == [
        ("monthly", "annual")
    ]
    assert billing(context, "Basic is billed monthly at $10.") == []


@pytest.mark.parametrize(
    ("text", "cycle"),
    [
        ("$9.99/mo", "monthly"),
        ("$99 per annum", "annual"),
        ("a yearly subscription", "annual"),
        ("$5 a week", "weekly"),
        ("billed every quarter", "quarterly"),
    ],
)
def test_cycle_phrasings(text: str, cycle: str) -> None:
    assert [m.cycle for m in billing_cycles(text)] == [cycle]


def test_a_month_as_a_duration_is_not_a_cycle() -> None:
    assert billing_cycles("Cancel within a month of signing the contract.") == []


def test_the_period_of_a_price_and_the_billing_cycle_are_compared_separately() -> None:
    context = "The Team plan costs $12 per seat per month, billed monthly. Yearly billing is $120 per seat per year."
    findings = billing(context, "The Team plan costs $12 per seat per year, billed quarterly.")
    assert [(f.answer_value, f.source_value) for f in findings] == [("annual", "monthly"), ("quarterly", "monthly")]
    assert "'$12 per seat per year, billed quarterly'" in findings[0].evidence
    assert "'$12 per seat per month, billed monthly'" in findings[0].evidence
    assert billing(context, "The Team plan is $12 per seat per month, billed monthly.") == []


def test_a_rate_period_and_a_renewal_term() -> None:
    assert [f.answer_value for f in billing("Overdue balances accrue interest at 2% per month.",
                                            "Overdue balances accrue interest at 2% per year.")] == ["annual"]
    assert [f.source_value for f in billing("The licence renews automatically for successive one (1) year terms.",
                                            "The licence renews automatically every month.")] == ["annual"]
