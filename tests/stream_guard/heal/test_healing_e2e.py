"""The seed's five demo scenarios, end to end through the real detector, healer and quality score."""

from __future__ import annotations

import pytest

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.detector import HallucinationDetector
from stream_guard.heal import HallucinationHealer
from stream_guard.heal.grounding_rewrite import PREFIX_FIGURES
from stream_guard.scoring.quality import QualityScore
from stream_guard.wire.report import FindingType, Risk
from stream_guard.text.questions import question_hash

RETURNS = [
    "Our return policy allows returns within 14 days of purchase.",
    "Items must be in original packaging to qualify for a refund.",
    "Refunds are processed within 5-7 business days.",
]
RESEARCH = [
    "Recent studies show transformer models achieve 94% accuracy on NER tasks.",
    "Fine-tuning on domain-specific data improves performance by 12-18%.",
    "The benchmark dataset contains 50,000 annotated examples.",
]
PRICING = [
    "The Pro plan costs $120 per year, billed annually.",
    "There is no monthly billing option for the Pro plan.",
    "Annual subscriptions cannot be cancelled mid-cycle.",
]


@pytest.fixture
def detector() -> HallucinationDetector:
    return HallucinationDetector(DetectorConfig(db_path=":memory:", log_flagged=False, ner="regex"))


def run(detector: HallucinationDetector, question: str, context: list[str], answer: str):
    report = detector.inspect(question, context, answer)
    history = detector.history.get(question_hash("default", question))
    result = HallucinationHealer(detector).heal(question, context, answer, report, history=history)
    return report, result, QualityScore.compute(report, result, detector.config)


def test_scenario_1_confident_wrong_deadline_is_repaired_from_the_source(detector):
    answer = (
        "You have exactly 30 days to return a damaged item and receive a full refund. This is clearly stated "
        "in our premium customer guarantee policy and will definitely be honored at all locations."
    )
    report, result, quality = run(detector, "What is the deadline for returning a damaged item?", RETURNS, answer)
    assert report.risk is Risk.CRITICAL and report.has_contradiction
    # The value patch is tried first, but the patched sentence still promises what no source states ("exactly",
    # "damaged", "a full refund"), so it stays flagged and the answer is rebuilt from the source; the change
    # list says why the patch was not used.
    patch_note = next(c for c in result.changes if c.kind == "fallback")
    assert patch_note.before == "contradiction_patch" and "still flagged" in patch_note.description
    assert result.strategy == "grounding_rewrite"
    assert "14 days" in result.healed_answer and "30 days" not in result.healed_answer
    assert result.passed and result.final_risk.rank <= Risk.MEDIUM.rank
    assert not result.final_report.has_contradiction
    assert result.confidence_before > 0.8
    assert result.confidence_after < result.confidence_before
    assert quality.routing == "healed_accept"


def test_scenario_2_invented_researchers_are_rewritten_from_context(detector):
    answer = (
        "The seminal work was published by Dr. James Harrison and Dr. Wei Liu in their 2022 paper "
        "(arXiv:2204.09876). Their research at DeepMind Research Institute established the 94% benchmark "
        "that the field now uses as a standard."
    )
    report, result, quality = run(
        detector, "Who published the key research on transformer NER performance?", RESEARCH, answer
    )
    assert report.faithfulness_score == 0.0
    assert {f.answer_value for f in report.hallucinated_statements if f.kind == "person"} >= {"Dr. James Harrison"}
    assert result.strategy == "grounding_rewrite"
    assert result.healed_answer.startswith(PREFIX_FIGURES)
    assert RESEARCH[0] in result.healed_answer
    for invented in ("Harrison", "Liu", "arXiv", "DeepMind"):
        assert invented not in result.healed_answer
    assert result.final_risk is Risk.LOW
    assert result.confidence_after < result.confidence_before  # the attributed lead-in reads as hedged
    assert quality.routing == "healed_accept"


