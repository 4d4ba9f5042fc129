"""Per-tenant monitoring metrics in Prometheus' text format (prometheus_client, a registry of our own).

Label sets stay bounded whatever the traffic: the `tenant` label is one of the tenants named in the
`[monitor.tenants]` table, or "other" for all the rest together (their counts summed before rates are
taken). Rates are those of the last closed day's windows, so they move once a day per tenant, as the alert
rules do. A worker reports the tenants whose partitions it owns now; Prometheus sums or maxes across
workers (deploy/prometheus/stream-guard-rules.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from stream_guard.ops.monitoring.windows import RATES, DayCounts

OTHER = "other"


@dataclass(frozen=True)
class Snapshot:
    """What a tenant's last closed day showed: its windows, its event time, its latest graded review week."""

    trailing: DayCounts
    baseline: DayCounts
    watermark_ms: int | None
    review: tuple[int, int] | None = None  # (graded, wrong) of the most recent graded week


class TenantMetrics:
    def __init__(self, configured: Iterable[str], owned: Callable[[str], bool] = lambda tenant: True) -> None:
        self.configured = frozenset(configured)
        self.owned = owned
        self.snapshots: dict[str, Snapshot] = {}
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

    def grouped(self) -> dict[str, list[Snapshot]]:
        out: dict[str, list[Snapshot]] = {}
        for tenant, snapshot in list(self.snapshots.items()):
            if self.owned(tenant):
                out.setdefault(self.label(tenant), []).append(snapshot)
        return out

    def text(self) -> str:
        return generate_latest(self.registry).decode()


def _sum(counts: Iterable[DayCounts]) -> DayCounts:
    out = DayCounts()
    for c in counts:
        out = out.plus(c)
    return out


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
        for label, snapshots in sorted(self.metrics.grouped().items()):
            trailing = _sum(s.trailing for s in snapshots)
            baseline = _sum(s.baseline for s in snapshots)
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
            marks = [s.watermark_ms for s in snapshots if s.watermark_ms is not None]
            if marks:
                event_time.add_metric([label], max(marks) / 1000.0)
            reviews = [s.review for s in snapshots if s.review is not None]
            if reviews:
                graded.add_metric([label], sum(r[0] for r in reviews))
                wrong.add_metric([label], sum(r[1] for r in reviews))
        yield from (rate, denominator, latency, event_time, graded, wrong)
