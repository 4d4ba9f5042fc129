"""Per-tenant monitoring metrics in Prometheus' text format (prometheus_client, a registry of our own).

Label sets stay bounded whatever the traffic: the `tenant` label is one of the tenants named in the
`[monitor.tenants]` table, or "other" for all the rest together (their counts summed before rates are
taken). Rates are those of the last closed day's windows, so they move once a day per tenant, as the alert
rules do. A worker reports the tenants whose partitions it owns now; Prometheus sums or maxes across
workers (deploy/prometheus/stream-guard-rules.yaml).

Summing every tenant's windows takes a while with many tenants (10,000: over a second), too long for a scrape
to block the worker (its /healthz must answer within 100 ms). A worker therefore groups them in slices
between its other work (`regroup`, a generator its timer steps through) and a scrape reports the latest
grouping; rates move once a day, so a grouping a few seconds old says the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from stream_guard.ops.monitoring.windows import COUNTS, RATES, DayCounts

OTHER = "other"


@dataclass(frozen=True)
class Snapshot:
    """What a tenant's last closed day showed: its windows, its event time, its latest graded review week."""

    trailing: DayCounts
    baseline: DayCounts
    watermark_ms: int | None
    review: tuple[int, int] | None = None  # (graded, wrong) of the most recent graded week


@dataclass(frozen=True)
class Group:
    """The snapshots of one `tenant` label summed: what its gauges show."""

    trailing: DayCounts
    baseline: DayCounts
    watermark_ms: int | None
    review: tuple[int, int] | None


