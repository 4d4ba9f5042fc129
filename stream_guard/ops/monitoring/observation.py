"""What one verdict adds to its tenant's monitoring counts: the only place that reads a verdict for them.

`observe(verdict)` is the one function that knows the verdict's shape. It tolerates any field missing or
of the wrong type (that field then counts as zero), so a change to the verdict's contents changes what is
counted, never whether the monitor runs. Fields read:

    tenant, event_id, question_hash, produced_at_ms, routing, flagged, latency_ms,
    checks.faithfulness.details.claims / .grounded      -> claims checked / claims refused (not grounded)
    checks.citations.details.total / .mismatched        -> citations checked / mismatched
        (without details: mismatched = len(findings), total = mismatched / score)
    checks.drift.flagged                                -> drift detections

The observation travels as a compact JSON record (`to_record`), re-keyed by tenant, to the worker that
keeps that tenant's windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from stream_guard.ops.monitoring.windows import DayCounts, single

# Verdict routing -> the count it adds to.
ROUTING_COUNTS = {"accept": "accept", "healed_accept": "healed", "fallback": "fallback", "discard": "discard"}


def _path(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return None if number is None or not 0 <= number < 2**53 else int(number)


def _citations(checks: Any) -> tuple[int, int]:
    citations = _path(checks, "citations")
    if not isinstance(citations, Mapping):
        return 0, 0
    total = _count(_path(citations, "details", "total"))
    mismatched = _count(_path(citations, "details", "mismatched"))
    if mismatched is None:
        findings = citations.get("findings")
        mismatched = len(findings) if isinstance(findings, list) else 0
    if total is None:
        score = citations.get("score")
        ratio = score if isinstance(score, (int, float)) and not isinstance(score, bool) and score > 0 else None
        total = round(mismatched / ratio) if ratio else mismatched
    return max(total, mismatched), mismatched


def _claims(checks: Any) -> tuple[int, int]:
    claims = _count(_path(checks, "faithfulness", "details", "claims")) or 0
    grounded = _count(_path(checks, "faithfulness", "details", "grounded"))
    refused = claims - min(grounded, claims) if grounded is not None else 0
    return claims, refused


def _text(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


@dataclass(frozen=True)
class Observation:
    tenant: str
    event_id: str
    at_ms: int | None  # event time: produced_at, else the Kafka timestamp; None when neither is known
    question_hash: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)
    latency_ms: float | None = None

    def day_counts(self) -> DayCounts:
        drifted = self.question_hash if self.counts.get("drift") else None
        return single(self.counts, self.event_id, self.latency_ms, drifted)

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "answer", "tenant": self.tenant, "event_id": self.event_id,
                               "at_ms": self.at_ms, "question_hash": self.question_hash,
                               "counts": {k: v for k, v in self.counts.items() if v}}
        if self.latency_ms is not None:
            out["latency_ms"] = self.latency_ms
        return out

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "Observation":
        counts = record.get("counts")
        at = record.get("at_ms")
        return cls(
            tenant=_text(record.get("tenant"), "default"),
            event_id=_text(record.get("event_id"), ""),
            at_ms=at if isinstance(at, int) and not isinstance(at, bool) else None,
            question_hash=_text(record.get("question_hash"), ""),
            counts={str(k): c for k, v in counts.items() if (c := _count(v))} if isinstance(counts, Mapping) else {},
            latency_ms=_number(record.get("latency_ms")),
        )


def observe(verdict: Mapping[str, Any], fallback_at_ms: int | None = None) -> Observation:
    """The counts one verdict (its `to_dict()` form) adds to its tenant's day."""
    checks = verdict.get("checks")
    claims, refused = _claims(checks)
    citations, mismatched = _citations(checks)
    counts = {"answers": 1, "claims": claims, "refused": refused, "citations": citations, "mismatched": mismatched,
              "flagged": int(verdict.get("flagged") is True), "drift": int(_path(checks, "drift", "flagged") is True)}
    routed = ROUTING_COUNTS.get(str(verdict.get("routing")))
    if routed is not None:
        counts[routed] = 1
    produced = _count(verdict.get("produced_at_ms"))
    return Observation(
        tenant=_text(verdict.get("tenant"), "default"),
        event_id=_text(verdict.get("event_id"), ""),
        at_ms=produced if produced is not None else fallback_at_ms,
        question_hash=_text(verdict.get("question_hash"), ""),
        counts={k: v for k, v in counts.items() if v},
        latency_ms=_number(verdict.get("latency_ms")),
    )
