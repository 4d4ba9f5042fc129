"""Which alerts a judged event raises: what pages a person about one answer.

Pure. The alert record and its deterministic id are wire/alert.py's; dedupe and the per-partition latency
budget, the streaming service's bookkeeping, are ops/alerting.py's.

Kinds:
- critical_risk: the checks judged the answer critical before healing (a contradiction, a fabrication).
- discard: nothing deliverable; the user got the decline message.
- fabrication: a high-risk answer named entities or cited chunks that are not in its context (per tenant).
- drift: answers to a question moved away from what it was answered with before (per question).
- latency_budget: a partition's recent end-to-end p99 passed the configured budget (ops/alerting.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from stream_guard.wire.alert import CRITICAL, HIGH, WARNING, Alert, alert_id, question_excerpt

if TYPE_CHECKING:
    from stream_guard.wire.verdict import Verdict

_MAX_STATEMENTS = 3
# Grouped alerts (drift per question, fabrication per tenant): one an hour each.
GROUP_WINDOW_MS = 3_600_000
_MAX_CHANGES = 5

# Every part of a verdict the alerts below read. A judged verdict (a Struct) that raises alerts is converted to
# these parts alone, not whole: its other checks' details are most of a verdict, and converting them was half
# the CPU of the alerts of a support-desk event (tests/stream_guard/engine/test_alerts.py keeps this list
# complete).
_READ = ("event_id", "tenant", "question_hash", "question", "routing", "risk", "final_risk", "hallucination_score",
         "hallucination_type", "triggered", "reason", "hallucinated_statements", "healing", "produced_at_ms")
_READ_CHECKS = ("drift", "entities", "citations")


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


def _fabrications(verdict: Mapping[str, Any]) -> list[str]:
    """What the answer made up, by check: named entities the context does not have, citations of no chunk."""
    checks = verdict.get("checks") or {}
    entities, citations = checks.get("entities") or {}, checks.get("citations") or {}
    out = ["entities"] if entities.get("flagged") else []
    if citations.get("flagged") and (citations.get("details") or {}).get("fabricated"):
        out.append("citations")
    return out


def _window(verdict: Mapping[str, Any], now_ms: int) -> int:
    """The hour an alert is grouped in: from the event's produced_at, so a redelivered or replayed event falls
    in the same hour and its alert keeps its id (the dedupe suppresses it); from `now_ms` without one."""
    at = verdict.get("produced_at_ms")
    return int(at if isinstance(at, int) else now_ms) // GROUP_WINDOW_MS


def _quoted(question: str | None) -> str:
    return f' to "{question}"' if question else ""


def alerts_for_verdict(verdict: "Verdict | Mapping[str, Any]", now_ms: int = 0) -> list[Alert]:
    """The alerts one verdict (or its `to_dict()` form) raises, most severe first; empty for a clean answer.

    critical_risk and discard are per answer. drift is grouped per question, fabrication per tenant and what
    was made up: one alert an hour (GROUP_WINDOW_MS) each, whose id the streaming service's dedupe suppresses
    for the rest of the hour, so a question that keeps drifting pages once an hour, not once an answer."""
    if not isinstance(verdict, Mapping):
        if (verdict.risk not in (CRITICAL, HIGH) and verdict.routing != "discard"
                and not verdict.checks.drift.flagged):
            return []  # the common case, without turning the verdict into a dict
        verdict = verdict.to_partial_dict(_READ, _READ_CHECKS)
    event_id = str(verdict.get("event_id", ""))
    tenant = str(verdict.get("tenant", "default"))
    qhash = str(verdict.get("question_hash", ""))
    question = question_excerpt(str(verdict.get("question") or "")) or None
    routing = str(verdict.get("routing", ""))
    risk = str(verdict.get("risk", ""))
    common = {"tenant": tenant, "question_hash": qhash, "question": question, "event_id": event_id,
              "example_event_ids": [event_id], "created_at_ms": now_ms}
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
            summary=f"critical risk ({triggered}) in {tenant} answer {event_id}{_quoted(question)}; routed {routing}",
            evidence={**base, "statements": _statements(verdict), "healing": _healing(verdict)},
            **common,
        ))
    if routing == "discard":
        out.append(Alert(
            alert_id=alert_id("discard", tenant, event_id),
            kind="discard",
            severity=HIGH,
            summary=f"{tenant} answer {event_id}{_quoted(question)} discarded: the user got the decline message",
            evidence={**base, "statements": _statements(verdict), "healing": _healing(verdict)},
            **common,
        ))
    if risk == HIGH:
        for made_up in _fabrications(verdict):
            what = "named entities the context does not have" if made_up == "entities" else "citations of no chunk"
            out.append(Alert(
                alert_id=alert_id("fabrication", tenant, made_up, _window(verdict, now_ms)),
                kind="fabrication",
                severity=HIGH,
                summary=f"{tenant}: high-risk answers with {what}, e.g. answer {event_id}{_quoted(question)}, "
                        f"routed {routing} (one alert an hour per tenant)",
                evidence={**base, "fabricated": made_up, "statements": _statements(verdict),
                          "healing": _healing(verdict)},
                **common,
            ))
    drift = _drift(verdict)
    if drift is not None:
        details = dict(drift.get("details") or {})
        baseline = {k: details[k] for k in ("compared", "consensus", "consensus_numbers", "threshold",
                                            "similarity_floor") if k in details}
        observed = {k: details[k] for k in ("delta", "mean_similarity", "numbers", "reason") if k in details}
        numbers = (f"; numbers {details.get('consensus_numbers')} before, {details.get('numbers')} now"
                   if details.get("numbers") != details.get("consensus_numbers") else "")
        out.append(Alert(
            alert_id=alert_id("drift", tenant, qhash, _window(verdict, now_ms)),
            kind="drift",
            severity=WARNING,
            summary=f"{tenant}: answers{_quoted(question)} drifted from the usual answer: distance "
                    f"{float(drift.get('score', 0.0)):.2f} (threshold {details.get('threshold', '?')}) from the "
                    f"consensus of {details.get('consensus', '?')} of the last {details.get('compared', '?')} "
                    f"answers{numbers}; e.g. answer {event_id} (one alert an hour per question)",
            evidence={**base, "value": drift.get("score"), "drift": {"score": drift.get("score"), "details": details},
                      "baseline": baseline, "observed": observed},
            **common,
        ))
    return out


# --- dedupe -----------------------------------------------------------------------------------------------


# --- latency budget ---------------------------------------------------------------------------------------


