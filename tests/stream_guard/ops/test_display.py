"""One-line renderings for people watching `stream-guard up` / `tail --format pretty`."""

from __future__ import annotations

import pytest

from stream_guard.ops.display import alert_line, dead_letter_line, line_for, metrics_line, verdict_line


def test_accept_line() -> None:
    line = verdict_line({"routing": "accept", "tenant": "support", "event_id": "evt-5", "quality": {"score": 0.92},
                         "risk": "low", "final_risk": "low"})
    assert line.startswith("✔ ACCEPT") and "support" in line and "evt-5" in line and "score 0.92" in line


def test_healed_line_shows_the_patch() -> None:
    line = verdict_line({
        "routing": "healed_accept", "tenant": "support", "event_id": "evt-1", "quality": {"score": 0.62},
        "risk": "critical", "final_risk": "low", "triggered": ["contradiction"],
        "healing": {"strategy": "contradiction_patch", "changes": [
            {"kind": "replace", "before": "30 days", "after": "14 days"},
            {"kind": "confidence", "before": "0.5", "after": "0.65"}]},
    })
    assert line.startswith("✚ HEALED") and "'30 days' → '14 days'" in line
    assert "risk critical→low" in line and "[contradiction]" in line and "0.65" not in line


def test_rewrite_and_discard_lines_name_the_strategy() -> None:
    rewrite = verdict_line({"routing": "healed_accept", "healing": {"strategy": "grounding_rewrite", "changes": []}})
    discard = verdict_line({"routing": "discard", "quality": {}, "healing": {"strategy": "safe_decline"}})
    assert "(grounding_rewrite)" in rewrite
    assert discard.startswith("✖ DISCARD") and "score ?" in discard and "(safe_decline)" in discard


def test_alert_dead_letter_and_metrics_lines() -> None:
    assert alert_line({"severity": "critical", "kind": "critical_risk", "summary": "critical risk in evt-1"}) \
        .startswith("⚠ ALERT critical")
    dlq = dead_letter_line({"stage": "decode", "original_topic": "rag.answers", "original_partition": "0",
                            "original_offset": "7", "field": "$", "reason": "payload is not valid JSON",
                            "value_bytes": 5_000_000})
    assert "rag.answers[0]@7" in dlq and "not valid JSON" in dlq and "5000000 bytes" in dlq
    omitted = dead_letter_line({"stage": "decode", "field": "$", "reason": "too big", "value_omitted": "9000000"})
    assert "9000000 bytes, not carried" in omitted
    metrics = metrics_line({"topic": "q", "partition": 2, "lag": 0,
                            "interval": {"end_to_end_ms": {"count": 10}},
                            "recent": {"end_to_end_ms": {"p50": 12.34, "p99": 40.0}, "processing_ms": {}}})
    assert "q[2]" in metrics and "p50 12.3" in metrics and "proc p99 -" in metrics and "lag 0" in metrics


def test_dispatch() -> None:
    assert line_for("alerts", {"severity": "warning", "kind": "drift", "summary": "s"}).startswith("⚠")
    with pytest.raises(ValueError):
        line_for("nope", {})
