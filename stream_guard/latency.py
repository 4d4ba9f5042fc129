"""Latency histograms per partition, quantiles, consumer lag, and their Prometheus text rendering.

Pure and single-threaded (the worker's event loop owns one registry). Two views of each measure:

- lifetime, as a Prometheus histogram with fixed buckets (aggregatable across workers and partitions);
- recent, a ring of `window_slots` sub-histograms rotated every metrics interval, for p50/p95/p99 that
  follow the traffic (a lifetime p99 never recovers from a bad minute, so budgets are judged on this).

Quantiles come from log-spaced buckets (5 % wide), so they are within a few percent of the exact value
whatever the distribution, in constant memory.

What producers write is not trusted to shape what operators read: an event's `produced_at` starts the
end-to-end clock only when it is plausible (`e2e_origin`), and the number of (topic, partition) series is
capped (`max_series`), so neither a bad clock nor made-up partitions can page anyone or grow /metrics.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

# Prometheus bucket bounds, in milliseconds (exposed in seconds, Prometheus' base unit).
PROM_BOUNDS_MS: tuple[float, ...] = (
    1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 2000, 5000, 10000, 30000, 60000,
)
QUANTILES: tuple[float, ...] = (0.5, 0.95, 0.99)
# 2000-01-01T00:00:00Z. Earlier end-to-end origins are not real production times: a zero, or epoch seconds
# read as milliseconds (1732270500 s is November 2024, but as ms it is January 1970).
EARLIEST_PLAUSIBLE_MS = 946_684_800_000
# A clock this far ahead of ours is wrong (microseconds, say), not skewed.
FUTURE_TOLERANCE_MS = 10 * 60 * 1000
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
    """Mergeable latency histogram in milliseconds: fine log buckets for quantiles, exact coarse buckets."""

    counts: Counter[int] = field(default_factory=Counter)
    prom_counts: list[int] = field(default_factory=lambda: [0] * len(PROM_BOUNDS_MS))
    count: int = 0
    sum_ms: float = 0.0
    min_ms: float = math.inf
    max_ms: float = 0.0

    def record(self, ms: float) -> None:
        if not math.isfinite(ms):
            return
        ms = max(0.0, ms)
        self.counts[_bucket_of(ms)] += 1
        for i, bound in enumerate(PROM_BOUNDS_MS):
            if ms <= bound:
                self.prom_counts[i] += 1
                break
        self.count += 1
        self.sum_ms += ms
        self.min_ms = min(self.min_ms, ms)
        self.max_ms = max(self.max_ms, ms)

    def merge(self, other: "Histogram") -> "Histogram":
        self.counts.update(other.counts)
        self.prom_counts = [a + b for a, b in zip(self.prom_counts, other.prom_counts)]
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

    def cumulative_prom_counts(self) -> list[int]:
        """Counts at or under each bound, as Prometheus' `le` buckets want (values over the last go to +Inf)."""
        out, running = [], 0
        for c in self.prom_counts:
            running += c
            out.append(running)
        return out

    def summary(self) -> dict[str, Any]:
        if self.count == 0:
            return {"count": 0}
        out: dict[str, Any] = {"count": self.count}
        for q in QUANTILES:
            out[_qname(q)] = round(self.quantile(q) or 0.0, 3)
        out["max"] = round(self.max_ms, 3)
        out["mean"] = round(self.sum_ms / self.count, 3)
        return out


def _qname(q: float) -> str:
    return "p" + f"{q * 100:g}".replace(".", "_")


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


def implausible(at_ms: int | None, now_ms: float) -> str | None:
    """Why `at_ms` cannot be when an event was produced (`before_2000`, `future`), or None if it can be."""
    if at_ms is None:
        return None
    if at_ms < EARLIEST_PLAUSIBLE_MS:
        return "before_2000"
    if at_ms > now_ms + FUTURE_TOLERANCE_MS:
        return "future"
    return None


