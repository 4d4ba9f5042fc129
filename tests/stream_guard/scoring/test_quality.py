from __future__ import annotations

import pytest

from stream_guard.config.detector import DetectorConfig
from stream_guard.heal import Change, HealingResult
from stream_guard.scoring.quality import QualityScore, latency_component
from stream_guard.wire.report import CheckResult, HallucinationReport, Risk


def report(
    *,
    faithfulness: float = 0.8,
    confidence: float = 0.5,
    contradiction: bool = False,
    drift: bool = False,
    latency_ms: float = 5.0,
    flagged: bool = False,
    risk: Risk = Risk.LOW,
) -> HallucinationReport:
    checks = {
        "confidence": CheckResult("confidence", confidence, False),
        "faithfulness": CheckResult("faithfulness", faithfulness, faithfulness < 0.5),
        "contradiction": CheckResult("contradiction", float(contradiction), contradiction),
        "drift": CheckResult("drift", 0.5 if drift else 0.0, drift),
    }
    return HallucinationReport(
        question="Q?", answer="A.", checks=checks, hallucinated_statements=(), verified_statements=(),
        risk=risk, flagged=flagged, hallucination_score=0.9 if flagged else 0.1,
        hallucination_type="factual_error" if flagged else "none", triggered=(), latency_ms=latency_ms,
    )


def healing(original, *, final=None, strategy="contradiction_patch", confidence_after=0.65, declined=False):
    return HealingResult(
        original_answer="bad", healed_answer="decline" if declined else "good",
        strategy="safe_decline" if declined else strategy, changes=(Change("replace", "$10", "$120", "x"),),
        applied=True, passed=not declined, declined=declined, initial_risk=original.risk,
        final_risk=Risk.LOW, final_report=final, confidence_before=original.confidence_score,
        confidence_after=confidence_after, attempted=strategy,
    )


class TestRouting:
    def test_accept_on_high_score(self):
        qs = QualityScore.compute(report(faithfulness=1.0, confidence=0.8))
        assert qs.routing == "accept"
        assert qs.score >= 0.75

    def test_fallback_on_low_score(self):
        qs = QualityScore.compute(report(faithfulness=0.0, contradiction=True, confidence=0.9, flagged=True))
        assert qs.routing == "fallback"
        assert qs.score < 0.5

    def test_healed_accept_when_healing_applied_and_passed(self):
        bad = report(faithfulness=0.5, contradiction=True, flagged=True, risk=Risk.CRITICAL)
        fixed = report(faithfulness=1.0, confidence=0.5)
        qs = QualityScore.compute(bad, healing(bad, final=fixed))
        assert qs.routing == "healed_accept"

    def test_discard_when_safe_decline_served(self):
        bad = report(faithfulness=0.0, contradiction=True, flagged=True, risk=Risk.CRITICAL)
        assert QualityScore.compute(bad, healing(bad, declined=True)).routing == "discard"

    def test_no_healing_needed_result_routes_on_score(self):
        clean = report(faithfulness=1.0, confidence=0.8)
        unchanged = HealingResult("a", "a", "no_healing_needed", (), False, True, False, Risk.LOW, Risk.LOW,
                                  clean, 0.8, 0.8)
        assert QualityScore.compute(clean, unchanged).routing == "accept"

    @pytest.mark.parametrize("flagged, expected", [(False, "accept"), (True, "fallback")])
    def test_between_thresholds_depends_on_flag(self, flagged, expected):
        # 0.2 + 0.3 + 0.08 + 0.1 = 0.68: between fallback (0.50) and accept (0.75).
        qs = QualityScore.compute(report(faithfulness=0.5, confidence=0.4, flagged=flagged))
        assert 0.5 <= qs.score < 0.75
        assert qs.routing == expected

    def test_thresholds_come_from_config(self):
        r = report(faithfulness=1.0, confidence=0.8)
        assert QualityScore.compute(r, None, DetectorConfig(accept_threshold=0.99, fallback_threshold=0.98)).routing == "fallback"


class TestComponents:
    def test_seed_scenario_three_breakdown(self):
        qs = QualityScore.compute(report(faithfulness=0.5, confidence=0.5, contradiction=True, latency_ms=11.9))
        assert qs.components["faithfulness"] == pytest.approx(0.20)
        assert qs.components["consistency"] == 0.0
        assert qs.components["confidence"] == pytest.approx(0.10)
        assert qs.components["latency"] == pytest.approx(0.10)
        assert qs.score == pytest.approx(0.40)

    def test_confidence_cannot_exceed_grounding(self):
        sure_but_ungrounded = QualityScore.compute(report(faithfulness=0.2, confidence=1.0))
        assert sure_but_ungrounded.components["confidence"] == pytest.approx(0.04)

    def test_score_is_bounded(self):
        assert QualityScore.compute(report(faithfulness=1.0, confidence=1.0)).score <= 1.0


