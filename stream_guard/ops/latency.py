"""Latency per partition for the metrics topic: recent quantiles, consumer lag, the published summary.

Pure and single-threaded (the worker's event loop owns one registry). Each measure keeps a lifetime count and
a ring of `window_slots` sub-histograms rotated every metrics interval, for p50/p95/p99 that follow the
traffic (a lifetime p99 never recovers from a bad minute, so budgets are judged on this). The lifetime
Prometheus histograms are prometheus_client's, in the worker (agents/metrics.py); this module knows nothing
of Prometheus.

Quantiles come from log-spaced buckets (5 % wide), so they are within a few percent of the exact value
whatever the distribution, in constant memory.

What producers write is not trusted to shape what operators read: an event's `produced_at` starts the
end-to-end clock only when it is plausible (`e2e_origin`, within a `ClockWindow`: no older than the answers topic
keeps records, or a configured window, and only a small skew ahead of now), implausible values are counted by
reason per partition (the latency alert shows them beside the figures it was computed from), and the number of
(topic, partition) series is capped (`max_series`), so neither a bad clock nor made-up partitions can page anyone
or grow /metrics.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import msgspec

from stream_guard.wire.metrics_summary import LatencyPair, LatencyStats, PartitionLatencySummary

QUANTILES: tuple[float, ...] = (0.5, 0.95, 0.99)
DAY_MS = 24 * 3600 * 1000
TOO_OLD, FUTURE = "too_old", "future"
_GROWTH = 1.05
_LOG_GROWTH = math.log(_GROWTH)
_MIN_MS = 0.01


def _bucket_of(ms: float) -> int:
    return int(math.floor(math.log(max(ms, _MIN_MS) / _MIN_MS) / _LOG_GROWTH))


def _bucket_value(index: int) -> float:
    # Geometric middle of the bucket: at most ~2.5 % from any value in it.
    return _MIN_MS * _GROWTH ** (index + 0.5)


@dataclass
class Histogram:
    """Mergeable latency histogram in milliseconds: fine log buckets for quantiles."""

    counts: Counter[int] = field(default_factory=Counter)
    count: int = 0
    sum_ms: float = 0.0
    min_ms: float = math.inf
    max_ms: float = 0.0

    def record(self, ms: float) -> None:
        if not math.isfinite(ms):
            return
        ms = max(0.0, ms)
        self.counts[_bucket_of(ms)] += 1
        self.count += 1
        self.sum_ms += ms
        self.min_ms = min(self.min_ms, ms)
        self.max_ms = max(self.max_ms, ms)

    def merge(self, other: "Histogram") -> "Histogram":
        self.counts.update(other.counts)
        self.count += other.count
        self.sum_ms += other.sum_ms
        self.min_ms = min(self.min_ms, other.min_ms)
        self.max_ms = max(self.max_ms, other.max_ms)
        return self

    def quantile(self, q: float) -> float | None:
        """Nearest-rank quantile (None when empty), clamped to the observed min and max."""
        if self.count == 0:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return min(max(_bucket_value(index), self.min_ms), self.max_ms)
        return self.max_ms  # pragma: no cover - ranks never exceed count

    def summary(self) -> dict[str, float | int]:
        """count, p50, p95, p99, max and mean (only count when empty), JSON-ready."""
        out: dict[str, float | int] = msgspec.to_builtins(self.stats())
        return out

    def stats(self) -> "LatencyStats":
        if self.count == 0:
            return LatencyStats(0)
        p50, p95, p99 = (round(self.quantile(q) or 0.0, 3) for q in QUANTILES)
        return LatencyStats(self.count, p50, p95, p99, round(self.max_ms, 3), round(self.sum_ms / self.count, 3))


def merged(histograms: Iterable[Histogram]) -> Histogram:
    out = Histogram()
    for h in histograms:
        out.merge(h)
    return out


@dataclass
class WindowedHistogram:
    """Lifetime histogram plus a ring of recent sub-histograms; `rotate()` once per metrics interval."""

    slots: int = 6
    total: Histogram = field(default_factory=Histogram)
    ring: deque[Histogram] = field(init=False)

    def __post_init__(self) -> None:
        self.ring = deque([Histogram()], maxlen=max(1, self.slots))

    def record(self, ms: float) -> None:
        self.total.record(ms)
        self.ring[-1].record(ms)

    def rotate(self) -> None:
        self.ring.append(Histogram())

    def current(self) -> Histogram:
        """The interval being filled now."""
        return self.ring[-1]

    def recent(self) -> Histogram:
        """Everything in the ring: the last `slots` intervals."""
        return merged(self.ring)


@dataclass(frozen=True)
class ClockWindow:
    """When an event can have been produced: at most `max_age_ms` before now (an answers topic keeps nothing
    older; a week by default, as Kafka's default retention) and at most `max_skew_ms` after it (clocks drift a
    little; a producer's clock ahead by more is wrong: microseconds, say). A zero, epoch seconds read as
    milliseconds (1970), a 2005 timestamp: all `too_old`, never a 22-year latency."""

    max_age_ms: float = 7 * DAY_MS
    max_skew_ms: float = 5 * 60 * 1000

    def within(self, retention_ms: int | None) -> "ClockWindow":
        """This window, no longer than a topic's retention (when it has one: -1 is "forever")."""
        if retention_ms is None or retention_ms <= 0 or retention_ms >= self.max_age_ms:
            return self
        return ClockWindow(float(retention_ms), self.max_skew_ms)

    def implausible(self, at_ms: int | None, now_ms: float) -> str | None:
        """Why `at_ms` cannot be when an event was produced (`too_old`, `future`), or None if it can be."""
        if at_ms is None:
            return None
        if at_ms < now_ms - self.max_age_ms:
            return TOO_OLD
        if at_ms > now_ms + self.max_skew_ms:
            return FUTURE
        return None


DEFAULT_WINDOW = ClockWindow()


def implausible(at_ms: int | None, now_ms: float, window: ClockWindow = DEFAULT_WINDOW) -> str | None:
    return window.implausible(at_ms, now_ms)


def e2e_origin(produced_at_ms: int | None, kafka_ms: int | None, now_ms: float,
               window: ClockWindow = DEFAULT_WINDOW) -> tuple[int | None, list[str]]:
    """Where an event's end-to-end clock starts: its produced_at, else its Kafka timestamp, each only if
    plausible; with the reasons for every value passed over (for a counter)."""
    passed_over: list[str] = []
    for at_ms in (produced_at_ms, kafka_ms):
        reason = window.implausible(at_ms, now_ms)
        if reason is None and at_ms is not None:
            return at_ms, passed_over
        if reason is not None:
            passed_over.append(reason)
    return None, passed_over


@dataclass
class PartitionStats:
    topic: str
    partition: int
    slots: int
    processing: WindowedHistogram = field(init=False)
    end_to_end: WindowedHistogram = field(init=False)
    routings: Counter[str] = field(default_factory=Counter)
    # Clock values passed over, by reason, per interval of the same ring as the histograms.
    ignored: deque[Counter[str]] = field(init=False)

    def __post_init__(self) -> None:
        self.processing = WindowedHistogram(self.slots)
        self.end_to_end = WindowedHistogram(self.slots)
        self.ignored = deque([Counter()], maxlen=max(1, self.slots))

    def rotate(self) -> None:
        self.processing.rotate()
        self.end_to_end.rotate()
        self.ignored.append(Counter())

    def recent_ignored(self) -> dict[str, int]:
        """Clock values passed over in the recent window, by reason."""
        out: Counter[str] = Counter()
        for interval in self.ignored:
            out.update(interval)
        return dict(sorted(out.items()))


PartitionKey = tuple[str, int]
# Where observations go once `max_series` partitions are tracked.
OVERFLOW: PartitionKey = ("_overflow", -1)


@dataclass
class LatencyRegistry:
    """Latency and lag per partition, for the metrics topic and the latency budget."""

    window_slots: int = 6
    # At most this many (topic, partition) series; more are booked together under OVERFLOW.
    max_series: int = 512
    partitions: dict[PartitionKey, PartitionStats] = field(default_factory=dict)
    lag: dict[PartitionKey, int] = field(default_factory=dict)

    def stats(self, topic: str, partition: int) -> PartitionStats:
        key = (topic, partition)
        found = self.partitions.get(key)
        if found is None:
            if len(self.partitions) >= self.max_series:
                key = OVERFLOW
                found = self.partitions.get(key)
            if found is None:
                found = self.partitions[key] = PartitionStats(key[0], key[1], self.window_slots)
        return found

    def observe(
        self, topic: str, partition: int, processing_ms: float, end_to_end_ms: float | None, routing: str | None,
        ignored: Sequence[str] = (),
    ) -> PartitionKey:
        """Book one event (with the reasons its clock values were passed over); returns the key it was booked
        under (OVERFLOW past `max_series`)."""
        stats = self.stats(topic, partition)
        stats.processing.record(processing_ms)
        if end_to_end_ms is not None:
            stats.end_to_end.record(end_to_end_ms)
        if ignored:
            stats.ignored[-1].update(ignored)
        if routing:
            stats.routings[routing] += 1
        return stats.topic, stats.partition

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        self.lag[(topic, partition)] = max(0, int(lag))

    def forget_lag(self, keep: Iterable[PartitionKey]) -> None:
        """Drop lag of partitions this worker no longer owns, so a rebalance does not leave stale gauges."""
        keep = set(keep)
        for key in [k for k in self.lag if k not in keep]:
            del self.lag[key]

    def rotate(self) -> None:
        for stats in self.partitions.values():
            stats.rotate()

    def summaries(self, *, worker: str, at_ms: int, interval_s: float) -> list[PartitionLatencySummary]:
        """One record per partition for the metrics topic: this interval's and the recent window's figures."""
        return [
            PartitionLatencySummary(
                worker=worker, topic=topic, partition=partition, published_at_ms=at_ms, interval_s=interval_s,
                window_s=interval_s * self.window_slots,
                interval=LatencyPair(stats.processing.current().stats(), stats.end_to_end.current().stats()),
                recent=LatencyPair(stats.processing.recent().stats(), stats.end_to_end.recent().stats()),
                events_total=stats.processing.total.count, routing_total=dict(stats.routings),
                lag=self.lag.get((topic, partition)),
            )
            for (topic, partition), stats in sorted(self.partitions.items())
        ]
