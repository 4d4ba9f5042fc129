"""HallucinationHealer: pick a repair strategy for a flagged answer, apply it, and re-inspect the result.

Priority (most damaging problem first):
    low risk, not flagged          no_healing_needed  (answer unchanged)
    drift, if drift_decides        grounding_rewrite  (the seed's rule; stream_guard.compat)
    contradiction                  contradiction_patch (falls back to grounding_rewrite when the patch
                                                        changes nothing or the patched answer is still
                                                        under 0.50 faithfulness)
    faithfulness < 0.30            grounding_rewrite  (the answer as a whole is not from the sources)
    fabricated entities            entity_scrub
    anything else flagged          claim_prune        (keep the grounded sentences, drop the rest)

Each strategy has fallbacks, tried in order until one gives a repair that passes: a patch or a scrub that
leaves an unsupported claim next to the fixed one is pruned of it, and one that fails becomes a rewrite
(the seed's rule) and then a prune; a prune that would leave too little becomes a rewrite, and a rewrite
with nothing usable becomes a prune.

A contradiction is tried before the faithfulness floor on purpose. Our faithfulness check also requires
a claim's numbers to occur in the context, so the contradicted value alone makes its sentence
ungrounded: a two-sentence answer with one wrong figure and one embellishment scores 0.00 before the
patch and 0.50 after it. Judging the floor on the patched answer (the fallback rule) keeps the seed's
intent, "rewrite what is deeply ungrounded", without rewriting answers a one-value patch fixes.

A repair that removed something ends with one note naming what (`note.py`); the strategies only edit. A repair is
delivered only if it is prose a person can read that reads like the answer it replaces (`readability.py`: no
JSON, markup, key-value dump, chunk id or run of whole chunks; no first person or quotation spliced into the
answer's voice, no crawl artefact, one note, lists still counting), carries no credential and nothing addressed
to a model (`delivery_safety.py`), and its re-inspection (`detector.analyze_repair`, same context and drift history) is
not flagged and has no contradiction, no fabricated entity and low or medium risk. When no repair
passes, the result is not applied and the answer routes to fallback; with `decline_on_failure` (the
seed's behaviour, stream_guard.compat) the configured safe decline is served instead. Nothing here
records history: the caller decides what was delivered.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Protocol, Sequence

from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.events import Chunk
from stream_guard.heal import claim_prune, contradiction_patch, entity_scrub, grounding_rewrite, note, safe_decline
from stream_guard.heal.delivery_safety import unsafe_reasons
from stream_guard.heal.readability import answer_reading_counts, original_problems, prose_problems, reading_problems
from stream_guard.heal.recalibrate import recalibrate_confidence
from stream_guard.heal.result import (
    CLAIM_PRUNE,
    CONTRADICTION_PATCH,
    ENTITY_SCRUB,
    GROUNDING_REWRITE,
    NO_HEALING_NEEDED,
    SAFE_DECLINE,
    Attempt,
    Change,
    HealingResult,
)
from stream_guard.text.fingerprint import Fingerprint
from stream_guard.text.inspection import Entity, Inspection
from stream_guard.wire.report import Finding, FindingType, HallucinationReport, Risk

REWRITE_BELOW_FAITHFULNESS = 0.30
PATCH_MIN_FAITHFULNESS = 0.50
_ACCEPTABLE_RISKS = (Risk.LOW, Risk.MEDIUM)


class Analyzer(Protocol):
    config: DetectorConfig

    def analyze(self, inspection: Inspection, history: Sequence[Fingerprint]) -> HallucinationReport: ...

    def analyze_repair(self, inspection: Inspection, history: Sequence[Fingerprint]) -> HallucinationReport: ...


def choose_strategy(report: HallucinationReport, drift_decides: bool = False) -> str:
    # Only a flagged answer is rewritten: drift or a weak claim alone (medium risk) is reported and
    # alerted on, but a grounded answer is not replaced because yesterday's wording differed. With
    # `drift_decides` (the seed's rule, stream_guard.compat) a drifted answer is rebuilt from the source.
    if not report.flagged:
        return NO_HEALING_NEEDED
    if drift_decides and report.drift_detected:
        return GROUNDING_REWRITE
    if report.has_contradiction:
        return CONTRADICTION_PATCH
    if report.faithfulness_score < REWRITE_BELOW_FAITHFULNESS:
        return GROUNDING_REWRITE
    if report.findings_of(FindingType.FABRICATED_ENTITY):
        return ENTITY_SCRUB
    return CLAIM_PRUNE


# What to try after each first choice, in order.
_PLANS: dict[str, tuple[str, ...]] = {
    CONTRADICTION_PATCH: (CONTRADICTION_PATCH, GROUNDING_REWRITE, CLAIM_PRUNE),
    ENTITY_SCRUB: (ENTITY_SCRUB, GROUNDING_REWRITE, CLAIM_PRUNE),
    GROUNDING_REWRITE: (GROUNDING_REWRITE, CLAIM_PRUNE),
    CLAIM_PRUNE: (CLAIM_PRUNE, GROUNDING_REWRITE),
}


def failure_reason(report: HallucinationReport) -> str | None:
    """Why a re-inspected answer may not be delivered, or None when it passes."""
    if report.has_contradiction:
        return "it still contradicts the source"
    if report.findings_of(FindingType.FABRICATED_ENTITY):
        return "it still names entities absent from the sources"
    if report.risk not in _ACCEPTABLE_RISKS:
        return f"its risk is still {report.risk.value}"
    if report.flagged:
        return f"it is still flagged (hallucination score {report.hallucination_score:.2f})"
    return None


def refusal_reason(text: str, inspection: Inspection) -> str | None:
    """Why a repair may not be shown to a user whatever its re-inspection says, or None: it is not prose, it
    does not read like the answer it replaces (inspection.answer), or it is unsafe to deliver."""
    answer, chunk_texts, chunk_ids = inspection.answer, inspection.raw_texts, [c.id for c in inspection.chunks]
    # What the answer itself already fails is read once per event (each attempt and the rewrite compare with it).
    had = inspection.once(("original problems", answer), lambda: original_problems(answer, chunk_texts, chunk_ids))
    problems = prose_problems(text, answer, chunk_texts, chunk_ids, had=had)
    if problems:
        return f"it is not readable prose ({', '.join(problems)})"
    problems = reading_problems(text, answer_reading_counts(inspection))
    if problems:
        return f"it would not read like the answer it replaces ({', '.join(problems)})"
    unsafe = unsafe_reasons(text)
    return unsafe[0] if unsafe else None


def noted(attempt: Attempt, findings: Sequence[Finding]) -> Attempt:
    """The attempt ending with one note listing what it removed (nothing added when it removed nothing)."""
    dropped = [c.before for c in attempt.changes if c.kind == "drop_sentence"]
    if attempt.text is None or not dropped:
        return attempt
    text = note.removal_note([note.what(_finding_in(sentence, findings)) for sentence in dropped])
    change = Change("note", "", text or "", "Appended one note listing what was removed")
    return Attempt(attempt.strategy, note.with_note(attempt.text, text), attempt.changes + (change,))


def _finding_in(sentence: str, findings: Sequence[Finding]) -> Finding | None:
    """The most specific finding about a removed sentence: a made-up name or a wrong value before a claim."""
    about = [f for f in findings if f.statement and (f.statement in sentence or sentence.strip() in f.statement
                                                      or (f.answer_value and f.answer_value in sentence))]
    return min(about, key=lambda f: _SPECIFIC.get(f.type, 9), default=None)


_SPECIFIC = {FindingType.FABRICATED_ENTITY: 0, FindingType.CONTRADICTION: 1, FindingType.CITATION_MISMATCH: 2,
             FindingType.UNSUPPORTED: 3}


def _leftovers(report: HallucinationReport) -> bool:
    """Whether a re-inspected repair still carries claims the context does not support."""
    return bool(report.findings_of(FindingType.UNSUPPORTED)) and any(
        f.kind == "claim" for f in report.hallucinated_statements
    )


class HallucinationHealer:
    def __init__(
        self,
        detector: Analyzer,
        *,
        rewrite_sentences: int = grounding_rewrite.MAX_SENTENCES,
        decline_on_failure: bool = False,
    ) -> None:
        self.detector = detector
        self.rewrite_sentences = rewrite_sentences
        self.decline_on_failure = decline_on_failure

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
        inspection: Inspection | None = None,
    ) -> HealingResult:
        """Repair `answer` given its report. Pass the `inspection` the report was made from when there is
        one: its context is read already and its entities spare the re-inspection another NER pass."""
        original = inspection or Inspection.build(question, context_chunks, answer, citations, tenant)
        strategy = choose_strategy(report, self.config.drift_decides)
        if strategy == NO_HEALING_NEEDED:
            return self._unchanged(answer, report)

        notes: tuple[Change, ...] = ()
        last: tuple[Attempt, HallucinationReport | None] = (Attempt(strategy, None, ()), None)
        plan = (GROUNDING_REWRITE,) if strategy == GROUNDING_REWRITE and report.drift_detected else _PLANS[strategy]
        for k, name in enumerate(plan):
            following = plan[k + 1] if k + 1 < len(plan) else None
            attempt, final, why = self._try(name, original, report, history)
            last = (attempt, final)
            if why is None and attempt.text is not None and final is not None:
                found = report.hallucinated_statements + final.hallucinated_statements
                return self._applied(answer, report, noted(attempt, found), final, notes)
            notes += (Change("fallback", name, following or "fallback", f"{name} not used: {why}"),)
        return self._failed(original, report, Attempt(plan[0], last[0].text, last[0].changes), last[1], notes)

    def _try(
        self, name: str, original: Inspection, report: HallucinationReport, history: Sequence[Fingerprint]
    ) -> tuple[Attempt, HallucinationReport | None, str | None]:
        """One strategy: its attempt (text without the note), the re-inspection of its text, and why it may not be
        delivered."""
        attempt = self._propose(name, original, report)
        if attempt.text is None:
            refused = [c.description for c in attempt.changes if c.kind == "refused"]
            return attempt, None, refused[-1] if refused else "it had nothing usable to offer"
        refused_why = refusal_reason(noted(attempt, report.hallucinated_statements).text or "", original)
        if refused_why:
            return attempt, None, refused_why
        final = self._reinspect(original, attempt.text, history)
        if name == CONTRADICTION_PATCH and final.faithfulness_score < PATCH_MIN_FAITHFULNESS:
            return attempt, final, f"the patched answer is only {final.faithfulness_score:.2f} faithful"
        if name in (CONTRADICTION_PATCH, ENTITY_SCRUB) and _leftovers(final):
            # The fixed answer must not keep an unsupported claim next to the fixed one.
            pruned = claim_prune.prune(original.with_answer(attempt.text).answer_markup, final.hallucinated_statements)
            if pruned.text is not None:
                candidate = Attempt(name, pruned.text, attempt.changes + pruned.changes)
                found = report.hallucinated_statements + final.hallucinated_statements
                if refusal_reason(noted(candidate, found).text or "", original) is None:
                    attempt = candidate
                    final = self._reinspect(original, pruned.text, history)
        return attempt, final, failure_reason(final)

    def _propose(self, name: str, original: Inspection, report: HallucinationReport) -> Attempt:
        # The answer as the checks read it (markdown and citation markers apart): edits keep its structure.
        answer = original.answer_markup
        if name == CONTRADICTION_PATCH:
            return contradiction_patch.patch(answer, report.hallucinated_statements)
        if name == ENTITY_SCRUB:
            return entity_scrub.scrub(answer, report.hallucinated_statements)
        if name == CLAIM_PRUNE:
            return claim_prune.prune(answer, report.hallucinated_statements)
        return grounding_rewrite.rewrite(original, self.rewrite_sentences)

    def _reinspect(self, original: Inspection, text: str, history: Sequence[Fingerprint]) -> HallucinationReport:
        # `text` is the repair without its note: the note is the guard's own words, not a claim to ground.
        healed = original.with_answer(text)
        if original.answer_entities is not None:
            # Text a repair adds comes from the context, where no name is fabricated; a name it keeps
            # from the answer is one the original NER pass found.
            healed = healed.with_entities(
                tuple(Entity(e.text, e.label) for e in original.answer_entities if e.text in text)  # no offsets
            )
        return self.detector.analyze_repair(healed, history)

    def _applied(
        self,
        answer: str,
        report: HallucinationReport,
        attempt: Attempt,
        final: HallucinationReport,
        notes: tuple[Change, ...],
    ) -> HealingResult:
        assert attempt.text is not None
        # A rewrite's text is the one re-inspected (it drops no sentence, so no note): its confidence is measured.
        measured = (final.checks["confidence"].score if final.answer == attempt.text and "confidence" in final.checks
                    else None)
        confidence_after = recalibrate_confidence(attempt.strategy, report.confidence_score, attempt.text, measured)
        recalibration = Change(
            "confidence",
            f"{report.confidence_score:.2f}",
            f"{confidence_after:.2f}",
            f"Confidence recalibrated {report.confidence_score:.2f} -> {confidence_after:.2f} ({attempt.strategy})",
        )
        unchanged = _not_applied(answer, report, attempt.strategy, notes + attempt.changes + (recalibration,),
                                 passed=True, final=final)
        return dataclasses.replace(unchanged, healed_answer=attempt.text, applied=True, final_risk=final.risk,
                                   confidence_after=confidence_after)

    def _failed(
        self,
        original: Inspection,
        report: HallucinationReport,
        attempt: Attempt,
        final: HallucinationReport | None,
        notes: tuple[Change, ...],
    ) -> HealingResult:
        """No repair passed: left as it is (it routes to fallback), or, with `decline_on_failure`, the safe
        decline is served in its place (the seed's DISCARD)."""
        if not self.decline_on_failure:
            return _not_applied(original.answer, report, attempt.strategy, notes, passed=False, final=final)
        reason = notes[-1].description if notes else "no repair passed"
        served = safe_decline.decline(self.config, attempt.text or original.answer, reason)
        text = served.text or self.config.decline_message
        unchanged = _not_applied(original.answer, report, SAFE_DECLINE, notes[:-1] + served.changes, passed=False,
                                 final=final)
        return dataclasses.replace(
            unchanged,
            healed_answer=text,
            applied=True,
            declined=True,
            final_risk=Risk.LOW,  # a decline asserts nothing, so it cannot be a hallucination
            confidence_after=recalibrate_confidence(SAFE_DECLINE, report.confidence_score, text),
            attempted=attempt.strategy,
        )

    def _unchanged(self, answer: str, report: HallucinationReport) -> HealingResult:
        return _not_applied(answer, report, NO_HEALING_NEEDED, (), passed=True, final=report)


def _not_applied(
    answer: str,
    report: HallucinationReport,
    strategy: str,
    changes: tuple[Change, ...],
    *,
    passed: bool,
    final: HallucinationReport | None,
) -> HealingResult:
    """The answer left as it is: it needed nothing (passed), or no repair passed (routes to fallback)."""
    return HealingResult(
        original_answer=answer,
        healed_answer=answer,
        strategy=strategy,
        changes=changes,
        applied=False,
        passed=passed,
        declined=False,
        initial_risk=report.risk,
        final_risk=report.risk,
        final_report=final,
        confidence_before=report.confidence_score,
        confidence_after=report.confidence_score,
        attempted=strategy,
    )
