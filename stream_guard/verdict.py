"""The verdict: one per input event, what to deliver and everything the checks found and changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import orjson

from stream_guard.events import provenance_fields

VERDICT_VERSION = 1


@dataclass(frozen=True)
class Verdict:
    event_id: str
    tenant: str
    question_hash: str
    flagged: bool
    hallucination_score: float
    risk: str
    routing: str
    delivered_answer: str
    original_answer: str
    hallucination_type: str
    hallucinated_statements: tuple[Mapping[str, Any], ...]
    verified_statements: tuple[str, ...]
    checks: Mapping[str, Any]
    healing: Mapping[str, Any]
    quality: Mapping[str, Any]
    latency_ms: float
    question: str = ""
    model: str | None = None
    produced_at_ms: int | None = None
    label: int | None = None
    final_risk: str | None = None
    triggered: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.delivered_answer != self.original_answer

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": VERDICT_VERSION,
            "event_id": self.event_id,
            "tenant": self.tenant,
            "question_hash": self.question_hash,
            "question": self.question,
            "flagged": self.flagged,
            "hallucination_score": round(self.hallucination_score, 4),
            "risk": self.risk,
            "final_risk": self.final_risk or self.risk,
            "routing": self.routing,
            "hallucination_type": self.hallucination_type,
            "triggered": list(self.triggered),
            "delivered_answer": self.delivered_answer,
            "original_answer": self.original_answer,
            "hallucinated_statements": [dict(s) for s in self.hallucinated_statements],
            "verified_statements": list(self.verified_statements),
            "checks": dict(self.checks),
            "healing": dict(self.healing),
            "quality": dict(self.quality),
            "latency_ms": round(self.latency_ms, 3),
        }
        out.update(provenance_fields(self.model, self.produced_at_ms, self.label, self.metadata))
        return out

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())
