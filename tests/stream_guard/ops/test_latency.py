"""Latency histograms: quantile accuracy, windows, merging, and the metrics topic's summaries."""

from __future__ import annotations

import random

import pytest

import msgspec

from stream_guard.ops.latency import Histogram, LatencyRegistry, WindowedHistogram, merged
from stream_guard.wire.metrics_summary import PartitionLatencySummary


def exact_quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(-(-q * len(ordered) // 1)) - 1)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_quantiles_are_within_a_few_percent_of_exact(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.lognormvariate(2.5, 0.8) for _ in range(5000)]
    hist = Histogram()
    for v in values:
        hist.record(v)
    for q in (0.5, 0.95, 0.99):
        assert hist.quantile(q) == pytest.approx(exact_quantile(values, q), rel=0.06)
    assert hist.count == 5000
    assert hist.max_ms == pytest.approx(max(values))


def test_empty_and_degenerate_histograms() -> None:
    hist = Histogram()
    assert hist.quantile(0.99) is None
    assert hist.summary() == {"count": 0}
    hist.record(float("nan"))  # never counted
    hist.record(-3.0)  # clock skew: clamped to zero, still counted
    assert hist.count == 1 and hist.quantile(0.5) == 0.0


def test_quantile_is_clamped_to_observed_range() -> None:
    hist = Histogram()
    for _ in range(10):
        hist.record(7.0)
    assert hist.quantile(0.5) == 7.0 and hist.quantile(0.99) == 7.0


def test_merge_equals_recording_everything_once() -> None:
    a, b, both = Histogram(), Histogram(), Histogram()
    for i in range(1, 200):
        (a if i % 2 else b).record(float(i))
        both.record(float(i))
    combined = merged([a, b])
    assert combined.count == both.count and combined.sum_ms == pytest.approx(both.sum_ms)
    assert combined.quantile(0.99) == both.quantile(0.99)
    assert combined.counts == both.counts


def test_window_forgets_old_intervals_but_total_does_not() -> None:
    w = WindowedHistogram(slots=2)
    for _ in range(100):
        w.record(500.0)  # a bad interval
    w.rotate()
    for _ in range(100):
        w.record(5.0)
    assert w.recent().quantile(0.99) == pytest.approx(500.0, rel=0.05)
    w.rotate()  # the bad interval leaves the ring
    assert w.recent().quantile(0.99) == pytest.approx(5.0, rel=0.05)
    assert w.total.count == 200


def test_registry_summaries_carry_interval_recent_and_lag() -> None:
    reg = LatencyRegistry(window_slots=3)
    for i in range(50):
        reg.observe("answers-by-q", 1, processing_ms=2.0 + i % 3, end_to_end_ms=10.0 + i, routing="accept")
    reg.observe("answers-by-q", 1, processing_ms=3.0, end_to_end_ms=None, routing="discard")
    reg.set_lag("answers-by-q", 1, 7)
    reg.set_lag("rag.answers", 0, -2)
    [record] = reg.summaries(worker="w1", at_ms=1000, interval_s=10.0)
    summary = msgspec.json.decode(record.to_json())
    assert msgspec.json.decode(record.to_json(), type=PartitionLatencySummary) == record
    assert summary["version"] == 2 and summary["published_at_ms"] == 1000 and summary["kind"] == "partition_latency"
    assert summary["partition"] == 1 and summary["lag"] == 7 and summary["window_s"] == 30.0
    assert summary["interval"]["processing_ms"]["count"] == 51
    assert summary["interval"]["end_to_end_ms"]["count"] == 50
    assert summary["routing_total"] == {"accept": 50, "discard": 1}
    assert reg.lag[("rag.answers", 0)] == 0
    reg.forget_lag([("answers-by-q", 1)])
    assert ("rag.answers", 0) not in reg.lag


# --- what producers write cannot page operators or grow /metrics ----------------------------------------------

from stream_guard.ops.latency import DAY_MS, OVERFLOW, ClockWindow, e2e_origin, implausible  # noqa: E402

NOW = 1_763_800_000_000  # 2025-11-22, in epoch milliseconds
KAFKA = NOW - 40
Y2005 = 1_117_584_000_000  # 2005-06-01


@pytest.mark.parametrize(("produced_at", "reason"), [
    (0, "too_old"),
    (1_732_270_500, "too_old"),  # epoch seconds read as milliseconds: January 1970
    (Y2005, "too_old"),
    (NOW - 7 * DAY_MS - 1, "too_old"),  # older than the answers topic keeps anything (a week by default)
    (NOW + 5 * 60_000 + 1, "future"),
    (NOW * 1000, "future"),  # microseconds
])
def test_implausible_produced_at_falls_back_to_the_kafka_timestamp(produced_at, reason):
    assert implausible(produced_at, NOW) == reason
    assert e2e_origin(produced_at, KAFKA, NOW) == (KAFKA, [reason])


def test_a_plausible_produced_at_starts_the_clock():
    assert e2e_origin(NOW - 1500, KAFKA, NOW) == (NOW - 1500, [])
    assert e2e_origin(NOW - 7 * DAY_MS, KAFKA, NOW) == (NOW - 7 * DAY_MS, [])  # the window's edge
    assert e2e_origin(NOW + 60_000, KAFKA, NOW) == (NOW + 60_000, [])  # a minute of clock skew is no error
    assert e2e_origin(None, KAFKA, NOW) == (KAFKA, [])


def test_when_neither_is_plausible_there_is_no_end_to_end_sample():
    assert e2e_origin(Y2005, 1_054_000_000_000, NOW) == (None, ["too_old", "too_old"])  # 2005, and a 2003 Kafka time
    assert e2e_origin(None, None, NOW) == (None, [])


def test_a_topic_keeping_less_than_the_window_narrows_it():
    window = ClockWindow(7 * DAY_MS, 60_000)
    assert window.within(DAY_MS) == ClockWindow(DAY_MS, 60_000)
    assert window.within(30 * DAY_MS) == window and window.within(-1) == window and window.within(None) == window
    assert window.within(DAY_MS).implausible(NOW - 2 * DAY_MS, NOW) == "too_old"


def test_passed_over_clocks_are_counted_by_reason_over_the_recent_window():
    registry = LatencyRegistry(window_slots=2)
    registry.observe("rag.answers", 0, 1.0, None, "accept", ignored=["too_old", "too_old"])
    registry.rotate()
    registry.observe("rag.answers", 0, 1.0, None, "accept", ignored=["future"])
    stats = registry.partitions[("rag.answers", 0)]
    assert stats.recent_ignored() == {"future": 1, "too_old": 2}
    assert stats.end_to_end.total.count == 0  # no latency sample from them
    registry.rotate()
    assert stats.recent_ignored() == {"future": 1}  # the first interval left the window


def test_made_up_partitions_share_one_overflow_series():
    registry = LatencyRegistry(max_series=3)
    for partition in range(100):
        registry.observe("rag.answers", partition, 1.0, 2.0, "accept")
    assert len(registry.partitions) == 4
    assert registry.partitions[OVERFLOW].processing.total.count == 97
