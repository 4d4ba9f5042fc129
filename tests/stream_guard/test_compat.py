"""The seed library's tested behaviours, exercised through stream_guard.compat's seed-compatible names."""

from __future__ import annotations

import asyncio
import threading

import pytest

from stream_guard import compat
from stream_guard.engine.detector import strict_faithfulness
from stream_guard.compat import (
    SPACY_AVAILABLE,
    AnswerDriftMonitor,
    ConfidenceScorer,
    ContradictionDetector,
    DetectorConfig,
    EntityHallucinationDetector,
    FaithfulnessScorer,
    HallucinationBlocked,
    HallucinationDetector,
    HallucinationHealer,
    HallucinationReport,
    HealingResult,
    QualityScore,
)
from stream_guard.errors import HallucinationBlocked as NativeBlocked

POLICY = [
    "Our return policy allows returns within 14 days of purchase.",
    "Items must be in original packaging to qualify for a refund.",
    "Refunds are processed within 5-7 business days.",
]
PRICING = [
    "The Pro plan costs $120 per year, billed annually.",
    "There is no monthly billing option for the Pro plan.",
    "Annual subscriptions cannot be cancelled mid-cycle.",
]
RESEARCH = [
    "Recent studies show transformer models achieve 94% accuracy on NER tasks.",
    "Fine-tuning on domain-specific data improves performance by 12-18%.",
    "The benchmark dataset contains 50,000 annotated examples.",
]
CLEAN = "According to the policy, returns are accepted within 14 days."
WRONG_PRICE = "The Pro plan costs $10 per month."


@pytest.fixture
def detector() -> HallucinationDetector:
    return HallucinationDetector(DetectorConfig(db_path=":memory:", log_flagged=False))


def test_module_exports_every_seed_name():
    for name in compat.__all__:
        assert hasattr(compat, name), name
    assert isinstance(SPACY_AVAILABLE, bool)


class TestConfidence:
    scorer = ConfidenceScorer()

    def test_assertive_high_hedged_low(self):
        assert self.scorer.score("The policy definitely expires on March 31. It is clearly stated and will always apply.") > 0.70
        assert self.scorer.score("According to the context, it might be around 14 days, but I'm not certain.") < 0.50

    @pytest.mark.parametrize("text", ["", "yes", "a" * 1000, "DEFINITELY ALWAYS CERTAINLY GUARANTEED",
                                      "La politique est définitivement valide."])
    def test_bounded_for_any_input(self, text):
        assert 0.0 <= self.scorer.score(text) <= 1.0


class TestFaithfulness:
    def test_grounded_answer_scores_high_with_no_ungrounded_claims(self):
        score, ungrounded = FaithfulnessScorer().score(
            "According to the policy, returns are accepted within 14 days and the item must be in original packaging.",
            ["Returns are accepted within 14 days in original packaging."],
        )
        assert score >= 0.80 and ungrounded == []

    def test_fabricated_answer_scores_low_and_lists_claims(self):
        score, ungrounded = FaithfulnessScorer().score(
            "You have 60 days to return items. Our VIP members get a lifetime guarantee.",
            ["Returns are accepted within 14 days."],
        )
        assert score <= 0.50 and ungrounded

    def test_empty_answer_and_questions_are_not_claims(self):
        assert FaithfulnessScorer().score("", ["some context"]) == (1.0, [])
        assert FaithfulnessScorer().score("What is the return policy?", ["Context here."])[0] == 1.0

    def test_stricter_overlap_never_scores_higher(self):
        args = ("You can return items within 14 days if they meet policy requirements.", ["Returns accepted within 14 days."])
        assert FaithfulnessScorer(overlap_threshold=0.90).score(*args)[0] <= FaithfulnessScorer().score(*args)[0]


