"""Judge a batch of raw payloads: bytes in, bytes out, wherever the guard runs.

Pure (given a Guard): what every judge process runs (engine/pool.py), and `check --jobs 1` in its own process.
Everything that crosses a process boundary is bytes (payloads, histories as the worker's table stores them,
verdicts as sent), so it costs a memcpy rather than pickling nested dicts, and the worker's event loop does
no JSON work of its own. Within one process histories stay lists of fingerprints (`judge_events`).

One result per payload, in order: a verdict with its alerts, or the reason it could not be judged
(`decode`: the payload breaks the event contract; `judge`: the core failed on it; `timeout`: it spent its
CPU budget, see budget.py; `misrouted`: the caller said which question the payload was keyed by, and it is
another one). Whatever goes wrong with one event (decoding, a check, healing, serialising its verdict) is
that event's result alone: its batch-mates get their verdicts.

`stream-guard check` runs this same function on the lines of a file, so the worker and `check` accept and
refuse exactly the same events, with the same messages.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import orjson

from stream_guard.engine.alerts import alerts_for_verdict
from stream_guard.wire.alert import Alert
from stream_guard.engine.budget import CpuBudget, OverBudget
from stream_guard.wire.deadletter import readable_event_id
from stream_guard.wire.events import AnswerEvent, EventError, decode_event
from stream_guard.text.fingerprint import Fingerprint
from stream_guard.engine.pipeline import EventFailure, Guard, Limit, qualified_name
from stream_guard.text.questions import question_hash
from stream_guard.wire.verdict import Verdict, flagged_checks

log = logging.getLogger("stream_guard.judging")


@dataclass(frozen=True)
class Judged:
    """The outcome for one payload. `verdict` is the verdict's JSON; `error_stage` is set when there is none."""

    event_id: str | None = None
    question_hash: str | None = None
    routing: str | None = None
    verdict: bytes | None = None
    alerts: tuple[Alert, ...] = ()
    produced_at_ms: int | None = None
    # For the worker's metrics, so that its event loop never parses a verdict: the score and the checks
    # that flagged the answer.
    hallucination_score: float | None = None
    checks_flagged: tuple[str, ...] = ()
    error_stage: str | None = None
    error_field: str | None = None
    error_reason: str | None = None
    # CPU the event had spent when it was stopped (error_stage "timeout").
    cost_ms: float | None = None
    # A bug's exception class, module-qualified (error_stage "judge").
    error_exception: str | None = None
    # Top-level keys of the event that the contract does not name (judged without them; wire/events.py).
    unknown_fields: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.verdict is not None

    def error_object(self) -> dict[str, Any]:
        """The failure as `stream-guard check` prints it (the caller adds the line number)."""
        out: dict[str, Any] = {"error": f"{self.error_field or '$'}: {self.error_reason or 'unknown'}",
                               "field": self.error_field or "$", "reason": self.error_reason or "unknown",
                               "stage": self.error_stage or "judge"}
        if self.event_id is not None:
            out["event_id"] = self.event_id
        if self.cost_ms is not None:
            out["cost_ms"] = round(self.cost_ms, 1)
        return out


@dataclass(frozen=True)
class JudgedBatch:
    items: list[Judged]
    # question hash -> the new bounded history, serialized as the table stores it; only keys that changed.
    histories: dict[str, bytes]


def load_history(raw: bytes | None) -> list[Fingerprint]:
    """A history as stored (JSON list of fingerprint objects); anything unreadable counts as no history."""
    if not raw:
        return []
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        log.warning("unreadable drift history record ignored")
        return []
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def dump_history(items: Sequence[Fingerprint]) -> bytes:
    return orjson.dumps([dict(item) for item in items])


def _verdict_item(verdict: Verdict, now_ms: int) -> Judged:
    try:
        return Judged(
            event_id=verdict.event_id,
            question_hash=verdict.question_hash,
            routing=verdict.routing,
            verdict=verdict.to_json(),
            alerts=tuple(alerts_for_verdict(verdict, now_ms)),
            produced_at_ms=verdict.produced_at_ms,
            hallucination_score=verdict.hallucination_score,
            checks_flagged=flagged_checks(verdict),
        )
    except Exception as exc:  # a verdict that cannot be written out is this event's failure alone
        log.exception("verdict of event %s could not be serialised", verdict.event_id)
        return Judged(event_id=verdict.event_id, question_hash=verdict.question_hash,
                      produced_at_ms=verdict.produced_at_ms, error_stage="judge", error_field="$",
                      error_reason=f"the verdict could not be serialised: {type(exc).__name__}: {exc}",
                      error_exception=qualified_name(type(exc)))


def _failure_item(answer: AnswerEvent, failure: EventFailure) -> Judged:
    return Judged(event_id=answer.event_id, question_hash=question_hash(answer.tenant, answer.question),
                  produced_at_ms=answer.produced_at_ms, error_stage=failure.stage, error_field="$",
                  error_reason=failure.error, cost_ms=failure.cost_ms, error_exception=failure.exception)


