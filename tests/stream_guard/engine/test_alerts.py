"""Alerts: which verdicts page, deterministic ids."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest

import stream_guard
from stream_guard.config.detector import DetectorConfig
from stream_guard.engine import alerts as alerts_module
from stream_guard.engine.alerts import alerts_for_verdict
from stream_guard.engine.pipeline import Guard
from stream_guard.wire.alert import alert_id
from stream_guard.wire.events import EventError, decode_event
from stream_guard.wire.verdict import Verdict


def verdict(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "evt-1", "tenant": "support", "question_hash": "abc123", "risk": "low", "final_risk": "low",
        "routing": "accept", "hallucination_score": 0.1, "hallucination_type": "none", "triggered": [],
        "hallucinated_statements": [], "checks": {"drift": {"score": 0.0, "flagged": False, "details": {}}},
        "healing": {"strategy": "none", "applied": False, "changes": []},
    }
    base.update(overrides)
    return base


def test_clean_verdict_raises_nothing() -> None:
    assert alerts_for_verdict(verdict()) == []


def test_contradiction_pages_critical_with_evidence() -> None:
    statements = [{"type": "contradiction", "statement": f"s{i}", "evidence": "e", "answer_value": "30 days",
                   "source_value": "14 days", "kind": "numeric"} for i in range(5)]
    changes = [{"kind": "replace", "before": "30 days", "after": "14 days", "description": "d"}]
    [alert] = alerts_for_verdict(verdict(
        risk="critical", routing="healed_accept", triggered=["contradiction"], hallucinated_statements=statements,
        healing={"strategy": "contradiction_patch", "applied": True, "changes": changes}), now_ms=99)
    assert alert.kind == "critical_risk" and alert.severity == "critical"
    assert (alert.tenant, alert.question_hash, alert.event_id, alert.created_at_ms) == ("support", "abc123", "evt-1", 99)
    assert "contradiction" in alert.summary and "evt-1" in alert.summary
    assert len(alert.evidence["statements"]) == 3
    assert alert.evidence["statements"][0]["source_value"] == "14 days"
    assert alert.evidence["healing"]["changes"] == changes
    body = orjson.loads(alert.to_json())
    for key in ("alert_id", "kind", "severity", "tenant", "question_hash", "event_id", "summary", "evidence"):
        assert key in body


def test_discard_and_drift_each_page_once_most_severe_first() -> None:
    alerts = alerts_for_verdict(verdict(
        risk="critical", routing="discard",
        checks={"drift": {"score": 0.64, "flagged": True, "details": {"history": 4}}}))
    assert [a.kind for a in alerts] == ["critical_risk", "discard", "drift"]
    assert [a.severity for a in alerts] == ["critical", "high", "warning"]
    assert alerts[2].evidence["drift"] == {"score": 0.64, "details": {"history": 4}}
    assert len({a.alert_id for a in alerts}) == 3


def test_alert_ids_depend_on_the_cause_not_the_time() -> None:
    v = verdict(risk="critical")
    first = alerts_for_verdict(v, now_ms=1)[0]
    replay = alerts_for_verdict(v, now_ms=10_000)[0]
    other_event = alerts_for_verdict(verdict(risk="critical", event_id="evt-2"))[0]
    other_tenant = alerts_for_verdict(verdict(risk="critical", tenant="billing"))[0]
    assert first.alert_id == replay.alert_id == alert_id("critical_risk", "support", "evt-1")
    assert len({first.alert_id, other_event.alert_id, other_tenant.alert_id}) == 3
    assert first.key == "abc123"




HOUR_MS = 3_600_000
DRIFT_DETAILS = {"compared": 10, "consensus": 8, "delta": 0.67, "mean_similarity": 0.4, "threshold": 0.35,
                 "similarity_floor": 0.65, "numbers": ["39.99"], "consensus_numbers": ["49.99"],
                 "reason": "distance above threshold"}


def drifted(event_id: str, at: int, **overrides: Any) -> dict[str, Any]:
    return verdict(**{"event_id": event_id, "question": "What is the price of SKU-441?", "produced_at_ms": at,
                      "checks": {"drift": {"score": 0.67, "flagged": True, "details": DRIFT_DETAILS}}, **overrides})


def test_a_drift_alert_names_the_question_its_baseline_and_an_example_and_pages_once_an_hour_per_question():
    [alert] = alerts_for_verdict(drifted("evt-1", 5 * HOUR_MS + 10))
    assert alert.question == "What is the price of SKU-441?" and alert.example_event_ids == ["evt-1"]
    assert '"What is the price of SKU-441?"' in alert.summary and "0.67" in alert.summary
    assert "consensus of 8 of the last 10 answers" in alert.summary and "['49.99'] before" in alert.summary
    assert alert.evidence["baseline"] == {"compared": 10, "consensus": 8, "consensus_numbers": ["49.99"],
                                          "threshold": 0.35, "similarity_floor": 0.65}
    assert alert.evidence["observed"]["numbers"] == ["39.99"]
    same_hour = alerts_for_verdict(drifted("evt-2", 6 * HOUR_MS - 1))[0]
    next_hour = alerts_for_verdict(drifted("evt-3", 6 * HOUR_MS))[0]
    other_question = alerts_for_verdict(drifted("evt-4", 5 * HOUR_MS, question_hash="def456"))[0]
    # One id per question and hour: the dedupe sends the first and suppresses the rest of the hour.
    assert same_hour.alert_id == alert.alert_id
    assert len({alert.alert_id, next_hour.alert_id, other_question.alert_id}) == 3


def test_high_risk_fabrications_alert_by_tenant_once_an_hour():
    def fabricated(event_id: str, tenant: str, check: str, question_hash: str = "abc123") -> dict[str, Any]:
        checks = {"drift": {"score": 0.0, "flagged": False, "details": {}},
                  "entities": {"flagged": check == "entities", "details": {}},
                  "citations": {"flagged": check == "citations", "details": {"fabricated": int(check == "citations")}}}
        return verdict(event_id=event_id, tenant=tenant, risk="high", routing="healed_accept", checks=checks,
                       question="Who signed the contract?", question_hash=question_hash, produced_at_ms=HOUR_MS)

    [entities] = alerts_for_verdict(fabricated("e1", "support", "entities"))
    assert (entities.kind, entities.severity, entities.tenant) == ("fabrication", "high", "support")
    assert entities.evidence["fabricated"] == "entities" and "named entities" in entities.summary
    assert "e1" in entities.summary and '"Who signed the contract?"' in entities.summary
    [citations] = alerts_for_verdict(fabricated("e2", "support", "citations"))
    assert citations.evidence["fabricated"] == "citations" and "citations of no chunk" in citations.summary
    same_tenant = alerts_for_verdict(fabricated("e3", "support", "entities", question_hash="other"))[0]
    other_tenant = alerts_for_verdict(fabricated("e4", "billing", "entities"))[0]
    assert same_tenant.alert_id == entities.alert_id  # grouped by tenant and what was made up, not by question
    assert len({entities.alert_id, citations.alert_id, other_tenant.alert_id}) == 3
    # A medium-risk answer, or a high-risk one for another reason, does not page.
    assert alerts_for_verdict({**fabricated("e5", "support", "entities"), "risk": "medium"}) == []
    assert alerts_for_verdict(fabricated("e6", "support", "none")) == []


def test_a_long_question_is_cut_in_the_alert():
    [alert] = alerts_for_verdict(drifted("evt-1", 0, question="Why " * 200))
    assert alert.question is not None and len(alert.question) == 200 and alert.question.endswith("…")
    orjson.loads(alert.to_json())


def test_alerts_carry_why_the_answer_was_not_delivered_as_written() -> None:
    reason = {"code": "hallucination", "detail": "flagged by contradiction (hallucination score 0.97 >= 0.45); "
                                                 "no repair passed, the safe decline was served"}
    alerts = alerts_for_verdict(verdict(risk="critical", routing="discard", reason=reason))
    assert [a.kind for a in alerts] == ["critical_risk", "discard"]
    assert all(a.evidence["reason"] == reason for a in alerts)


def test_a_judged_verdict_gives_its_reason_to_its_alerts() -> None:
    from stream_guard.wire.events import AnswerEvent

    guard = Guard(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=False))
    judged, _ = guard.evaluate(AnswerEvent("c1", "The Pro plan costs $10 per month.", "Cost?",
                                           ("The Pro plan costs $120 per year, billed annually.",)))
    [alert] = [a for a in alerts_for_verdict(judged) if a.kind == "critical_risk"]
    assert judged.reason is not None and alert.evidence["reason"] == {"code": judged.reason.code,
                                                                      "detail": judged.reason.detail}


class _Reads(dict):  # type: ignore[type-arg]
    """A verdict's to_dict() that notes which of its keys (and which checks) are read."""

    def __init__(self, value: dict[str, Any], seen: set[str], prefix: str = "") -> None:
        super().__init__(value)
        self.seen, self.prefix = seen, prefix

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.add(self.prefix + key)
        value = super().get(key, default)
        if key == "checks" and not self.prefix and isinstance(value, dict):
            return _Reads(value, self.seen, "checks.")
        return value

    def __getitem__(self, key: str) -> Any:
        self.seen.add(self.prefix + key)
        return super().__getitem__(key)


