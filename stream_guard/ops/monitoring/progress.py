"""How far event time has got on every judging partition: when a tenant's day may close.

A tenant's answers are judged on many partitions (one per question hash), and partitions move at their own
pace: after a restart or during a replay, one partition can be days of event time behind another. Closing a
day on the tenant's own latest event time would then evaluate the rules on part of the day. So each worker
reports, per judging partition it owns, the latest event time it has judged there and whether the
partition is idle (nothing waiting on it); a day closes only once every partition that still has work has
passed it (Flink-style watermarks with idleness). An idle partition holds nothing back: what arrives on it
later is new traffic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class SourceProgress:
    at_ms: int | None  # latest event time judged on the partition; None when nothing yet
    idle: bool  # nothing waiting on the partition (and on the input partitions that feed it)
    sent_ms: int  # when the report was made, to keep the newest of several reporters

    def to_record(self, source: int) -> dict[str, Any]:
        return {"type": "progress", "source": source, "at_ms": self.at_ms, "idle": self.idle, "sent_ms": self.sent_ms}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "SourceProgress":
        at, sent = record.get("at_ms"), record.get("sent_ms")
        return cls(at if isinstance(at, int) and not isinstance(at, bool) else None, record.get("idle") is True,
                   sent if isinstance(sent, int) and not isinstance(sent, bool) else 0)


def horizon(progress: Mapping[int, SourceProgress], sources: int) -> float:
    """The event time every judging partition 0..sources-1 has reached: -inf while one is unknown or busy
    with nothing judged yet, +inf when all are idle."""
    reached = math.inf
    for source in range(sources):
        report = progress.get(source)
        if report is None:
            return -math.inf
        if report.idle:
            continue
        if report.at_ms is None:
            return -math.inf
        reached = min(reached, report.at_ms)
    return reached


def merge(progress: dict[int, SourceProgress], source: int, report: SourceProgress) -> bool:
    """Keep the newest report per partition (a partition that moved reports from its new owner); True if kept."""
    known = progress.get(source)
    if known is not None and known.sent_ms > report.sent_ms:
        return False
    progress[source] = report
    return True