def e2e_origin(produced_at_ms: int | None, kafka_ms: int | None, now_ms: float
               ) -> tuple[int | None, list[str]]:
    """Where an event's end-to-end clock starts: its produced_at, else its Kafka timestamp, each only if
    plausible; with the reasons for every value passed over (for a counter)."""
    passed_over: list[str] = []
    for at_ms in (produced_at_ms, kafka_ms):
        reason = implausible(at_ms, now_ms)
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

    def __post_init__(self) -> None:
        self.processing = WindowedHistogram(self.slots)
        self.end_to_end = WindowedHistogram(self.slots)


PartitionKey = tuple[str, int]
# Where observations go once `max_series` partitions are tracked.
OVERFLOW: PartitionKey = ("_overflow", -1)


@dataclass
class LatencyRegistry:
    """Everything the worker measures; rendered at /metrics and summarised on the metrics topic."""

    window_slots: int = 6
    # At most this many (topic, partition) series; more are booked together under OVERFLOW.
    max_series: int = 512
    partitions: dict[PartitionKey, PartitionStats] = field(default_factory=dict)
    lag: dict[PartitionKey, int] = field(default_factory=dict)
    dead_letters: Counter[str] = field(default_factory=Counter)
    alerts: Counter[str] = field(default_factory=Counter)
    alerts_suppressed: Counter[str] = field(default_factory=Counter)
    pruned: Counter[str] = field(default_factory=Counter)  # by table
    tombstones: Counter[str] = field(default_factory=Counter)  # by topic
    clock_ignored: Counter[str] = field(default_factory=Counter)  # by reason (implausible)

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
        self, topic: str, partition: int, processing_ms: float, end_to_end_ms: float | None, routing: str | None
    ) -> None:
        stats = self.stats(topic, partition)
        stats.processing.record(processing_ms)
        if end_to_end_ms is not None:
            stats.end_to_end.record(end_to_end_ms)
        if routing:
            stats.routings[routing] += 1

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        self.lag[(topic, partition)] = max(0, int(lag))

    def forget_lag(self, keep: Iterable[PartitionKey]) -> None:
        """Drop lag of partitions this worker no longer owns, so a rebalance does not leave stale gauges."""
        keep = set(keep)
        for key in [k for k in self.lag if k not in keep]:
            del self.lag[key]

    def rotate(self) -> None:
        for stats in self.partitions.values():
            stats.processing.rotate()
            stats.end_to_end.rotate()

    def summaries(self, *, worker: str, at_ms: int, interval_s: float) -> list[dict[str, Any]]:
        """One record per partition for the metrics topic: this interval's and the recent window's figures."""
        out = []
        for (topic, partition), stats in sorted(self.partitions.items()):
            out.append({
                "kind": "partition_latency",
                "worker": worker,
                "topic": topic,
                "partition": partition,
                "at_ms": at_ms,
                "interval_s": interval_s,
                "window_s": interval_s * self.window_slots,
                "interval": {
                    "processing_ms": stats.processing.current().summary(),
                    "end_to_end_ms": stats.end_to_end.current().summary(),
                },
                "recent": {
                    "processing_ms": stats.processing.recent().summary(),
                    "end_to_end_ms": stats.end_to_end.recent().summary(),
                },
                "events_total": stats.processing.total.count,
                "routing_total": dict(stats.routings),
                "lag": self.lag.get((topic, partition)),
            })
        return out


# --- Prometheus text exposition format 0.0.4 -------------------------------------------------------------


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, Any]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


