"""The streaming service's alert bookkeeping: dedupe records per alert id, and the latency budget per partition.

Pure: the worker (agents/app.py) keeps the records in its alerts-sent table and calls the monitor each metrics
interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import orjson

from stream_guard.wire.alert import WARNING, Alert, alert_id
from stream_guard.wire.metrics_summary import LatencyStats


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


@dataclass
class LatencyBudgetMonitor:
    """Fires once when a partition's p99 crosses the budget; re-arms when it is back under `rearm_ratio`×budget.

    The hysteresis keeps a p99 hovering at the budget from paging every interval. The breach's start time is
    part of the alert id, so each breach is one alert. The alert carries the figures it was computed from: the
    window's distribution and sample count, and the clock values left out of it as implausible.
    """

    budget_ms: float
    min_samples: int = 20
    rearm_ratio: float = 0.8
    breaches: dict[tuple[str, int], int] = field(default_factory=dict)

    def check(
        self, topic: str, partition: int, recent: LatencyStats, now_ms: int, worker: str = "",
        window_s: float | None = None, ignored: Mapping[str, int] | None = None,
    ) -> Alert | None:
        key = (topic, partition)
        p99_ms, samples = recent.p99, recent.count
        if p99_ms is None or samples < self.min_samples:
            return None
        if key in self.breaches:
            if p99_ms <= self.budget_ms * self.rearm_ratio:
                del self.breaches[key]
            return None
        if p99_ms <= self.budget_ms:
            return None
        self.breaches[key] = now_ms
        left_out = sum((ignored or {}).values())
        over = f" over the last {window_s:g} s" if window_s else ""
        summary = (f"{topic}[{partition}] end-to-end p99 {p99_ms:.1f} ms is over the {self.budget_ms:g} ms budget: "
                   f"{samples} events{over} (p50 {recent.p50 or 0:.1f} ms, p95 {recent.p95 or 0:.1f} ms, max "
                   f"{recent.max or 0:.1f} ms)")
        if left_out:
            summary += f"; {left_out} implausible clock value(s) left out"
        return Alert(
            alert_id=alert_id("latency_budget", topic, partition, now_ms),
            kind="latency_budget",
            severity=WARNING,
            summary=summary,
            evidence={"topic": topic, "partition": partition, "p99_ms": round(p99_ms, 3),
                      "budget_ms": self.budget_ms, "samples": samples, "worker": worker,
                      "p50_ms": recent.p50, "p95_ms": recent.p95, "max_ms": recent.max, "window_s": window_s,
                      "clock_values_ignored": dict(ignored or {})},
            created_at_ms=now_ms,
        )

    def forget(self, keep: set[tuple[str, int]]) -> None:
        for key in [k for k in self.breaches if k not in keep]:
            del self.breaches[key]
