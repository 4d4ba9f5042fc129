"""Guard: one AnswerEvent in, one Verdict out: inspect, heal, score, route, decide what enters drift history.

`evaluate_batch` is a pure function of (events, histories) so that the streaming service can keep the
history in a partitioned, changelogged table and run this in an executor, and `stream-guard check` can
keep it in memory or SQLite. Only delivered answers enter the history, so a repeated bad answer never
becomes the norm.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Callable, ContextManager, Mapping, Sequence

from stream_guard.engine.budget import OverBudget
from stream_guard.checks.base import elapsed_ms
from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.detector import HallucinationDetector
from stream_guard.wire.events import AnswerEvent
from stream_guard.heal import HallucinationHealer, HealingResult
from stream_guard.text.fingerprint import Fingerprint, event_fingerprint
from stream_guard.engine.history import HistoryStore, MemoryHistory
from stream_guard.text.inspection import Inspection
from stream_guard.text.ner import EntityRecognizer
from stream_guard.scoring.quality import QualityScore
from stream_guard.wire.report import HallucinationReport
from stream_guard.text.questions import normalize_question, question_hash
from stream_guard.wire.verdict import (
    NO_HEALING,
    Change,
    Checks,
    Healing,
    Quality,
    QualityComponents,
    Reason,
    Statement,
    Verdict,
)

log = logging.getLogger("stream_guard.pipeline")

DELIVERED_ROUTES = frozenset({"accept", "healed_accept"})


@dataclass(frozen=True)
class EventFailure:
    """An event the pipeline could not judge: a bug (`judge`), or more CPU than its budget (`timeout`, with
    the cost it had reached). Bad input never gets this far. It goes to the dead-letter topic."""

    event_id: str
    error: str
    stage: str = "judge"
    cost_ms: float | None = None
    # The exception's class, module-qualified, for a bug (stage judge).
    exception: str | None = None


def qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# A scope bounding the work on n events (stream_guard/engine/budget.py, CpuBudget.limit).
Limit = Callable[[int], ContextManager[object]]


def _unlimited(events: int) -> ContextManager[object]:
    return contextlib.nullcontext()


class Guard:
    def __init__(self, config: DetectorConfig | None = None, recognizer: EntityRecognizer | None = None, *,
                 quality_latency_ms: float | None = None) -> None:
        self.config = config or DetectorConfig()
        # None: the quality score counts the measured time of the checks (the service). Replays (check,
        # backtest) pass a fixed figure, so that a decision never depends on how busy the replaying machine is
        # and the same events give the same routing on any number of processes. latency_ms still reports the
        # measured time either way.
        self.quality_latency_ms = quality_latency_ms
        # The detector's own store is unused here: histories are passed in explicitly.
        self.detector = HallucinationDetector(self.config, history=MemoryHistory(), recognizer=recognizer)
        self.healer = HallucinationHealer(self.detector)

    def evaluate(self, event: AnswerEvent, history: Sequence[Fingerprint] = ()) -> tuple[Verdict, Fingerprint | None]:
        """Judge one event against its drift history; returns the verdict and what to append to history."""
        inspection = self.detector.with_entities([_inspection(event)])[0]
        return self._decide(event, inspection, history)

    def evaluate_batch(
        self, events: Sequence[AnswerEvent], histories: Mapping[str, Sequence[Fingerprint]], *,
        limit: Limit = _unlimited,
    ) -> tuple[list[Verdict | EventFailure], dict[str, list[Fingerprint]]]:
        """Judge a batch in order. Events on the same question see each other's delivered answers.

        Returns one Verdict (or EventFailure) per event and, for every key whose history changed, the new
        bounded history to write back.

        `limit(n)` bounds the work on n events: the batch's entity pass runs under limit(len(events)), each
        event's decision under limit(1). An event whose decision overruns fails alone, as a timeout; an entity
        pass that overruns raises OverBudget, for the caller to judge the events one at a time.
        """
        with limit(len(events)):
            inspections = self.detector.with_entities([_inspection(e) for e in events])
        current = {key: list(value) for key, value in histories.items()}
        updated: dict[str, list[Fingerprint]] = {}
        results: list[Verdict | EventFailure] = []
        for event, inspection in zip(events, inspections):
            key = question_hash(event.tenant, event.question)
            try:
                with limit(1):
                    verdict, record = self._decide(event, inspection, current.get(key, []))
            except OverBudget as exc:
                log.warning("event %s stopped: %s", event.event_id, exc)
                results.append(EventFailure(event.event_id, str(exc), stage="timeout", cost_ms=exc.spent_ms))
                continue
            except Exception as exc:  # one event's bug must not sink the batch
                log.exception("failed to judge event %s", event.event_id)
                results.append(EventFailure(event.event_id, f"{type(exc).__name__}: {exc}",
                                            exception=qualified_name(type(exc))))
                continue
            results.append(verdict)
            if record is not None:
                current[key] = remember(current.get(key, []), record, self.config.window_size)
                updated[key] = current[key]
        return results, updated

    def process(self, event: AnswerEvent, store: HistoryStore) -> Verdict:
        """Convenience for single-process use: read and update a HistoryStore."""
        key = question_hash(event.tenant, event.question)
        history = store.get(key)
        verdict, record = self.evaluate(event, history)
        if record is not None and not _seen(history, record):
            store.append(key, record, self.config.window_size)
        return verdict

    def _decide(
        self, event: AnswerEvent, inspection: Inspection, history: Sequence[Fingerprint]
    ) -> tuple[Verdict, Fingerprint | None]:
        started = time.perf_counter()
        tag = event_tag(event.event_id)
        # A redelivered or replayed event is judged as it was the first time: not against itself.
        # An answer to no question has no "same question" (checks/drift.py): it neither reads nor joins a
        # history, so such answers share no state and may be judged anywhere, in any order.
        asked = bool(normalize_question(event.question))
        history = [fp for fp in history if fp.get(EVENT_TAG) != tag] if asked else []
        report = self.detector.analyze(inspection, history)
        healing: HealingResult | None = None
        if report.flagged:
            healing = self.healer.heal(
                event.question, event.context, event.answer, report, history=history, citations=event.citations,
                tenant=event.tenant, inspection=inspection,
            )
        # Once, of the answer as it will be delivered (a flagged one's score before healing was never read).
        quality = QualityScore.compute(report, healing, self.config, latency_ms=self.quality_latency_ms)
        delivered = self._delivered_answer(event, quality.routing, healing)
        record = (
            {**event_fingerprint(inspection, delivered), EVENT_TAG: tag}
            if asked and quality.routing in DELIVERED_ROUTES and delivered.strip()
            else None
        )
        reason = why_not_delivered(report, healing, quality, self.config, delivered != event.answer)
        verdict = _verdict(event, report, healing, quality, delivered, elapsed_ms(started), reason)
        return verdict, record

    def _delivered_answer(self, event: AnswerEvent, routing: str, healing: HealingResult | None) -> str:
        if routing == "accept":
            return event.answer
        if routing == "healed_accept" and healing is not None:
            return healing.healed_answer
        if routing == "discard":
            return healing.healed_answer if healing is not None and healing.declined else self.config.decline_message
        return self.config.fallback_message


# History records carry a digest of the event id that put them there (not the id: ids may embed user data).
EVENT_TAG = "event"


def event_tag(event_id: str) -> str:
    return hashlib.blake2b(event_id.encode(), digest_size=8).hexdigest()


def _seen(history: Sequence[Fingerprint], record: Fingerprint) -> bool:
    tag = record[EVENT_TAG]
    for fp in history:  # a plain loop: every delivered answer asks this of its question's whole history
        if fp.get(EVENT_TAG) == tag:
            return True
    return False


def remember(history: Sequence[Fingerprint], record: Fingerprint, window: int) -> list[Fingerprint]:
    """`history` with `record` appended and bounded to `window` (a new list); unchanged when the record's event is
    in it already. At least once means an event can come twice (a redelivery after a crash, a replayed topic): it
    counts once, or a replay would fill a question's history with copies of itself."""
    kept = list(history)
    if _seen(kept, record):
        return kept
    kept.append(record)
    return kept[-max(1, window):] if len(kept) > window else kept


