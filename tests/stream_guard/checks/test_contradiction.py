"""ContradictionCheck end to end: the seed scenarios, the merged result and its contract."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream_guard.checks.base import Check
from stream_guard.checks.contradiction import KINDS, ContradictionCheck, _counts_by_kind
from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.events import Chunk
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import CheckResult, Finding, FindingType

CHECK = ContradictionCheck(DetectorConfig())


def run(context: str | list[str] | list[Chunk], answer: str, question: str = "") -> CheckResult:
    return CHECK.run(Inspection.build(question, context, answer))


def kinds(result: CheckResult) -> list[tuple[str | None, str | None, str | None]]:
    return [(f.kind, f.answer_value, f.source_value) for f in result.findings]


def test_is_a_check() -> None:
    check: Check = CHECK
    assert check.name == "contradiction"
    assert ContradictionCheck().config == DetectorConfig()


def test_scenario_1_confident_lie_about_the_return_window() -> None:
    result = run(
        "Our return policy allows returns within 14 days of purchase.",
        "You can definitely return items within 30 days of purchase.",
        question="What is the return policy?",
    )
    assert result.flagged and result.score == 1.0
    assert kinds(result) == [("numeric", "30 days", "14 days")]
    (finding,) = result.findings
    assert finding.type is FindingType.CONTRADICTION
    assert "'30 days'" in finding.evidence and "'14 days'" in finding.evidence and "return" in finding.evidence
    assert finding.chunk_id == "1"


def test_scenario_3_price_and_billing_cycle() -> None:
    answer = "The Pro plan costs $10 per month, billed monthly. You can cancel your monthly subscription at any time."
    result = run("The Pro plan costs $120 per year, billed annually.", answer, question="How much does Pro cost?")
    assert result.flagged
    assert ("numeric", "$10", "$120") in kinds(result)
    assert ("billing", "monthly", "annual") in kinds(result)
    assert result.details["numeric"] == 1 and result.details["billing"] == 2


def test_scenario_4_sku_label_and_price() -> None:
    result = run("The SKU-441 widget is priced at $49.99.", "The SKU-441 widget costs $39.99.")
    assert kinds(result) == [("numeric", "$39.99", "$49.99")]
    assert "441" not in result.details["unsupported_numbers"]


def test_scenario_5_clean_answer() -> None:
    context = "Our return policy allows returns within 14 days of purchase. Shipping takes 5-7 business days."
    answer = "You can return items within 14 days of purchase. Shipping takes 5-7 business days."
    result = run(context, answer)
    assert not result.flagged and result.score == 0.0 and result.findings == ()
    assert set(result.verified) == {
        "You can return items within 14 days of purchase.",
        "Shipping takes 5-7 business days.",
    }


def test_two_weeks_vs_14_days_is_clean() -> None:
    assert not run("Returns are accepted within 14 days.", "Returns are accepted within two weeks.").flagged


def test_1200_users_vs_1_200_users_is_clean() -> None:
    assert not run("The service has 1200 users.", "The service has 1,200 users.").flagged


def test_cancel_any_time_vs_cannot_be_cancelled() -> None:
    result = run("Subscriptions cannot be cancelled once the billing period starts.", "You can cancel at any time.")
    assert kinds(result) == [("negation", "can cancel", "cannot be cancelled")]


def test_swapped_value_and_date_kinds_reach_the_merged_result() -> None:
    assert kinds(run("Basic costs $10, Pro costs $20.", "Pro costs $10.")) == [("swapped_value", "$10", "$20")]
    assert kinds(run("The company was founded in 1998.", "The company was founded in 2001.")) == [
        ("date", "2001", "1998")
    ]


def test_details_count_every_kind_and_list_unsupported_numbers() -> None:
    result = run("Shipping takes 5-7 business days.", "Shipping takes 5-7 business days. The warranty lasts 2 years.")
    assert not result.flagged
    assert {kind: result.details[kind] for kind in KINDS} == dict.fromkeys(KINDS, 0)
    assert result.details["unsupported_numbers"] == ["2 years"]
    assert result.details["numbers_checked"] == 2


def test_findings_carry_the_chunk_id() -> None:
    chunks = [
        Chunk(id="faq", text="Shipping is free."),
        Chunk(id="returns", text="Returns are accepted within 14 days."),
    ]
    (finding,) = run(chunks, "Returns are accepted within 30 days.").findings
    assert finding.chunk_id == "returns"


def test_literal_values_let_the_healer_patch_in_place() -> None:
    answer = "The Pro plan costs $10 per month."
    result = run("The Pro plan costs $120 per year, billed annually.", answer)
    (numeric,) = [f for f in result.findings if f.kind == "numeric"]
    assert numeric.answer_value in numeric.statement and numeric.source_value in (numeric.source or "")
    assert numeric.statement.replace(numeric.answer_value or "", numeric.source_value or "") == (
        "The Pro plan costs $120 per month."
    )


def test_empty_answer_and_empty_context() -> None:
    for context, answer in (("", ""), ("Returns within 14 days.", ""), ("", "Returns within 30 days.")):
        result = run(context, answer)
        assert not result.flagged and result.score == 0.0


def test_result_is_json_ready() -> None:
    result = run("Returns are accepted within 14 days.", "Returns are accepted within 30 days.")
    payload = result.to_dict()
    assert payload["flagged"] is True and payload["findings"][0]["kind"] == "numeric"
    assert result.latency_ms >= 0.0


_PIECES = st.sampled_from(
    [
        "The Pro plan costs", "$10", "$120", "$49.99", "per month", "per year", "billed annually", "monthly",
        "SKU-441", "14 days", "30 days", "two weeks", "a month", "1,200", "users", "cannot be cancelled",
        "can cancel", "does not support", "supports", "not", "no later than", "in 1998", "March 3, 2021",
        "2021-03-03", "5-7", "between 5 and 7 days", "%", "-", "/", ".", ",", "?", "\n", " ", "²", "½", "’",
    ]
)  # fmt: skip
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=25).map(" ".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(question=st.text(max_size=30), context=st.lists(_TEXT, max_size=3), answer=_TEXT)
def test_arbitrary_text_never_crashes_and_scores_stay_in_range(question: str, context: list[str], answer: str) -> None:
    result = CHECK.run(Inspection.build(question, context, answer))
    assert 0.0 <= result.score <= 1.0
    assert result.flagged == bool(result.findings)
    for finding in result.findings:
        assert finding.kind in KINDS
        if finding.kind != "billing":
            assert finding.answer_value and finding.answer_value in finding.statement
            assert finding.source_value and finding.source_value in (finding.source or "")


def test_every_contradiction_kind_is_a_declared_detail_of_the_verdict() -> None:
    # A kind counted in details but missing from the wire shape makes every verdict fail the strict schema.
    from stream_guard.checks.contradiction import KINDS
    from stream_guard.wire.check_details import ContradictionDetails

    assert set(KINDS) <= set(ContradictionDetails.__annotations__)


@given(st.lists(st.sampled_from([*KINDS, "claim", None]), max_size=12))
def test_details_count_each_kind_in_order_as_a_pass_per_kind_counts(kinds: list[str | None]) -> None:
    findings = [Finding(FindingType.CONTRADICTION, f"s{i}", "e", kind=kind) for i, kind in enumerate(kinds)]
    counts = _counts_by_kind(findings)
    assert list(counts.items()) == [(kind, sum(1 for f in findings if f.kind == kind)) for kind in KINDS]
