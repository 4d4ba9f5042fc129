from __future__ import annotations

import dataclasses

import orjson
import pytest
from healing_builders import ScriptedDetector, contradiction, entity, make_report

from stream_guard.config.detector import DetectorConfig
from stream_guard.heal import HallucinationHealer, HealingResult
from stream_guard.heal.grounding_rewrite import PREFIX_FIGURES
from stream_guard.scoring.quality import QualityScore
from stream_guard.wire.report import Finding, FindingType, Risk

QUESTION = "What is the deadline for returning a damaged item?"
CONTEXT = [
    "Our return policy allows returns within 14 days of purchase.",
    "Items must be in original packaging to qualify for a refund.",
]
WRONG = "You have exactly 30 days to return a damaged item. This is clearly stated in our policy."
WRONG_FINDING = contradiction(
    "You have exactly 30 days to return a damaged item.", "30 days", "14 days", kind="date", source=CONTEXT[0]
)


def critical(answer: str = WRONG, **kwargs) -> object:
    defaults = dict(faithfulness=0.5, confidence=1.0, findings=[WRONG_FINDING], risk=Risk.CRITICAL)
    return make_report(answer, **(defaults | kwargs))


def heal(detector: ScriptedDetector, report, answer: str = WRONG, **kwargs) -> HealingResult:
    return HallucinationHealer(detector).heal(QUESTION, CONTEXT, answer, report, **kwargs)


class TestNoHealing:
    def test_clean_answer_passes_through_unchanged_without_reinspection(self):
        detector = ScriptedDetector()
        clean = make_report("You have 14 days.", confidence=0.62)
        result = heal(detector, clean, "You have 14 days.")
        assert result.strategy == "no_healing_needed"
        assert result.healed_answer == "You have 14 days."
        assert not result.applied and result.passed and not result.declined
        assert result.changes == ()
        assert result.confidence_before == result.confidence_after == 0.62
        assert result.initial_risk is result.final_risk is Risk.LOW
        assert detector.calls == []


class TestPriority:
    def test_contradiction_is_patched_in_place(self):
        detector = ScriptedDetector()
        result = heal(detector, critical())
        assert result.strategy == "contradiction_patch"
        assert result.healed_answer == WRONG.replace("30 days", "14 days")
        assert result.applied and result.passed and not result.declined
        assert result.initial_risk is Risk.CRITICAL and result.final_risk is Risk.LOW
        assert result.confidence_before == 1.0
        assert result.confidence_after == pytest.approx(0.80)
        kinds = [c.kind for c in result.changes]
        assert kinds[0] == "replace" and kinds[-1] == "confidence"
        assert detector.analyzed == [result.healed_answer]

    def test_very_low_faithfulness_rewrites_before_scrubbing(self):
        report = critical(faithfulness=0.0, findings=[entity(WRONG, "Dr. Harrison")], risk=Risk.HIGH)
        result = heal(ScriptedDetector(), report)
        assert result.strategy == "grounding_rewrite"
        assert result.healed_answer.startswith(PREFIX_FIGURES)
        assert CONTEXT[0] in result.healed_answer

    def test_contradiction_is_patched_even_when_the_original_scores_zero_faithfulness(self):
        # The wrong figure alone can make its sentence ungrounded; the patched answer is what is judged.
        detector = ScriptedDetector(lambda answer: make_report(answer, faithfulness=0.5))
        result = heal(detector, critical(faithfulness=0.0))
        assert result.strategy == "contradiction_patch"

    def test_drift_does_not_choose_the_repair(self):
        # Drift says the answer changed, not what is wrong with it: the contradiction is patched.
        result = heal(ScriptedDetector(), critical(faithfulness=1.0, drift=True))
        assert result.strategy == "contradiction_patch"

    def test_with_drift_deciding_a_drifted_answer_is_rewritten_even_with_a_contradiction(self):
        detector = ScriptedDetector(config=DetectorConfig(drift_decides=True))
        result = heal(detector, critical(faithfulness=1.0, drift=True))
        assert result.strategy == "grounding_rewrite"

    def test_entities_are_scrubbed_when_nothing_graver_is_wrong(self):
        answer = "Returns are accepted within 14 days. Dr. James Harrison confirmed this."
        report = make_report(answer, faithfulness=0.5, confidence=0.7,
                             findings=[entity("Dr. James Harrison confirmed this.", "Dr. James Harrison")], risk=Risk.HIGH)
        result = heal(ScriptedDetector(), report, answer)
        assert result.strategy == "entity_scrub"
        assert result.healed_answer.startswith("Returns are accepted within 14 days. Note:")
        assert result.confidence_after == pytest.approx(0.7 * 0.85)
        assert [c.kind for c in result.changes] == ["drop_sentence", "note", "confidence"]

    def test_flagged_without_a_specific_finding_is_rewritten(self):
        report = make_report(WRONG, faithfulness=0.4, confidence=0.9, risk=Risk.MEDIUM, flagged=True)
        assert heal(ScriptedDetector(), report).strategy == "grounding_rewrite"