def _inspection(event: AnswerEvent) -> Inspection:
    return Inspection.build(event.question, event.context, event.answer, event.citations, event.tenant)


def why_not_delivered(report: HallucinationReport, healing: HealingResult | None, quality: QualityScore,
                      config: DetectorConfig, changed: bool) -> Reason | None:
    """Why the answer was not delivered as written, or None when it was. Every fallback, repair and decline
    says why, flagged or not."""
    if quality.routing == "accept" and not changed:
        return None
    if not report.answer.strip():
        return Reason("empty_answer", "the answer is empty: there is nothing to deliver")
    if report.flagged:
        return Reason("hallucination", f"flagged by {', '.join(report.triggered)} (hallucination score "
                                       f"{report.hallucination_score:.2f} >= {config.flag_threshold}); "
                                       + _outcome(healing))
    if report.drift_detected and config.drift_decides:
        return Reason("drift", f"the answer drifted from earlier answers to the same question (distance "
                               f"{report.drift_delta:.2f}) and drift counts against answers (drift_decides); "
                               f"quality {quality.score:.2f}")
    unsupported = [f.statement for f in report.hallucinated_statements][:2]
    return Reason("low_quality", f"quality {quality.score:.2f} is under fallback_threshold {config.fallback_threshold} "
                                 f"(faithfulness {report.faithfulness_score:.2f})"
                                 + (f"; unsupported: {'; '.join(repr(s) for s in unsupported)}" if unsupported else ""))


