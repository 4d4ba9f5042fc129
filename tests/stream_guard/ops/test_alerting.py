"""Alert bookkeeping: dedupe records and latency-budget episodes."""

from __future__ import annotations

from stream_guard.ops.alerting import LatencyBudgetMonitor, already_sent, expired, sent_record
from stream_guard.wire.alert import Alert, alert_id
from stream_guard.wire.metrics_summary import LatencyStats


def critical_alert() -> Alert:
    return Alert(alert_id=alert_id("critical_risk", "evt-1"), kind="critical_risk", severity="critical",
                 event_id="evt-1", summary="critical", evidence={})


def test_dedupe_record_round_trip_and_ttl() -> None:
    alert = critical_alert()
    record = sent_record(alert, sent_at_ms=1_000)
    assert already_sent(record, now_ms=2_000, ttl_ms=10_000)
    assert not already_sent(record, now_ms=20_000, ttl_ms=10_000)  # expired: page again
    assert not already_sent(None, now_ms=0, ttl_ms=10_000)
    assert not already_sent(b"not json", now_ms=0, ttl_ms=10_000)
    assert not already_sent(b'{"other": 1}', now_ms=0, ttl_ms=10_000)


def test_expired_picks_the_records_that_no_longer_suppress_anything() -> None:
    alert = critical_alert()
    records = [(b"old", sent_record(alert, sent_at_ms=1_000)), (b"fresh", sent_record(alert, sent_at_ms=15_000)),
               (b"junk", b"not json")]
    assert expired(records, now_ms=20_000, ttl_ms=10_000) == [b"old", b"junk"]
    assert expired(records, now_ms=2_000, ttl_ms=10_000) == [b"junk"]


def p99(ms: float, samples: int = 100) -> LatencyStats:
    return LatencyStats(samples, ms / 2, ms * 0.9, ms, ms * 1.2, ms / 2)


def test_latency_budget_fires_once_per_breach_and_rearms_with_hysteresis() -> None:
    monitor = LatencyBudgetMonitor(budget_ms=50.0, min_samples=20)
    assert monitor.check("t", 0, p99(80.0, samples=5), now_ms=1) is None  # too few samples to judge
    first = monitor.check("t", 0, p99(80.0), now_ms=2, worker="w1")
    assert first is not None and first.kind == "latency_budget" and first.evidence["p99_ms"] == 80.0
    assert first.evidence["worker"] == "w1" and first.event_id is None and first.key == first.alert_id
    assert monitor.check("t", 0, p99(90.0), now_ms=3) is None  # same breach
    assert monitor.check("t", 0, p99(45.0), now_ms=4) is None  # under budget, not yet re-armed
    assert monitor.check("t", 0, p99(60.0), now_ms=5) is None
    assert monitor.check("t", 0, p99(30.0), now_ms=6) is None  # under 80 %: re-armed
    second = monitor.check("t", 0, p99(70.0), now_ms=7)
    assert second is not None and second.alert_id != first.alert_id
    assert monitor.check("t", 1, p99(70.0), now_ms=7) is not None  # partitions are independent
    monitor.forget({("t", 1)})
    assert ("t", 0) not in monitor.breaches


def test_a_latency_alert_shows_the_figures_it_was_computed_from() -> None:
    alert = LatencyBudgetMonitor(budget_ms=250.0).check("rag.answers", 2, LatencyStats(120, 40.0, 180.0, 310.0,
                                                                                        900.0, 60.0),
                                                        now_ms=1, window_s=60.0, ignored={"too_old": 2})
    assert alert is not None
    assert alert.summary == ("rag.answers[2] end-to-end p99 310.0 ms is over the 250 ms budget: 120 events over the "
                             "last 60 s (p50 40.0 ms, p95 180.0 ms, max 900.0 ms); 2 implausible clock value(s) left "
                             "out")
    assert {k: alert.evidence[k] for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms", "samples", "window_s",
                                           "clock_values_ignored")} == {
        "p50_ms": 40.0, "p95_ms": 180.0, "p99_ms": 310.0, "max_ms": 900.0, "samples": 120, "window_s": 60.0,
        "clock_values_ignored": {"too_old": 2}}