class TestPatchFallback:
    def test_patch_still_unfaithful_falls_back_to_rewrite(self):
        def judge(answer: str):
            return make_report(answer, faithfulness=0.2 if "exactly" in answer else 1.0)

        detector = ScriptedDetector(judge)
        result = heal(detector, critical())
        assert result.strategy == "grounding_rewrite"
        assert result.changes[0].kind == "fallback"
        assert "0.20 faithful" in result.changes[0].description
        assert len(detector.calls) == 2  # the patch, then the rewrite

    def test_unlocatable_value_falls_back_to_rewrite(self):
        finding = contradiction("Nowhere.", "$99", "$10")
        result = heal(ScriptedDetector(), critical(findings=[finding]))
        assert result.strategy == "grounding_rewrite"
        assert result.changes[0].kind == "fallback"


FAILING_REINSPECTIONS = [
    dict(findings=[contradiction("x", "1", "2")], risk=Risk.CRITICAL),
    dict(findings=[entity("x", "Dr. Who")], risk=Risk.MEDIUM),
    dict(risk=Risk.HIGH),
]


class TestReinspection:
    @pytest.mark.parametrize("failing", FAILING_REINSPECTIONS)
    def test_failing_reinspection_is_not_applied_and_routes_to_fallback(self, failing):
        detector = ScriptedDetector(lambda answer: make_report(answer, **failing))
        result = heal(detector, critical())
        assert result.failed and not result.applied and not result.declined and not result.passed
        assert result.attempted == result.strategy
        assert result.final_report is not None  # why it failed stays inspectable
        assert [c.kind for c in result.changes] == ["fallback"] * len(result.changes)
        assert QualityScore.compute(critical(), result).routing == "fallback"

    @pytest.mark.parametrize("failing", FAILING_REINSPECTIONS)
    def test_with_decline_on_failure_a_failing_reinspection_serves_safe_decline(self, failing):
        detector = ScriptedDetector(lambda answer: make_report(answer, **failing), DetectorConfig(decline_message="Cannot say."))
        result = HallucinationHealer(detector, decline_on_failure=True).heal(QUESTION, CONTEXT, WRONG, critical())
        assert result.strategy == "safe_decline"
        assert result.attempted == "contradiction_patch"
        assert result.healed_answer == "Cannot say."
        assert result.applied and result.declined and not result.passed
        assert result.final_risk is Risk.LOW
        assert result.final_report is not None  # why it failed stays inspectable
        assert result.changes[-1].kind == "decline"

    def test_medium_risk_without_contradiction_or_entities_passes(self):
        detector = ScriptedDetector(lambda answer: make_report(answer, risk=Risk.MEDIUM))
        result = heal(detector, critical())
        assert result.passed and result.final_risk is Risk.MEDIUM

    def test_scrub_that_removes_everything_offers_nothing_and_the_rewrite_takes_over(self):
        answer = "Dr. James Harrison wrote the policy."
        report = make_report(answer, faithfulness=0.5, findings=[entity(answer, "Dr. James Harrison")], risk=Risk.HIGH)
        detector = ScriptedDetector()
        result = heal(detector, report, answer)
        assert result.strategy == "grounding_rewrite" and "Harrison" not in result.healed_answer
        assert result.changes[0].kind == "fallback" and "entity_scrub" in result.changes[0].description
        assert len(detector.calls) == 1  # the scrub had nothing to re-inspect

    def test_reinspection_sees_history_citations_and_tenant(self):
        detector = ScriptedDetector()
        history = ({"numbers": ["14"]},) * 3
        HallucinationHealer(detector).heal(QUESTION, CONTEXT, WRONG, critical(), history=history,
                                           citations=("1",), tenant="acme")
        inspection, seen_history = detector.calls[0]
        assert seen_history == history
        assert inspection.citations == ("1",) and inspection.tenant == "acme"
        assert [c.text for c in inspection.chunks] == CONTEXT


class TestResult:
    def test_is_frozen_and_serialises(self):
        result = heal(ScriptedDetector(), critical())
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.healed_answer = "x"  # type: ignore[misc]
        body = orjson.loads(orjson.dumps(result.to_dict()))
        assert body["strategy"] == "contradiction_patch"
        assert body["initial_risk"] == "critical" and body["final_risk"] == "low"
        assert body["applied"] is True and body["passed"] is True and body["declined"] is False
        assert body["confidence_after"] == 0.8
        assert {"kind", "before", "after", "description"} <= set(body["changes"][0])


def test_one_note_at_most_listing_what_was_removed():
    # The scrub removes the invented name, then its leftover unsupported claim is pruned: two removals, one note.
    answer = ("Returns are accepted within 14 days. Dr. James Harrison confirmed this. "
              "Shipping to the moon is free.")
    findings = [entity("Dr. James Harrison confirmed this.", "Dr. James Harrison")]
    report = make_report(answer, faithfulness=0.5, confidence=0.7, findings=findings, risk=Risk.HIGH)
    moon = Finding(FindingType.UNSUPPORTED, "Shipping to the moon is free.", "no source mentions 'moon'", kind="claim")

    def judge(text: str):
        if "moon" in text:
            return make_report(text, faithfulness=0.5, findings=[moon], risk=Risk.MEDIUM, flagged=True)
        return make_report(text)

    detector = ScriptedDetector(judge)
    result = heal(detector, report, answer)
    assert result.strategy == "entity_scrub" and result.applied
    assert result.healed_answer == ("Returns are accepted within 14 days. Note: removed what the sources do not "
                                    "support: a name and a statement.")
    assert result.healed_answer.count("Note:") == 1 and "Harrison" not in result.healed_answer
    assert [c.kind for c in result.changes].count("note") == 1
