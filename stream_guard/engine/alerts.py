"""Which alerts a judged event raises: what pages a person about one answer.

Pure. The alert record and its deterministic id are wire/alert.py's; dedupe and the per-partition latency
budget, the streaming service's bookkeeping, are ops/alerting.py's.

Kinds:
- critical_risk: the checks judged the answer critical before healing (a contradiction, a fabrication).
- discard: nothing deliverable; the user got the decline message.
- drift: the answer moved away from what this question was answered with before.
- latency_budget: a partition's recent end-to-end p99 passed the configured budget (ops/alerting.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from stream_guard.wire.alert import CRITICAL, HIGH, WARNING, Alert, alert_id

if TYPE_CHECKING:
    from stream_guard.wire.verdict import Verdict

_MAX_STATEMENTS = 3
_MAX_CHANGES = 5


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
        # Why the answer was not delivered as written (null when it was): every fallback and repair says why.
        "reason": verdict.get("reason"),
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


# --- latency budget ---------------------------------------------------------------------------------------


