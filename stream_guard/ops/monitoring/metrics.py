"""Per-tenant monitoring metrics in Prometheus' text format (prometheus_client, a registry of our own).

Label sets stay bounded whatever the traffic: the `tenant` label is one of the tenants named in the
`[monitor.tenants]` table, or "other" for all the rest together (their counts summed before rates are
taken). Rates are those of the last closed day's windows, so they move once a day per tenant, as the alert
rules do. A worker reports the tenants whose partitions it owns now; Prometheus sums or maxes across
workers (deploy/prometheus/stream-guard-rules.yaml).

The sums are kept as tenants change (a tenant's new snapshot replaces its old one in its label's totals), so
a scrape costs what it costs with one tenant, and no pass over every tenant runs while the worker works: with
100,000 tenants, summing them all every few seconds took a core's second each time (issue 17). A label's
maxima (latest event time, largest latency) cannot be taken back by subtraction: when the tenant holding one
goes lower or away, the label's maximum is found again over its tenants at the next scrape (a tenant's event
time only rises and its largest latency falls once a day at most, so that is rare).

The garbage collector sees none of it per tenant: a snapshot holds numbers only, in a Struct it does not track
(`gc=False`: it can never be part of a reference cycle), and the indexes are dicts of strings and numbers, which
it does not track either. A worker keeps one snapshot per tenant it owns: with 100,000 tenants, tracked objects
made every full collection walk them all, stopping the event loop for a second every 15-20 s.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import msgspec
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from stream_guard.ops.monitoring.windows import COUNTS, RATES, DayCounts

OTHER = "other"


class Window(msgspec.Struct, frozen=True, gc=False):
    """The part of a window's DayCounts the gauges show: counts in COUNTS order, latency buckets (a dict of
    ints, which the garbage collector does not track either), their sum and maximum."""

    counts: tuple[int, ...]
    latency: dict[int, int]
    latency_sum_us: int
    latency_max_ms: float

    @classmethod
    def of(cls, c: DayCounts) -> "Window":
        return cls(tuple(c.count(name) for name in COUNTS), dict(c.latency), c.latency_sum_us, c.latency_max_ms)


class Snapshot(msgspec.Struct, frozen=True, gc=False):
    """What a tenant's last closed day showed: its windows, its event time, its latest graded review week."""

    trailing: Window
    baseline: Window
    watermark_ms: int | None
    review: tuple[int, int] | None = None  # (graded, wrong) of the most recent graded week

    @classmethod
    def of(cls, trailing: DayCounts, baseline: DayCounts, watermark_ms: int | None,
           review: tuple[int, int] | None = None) -> "Snapshot":
        return cls(Window.of(trailing), Window.of(baseline), watermark_ms, review)


class _Sums:
    """Windows summed in place: added, and taken back when a tenant's snapshot is replaced or leaves."""

    def __init__(self) -> None:
        self.counts = [0] * len(COUNTS)
        self.latency: dict[int, int] = {}
        self.latency_sum_us = 0

    def add(self, w: Window, sign: int) -> None:
        for i, n in enumerate(w.counts):
            self.counts[i] += sign * n
        for bucket, n in w.latency.items():
            left = self.latency.get(bucket, 0) + sign * n
            if left:
                self.latency[bucket] = left
            else:
                self.latency.pop(bucket, None)
        self.latency_sum_us += sign * w.latency_sum_us

    def day_counts(self, latency_max_ms: float) -> DayCounts:
        return DayCounts(**dict(zip(COUNTS, self.counts)), latency=dict(self.latency),
                         latency_sum_us=self.latency_sum_us, latency_max_ms=latency_max_ms)


def _maxima(s: Snapshot) -> tuple[float | None, float, float]:
    """What a label shows the maximum of: event time, and the largest latency of each window."""
    return s.watermark_ms, s.trailing.latency_max_ms, s.baseline.latency_max_ms


class _Label:
    """One `tenant` label's sums over the snapshots counted in it, and its maxima (an upper bound while
    `stale`: the snapshot holding one left)."""

    def __init__(self) -> None:
        self.tenants = 0
        self.trailing, self.baseline = _Sums(), _Sums()
        self.graded = self.wrong = self.reviewed = 0  # `reviewed`: tenants with a graded week
        self.maxima: list[float | None] = [None, None, None]  # per _maxima
        self.stale = [False, False, False]

    def add(self, s: Snapshot, sign: int) -> None:
        self.tenants += sign
        self.trailing.add(s.trailing, sign)
        self.baseline.add(s.baseline, sign)
        if s.review is not None:
            self.reviewed += sign
            self.graded += sign * s.review[0]
            self.wrong += sign * s.review[1]
        for i, value in enumerate(_maxima(s)):
            top = self.maxima[i]
            if value is None or top is None and sign < 0:
                continue
            if sign > 0 and (top is None or value >= top):  # at or above the bound: the maximum, stale or not
                self.maxima[i], self.stale[i] = value, False
            elif sign < 0 and top is not None and value >= top:
                self.stale[i] = True


class Group(msgspec.Struct, frozen=True):
    """The snapshots of one `tenant` label summed: what its gauges show."""

    trailing: DayCounts
    baseline: DayCounts
    watermark_ms: int | None
    review: tuple[int, int] | None


