"""Judge a batch of raw payloads: bytes in, bytes out, for the streaming service.

Pure (given a Guard): what the worker's judge process or thread runs. Everything that crosses into and out
of it is bytes (payloads, histories as stored in the table, verdicts as sent), so a process boundary costs
a memcpy rather than pickling nested dicts, and the worker's event loop does no JSON work of its own.

One result per payload, in order: a verdict with its alerts, or the reason it could not be judged
(`decode`: the payload breaks the event contract; `judge`: the core failed on it; `misrouted`: the caller
said which question the payload was keyed by, and it is another one). A core failure on one event never
costs its batch-mates their verdicts: the batch is retried one event at a time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Mapping, Sequence

import orjson

from stream_guard.alerts import Alert, alerts_for_verdict
from stream_guard.events import AnswerEvent, EventError, decode_event
from stream_guard.history import Fingerprint
from stream_guard.pipeline import EventFailure, Guard
from stream_guard.text import question_hash
from stream_guard.verdict import Verdict

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
    error_stage: str | None = None
    error_field: str | None = None
    error_reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.verdict is not None


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
    body = verdict.to_dict()
    return Judged(
        event_id=verdict.event_id,
        question_hash=verdict.question_hash,
        routing=verdict.routing,
        verdict=orjson.dumps(body),
        alerts=tuple(alerts_for_verdict(body, now_ms)),
        produced_at_ms=verdict.produced_at_ms,
    )


def _evaluate(guard: Guard, answers: list[AnswerEvent], histories: dict[str, list[Fingerprint]]
              ) -> tuple[list[Verdict | EventFailure], dict[str, list[Fingerprint]]]:
    try:
        results, updated = guard.evaluate_batch(answers, histories)
        return list(results), {k: list(v) for k, v in updated.items()}
    except Exception:  # outside the core's own per-event guard (NER over the batch, say)
        log.exception("batch of %d failed; judging one event at a time", len(answers))
    current = dict(histories)
    out: list[Verdict | EventFailure] = []
    changed: dict[str, list[Fingerprint]] = {}
    for answer in answers:
        key = question_hash(answer.tenant, answer.question)
        try:
            (result,), one = guard.evaluate_batch([answer], {key: current.get(key, [])})
        except Exception as exc:
            out.append(EventFailure(answer.event_id, f"{type(exc).__name__}: {exc}"))
            continue
        out.append(result)
        for k, v in one.items():
            current[k] = changed[k] = list(v)
    return out, changed


MISROUTED = "misrouted"


def judge_payloads(guard: Guard, payloads: Sequence[bytes], histories: Mapping[str, bytes | None],
                   now_ms: int = 0, claimed_keys: Sequence[str | None] | None = None) -> JudgedBatch:
    """Decode, judge and serialize a batch. `histories` holds the stored history of (at least) every
    question in the batch, keyed by question hash; missing keys mean no history yet.

    `claimed_keys[i]`, when given, is the question hash payload i was keyed by, and so the only history
    the caller read for it. A payload whose own question hash differs is not judged (it would have drifted
    against another question's history): it comes back `misrouted`, with its real hash, for the caller to
    route properly."""
    items: list[Judged | None] = [None] * len(payloads)
    answers: list[AnswerEvent] = []
    positions: list[int] = []
    for i, raw in enumerate(payloads):
        try:
            answer = decode_event(raw, guard.config.limits)
        except EventError as exc:
            items[i] = Judged(error_stage="decode", error_field=exc.field, error_reason=exc.reason)
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
            parsed[key] = load_history(histories.get(key))
    results, updated = _evaluate(guard, answers, parsed) if answers else ([], {})
    for i, answer, result in zip(positions, answers, results):
        if isinstance(result, EventFailure):
            items[i] = Judged(event_id=answer.event_id, question_hash=question_hash(answer.tenant, answer.question),
                              produced_at_ms=answer.produced_at_ms, error_stage="judge", error_field="$",
                              error_reason=result.error)
        else:
            items[i] = _verdict_item(result, now_ms)
    done: list[Judged] = [item if item is not None else Judged(error_stage="judge", error_field="$",
                                                               error_reason="no result") for item in items]
    return JudgedBatch(done, {key: dump_history(value) for key, value in updated.items()})


def failed_batch(count: int, reason: str) -> JudgedBatch:
    """What to report when the judge itself could not run (its process died on every retry)."""
    return JudgedBatch([Judged(error_stage="judge", error_field="$", error_reason=reason)] * count, {})