def test_scenario_3_billing_contradiction_is_patched_and_normalised(detector):
    answer = "The Pro plan costs $10 per month, billed monthly. You can cancel your monthly subscription at any time."
    report, result, quality = run(detector, "How much does the Pro plan cost?", PRICING, answer)
    assert report.risk is Risk.CRITICAL
    assert result.strategy == "contradiction_patch"
    # The cancellation sentence contradicts "cannot be cancelled mid-cycle", so the source sentence
    # replaces it; keeping "You can cancel ... at any time" would fail re-inspection.
    assert result.healed_answer == (
        "The Pro plan costs $120 per year, billed annually. Annual subscriptions cannot be cancelled mid-cycle."
    )
    logged = {(c.kind, c.before, c.after) for c in result.changes}
    assert {("replace", "$10", "$120"), ("billing", "per month", "per year"),
            ("billing", "billed monthly", "billed annually")} <= logged
    assert result.final_risk is Risk.LOW
    assert (result.confidence_before, result.confidence_after) == pytest.approx((0.50, 0.65))
    assert quality.routing == "healed_accept"


def test_scenario_3_single_sentence_reads_cleanly(detector):
    report, result, _ = run(detector, "How much does the Pro plan cost?", PRICING, "The Pro plan costs $10 per month, billed monthly.")
    assert result.strategy == "contradiction_patch"
    assert result.healed_answer == "The Pro plan costs $120 per year, billed annually."


def test_scenario_4_silent_price_drift_is_rewritten(detector):
    question, context = "What is the price of SKU-441?", ["Product SKU-441 is priced at $49.99 with free shipping."]
    for _ in range(5):
        assert not detector.inspect(question, context, "SKU-441 is priced at $49.99 and includes free shipping.").flagged
    report, result, quality = run(detector, question, context, "SKU-441 currently costs $39.99. Standard shipping rates apply.")
    assert report.drift_detected and report.drift_delta > 0.35
    assert report.risk.rank >= Risk.MEDIUM.rank and report.flagged
    assert result.strategy == "grounding_rewrite"
    assert "$49.99" in result.healed_answer and "$39.99" not in result.healed_answer
    assert not result.final_report.drift_detected  # re-inspected against the same history
    assert result.final_risk is Risk.LOW
    assert quality.routing == "healed_accept"


def test_scenario_5_clean_answer_passes_through_unchanged(detector):
    answer = (
        "According to the return policy, you have 14 days from the date of purchase to return an item. The item "
        "should be in its original packaging, and refunds are typically processed within 5 to 7 business days "
        "once the return is received."
    )
    report, result, quality = run(detector, "How long do I have to return an item?", RETURNS, answer)
    assert report.risk is Risk.LOW and not report.flagged
    assert result.strategy == "no_healing_needed" and not result.applied
    assert result.healed_answer == answer
    assert result.confidence_after == result.confidence_before
    assert quality.routing == "accept"


def test_invented_person_beside_a_grounded_fact_is_scrubbed(detector):
    answer = "Returns are accepted within 14 days of purchase. Dr. James Harrison drafted this rule in 1998."
    report, result, quality = run(detector, "How long is the return window?", RETURNS, answer)
    assert report.findings_of(FindingType.FABRICATED_ENTITY)
    assert result.strategy == "entity_scrub"
    assert result.healed_answer.startswith("Returns are accepted within 14 days of purchase. Note:")
    assert "Harrison" not in result.healed_answer
    assert result.confidence_after == pytest.approx(result.confidence_before * 0.85)
    assert quality.routing == "healed_accept"


def test_unfixable_answer_goes_to_fallback(detector):
    answer = "Dr. James Harrison founded the company in 1998."
    report, result, quality = run(detector, "Who founded the company?", ["Our cafeteria serves lunch daily."], answer)
    assert report.flagged
    assert result.failed and not result.applied
    assert quality.routing == "fallback"


def test_unfixable_answer_is_declined_and_discarded_when_configured_like_the_seed(detector):
    answer = "Dr. James Harrison founded the company in 1998."
    question, context = "Who founded the company?", ["Our cafeteria serves lunch daily."]
    report = detector.inspect(question, context, answer)
    result = HallucinationHealer(detector, decline_on_failure=True).heal(question, context, answer, report)
    assert result.declined and result.strategy == "safe_decline"
    assert result.healed_answer == detector.config.decline_message
    assert QualityScore.compute(report, result, detector.config).routing == "discard"


def test_healing_records_nothing_in_history(detector):
    question = "What is the deadline for returning a damaged item?"
    answer = "You have exactly 30 days to return a damaged item."
    run(detector, question, RETURNS, answer)
    assert detector.history.get(question_hash("default", question)) == []