class TestContradiction:
    detector = ContradictionDetector()

    def test_numeric_contradiction_names_the_values(self):
        found, reason = self.detector.detect(WRONG_PRICE, ["The Pro plan costs $120 per year."])
        assert found and ("10" in reason or "120" in reason)

    def test_same_range_written_differently_is_not_a_contradiction(self):
        assert not self.detector.detect("Your refund will arrive in 5 to 7 business days.",
                                        ["Refunds processed in 5-7 business days."])[0]

    def test_negation_flip(self):
        assert self.detector.detect("The platform supports real-time collaboration features.",
                                    ["The platform does not support real-time collaboration."])[0]

    def test_temporal_contradiction(self):
        found, reason = self.detector.detect("Your subscription renews every 1 month.",
                                             ["Annual subscriptions renew every 12 months."])
        assert found and ("1" in reason or "12" in reason)

    def test_clean_and_empty_inputs(self):
        assert self.detector.detect("You have 14 days from the date of purchase to return an item.",
                                    ["Returns accepted within 14 days of purchase."]) == (False, "")
        assert not self.detector.detect("Some answer.", [])[0]
        assert not self.detector.detect("", ["Some context."])[0]


class TestEntities:
    detector = EntityHallucinationDetector()

    def test_fabricated_person_and_citation_are_listed(self):
        assert any("Harrison" in e for e in self.detector.detect(
            "Dr. James Harrison published the seminal paper on this.", ["Studies show 94% accuracy on NER tasks."]))
        assert any("Smith" in e or "2021" in e for e in self.detector.detect(
            "As shown in Smith et al. (2021), performance exceeds prior work.",
            ["Transformers achieve high accuracy on NER benchmarks."]))

    def test_entries_read_name_then_type(self):
        (entry, *_) = self.detector.detect("Dr. James Harrison published it.", ["Nothing relevant."])
        assert entry.endswith(")") and " (" in entry

    def test_entity_in_context_and_discourse_words_are_not_flagged(self):
        assert not any("Jane Smith" in e for e in self.detector.detect(
            "Dr. Jane Smith's research confirms the findings.", ["Dr. Jane Smith at MIT conducted the research."]))
        assert not any("However" in e for e in self.detector.detect(
            "However, according to the policy, original packaging is required.", ["The policy requires original packaging."]))
        assert self.detector.detect("", ["context"]) == []


class TestDriftMonitor:
    Q = "What is the price of SKU-441?"
    STABLE = "SKU-441 is priced at $49.99 with free shipping."
    DRIFTED = "SKU-441 currently costs $39.99. Standard rates apply."

    def monitor(self, path=":memory:") -> AnswerDriftMonitor:
        return AnswerDriftMonitor(db_path=str(path), window_size=50, drift_threshold=0.35)

    def test_first_answer_and_consistent_answers_do_not_drift(self):
        mon = self.monitor()
        assert mon.record("What is the price?", "The price is $49.99.") == (False, 0.0)
        assert not any(mon.record(self.Q, self.STABLE)[0] for _ in range(6))

    def test_meaningful_change_drifts(self):
        mon = self.monitor()
        for _ in range(5):
            mon.record(self.Q, self.STABLE)
        detected, delta = mon.record(self.Q, self.DRIFTED)
        assert detected and delta > 0.35

    def test_questions_are_independent(self):
        mon = self.monitor()
        for _ in range(5):
            mon.record("What is the price?", "Price is $49.99.")
            mon.record("What is the return policy?", "Returns accepted in 14 days.")
        assert not mon.record("What is the price?", "Price is $49.99.")[0]
        assert not mon.record("What is the return policy?", "Returns accepted in 14 days.")[0]

    def test_history_survives_a_new_instance_on_the_same_file(self, tmp_path):
        first = self.monitor(tmp_path / "drift.db")
        for _ in range(5):
            first.record("What is the price?", "The price is $49.99 with free shipping included.")
        second = self.monitor(tmp_path / "drift.db")
        assert second.record("What is the price?", "Currently the price is $29.99. Shipping not included.")[0]

    def test_clear_history_resets_the_count(self):
        mon = self.monitor()
        for _ in range(5):
            mon.record("How much does it cost?", "The price is $49.99.")
        assert mon.get_stats("How much does it cost?")["total_recorded"] == 5
        mon.clear_history("How much does it cost?")
        assert mon.get_stats("How much does it cost?")["total_recorded"] == 0


