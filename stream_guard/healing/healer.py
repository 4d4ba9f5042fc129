"""HallucinationHealer: pick a repair strategy for a flagged answer, apply it, and re-inspect the result.

Priority (most damaging problem first):
    low risk, not flagged          no_healing_needed  (answer unchanged)
    drift                          grounding_rewrite  (the pipeline, not one sentence, went wrong)
    contradiction                  contradiction_patch (falls back to grounding_rewrite when the patch
                                                        changes nothing or the patched answer is still
                                                        under 0.50 faithfulness)
    faithfulness < 0.30            grounding_rewrite  (the answer as a whole is not from the sources)
    fabricated entities            entity_scrub
    anything else flagged          grounding_rewrite

A contradiction is tried before the faithfulness floor on purpose. Our faithfulness check also requires
a claim's numbers to occur in the context, so the contradicted value alone makes its sentence
ungrounded: a two-sentence answer with one wrong figure and one embellishment scores 0.00 before the
patch and 0.50 after it. Judging the floor on the patched answer (the fallback rule) keeps the seed's
intent, "rewrite what is deeply ungrounded", without rewriting answers a one-value patch fixes.

Every healed answer is re-inspected with `detector.analyze` against the same context and drift history.
It is delivered only if the new report has no contradiction, no fabricated entity and low or medium risk;
otherwise the healer serves the configured safe decline. Nothing here records history: the caller decides
what was delivered.
"""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence

from stream_guard.config import DetectorConfig
from stream_guard.events import Chunk
from stream_guard.healing import contradiction_patch, entity_scrub, grounding_rewrite, safe_decline
from stream_guard.healing.recalibrate import recalibrate_confidence
from stream_guard.healing.result import (
    CONTRADICTION_PATCH,
    ENTITY_SCRUB,
    GROUNDING_REWRITE,
    NO_HEALING_NEEDED,
    SAFE_DECLINE,
    Attempt,
    Change,
    HealingResult,
)
from stream_guard.history import Fingerprint
from stream_guard.inspection import Inspection
from stream_guard.report import FindingType, HallucinationReport, Risk

REWRITE_BELOW_FAITHFULNESS = 0.30
PATCH_MIN_FAITHFULNESS = 0.50
_ACCEPTABLE_RISKS = (Risk.LOW, Risk.MEDIUM)


class Analyzer(Protocol):
    config: DetectorConfig

    def analyze(self, inspection: Inspection, history: Sequence[Fingerprint]) -> HallucinationReport: ...


def choose_strategy(report: HallucinationReport) -> str:
    # Only a flagged answer is rewritten: drift or a weak claim alone (medium risk) is reported and
    # alerted on, but a grounded answer is not replaced because yesterday's wording differed.
    if not report.flagged:
        return NO_HEALING_NEEDED
    if report.drift_detected:
        return GROUNDING_REWRITE
    if report.has_contradiction:
        return CONTRADICTION_PATCH
    if report.faithfulness_score < REWRITE_BELOW_FAITHFULNESS:
        return GROUNDING_REWRITE
    if report.findings_of(FindingType.FABRICATED_ENTITY):
        return ENTITY_SCRUB
    return GROUNDING_REWRITE


def failure_reason(report: HallucinationReport) -> str | None:
    """Why a re-inspected answer may not be delivered, or None when it passes."""
    if report.has_contradiction:
        return "it still contradicts the source"
    if report.findings_of(FindingType.FABRICATED_ENTITY):
        return "it still names entities absent from the sources"
    if report.risk not in _ACCEPTABLE_RISKS:
        return f"its risk is still {report.risk.value}"
    return None


