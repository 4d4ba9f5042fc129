"""The metrics-summary record: one input partition's latency, published on the metrics topic
(schemas/metrics-summary.v2.schema.json). ops/latency.py measures; this is the shape it publishes."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta


SUMMARY_VERSION = 2


_Ms = Annotated[float, Meta(ge=0)]


class LatencyStats(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A latency distribution in milliseconds; only `count` when it is empty."""

    count: Annotated[int, Meta(ge=0)]
    p50: _Ms | None = None
    p95: _Ms | None = None
    p99: _Ms | None = None
    max: _Ms | None = None
    mean: _Ms | None = None


class LatencyPair(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    processing_ms: LatencyStats
    end_to_end_ms: LatencyStats


class PartitionLatencySummary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One input partition's latency, published on the metrics topic every metrics interval
    (schemas/metrics-summary.v2.schema.json). Processing: a batch taken to its verdicts acknowledged; end to
    end: the event's produced_at (else its Kafka timestamp) to its verdict acknowledged.

    Version 2 (from an unversioned 1): `at_ms` is `published_at_ms`; `version` is new."""

    version: int = SUMMARY_VERSION
    kind: Literal["partition_latency"] = "partition_latency"
    worker: str
    topic: str
    partition: int
    published_at_ms: Annotated[int, Meta(ge=0, description="epoch milliseconds (UTC)")]
    interval_s: float
    window_s: float
    interval: Annotated[LatencyPair, Meta(description="this metrics interval")]
    recent: Annotated[LatencyPair, Meta(description="the last window_s seconds")]
    events_total: Annotated[int, Meta(ge=0)]
    routing_total: dict[str, int]
    lag: Annotated[int, Meta(ge=0)] | None = None

    def to_json(self) -> bytes:
        return _ENCODER.encode(self)


_ENCODER = msgspec.json.Encoder()