class TestDetector:
    def test_confident_lie_is_high_risk(self, detector):
        report = detector.inspect(
            "What is the deadline for returning a damaged item?", POLICY,
            "You have exactly 30 days to return a damaged item and receive a full refund. This is clearly stated "
            "in our premium customer guarantee and will definitely be honored at all locations.",
        )
        assert report.risk_level in ("high", "critical") and report.is_hallucinating

    def test_invented_entities_are_reported_by_name(self, detector):
        report = detector.inspect("Who published the NER research?", RESEARCH,
                                  "Dr. James Harrison and Dr. Wei Liu published this work in arXiv:2204.09876, "
                                  "establishing the 94% benchmark.")
        assert report.hallucinated_entities
        assert "hallucinated_entities" in report.triggered_checks

    def test_price_contradiction_is_critical(self, detector):
        report = detector.inspect("How much does the Pro plan cost?", PRICING, "The Pro plan costs $10 per month, billed monthly.")
        assert report.contradiction_found and "contradiction" in report.triggered_checks
        assert report.risk_level == "critical"
        assert detector.inspect("Cost?", PRICING, WRONG_PRICE).risk_level == "critical"

    def test_drift_after_stable_answers(self, detector):
        context, q = ["SKU-441 is priced at $49.99 with free shipping."], "What is the price of SKU-441?"
        for _ in range(5):
            detector.inspect(q, context, "SKU-441 is $49.99 with free shipping included.")
        report = detector.inspect(q, context, "SKU-441 costs $39.99. Standard shipping rates apply.")
        assert report.drift_detected
        assert "answer_drift" in report.triggered_checks

    def test_drift_history_survives_a_detector_restart_on_the_same_file(self, tmp_path):
        config = DetectorConfig(db_path=str(tmp_path / "drift.db"), log_flagged=False)
        context, q = ["SKU-441 is priced at $49.99 with free shipping."], "What is the price of SKU-441?"
        first = HallucinationDetector(config)
        for _ in range(5):
            first.inspect(q, context, "SKU-441 is $49.99 with free shipping included.")
        assert HallucinationDetector(config).inspect(q, context, "SKU-441 costs $39.99. Standard shipping rates apply.").drift_detected

    def test_clean_answer_is_low_risk_with_nothing_triggered(self, detector):
        report = detector.inspect("How long do I have to return?", POLICY,
                                  "According to the return policy, you have 14 days from the date of purchase to return "
                                  "an item. The item should be in its original packaging, and refunds are processed "
                                  "within 5 to 7 business days.")
        assert not report.is_hallucinating and report.risk_level == "low" and report.triggered_checks == []
        assert detector.inspect("Return window?", POLICY, CLEAN).risk_level == "low"

    @pytest.mark.parametrize(
        "question, context, answer",
        [
            ("Any question?", ["Some context."], ""),
            ("What is the price?", [], "The price is $49.99."),
            ("Return window?", ["The return window is 14 days."], "The return window is 14 days. " * 500),
            ("Délai de retour?", ["Le délai de retour est de 14 jours."], "Selon la politique, vous avez 14 jours."),
            ("Is it available?", ["The product is available."], "Yes."),
        ],
    )
    def test_edge_inputs_give_a_bounded_report(self, detector, question, context, answer):
        report = detector.inspect(question, context, answer)
        assert isinstance(report, HallucinationReport)
        assert 0.0 <= report.confidence_score <= 1.0 and 0.0 <= report.faithfulness_score <= 1.0
        if not answer:
            assert not report.is_hallucinating

    def test_report_shape(self, detector):
        report = detector.inspect("Question?", POLICY, "Answer.")
        assert report.latency_ms >= 0.0
        assert {"question", "risk_level", "is_hallucinating", "confidence_score", "faithfulness_score",
                "contradiction_found", "contradiction_reason", "hallucinated_entities", "drift_detected",
                "drift_delta", "triggered_checks", "explanation", "latency_ms"} <= set(report.to_dict())
        assert isinstance(report.summary(), str) and report.summary()

    def test_blocked_exception_carries_the_report(self, detector):
        report = detector.inspect("Cost?", PRICING, WRONG_PRICE)
        assert report.is_hallucinating
        with pytest.raises(HallucinationBlocked) as caught:
            raise HallucinationBlocked(report)
        assert caught.value.report is report
        assert "risk=" in str(caught.value)
        assert caught.value.report_dict["risk_level"] == "critical"
        assert isinstance(caught.value, NativeBlocked)

    def test_strict_config_triggers_confident_but_unfaithful(self):
        strict = HallucinationDetector(DetectorConfig(faithfulness_threshold=0.99, confidence_threshold=0.01,
                                                      db_path=":memory:", log_flagged=False))
        # Half grounded: fine by default, but not by a 0.99 faithfulness bar with a 0.01 confidence bar.
        answer = "Returns are allowed within 14 days. Store credit is issued for every exchange."
        report = strict.inspect("Return window?", POLICY, answer)
        assert "confident_but_unfaithful" in report.triggered_checks

    def test_strict_faithfulness_threshold(self):
        # The seed library's own test: under a 0.99 faithfulness bar, an answer the sources support only in part
        # ("some time period" is in no source) is confident but unfaithful, whatever its confidence above 0.01.
        strict = HallucinationDetector(DetectorConfig(faithfulness_threshold=0.99, confidence_threshold=0.01,
                                                      db_path=":memory:", log_flagged=False))
        context = ["Our return policy allows returns within 14 days of purchase.",
                   "Items must be in original packaging to qualify for a refund.",
                   "Refunds are processed within 5-7 business days."]
        report = strict.inspect("Return window?", context, "Returns are allowed within some time period.")
        assert "confident_but_unfaithful" in report.triggered_checks and report.is_hallucinating
        assert any("'time'" in e and "'period'" in e for e in report.explanation)

    @pytest.mark.parametrize("faithfulness_threshold", [0.0, 0.5, 0.99, 1.0])
    @pytest.mark.parametrize("confidence_threshold", [0.0, 0.01, 0.5, 1.0])
    def test_confident_but_unfaithful_follows_the_rule_at_every_threshold(self, faithfulness_threshold,
                                                                         confidence_threshold):
        config = DetectorConfig(faithfulness_threshold=faithfulness_threshold, confidence_threshold=confidence_threshold,
                                db_path=":memory:", log_flagged=False, ner="regex")
        detector = HallucinationDetector(config)
        for answer in ("Returns are allowed within some time period.", "It is definitely guaranteed: 60 days.",
                       "Our return policy allows returns within 14 days of purchase.", "maybe", ""):
            report = detector.inspect("Return window?", POLICY, answer)
            strict = strict_faithfulness(report.native.checks["faithfulness"])
            expected = report.confidence_score >= confidence_threshold and strict < faithfulness_threshold
            assert ("confident_but_unfaithful" in report.triggered_checks) == expected, answer

    def test_stats_count_and_reset(self, detector):
        detector.inspect("Return window?", POLICY, CLEAN)
        detector.inspect("Cost?", PRICING, "The Pro plan costs $10 per month, billed monthly.")
        stats = detector.stats()
        assert stats["total_inspected"] == 2 and stats["total_flagged"] >= 1 and "%" in stats["hallucination_rate"]
        assert stats["ner_backend"] in ("spaCy", "regex (fallback)")
        assert stats["ner_backend"] == ("spaCy" if SPACY_AVAILABLE else "regex (fallback)")
        detector.reset_stats()
        assert (detector.stats()["total_inspected"], detector.stats()["total_flagged"]) == (0, 0)

    def test_twenty_threads_inspect_without_errors(self, detector):
        results, errors = [], []

        def worker():
            try:
                results.append(detector.inspect("How long do I have to return?", POLICY,
                                                "You have 14 days to return items per policy."))
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and len(results) == 20

    def test_ainspect_single_flagged_and_gathered(self, detector):
        async def main():
            clean = await detector.ainspect("How long do I have to return?", POLICY, CLEAN)
            flagged = await detector.ainspect("Cost?", PRICING, WRONG_PRICE)
            many = await asyncio.gather(*(detector.ainspect("Return window?", POLICY, CLEAN) for _ in range(10)))
            return clean, flagged, many

        clean, flagged, many = asyncio.run(main())
        assert not clean.is_hallucinating and flagged.is_hallucinating
        assert len(many) == 10 and all(isinstance(r, HallucinationReport) for r in many)