def _judged_verdicts() -> list[Any]:
    """The demo's events judged three times over on one history: they page, and drift on the third round."""
    guard = Guard(DetectorConfig(ner="regex", log_flagged=False))
    lines = (Path(stream_guard.__file__).parent / "samples" / "demo.jsonl").read_bytes().splitlines()
    events = []
    for line in lines:  # the demo shows two broken events too
        with contextlib.suppress(EventError):
            events.append(decode_event(line, guard.config.limits))
    verdicts: list[Any] = []
    histories: dict[str, list[Any]] = {}
    for round_ in range(3):
        renamed = [dataclasses.replace(e, event_id=f"{e.event_id}#{round_}") for e in events]
        results, updated = guard.evaluate_batch(renamed, histories)
        histories.update(updated)
        verdicts += results
    return verdicts


def test_a_judged_verdict_raises_the_alerts_its_dict_raises_converting_only_what_they_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = _judged_verdicts()
    seen: set[str] = set()
    expected = [alerts_for_verdict(_Reads(v.to_dict(), seen), now_ms=7) for v in verdicts]
    kinds = {a.kind for found in expected for a in found}
    assert {"critical_risk", "drift"} <= kinds  # the demo pages, and drifts on its third round
    read = set(alerts_module._READ) | {"checks"} | {f"checks.{name}" for name in alerts_module._READ_CHECKS}
    assert seen <= read, seen - read
    monkeypatch.setattr(Verdict, "to_dict", lambda self: pytest.fail("the whole verdict was converted"))
    assert [alerts_for_verdict(v, now_ms=7) for v in verdicts] == expected
