"""Daily windows in event time: what one tenant's answers added up to on one UTC day, and sums over days.

Days are whole UTC days counted from the epoch (day 0 is 1970-01-01, a Thursday); weeks start on Monday,
as ISO weeks do, so week labels read "2026-W14". A window is an inclusive range of days. Everything here is
pure and deterministic: the same observations give the same counts whatever order they arrive in (the
examples kept per metric are the ones with the smallest hashes, not the first seen).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any, Iterable, Mapping

from stream_guard.config.monitor import RATES
from stream_guard.ops.latency import Histogram

DAY_MS = 86_400_000
_EPOCH = date(1970, 1, 1)
EXAMPLES_PER_METRIC = 3
MAX_DRIFT_QUESTIONS = 200

RATE_TITLES: dict[str, str] = {
    "refusal": "per-claim refusal rate",
    "citation_mismatch": "citation-mismatch rate",
    "flagged": "flagged-answer rate",
    "healed": "healed-answer rate",
    "fallback": "fallback rate",
    "discard": "discard rate",
    "drift": "store-wide drift rate",
}
COUNTS = ("answers", "claims", "refused", "citations", "mismatched", "accept", "healed", "fallback", "discard",
          "flagged", "drift")


def day_of(ms: int) -> int:
    return ms // DAY_MS


def day_start_ms(day: int) -> int:
    return day * DAY_MS


def week_of(day: int) -> int:
    """Monday-based week index: day 0 is a Thursday, so Monday 1969-12-29 (day -3) starts week 0."""
    return (day + 3) // 7


def week_days(week: int) -> tuple[int, int]:
    """First and last day of a week."""
    first = week * 7 - 3
    return first, first + 6


def day_label(day: int) -> str:
    return (_EPOCH + timedelta(days=day)).isoformat()


def week_label(week: int) -> str:
    year, number, _ = (_EPOCH + timedelta(days=week_days(week)[0])).isocalendar()
    return f"{year}-W{number:02d}"


def example_hash(event_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(event_id.encode("utf-8"), digest_size=8).digest(), "big")


def _keep_smallest(items: Iterable[tuple[int, str]], limit: int) -> tuple[tuple[int, str], ...]:
    return tuple(sorted(set(items))[:limit])


@dataclass(frozen=True)
class DayCounts:
    """One tenant's answers on one day. `examples` holds, per numerator, a few event_ids to read first;
    `drift_questions` the question hashes that drifted (bounded), so drift across many questions can be told
    from one question drifting often."""

    answers: int = 0
    claims: int = 0
    refused: int = 0
    citations: int = 0
    mismatched: int = 0
    accept: int = 0
    healed: int = 0
    fallback: int = 0
    discard: int = 0
    flagged: int = 0
    drift: int = 0
    latency: Mapping[int, int] = field(default_factory=dict)  # log bucket (latency.py) -> answers
    latency_sum_us: int = 0  # integer, so that sums do not depend on the order of addition
    latency_max_ms: float = 0.0
    examples: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    drift_questions: tuple[str, ...] = ()

    def count(self, name: str) -> int:
        return int(getattr(self, name))

    def rate(self, name: str) -> float | None:
        numerator, denominator = RATES[name]
        den = self.count(denominator)
        return self.count(numerator) / den if den else None

    def histogram(self) -> Histogram:
        h = Histogram()
        h.counts.update(self.latency)
        h.count = sum(self.latency.values())
        h.sum_ms = self.latency_sum_us / 1000.0
        h.max_ms = self.latency_max_ms
        h.min_ms = 0.0 if h.count else h.min_ms
        return h

    def plus(self, other: "DayCounts") -> "DayCounts":
        latency = dict(self.latency)
        for bucket, n in other.latency.items():
            latency[bucket] = latency.get(bucket, 0) + n
        examples = {name: _keep_smallest((*self.examples.get(name, ()), *other.examples.get(name, ())),
                                         EXAMPLES_PER_METRIC)
                    for name in {*self.examples, *other.examples}}
        return DayCounts(
            **{name: self.count(name) + other.count(name) for name in COUNTS},
            latency=latency,
            latency_sum_us=self.latency_sum_us + other.latency_sum_us,
            latency_max_ms=max(self.latency_max_ms, other.latency_max_ms),
            examples=examples,
            drift_questions=tuple(sorted({*self.drift_questions, *other.drift_questions}))[:MAX_DRIFT_QUESTIONS],
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: self.count(name) for name in COUNTS}
        out["latency"] = {str(k): v for k, v in sorted(self.latency.items())}
        out["latency_sum_us"] = self.latency_sum_us
        out["latency_max_ms"] = self.latency_max_ms
        out["examples"] = {k: [list(e) for e in v] for k, v in sorted(self.examples.items())}
        out["drift_questions"] = list(self.drift_questions)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DayCounts":
        """The stored form back; anything missing or malformed counts as zero (a record written by an older
        worker must never stop the monitor)."""
        def number(name: str) -> int:
            value = data.get(name, 0)
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

        latency_raw = data.get("latency")
        latency = {int(k): int(v) for k, v in latency_raw.items()
                   if str(k).lstrip("-").isdigit() and isinstance(v, int)} if isinstance(latency_raw, Mapping) else {}
        examples_raw = data.get("examples")
        examples: dict[str, tuple[tuple[int, str], ...]] = {}
        if isinstance(examples_raw, Mapping):
            for name, items in examples_raw.items():
                kept = tuple((int(h), str(e)) for h, e in (i for i in items if isinstance(i, list) and len(i) == 2
                                                                and isinstance(i[0], int))) if isinstance(items, list) else ()
                if kept:
                    examples[str(name)] = kept
        questions = data.get("drift_questions")
        maximum = data.get("latency_max_ms")
        return cls(
            **{name: number(name) for name in COUNTS},
            latency=latency,
            latency_sum_us=number("latency_sum_us"),
            latency_max_ms=float(maximum) if isinstance(maximum, (int, float)) and math.isfinite(maximum) else 0.0,
            examples=examples,
            drift_questions=tuple(str(q) for q in questions) if isinstance(questions, list) else (),
        )


def single(counts: Mapping[str, int], event_id: str, latency_ms: float | None,
           drift_question: str | None = None) -> DayCounts:
    """The DayCounts of one answer: its counts, its latency, and itself as an example of each numerator
    it adds to."""
    h = Histogram()
    if latency_ms is not None and latency_ms >= 0:
        h.record(latency_ms)
    rank = example_hash(event_id)
    examples = {name: ((rank, event_id),) for name in COUNTS if name != "answers" and counts.get(name, 0) > 0}
    return replace(DayCounts(**{name: int(counts.get(name, 0)) for name in COUNTS}),
                   latency=dict(h.counts), latency_sum_us=round(h.sum_ms * 1000), latency_max_ms=h.max_ms, examples=examples,
                   drift_questions=(drift_question,) if drift_question else ())


def total(days: Mapping[int, DayCounts], first: int, last: int) -> DayCounts:
    """Sum of the days in [first, last] that have counts."""
    out = DayCounts()
    for day in range(first, last + 1):
        counts = days.get(day)
        if counts is not None:
            out = out.plus(counts)
    return out


@dataclass(frozen=True)
class Windows:
    """The trailing window ending on `day` and the baseline before it (seed 003: 7 days against the prior 30)."""

    day: int
    trailing_days: int = 7
    baseline_days: int = 30

    @property
    def trailing(self) -> tuple[int, int]:
        return self.day - self.trailing_days + 1, self.day

    @property
    def baseline(self) -> tuple[int, int]:
        end = self.day - self.trailing_days
        return end - self.baseline_days + 1, end

    @property
    def first_day(self) -> int:
        return self.baseline[0]


def retention_cutoff(watermark_day: int, retention_days: int) -> int:
    """The oldest day still kept when the tenant's event time has reached `watermark_day`."""
    return watermark_day - retention_days + 1