class TestHealer:
    def test_billing_scenario_heals_to_annual_terms(self, detector):
        q, answer = "How much does the Pro plan cost?", "The Pro plan costs $10 per month, billed monthly."
        report = detector.inspect(q, PRICING, answer)
        result = HallucinationHealer(detector).heal(q, PRICING, answer, report)
        assert result.strategy_used == "contradiction_patch" and result.healing_applied
        assert result.healed_answer == "The Pro plan costs $120 per year, billed annually."
        assert (result.initial_risk, result.final_risk) == ("critical", "low")
        assert any("$10" in c and "$120" in c for c in result.changes_made)
        assert result.re_inspection_report.confidence_score == pytest.approx(0.65)
        assert QualityScore.compute(report, healing_result=result).routing == "healed_accept"
        assert set(result.to_dict()) >= {"strategy_used", "healing_applied", "initial_risk", "final_risk",
                                         "changes_made", "healed_answer"}

    def test_clean_answer_is_left_alone(self, detector):
        report = detector.inspect("Return window?", POLICY, CLEAN)
        result = HallucinationHealer(detector).heal("Return window?", POLICY, CLEAN, report)
        assert result.strategy_used == "no_healing_needed" and not result.healing_applied
        assert result.healed_answer == CLEAN

    def test_recalibration_rules(self):
        recal = HallucinationHealer._recalibrate_confidence
        assert 0.50 < recal("The price is $120 per year.", [], "contradiction_patch", 0.50) <= 0.80
        assert recal("The policy is clear.", [], "contradiction_patch", 0.90) == pytest.approx(0.80)
        assert recal("Some answer.", [], "entity_scrub", 0.70) == pytest.approx(0.70 * 0.85)
        hedged = recal("According to the provided data: returns are accepted in 14 days.", [], "grounding_rewrite", 0.9)
        assertive = recal("Returns are definitely accepted in 14 days absolutely.", [], "grounding_rewrite", 0.9)
        assert hedged < assertive