class TestLatency:
    def test_full_marks_under_20ms(self):
        assert QualityScore.compute(report(latency_ms=10.0)).components["latency"] == pytest.approx(0.10)
        assert latency_component(20.0) == pytest.approx(0.10)

    def test_reduced_at_35ms_but_above_the_50ms_floor(self):
        at_35 = latency_component(35.0)
        assert latency_component(10.0) > at_35 > 0.05
        assert at_35 == pytest.approx(0.075)
        assert latency_component(50.0) == pytest.approx(0.05)

    def test_steep_beyond_50ms_and_zero_at_200ms(self):
        assert latency_component(60.0) < 0.05
        assert latency_component(100.0) < latency_component(50.0)
        # Steeper than a straight line from 0.05 at 50 ms to 0 at 200 ms.
        assert latency_component(100.0) < 0.05 * (200 - 100) / 150
        assert latency_component(200.0) == 0.0
        assert latency_component(500.0) == 0.0

    def test_is_monotone_non_increasing(self):
        values = [latency_component(ms) for ms in range(0, 260, 5)]
        assert all(a >= b for a, b in zip(values, values[1:]))


class TestDrift:
    def test_drift_subtracts_exactly_020(self):
        without = QualityScore.compute(report(drift=False))
        with_drift = QualityScore.compute(report(drift=True))
        assert without.score - with_drift.score == pytest.approx(0.20)
        assert with_drift.drift_penalty == 0.20 and without.drift_penalty == 0.0

    def test_drift_penalty_floored_at_zero(self):
        qs = QualityScore.compute(report(faithfulness=0.0, contradiction=True, drift=True, confidence=1.0, latency_ms=500))
        assert qs.score == 0.0

    def test_drift_can_push_a_good_answer_out_of_accept(self):
        assert QualityScore.compute(report(faithfulness=1.0, confidence=0.7)).routing == "accept"
        qs = QualityScore.compute(report(faithfulness=1.0, confidence=0.7, drift=True, flagged=True))
        assert qs.routing == "fallback"

    def test_to_dict_includes_drift_penalty(self):
        d = QualityScore.compute(report(drift=True)).to_dict()
        assert d["drift_penalty"] == 0.20
        assert set(d) >= {"score", "routing", "components", "drift_penalty"}


class TestDeliveredAnswerIsScored:
    def test_healed_score_uses_final_report_and_recalibrated_confidence(self):
        bad = report(faithfulness=0.5, confidence=0.5, contradiction=True, flagged=True, risk=Risk.CRITICAL)
        fixed = report(faithfulness=1.0, confidence=0.9, latency_ms=4.0)
        qs = QualityScore.compute(bad, healing(bad, final=fixed, confidence_after=0.65))
        assert qs.basis == "healed"
        assert qs.components["faithfulness"] == pytest.approx(0.40)
        assert qs.components["consistency"] == pytest.approx(0.30)
        assert qs.components["confidence"] == pytest.approx(0.13)  # 0.65, not the re-inspection's 0.9

    def test_latency_of_healed_answer_counts_both_inspections(self):
        bad = report(latency_ms=15.0, contradiction=True, flagged=True)
        fixed = report(faithfulness=1.0, latency_ms=20.0)
        qs = QualityScore.compute(bad, healing(bad, final=fixed))
        assert qs.components["latency"] == pytest.approx(latency_component(35.0))

    def test_declined_is_scored_on_the_original(self):
        bad = report(faithfulness=0.1, contradiction=True, flagged=True)
        qs = QualityScore.compute(bad, healing(bad, final=report(faithfulness=1.0), declined=True))
        assert qs.basis == "original"
        assert qs.components["consistency"] == 0.0

    def test_patch_scores_higher_than_the_contradicted_original(self):
        bad = report(faithfulness=0.5, confidence=0.5, contradiction=True, flagged=True)
        fixed = report(faithfulness=0.5, confidence=0.5)
        assert QualityScore.compute(bad, healing(bad, final=fixed)).score > QualityScore.compute(bad).score