def _evaluate(guard: Guard, answers: list[AnswerEvent], histories: dict[str, list[Fingerprint]],
              budget: CpuBudget | None) -> tuple[list[Verdict | EventFailure], dict[str, list[Fingerprint]]]:
    limit: Limit | None = budget.limit if budget is not None else None
    try:
        if limit is None:
            results, updated = guard.evaluate_batch(answers, histories)
        else:
            results, updated = guard.evaluate_batch(answers, histories, limit=limit)
        return list(results), {k: list(v) for k, v in updated.items()}
    except OverBudget as exc:  # the batch's entity pass: find the event that costs it, alone
        log.warning("entity pass over %d events stopped (%s); judging one event at a time", len(answers), exc)
    except Exception:  # outside the core's own per-event guard (NER over the batch, say)
        log.exception("batch of %d failed; judging one event at a time", len(answers))
    current = dict(histories)
    out: list[Verdict | EventFailure] = []
    changed: dict[str, list[Fingerprint]] = {}
    for answer in answers:
        key = question_hash(answer.tenant, answer.question)
        try:
            with limit(1) if limit is not None else contextlib.nullcontext():
                (result,), one = guard.evaluate_batch([answer], {key: current.get(key, [])})
        except OverBudget as exc:
            out.append(EventFailure(answer.event_id, str(exc), stage="timeout", cost_ms=exc.spent_ms))
            continue
        except Exception as exc:
            out.append(EventFailure(answer.event_id, f"{type(exc).__name__}: {exc}",
                                    exception=qualified_name(type(exc))))
            continue
        out.append(result)
        for k, v in one.items():
            current[k] = changed[k] = list(v)
    return out, changed


MISROUTED = "misrouted"


def _decode(raw: Any, guard: Guard) -> AnswerEvent | Judged:
    try:
        return decode_event(raw, guard.config.limits)
    except EventError as exc:  # named by its event id when its bytes hold a readable one
        return Judged(event_id=readable_event_id(raw), error_stage="decode", error_field=exc.field,
                      error_reason=exc.reason)
    except Exception as exc:  # a payload no rule foresaw: refused like any other bad payload
        log.exception("decoding a payload failed")
        return Judged(error_stage="decode", error_field="$", error_reason=f"{type(exc).__name__}: {exc}",
                      error_exception=qualified_name(type(exc)))


def judge_events(guard: Guard, payloads: Sequence[bytes], history: Callable[[str], Sequence[Fingerprint]],
                 now_ms: int = 0, claimed_keys: Sequence[str | None] | None = None, *,
                 budget: CpuBudget | None = None) -> tuple[list[Judged], dict[str, list[Fingerprint]]]:
    """Decode, judge and serialize a batch in this process: one Judged per payload, in order, and for every
    question whose drift history changed, the new bounded history. `history(key)` is the stored history of a
    question hash (read once per question in the batch, only for questions the batch has).

    `claimed_keys[i]`, when given, is the question hash payload i was keyed by, and so the only history
    the caller read for it. A payload whose own question hash differs is not judged (it would have drifted
    against another question's history): it comes back `misrouted`, with its real hash, for the caller to
    route properly.

    `budget`, when given, stops an event that spends more CPU than it allows (budget.py)."""
    items: list[Judged | None] = [None] * len(payloads)
    answers: list[AnswerEvent] = []
    positions: list[int] = []
    for i, raw in enumerate(payloads):
        answer = _decode(raw, guard)
        if isinstance(answer, Judged):
            items[i] = answer
            continue
        claimed = claimed_keys[i] if claimed_keys is not None else None
        if claimed is not None and (real := question_hash(answer.tenant, answer.question)) != claimed:
            items[i] = Judged(event_id=answer.event_id, question_hash=real, produced_at_ms=answer.produced_at_ms,
                              error_stage=MISROUTED, error_field="key",
                              error_reason=f"keyed by {claimed}, but the event's question hash is {real}")
            continue
        answers.append(answer)
        positions.append(i)
    parsed: dict[str, list[Fingerprint]] = {}
    for answer in answers:
        key = question_hash(answer.tenant, answer.question)
        if key not in parsed:
            parsed[key] = list(history(key))
    results, updated = _evaluate(guard, answers, parsed, budget) if answers else ([], {})
    for i, answer, result in zip(positions, answers, results):
        item = _failure_item(answer, result) if isinstance(result, EventFailure) else _verdict_item(result, now_ms)
        items[i] = dataclasses.replace(item, unknown_fields=answer.unknown_fields) if answer.unknown_fields else item
    done: list[Judged] = [item if item is not None else Judged(error_stage="judge", error_field="$",
                                                               error_reason="no result") for item in items]
    return done, updated


def judge_payloads(guard: Guard, payloads: Sequence[bytes], histories: Mapping[str, bytes | None],
                   now_ms: int = 0, claimed_keys: Sequence[str | None] | None = None, *,
                   budget: CpuBudget | None = None) -> JudgedBatch:
    """`judge_events` with histories as the worker's table stores them, bytes in and bytes out: what crosses
    into and out of a judge process (engine/pool.py). `histories` holds the stored history of (at least) every
    question in the batch, keyed by question hash; missing keys mean no history yet (only `.get` is used, so a
    caller may pass a mapping that reads its store lazily)."""
    items, updated = judge_events(guard, payloads, lambda key: load_history(histories.get(key)), now_ms,
                                  claimed_keys, budget=budget)
    return JudgedBatch(items, {key: dump_history(value) for key, value in updated.items()})


def failed_batch(count: int, reason: str, stage: str = "judge", cost_ms: float | None = None,
                 event_id: str | None = None) -> JudgedBatch:
    """What to report when the judge itself could not finish: its process died (`judge`), or was stopped for
    running past the wall-clock limit (`timeout`)."""
    item = Judged(event_id=event_id, error_stage=stage, error_field="$", error_reason=reason, cost_ms=cost_ms)
    return JudgedBatch([item] * count, {})

