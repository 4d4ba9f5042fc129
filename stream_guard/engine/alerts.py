"""Alerts: what pages a person, with deterministic ids so that one cause pages once.

Pure. An alert's id is a hash of its kind and its cause (the event for verdict alerts, the partition and
the start of the breach for latency alerts), never of the time it was computed, so a redelivered or
replayed event produces the same id and the streaming service's dedupe table (agents/) suppresses it.

Kinds:
- critical_risk: the checks judged the answer critical before healing (a contradiction, a fabrication).
- discard: nothing deliverable; the user got the decline message.
- drift: the answer moved away from what this question was answered with before.
- latency_budget: a partition's recent end-to-end p99 passed the configured budget.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Iterable, Literal, Mapping

import msgspec
import orjson
from msgspec import Meta

if TYPE_CHECKING:
    from stream_guard.wire.verdict import Verdict

ALERT_VERSION = 1
CRITICAL, HIGH, WARNING = "critical", "high", "warning"
_MAX_STATEMENTS = 3
_MAX_CHANGES = 5


Severity = Literal["critical", "high", "warning"]


class Alert(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One alert, as it goes to the alerts topic (schemas/alert.v1.schema.json). `evidence` depends on the
    kind: verdict alerts carry the scores, statements and healing; latency and monitoring alerts their
    windows and figures (README)."""

    version: int = ALERT_VERSION
    alert_id: str
    kind: str
    severity: Severity
    tenant: str | None = None
    question_hash: str | None = None
    event_id: str | None = None
    summary: str
    evidence: dict[str, Any]
    created_at_ms: Annotated[int, Meta(ge=0, description="epoch milliseconds (UTC)")] = 0

    @property
    def key(self) -> str:
        """Topic key: alerts about one question stay ordered; latency alerts are keyed by their own id."""
        return self.question_hash or self.alert_id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def to_json(self) -> bytes:
        return _ENCODER.encode(self)


_ENCODER = msgspec.json.Encoder()


def alert_id(kind: str, *cause: object) -> str:
    """Deterministic id of one cause of one kind of alert."""
    text = "\x1f".join([kind, *(str(part) for part in cause)])
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _statements(verdict: Mapping[str, Any]) -> list[dict[str, Any]]:
    keep = ("type", "kind", "statement", "evidence", "answer_value", "source_value")
    return [
        {k: s[k] for k in keep if k in s}
        for s in list(verdict.get("hallucinated_statements") or [])[:_MAX_STATEMENTS]
        if isinstance(s, Mapping)
    ]


def _healing(verdict: Mapping[str, Any]) -> dict[str, Any]:
    healing = verdict.get("healing") or {}
    return {
        "strategy": healing.get("strategy", "none"),
        "applied": bool(healing.get("applied", False)),
        "changes": list(healing.get("changes") or [])[:_MAX_CHANGES],
    }


def _drift(verdict: Mapping[str, Any]) -> Mapping[str, Any] | None:
    checks = verdict.get("checks") or {}
    drift = checks.get("drift") if isinstance(checks, Mapping) else None
    return drift if isinstance(drift, Mapping) and drift.get("flagged") else None


