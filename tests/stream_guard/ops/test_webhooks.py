"""Alerts as webhook bodies: Alertmanager's v2 API, Slack's incoming webhook, the alert itself."""

from __future__ import annotations

import orjson
import pytest

from stream_guard.engine.alerts import alerts_for_verdict
from stream_guard.ops.alerting import LatencyBudgetMonitor
from stream_guard.ops.webhooks import body, facts
from stream_guard.wire.metrics_summary import LatencyStats

RATE_SHIFT = {
    "version": 1, "alert_id": "a1", "kind": "rate_shift", "severity": "high", "tenant": "acme co",
    "summary": "acme co: flagged rate rose 80% ...", "created_at_ms": 1_700_000_000_000,
    "evidence": {"rule": "rate_shift", "rate": "flagged", "value": 0.18, "baseline": 0.1,
                 "examples": [["ev-1", 1], ["ev-2", 2], ["ev-3", 3], ["ev-4", 4], ["ev-5", 5], ["ev-6", 6]]},
}


def test_alertmanager_gets_string_labels_the_figures_and_the_tenant_page() -> None:
    (alert,) = orjson.loads(body(orjson.dumps(RATE_SHIFT), "alertmanager", "https://guard.example.com/"))
    assert alert["labels"] == {"alertname": "stream_guard_rate_shift", "severity": "high", "kind": "rate_shift",
                               "alert_id": "a1", "service": "stream-guard", "tenant": "acme co"}
    notes = alert["annotations"]
    assert notes["value"] == "0.18" and notes["baseline"] == "0.1"
    assert notes["example_event_ids"] == "ev-1, ev-2, ev-3, ev-4, ev-5"
    assert notes["dashboard"] == alert["generatorURL"] == "https://guard.example.com/monitor/t/acme%20co"
    assert alert["startsAt"] == "2023-11-14T22:13:20Z"
    assert all(isinstance(v, str) for part in ("labels", "annotations") for v in alert[part].values())


def test_slack_gets_a_line_to_read_and_the_figures() -> None:
    message = orjson.loads(body(orjson.dumps(RATE_SHIFT), "slack", "https://guard.example.com"))
    assert message["text"].startswith("[high] acme co: flagged rate rose")
    assert "<https://guard.example.com/monitor/t/acme%20co|dashboard>" in message["text"]
    fields = {f["title"]: f["value"] for f in message["attachments"][0]["fields"]}
    assert fields["Value"] == "0.18" and fields["Baseline"] == "0.1" and fields["Tenant"] == "acme co"


def test_json_is_the_alert_as_it_is() -> None:
    raw = orjson.dumps(RATE_SHIFT)
    assert body(raw, "json") == raw


def test_a_link_the_alert_carries_wins_and_no_link_is_made_up() -> None:
    assert facts({**RATE_SHIFT, "dashboard_url": "https://x/y"}, "https://guard").link == "https://x/y"
    assert facts(RATE_SHIFT).link is None


def test_verdict_and_latency_alerts_carry_their_own_figures() -> None:
    verdict = {"event_id": "e1", "tenant": "t", "question_hash": "q", "routing": "discard", "risk": "critical",
               "hallucination_score": 0.97, "triggered": ["contradiction"]}
    found = facts(alerts_for_verdict(verdict, 5)[0].to_dict())
    assert found.value == 0.97 and found.examples == ("e1",) and found.question == "q"
    latency = LatencyBudgetMonitor(100.0, min_samples=1).check(
        "rag.answers", 0, LatencyStats(50, 120.0, 200.0, 250.0, 260.0, 130.0), 1000, "w")
    assert latency is not None
    found = facts(latency.to_dict())
    assert (found.value, found.baseline) == (250.0, 100.0)


@pytest.mark.parametrize("raw", [b"[1, 2]", b"not json"])
def test_a_record_that_is_not_an_alert_cannot_be_formatted(raw: bytes) -> None:
    with pytest.raises(ValueError):
        body(raw, "slack")


def test_a_drift_alert_reaches_the_on_call_person_with_its_question_baseline_example_and_page() -> None:
    drift = {"compared": 10, "consensus": 8, "delta": 0.67, "threshold": 0.35, "numbers": ["39.99"],
             "consensus_numbers": ["49.99"]}
    [alert] = alerts_for_verdict({
        "event_id": "ev-9", "tenant": "shop", "question_hash": "q1", "question": "What is the price of SKU-441?",
        "risk": "low", "routing": "accept", "produced_at_ms": 1_700_000_000_000,
        "checks": {"drift": {"score": 0.67, "flagged": True, "details": drift}}}, now_ms=1_700_000_000_500)
    (sent,) = orjson.loads(body(alert.to_json(), "alertmanager", "https://guard.example.com"))
    notes = sent["annotations"]
    assert notes["question"] == "What is the price of SKU-441?" and notes["value"] == "0.67"
    assert '"consensus_numbers":["49.99"]' in notes["baseline"] and notes["example_event_ids"] == "ev-9"
    assert notes["dashboard"] == "https://guard.example.com/monitor/t/shop"
    assert '"What is the price of SKU-441?"' in notes["summary"]