def _num(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Family:
    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        self.name = name

    def sample(self, labels: Mapping[str, Any], value: float, suffix: str = "") -> None:
        self.lines.append(f"{self.name}{suffix}{_labels(labels)} {_num(value)}")


def _histogram_family(name: str, help_text: str, items: list[tuple[dict[str, Any], Histogram]]) -> list[str]:
    family = _Family(name, "histogram", help_text)
    for labels, hist in items:
        for bound, cumulative in zip(PROM_BOUNDS_MS, hist.cumulative_prom_counts()):
            family.sample({**labels, "le": _num(bound / 1000.0)}, cumulative, "_bucket")
        family.sample({**labels, "le": "+Inf"}, hist.count, "_bucket")
        family.sample(labels, hist.sum_ms / 1000.0, "_sum")
        family.sample(labels, hist.count, "_count")
    return family.lines


def render_prometheus(
    registry: LatencyRegistry, *, budget_ms: float | None = None, extra_gauges: Mapping[str, float] | None = None,
    extra_counters: Mapping[str, tuple[str, float]] | None = None,
) -> str:
    """The registry in Prometheus' text format (what /metrics serves)."""
    parts = sorted(registry.partitions.items())
    lines: list[str] = []
    lines += _histogram_family(
        "stream_guard_processing_seconds",
        "Time from a judge batch's arrival to the event's verdict being acknowledged by the broker.",
        [({"topic": t, "partition": p}, s.processing.total) for (t, p), s in parts],
    )
    lines += _histogram_family(
        "stream_guard_end_to_end_seconds",
        "Time from the event's produced_at (else its Kafka timestamp) to its verdict being acknowledged.",
        [({"topic": t, "partition": p}, s.end_to_end.total) for (t, p), s in parts],
    )
    quantiles = _Family(
        "stream_guard_latency_recent_seconds", "gauge",
        "Quantiles of the recent window (window_slots metrics intervals), per partition and measure.",
    )
    for (topic, partition), stats in parts:
        for measure, hist in (("processing", stats.processing.recent()), ("end_to_end", stats.end_to_end.recent())):
            for q in QUANTILES:
                value = hist.quantile(q)
                if value is not None:
                    quantiles.sample(
                        {"topic": topic, "partition": partition, "measure": measure, "quantile": f"{q:g}"},
                        value / 1000.0,
                    )
    lines += quantiles.lines
    events = _Family("stream_guard_verdicts_total", "counter", "Verdicts sent, by partition and routing.")
    for (topic, partition), stats in parts:
        for routing, n in sorted(stats.routings.items()):
            events.sample({"topic": topic, "partition": partition, "routing": routing}, n)
    lines += events.lines
    lag = _Family("stream_guard_consumer_lag", "gauge", "Messages between the partition's end and our position.")
    for (topic, partition), value in sorted(registry.lag.items()):
        lag.sample({"topic": topic, "partition": partition}, value)
    lines += lag.lines
    for name, counter, label, help_text in (
        ("stream_guard_dead_letters_total", registry.dead_letters, "stage", "Events sent to the dead-letter topic."),
        ("stream_guard_alerts_total", registry.alerts, "kind", "Alerts sent."),
        ("stream_guard_alerts_suppressed_total", registry.alerts_suppressed, "kind",
         "Alerts not sent again because their alert_id was already sent (redelivery or replay)."),
        ("stream_guard_state_records_pruned_total", registry.pruned, "table",
         "State records deleted after their time to live."),
        ("stream_guard_tombstones_skipped_total", registry.tombstones, "topic",
         "Input messages with no value (tombstones): skipped, not judged."),
        ("stream_guard_clock_values_ignored_total", registry.clock_ignored, "reason",
         "produced_at values (or Kafka timestamps) too implausible to start the end-to-end clock."),
    ):
        family = _Family(name, "counter", help_text)
        for key, n in sorted(counter.items()):
            family.sample({label: key}, n)
        lines += family.lines
    if budget_ms is not None:
        budget = _Family("stream_guard_latency_budget_seconds", "gauge", "The configured end-to-end p99 budget.")
        budget.sample({}, budget_ms / 1000.0)
        lines += budget.lines
    for name, (help_text, value) in sorted((extra_counters or {}).items()):
        family = _Family(name, "counter", help_text)
        family.sample({}, value)
        lines += family.lines
    for name, value in sorted((extra_gauges or {}).items()):
        family = _Family(name, "gauge", name.replace("_", " "))
        family.sample({}, value)
        lines += family.lines
    return "\n".join(lines) + "\n"