class HallucinationHealer:
    def __init__(self, detector: Analyzer, *, rewrite_sentences: int = grounding_rewrite.MAX_SENTENCES) -> None:
        self.detector = detector
        self.rewrite_sentences = rewrite_sentences

    @property
    def config(self) -> DetectorConfig:
        return self.detector.config

    def heal(
        self,
        question: str,
        context_chunks: Iterable[str | Chunk] | str | None,
        answer: str,
        report: HallucinationReport,
        *,
        history: Sequence[Fingerprint] = (),
        citations: Sequence[str] = (),
        tenant: str = "default",
    ) -> HealingResult:
        original = Inspection.build(question, context_chunks, answer, citations, tenant)
        strategy = choose_strategy(report)
        if strategy == NO_HEALING_NEEDED:
            return self._unchanged(answer, report)

        attempt, final, notes = self._attempt(strategy, original, report, history)
        reason = "the strategy had nothing usable to offer" if final is None else failure_reason(final)
        if attempt.text is None or final is None or reason is not None:
            return self._declined(original, report, attempt, final, notes, reason or "")

        confidence_after = recalibrate_confidence(attempt.strategy, report.confidence_score, attempt.text)
        recalibration = Change(
            "confidence",
            f"{report.confidence_score:.2f}",
            f"{confidence_after:.2f}",
            f"Confidence recalibrated {report.confidence_score:.2f} -> {confidence_after:.2f} ({attempt.strategy})",
        )
        return HealingResult(
            original_answer=answer,
            healed_answer=attempt.text,
            strategy=attempt.strategy,
            changes=notes + attempt.changes + (recalibration,),
            applied=True,
            passed=True,
            declined=False,
            initial_risk=report.risk,
            final_risk=final.risk,
            final_report=final,
            confidence_before=report.confidence_score,
            confidence_after=confidence_after,
            attempted=attempt.strategy,
        )

    def _attempt(
        self, strategy: str, original: Inspection, report: HallucinationReport, history: Sequence[Fingerprint]
    ) -> tuple[Attempt, HallucinationReport | None, tuple[Change, ...]]:
        """Run the chosen strategy (and the patch's fallback); return the attempt, its report and notes."""
        notes: tuple[Change, ...] = ()
        if strategy == CONTRADICTION_PATCH:
            patched = contradiction_patch.patch(original.answer, report.hallucinated_statements)
            if patched.text is not None:
                patched_report = self._reinspect(original, patched.text, history)
                if patched_report.faithfulness_score >= PATCH_MIN_FAITHFULNESS:
                    return patched, patched_report, notes
                why = f"the patched answer is only {patched_report.faithfulness_score:.2f} faithful"
            else:
                why = "no contradicted value could be located in the answer"
            notes = (Change("fallback", CONTRADICTION_PATCH, GROUNDING_REWRITE, f"Patch abandoned: {why}"),)
            strategy = GROUNDING_REWRITE
        if strategy == ENTITY_SCRUB:
            attempt = entity_scrub.scrub(original.answer, report.hallucinated_statements)
        else:
            attempt = grounding_rewrite.rewrite(original, self.rewrite_sentences)
        final = self._reinspect(original, attempt.text, history) if attempt.text is not None else None
        return attempt, final, notes

    def _reinspect(self, original: Inspection, text: str, history: Sequence[Fingerprint]) -> HallucinationReport:
        healed = Inspection.build(original.question, original.chunks, text, original.citations, original.tenant)
        return self.detector.analyze(healed, history)

    def _unchanged(self, answer: str, report: HallucinationReport) -> HealingResult:
        return HealingResult(
            original_answer=answer,
            healed_answer=answer,
            strategy=NO_HEALING_NEEDED,
            changes=(),
            applied=False,
            passed=True,
            declined=False,
            initial_risk=report.risk,
            final_risk=report.risk,
            final_report=report,
            confidence_before=report.confidence_score,
            confidence_after=report.confidence_score,
            attempted=NO_HEALING_NEEDED,
        )

    def _declined(
        self,
        original: Inspection,
        report: HallucinationReport,
        attempt: Attempt,
        final: HallucinationReport | None,
        notes: tuple[Change, ...],
        reason: str,
    ) -> HealingResult:
        why = f"{attempt.strategy} failed re-inspection: {reason}" if final is not None else (
            f"{attempt.strategy} could not produce an answer: {reason}"
        )
        served = safe_decline.decline(self.config, attempt.text or original.answer, why)
        text = served.text or self.config.decline_message
        return HealingResult(
            original_answer=original.answer,
            healed_answer=text,
            strategy=SAFE_DECLINE,
            changes=notes + served.changes,
            applied=True,
            passed=False,
            declined=True,
            initial_risk=report.risk,
            # A decline asserts nothing, so it cannot be a hallucination.
            final_risk=Risk.LOW,
            final_report=final,
            confidence_before=report.confidence_score,
            confidence_after=recalibrate_confidence(SAFE_DECLINE, report.confidence_score, text),
            attempted=attempt.strategy,
        )