def seed_report(**overrides) -> HallucinationReport:
    values = dict(question="Q?", answer="A.", confidence_score=0.5, faithfulness_score=0.8,
                  contradiction_found=False, drift_detected=False, risk_level="low", is_hallucinating=False,
                  triggered_checks=[], explanation=[], latency_ms=5.0)
    return HallucinationReport(**(values | overrides))


def healed(strategy: str) -> HealingResult:
    return HealingResult(original_answer="bad", healed_answer="good", strategy_used=strategy, healing_applied=True,
                         initial_risk="critical", final_risk="low")


class TestQualityScore:
    def test_routes(self):
        assert QualityScore.compute(seed_report(faithfulness_score=1.0, confidence_score=0.8)).routing == "accept"
        assert QualityScore.compute(seed_report(faithfulness_score=1.0, confidence_score=0.8)).final_score >= 0.75
        low = seed_report(faithfulness_score=0.0, contradiction_found=True, confidence_score=0.9)
        assert QualityScore.compute(low).routing == "fallback"
        bad = seed_report(faithfulness_score=0.5, contradiction_found=True)
        assert QualityScore.compute(bad, healing_result=healed("contradiction_patch")).routing == "healed_accept"
        assert QualityScore.compute(bad, healing_result=healed("safe_decline")).routing == "discard"
        assert QualityScore.compute(seed_report(faithfulness_score=0.5, confidence_score=0.4)).routing in ("accept", "fallback")

    def test_latency_curve(self):
        latency = lambda ms: QualityScore.compute(seed_report(latency_ms=ms)).latency_component  # noqa: E731
        assert latency(10.0) == pytest.approx(0.10)
        assert latency(10.0) > latency(35.0) > 0.05
        assert latency(100.0) < latency(50.0) and latency(60.0) < 0.05
        assert latency(500.0) == 0.0

    def test_drift_penalty(self):
        plain = QualityScore.compute(seed_report())
        drifted = QualityScore.compute(seed_report(drift_detected=True))
        assert plain.final_score - drifted.final_score == pytest.approx(0.20)
        assert (drifted.drift_penalty, plain.drift_penalty) == (0.20, 0.0)
        worst = seed_report(faithfulness_score=0.0, contradiction_found=True, drift_detected=True, confidence_score=1.0)
        assert QualityScore.compute(worst).final_score >= 0.0
        assert drifted.to_dict()["drift_penalty"] == 0.20

    def test_accepts_native_reports_too(self, detector):
        native = detector.native.inspect("Return window?", POLICY, CLEAN)
        assert QualityScore.compute(native).routing == "accept"
        assert "Score" in QualityScore.compute(native).summary()