def alerts_for_verdict(verdict: "Verdict | Mapping[str, Any]", now_ms: int = 0) -> list[Alert]:
    """The alerts one verdict (or its `to_dict()` form) raises, most severe first; empty for a clean answer."""
    if not isinstance(verdict, Mapping):
        if verdict.risk != CRITICAL and verdict.routing != "discard" and not verdict.checks.drift.flagged:
            return []  # the common case, without turning the verdict into a dict
        verdict = verdict.to_dict()
    event_id = str(verdict.get("event_id", ""))
    tenant = str(verdict.get("tenant", "default"))
    qhash = str(verdict.get("question_hash", ""))
    routing = str(verdict.get("routing", ""))
    risk = str(verdict.get("risk", ""))
    common = {"tenant": tenant, "question_hash": qhash, "event_id": event_id, "created_at_ms": now_ms}
    base = {
        "risk": risk,
        "final_risk": verdict.get("final_risk", risk),
        "routing": routing,
        "hallucination_score": verdict.get("hallucination_score"),
        "hallucination_type": verdict.get("hallucination_type"),
        "triggered": list(verdict.get("triggered") or []),
    }
    out: list[Alert] = []
    if risk == CRITICAL:
        triggered = ", ".join(base["triggered"]) or "checks"
        out.append(Alert(
            alert_id=alert_id("critical_risk", tenant, event_id),
            kind="critical_risk",
            severity=CRITICAL,
            summary=f"critical risk ({triggered}) in {tenant} answer {event_id}; routed {routing}",
            evidence={**base, "statements": _statements(verdict), "healing": _healing(verdict)},
            **common,
        ))
    if routing == "discard":
        out.append(Alert(
            alert_id=alert_id("discard", tenant, event_id),
            kind="discard",
            severity=HIGH,
            summary=f"{tenant} answer {event_id} discarded: the user got the decline message",
            evidence={**base, "statements": _statements(verdict), "healing": _healing(verdict)},
            **common,
        ))
    drift = _drift(verdict)
    if drift is not None:
        out.append(Alert(
            alert_id=alert_id("drift", tenant, event_id),
            kind="drift",
            severity=WARNING,
            summary=f"{tenant} answer {event_id} drifted from earlier answers to the same question "
                    f"(distance {float(drift.get('score', 0.0)):.2f})",
            evidence={**base, "drift": {"score": drift.get("score"), "details": dict(drift.get("details") or {})}},
            **common,
        ))
    return out


# --- dedupe -----------------------------------------------------------------------------------------------


def sent_record(alert: Alert, sent_at_ms: int) -> bytes:
    """What the dedupe table keeps per alert_id: when it was sent and for which event."""
    return orjson.dumps({"sent_at_ms": sent_at_ms, "event_id": alert.event_id, "kind": alert.kind})


def already_sent(record: bytes | None, now_ms: int, ttl_ms: float) -> bool:
    """True if this alert_id was sent within the TTL; an old or unreadable record lets it through again."""
    if not record:
        return False
    try:
        sent_at = int(orjson.loads(record)["sent_at_ms"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return False
    return now_ms - sent_at < ttl_ms


def expired(records: Iterable[tuple[bytes, bytes]], now_ms: int, ttl_ms: float) -> list[bytes]:
    """Keys of dedupe records (key, record) that no longer suppress anything: past the TTL, or unreadable."""
    return [key for key, record in records if not already_sent(record, now_ms, ttl_ms)]


# --- latency budget ---------------------------------------------------------------------------------------


@dataclass
class LatencyBudgetMonitor:
    """Fires once when a partition's p99 crosses the budget; re-arms when it is back under `rearm_ratio`×budget.

    The hysteresis keeps a p99 hovering at the budget from paging every interval. The breach's start time is
    part of the alert id, so each breach is one alert.
    """

    budget_ms: float
    min_samples: int = 20
    rearm_ratio: float = 0.8
    breaches: dict[tuple[str, int], int] = field(default_factory=dict)

    def check(
        self, topic: str, partition: int, p99_ms: float | None, samples: int, now_ms: int, worker: str = ""
    ) -> Alert | None:
        key = (topic, partition)
        if p99_ms is None or samples < self.min_samples:
            return None
        if key in self.breaches:
            if p99_ms <= self.budget_ms * self.rearm_ratio:
                del self.breaches[key]
            return None
        if p99_ms <= self.budget_ms:
            return None
        self.breaches[key] = now_ms
        return Alert(
            alert_id=alert_id("latency_budget", topic, partition, now_ms),
            kind="latency_budget",
            severity=WARNING,
            summary=f"{topic}[{partition}] end-to-end p99 {p99_ms:.1f} ms is over the {self.budget_ms:g} ms budget",
            evidence={"topic": topic, "partition": partition, "p99_ms": round(p99_ms, 3),
                      "budget_ms": self.budget_ms, "samples": samples, "worker": worker},
            created_at_ms=now_ms,
        )

    def forget(self, keep: set[tuple[str, int]]) -> None:
        for key in [k for k in self.breaches if k not in keep]:
            del self.breaches[key]