class TenantMetrics:
    def __init__(self, configured: Iterable[str]) -> None:
        self.configured = frozenset(configured)
        self.snapshots: dict[str, Snapshot] = {}
        self._partition: dict[str, int] = {}  # tenant -> its monitor partition
        self._members: dict[int, dict[str, None]] = {}  # partition -> its tenants with a snapshot
        self._counted: set[int] = set()  # partitions whose tenants belong in the labels' sums
        self._in_sums: dict[str, None] = {}  # tenants whose snapshot is in them now (a dict: untracked)
        self._owned: frozenset[int] | None = None  # None until told: every partition counts
        self._labels: dict[str, _Label] = {}
        self.registry = CollectorRegistry(auto_describe=True)
        self.answers = Counter("stream_guard_tenant_answers", "answers the monitor received, by outcome",
                               ["tenant", "outcome"], registry=self.registry)
        self.alerts = Counter("stream_guard_tenant_alerts", "monitoring alerts sent, by rule and severity",
                              ["tenant", "rule", "severity"], registry=self.registry)
        self.registry.register(_Windows(self))

    def label(self, tenant: str) -> str:
        return tenant if tenant in self.configured else OTHER

    def update(self, tenant: str, snapshot: Snapshot, partition: int = 0) -> None:
        """A tenant's new snapshot replaces its old one (in the sums, if its partition is owned)."""
        old = self.snapshots.pop(tenant, None)
        if old is not None:
            self._members[self._partition.pop(tenant)].pop(tenant, None)
        self._count(tenant, old, False)
        self.snapshots[tenant] = snapshot
        self._partition[tenant] = partition
        self._members.setdefault(partition, {})[tenant] = None
        if self._owned is None or partition in self._owned:
            self._counted.add(partition)
        self._count(tenant, snapshot, partition in self._counted)

    def _count(self, tenant: str, snapshot: Snapshot | None, counted: bool) -> None:
        """Put a tenant's snapshot into its label's sums, or take it out (whichever it is not yet)."""
        if snapshot is None or counted == (tenant in self._in_sums):
            return
        if counted:
            self._in_sums[tenant] = None
        else:
            del self._in_sums[tenant]
        self._sums(tenant).add(snapshot, +1 if counted else -1)

    def _sums(self, tenant: str) -> _Label:
        label = self.label(tenant)
        sums = self._labels.get(label)
        if sums is None:
            sums = self._labels[label] = _Label()
        return sums

    def counted(self, tenant: str, outcome: str, n: int = 1) -> None:
        self.answers.labels(self.label(tenant), outcome).inc(n)

    def alerted(self, tenant: str, rule: str, severity: str) -> None:
        self.alerts.labels(self.label(tenant), rule, severity).inc()

    def keep_partitions(self, owned: Iterable[int], forget: bool = True, slice_size: int = 1000) -> Iterator[None]:
        """Count the tenants of the `owned` partitions only, yielding after every `slice_size` tenants moved in
        or out of the sums; costs nothing when nothing moved. `forget` drops the snapshots of the others (the
        caller says False while a rebalance leaves ownership unsettled): kept, they would grow with every
        rebalance towards every tenant of the fleet (issue 17: flat memory), and be stale when a partition came
        back; the owner snapshots a tenant afresh from its table on its next batch."""
        self._owned = frozenset(owned)
        moved = 0
        for partition in list(self._members):
            keep = partition in self._owned
            if keep != (partition in self._counted):
                (self._counted.add if keep else self._counted.discard)(partition)
                for tenant in list(self._members.get(partition, ())):
                    if self._partition.get(tenant) == partition:  # else updated meanwhile, and counted as it is
                        self._count(tenant, self.snapshots[tenant], keep)
                    moved += 1
                    if moved % slice_size == 0:
                        yield
            if forget and partition not in self._counted:
                for tenant in list(self._members.pop(partition, ())):
                    if self._partition.get(tenant) == partition:
                        self._count(tenant, self.snapshots[tenant], False)
                        del self.snapshots[tenant], self._partition[tenant]
                    moved += 1
                    if moved % slice_size == 0:
                        yield

    def _top(self, name: str, sums: _Label, which: int) -> float | None:
        """A label's maximum, found again over its counted tenants when the one holding it went lower or away."""
        if sums.stale[which]:
            values = (_maxima(self.snapshots[t])[which] for t in self._in_sums if self.label(t) == name)
            sums.maxima[which] = max((v for v in values if v is not None), default=None)
            sums.stale[which] = False
        return sums.maxima[which]

    @property
    def groups(self) -> dict[str, Group]:
        out = {}
        for name, sums in self._labels.items():
            if sums.tenants:
                watermark = self._top(name, sums, 0)
                out[name] = Group(sums.trailing.day_counts(self._top(name, sums, 1) or 0.0),
                                  sums.baseline.day_counts(self._top(name, sums, 2) or 0.0),
                                  None if watermark is None else int(watermark),
                                  (sums.graded, sums.wrong) if sums.reviewed else None)
        return out

    def text(self) -> str:
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