def _outcome(healing: HealingResult | None) -> str:
    if healing is None:
        return "not repaired"
    failed = [c.description for c in healing.changes if c.kind == "fallback"]
    if healing.declined:
        return "no repair passed, the safe decline was served" + (f" ({failed[-1]})" if failed else "")
    if healing.applied and healing.passed:
        return f"repaired by {healing.strategy}"
    return "no repair passed" + (f": {'; '.join(failed)}" if failed else "")


def _verdict(
    event: AnswerEvent,
    report: HallucinationReport,
    healing: HealingResult | None,
    quality: QualityScore,
    delivered: str,
    latency_ms: float,
    reason: Reason | None = None,
) -> Verdict:
    applied = healing is not None and healing.applied
    return Verdict(
        event_id=event.event_id,
        tenant=event.tenant,
        question_hash=question_hash(event.tenant, event.question),
        question=event.question,
        flagged=report.flagged,
        hallucination_score=round(report.hallucination_score, 4),
        risk=report.risk.value,
        final_risk=(healing.final_risk.value if applied and healing is not None else report.risk.value),
        routing=quality.routing,
        hallucination_type=report.hallucination_type,
        triggered=list(report.triggered),
        delivered_answer=delivered,
        original_answer=event.answer,
        hallucinated_statements=[Statement.of(f) for f in report.hallucinated_statements],
        verified_statements=list(report.verified_statements),
        checks=Checks.of(report.checks),
        healing=_healing(healing),
        quality=_quality(quality),
        latency_ms=round(latency_ms, 3),
        reason=reason,
        model=event.model,
        produced_at_ms=event.produced_at_ms,
        label=event.label,
        metadata=dict(event.metadata),
    )


def _healing(result: HealingResult | None) -> Healing:
    if result is None:
        return NO_HEALING
    final = result.final_report
    return Healing(
        strategy=result.strategy,
        applied=result.applied,
        changes=[Change(c.kind, c.before, c.after, c.description) for c in result.changes],
        attempted=result.attempted or result.strategy,
        passed=result.passed,
        declined=result.declined,
        initial_risk=result.initial_risk.value,
        final_risk=result.final_risk.value,
        healed_answer=result.healed_answer,
        confidence_before=round(result.confidence_before, 4),
        confidence_after=round(result.confidence_after, 4),
        final_hallucination_score=round(final.hallucination_score, 4) if final is not None else None,
        final_triggered=list(final.triggered) if final is not None else None,
    )


def _quality(quality: QualityScore) -> Quality:
    parts = {name: round(value, 4) for name, value in quality.components.items()}
    return Quality(round(quality.score, 4), quality.routing, QualityComponents(**parts),
                   round(quality.drift_penalty, 4), quality.basis)