class _Totals:
    """DayCounts summed in place (DayCounts.plus copies, and merges examples the gauges never show)."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(COUNTS, 0)
        self.latency: dict[int, int] = {}
        self.latency_sum_us = 0
        self.latency_max_ms = 0.0

    def add(self, c: DayCounts) -> None:
        for name in COUNTS:
            self.counts[name] += c.count(name)
        for bucket, n in c.latency.items():
            self.latency[bucket] = self.latency.get(bucket, 0) + n
        self.latency_sum_us += c.latency_sum_us
        self.latency_max_ms = max(self.latency_max_ms, c.latency_max_ms)

    def day_counts(self) -> DayCounts:
        return DayCounts(**self.counts, latency=self.latency, latency_sum_us=self.latency_sum_us,
                         latency_max_ms=self.latency_max_ms)


class _Grouping:
    def __init__(self) -> None:
        self.trailing, self.baseline = _Totals(), _Totals()
        self.watermark_ms: int | None = None
        self.review: tuple[int, int] | None = None

    def add(self, s: Snapshot) -> None:
        self.trailing.add(s.trailing)
        self.baseline.add(s.baseline)
        if s.watermark_ms is not None:
            self.watermark_ms = max(self.watermark_ms or s.watermark_ms, s.watermark_ms)
        if s.review is not None:
            graded, wrong = self.review or (0, 0)
            self.review = (graded + s.review[0], wrong + s.review[1])

    def group(self) -> Group:
        return Group(self.trailing.day_counts(), self.baseline.day_counts(), self.watermark_ms, self.review)


class TenantMetrics:
    def __init__(self, configured: Iterable[str], owned: Callable[[str], bool] = lambda tenant: True,
                 background: bool = False) -> None:
        """`background`: a scrape reports the grouping `regroup` last finished (the caller steps through it
        between its other work); otherwise every scrape groups afresh."""
        self.configured = frozenset(configured)
        self.owned = owned
        self.background = background
        self.snapshots: dict[str, Snapshot] = {}
        self.groups: dict[str, Group] = {}
        self.registry = CollectorRegistry(auto_describe=True)
        self.answers = Counter("stream_guard_tenant_answers", "answers the monitor received, by outcome",
                               ["tenant", "outcome"], registry=self.registry)
        self.alerts = Counter("stream_guard_tenant_alerts", "monitoring alerts sent, by rule and severity",
                              ["tenant", "rule", "severity"], registry=self.registry)
        self.registry.register(_Windows(self))

    def label(self, tenant: str) -> str:
        return tenant if tenant in self.configured else OTHER

    def update(self, tenant: str, snapshot: Snapshot) -> None:
        self.snapshots[tenant] = snapshot

    def counted(self, tenant: str, outcome: str, n: int = 1) -> None:
        self.answers.labels(self.label(tenant), outcome).inc(n)

    def alerted(self, tenant: str, rule: str, severity: str) -> None:
        self.alerts.labels(self.label(tenant), rule, severity).inc()

    def regroup(self, owned: Callable[[str], bool] | None = None, slice_size: int = 1000,
                forget: bool = True) -> Iterator[None]:
        """Sum the owned tenants' snapshots by label, yielding after every `slice_size` tenants; `groups` is
        replaced once all are summed. `owned` overrides the constructor's test for this pass; `forget` drops the
        snapshots of tenants not owned (the caller says False while a rebalance leaves ownership unsettled)."""
        owns = owned or self.owned
        groupings: dict[str, _Grouping] = {}
        moved: list[str] = []
        for n, (tenant, snapshot) in enumerate(list(self.snapshots.items()), 1):
            if owns(tenant):
                groupings.setdefault(self.label(tenant), _Grouping()).add(snapshot)
            else:
                moved.append(tenant)
            if n % slice_size == 0:
                yield
        self.groups = {label: grouping.group() for label, grouping in groupings.items()}
        # Forget the tenants whose partitions moved to another worker: kept, `snapshots` would grow with every
        # rebalance towards every tenant of the fleet (issue 17: flat memory), and the copy would be stale when a
        # partition came back; the owner snapshots a tenant afresh from its table on its next batch.
        for tenant in moved if forget else ():
            if not owns(tenant):
                self.snapshots.pop(tenant, None)

    def text(self) -> str:
        if not self.background:
            for _ in self.regroup():
                pass
        return generate_latest(self.registry).decode()


class _Windows:
    """Collects the gauges at scrape time from the owned tenants' snapshots."""

    def __init__(self, metrics: TenantMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        rate = GaugeMetricFamily("stream_guard_tenant_rate", "a monitored rate over the trailing or baseline window",
                                 labels=["tenant", "rate", "window"])
        denominator = GaugeMetricFamily("stream_guard_tenant_rate_denominator",
                                        "claims, citations or answers behind a rate, per window",
                                        labels=["tenant", "rate", "window"])
        latency = GaugeMetricFamily("stream_guard_tenant_check_latency_ms",
                                    "check latency per answer over the trailing window",
                                    labels=["tenant", "quantile"])
        event_time = GaugeMetricFamily("stream_guard_tenant_event_time_seconds",
                                       "latest event time (produced_at) seen for the tenant", labels=["tenant"])
        graded = GaugeMetricFamily("stream_guard_tenant_review_graded",
                                   "graded answers of the latest graded weekly review sample", labels=["tenant"])
        wrong = GaugeMetricFamily("stream_guard_tenant_review_wrong",
                                  "answers judged wrong in the latest graded weekly review sample", labels=["tenant"])
        for label, group in sorted(self.metrics.groups.items()):
            trailing, baseline = group.trailing, group.baseline
            for name, (_, den) in RATES.items():
                for window, counts in (("trailing", trailing), ("baseline", baseline)):
                    value = counts.rate(name)
                    if value is not None:
                        rate.add_metric([label, name, window], value)
                    denominator.add_metric([label, name, window], counts.count(den))
            h = trailing.histogram()
            for q in (0.5, 0.95):
                value = h.quantile(q)
                if value is not None:
                    latency.add_metric([label, str(q)], value)
            if group.watermark_ms is not None:
                event_time.add_metric([label], group.watermark_ms / 1000.0)
            if group.review is not None:
                graded.add_metric([label], group.review[0])
                wrong.add_metric([label], group.review[1])
        yield from (rate, denominator, latency, event_time, graded, wrong)
