"""Tenant monitoring on the stream: counts per tenant, alert rules, the review loop, the dashboard pages.

Verdicts are judged where their question's drift state lives (keyed by question hash), and one tenant's
questions are spread over every partition. So the judge hands each verdict's counts, a small record, to a
topic keyed by tenant, and the monitor agent keeps the tenant's windows in tables co-partitioned with it:
one worker owns a tenant's books, whatever the number of workers.

    judge ─ on_verdict ─► <app>-monitor-by-tenant ─► monitor agent ─► days / seen / state tables
              (counts, + review material              │               (RocksDB + changelog)
               for answers that may be sampled)       ├─► guard.alerts  (rate_shift, citation_mismatch_rate,
                                                      │                  review_failure_rate)
                                                      ├─► guard.review  (the weekly sample, as each week closes)
                                                      └─► <app>-labels-by-event ("sampled": event_id -> tenant, week)
    guard.labels ─► label-intake agent: validate (bad ─► guard.dlq), re-key by event_id ─► <app>-labels-by-event
    <app>-labels-by-event ─► label-join agent: review-index table; a grade for a sampled event ─► monitor-by-tenant

Records are applied by the pure ledger (stream_guard/ops/monitoring/ledger.py), which returns writes and
messages; this module sends the messages, waits for the broker, then writes the tables and acknowledges the
inputs (at least once; the ledger makes a replay a no-op). Pages: /monitor/... on the worker's web server.

The pages' defences (deploy/OPERATIONS.md, "Dashboard"): a page is served only under a Host the dashboard
answers to (`allowed_hosts`: DNS rebinding), a state-changing request (sign-in, sign-out) only from the
dashboard's own origin (the Origin header, else the Referer; never neither) besides the SameSite=Strict
cookie, sessions end at sign-out on every worker (`<app>-monitor-sessions`, ops/monitoring/sessions.py), and a
client is locked out after `login_max_failures` failures (the next attempt is refused, not the last failure).
The operator's all-tenants view is a page of small rows, worst first (ops/monitoring/overview.py), kept as
tenants change, so serving it never blocks the worker.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Protocol, Sequence
from urllib.parse import quote, urlsplit

import faust
import orjson
from faust.types import TP
from faust.types.transports import ProducerBufferT
from faust.web import View

from stream_guard.agents.faust_adapter import acting_for, partition_dbs, raw_schema, rocksdb_options
from stream_guard.agents.batching import greedy_batches
from stream_guard.agents.clients import OpenEnd, Reader
from stream_guard.agents.security import client_options
from stream_guard.agents.tenant_outbox import TenantOutbox
from stream_guard.agents.topics import internal_topic_configs, key_partition
from stream_guard.config.detector import Limits
from stream_guard.config.stream import StreamSettings
from stream_guard.wire.deadletter import Header, Source
from stream_guard.wire.events import EventError, decode_event
from stream_guard.wire.headers import alert_headers, output_headers
from stream_guard.engine.judging import Judged
from stream_guard.wire.labels import decode_label
from stream_guard.ops.latency import DAY_MS, ClockWindow, LatencyRegistry, e2e_origin
from stream_guard.ops.monitoring.access import OPERATOR, Access, Principal, cookie_value
from stream_guard.ops.monitoring.throttle import LoginThrottle
from stream_guard.ops.monitoring.dashboard import (login_page, message_page, operator_page, setup_page, tenant_page,
                                                   tenant_path, tenant_view)
from stream_guard.ops.monitoring.overview import Overview, decode_cursor, encode_cursor, merge_pages, row_of
from stream_guard.ops.monitoring.sessions import Revocations, read_revocation, revocation_record
from stream_guard.ops.monitoring.ledger import (DAYS, SEEN, STATE, Changes, Sample, TenantState, apply,
                                            closable_through, expired_seen, load_days, sample_key, state_key)
from stream_guard.ops.monitoring.metrics import Snapshot, TenantMetrics
from stream_guard.ops.monitoring.groups import records_of
from stream_guard.ops.monitoring.observation import observe
from stream_guard.ops.monitoring.progress import SourceProgress, horizon, merge
from stream_guard.ops.monitoring.review import REVIEW_VERSION, join, label_record, review_item
from stream_guard.ops.monitoring.rules import rate_windows
from stream_guard.ops.monitoring.sampling import CandidateFilter, sample_score
from stream_guard.config.monitor import MonitorSettings
from stream_guard.ops.monitoring.windows import DayCounts, Windows, day_of, week_of

log = logging.getLogger(__name__)

FORWARDED = "X-Stream-Guard-Forwarded"
SECURITY_HEADERS = {
    "Cache-Control": "no-store, max-age=0",
    "Pragma": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would make browsers send "Origin: null" on our own forms
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
}
TABLE_NAMES = {DAYS: "monitor-days", SEEN: "monitor-seen", STATE: "monitor-state"}
ALWAYS_ALLOWED_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# Tenants per slice when a worker indexes a partition it took over, or moves a partition's tenants in or out of
# the gauges' sums (then it yields to the stream): about 5 ms of work each, so /healthz waits no longer than that.
INDEX_SLICE = 100
# How often the gauges' sums are brought to the partitions this worker owns now (ops/monitoring/metrics.py).
METRICS_OWNERSHIP_S = 5.0
# Most records the monitor agent applies at once (MonitorSettings.flush_ms bounds how long it gathers them): a
# record is a few hundred bytes, a sampled one up to review_max_context_chars more.
FLUSH_MAX_RECORDS = 1000
# The key of the progress reports on the by-tenant topic (tenants' records are keyed by tenant).
PROGRESS_KEY = b"progress"
# Most bytes of observation records the judging side gathers for one flush (tenant_outbox.py): far above a
# flush's worth at hundreds of answers a second (a record is about 300 bytes), far below a broker's largest
# message (1 MiB by default).
GROUP_MAX_BYTES = 256 * 1024


def sessions_topic(app_id: str) -> str:
    """Where sign-outs are written for every worker (agents/topics.py creates it)."""
    return f"{app_id}-monitor-sessions"


def host_name(host_header: str) -> str:
    """The name in a Host (or Origin netloc) value, without its port; IPv6 literals without brackets."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_allowed(host_header: str, allowed: frozenset[str]) -> bool:
    """Whether a Host header names a host the dashboard answers to ('.example.com': it and its subdomains)."""
    if "*" in allowed:
        return True
    name = host_name(host_header)
    if not name:
        return False
    return name in allowed or any(entry.startswith(".") and (name == entry[1:] or name.endswith(entry))
                                  for entry in allowed)


async def ebb(buffer: ProducerBufferT) -> None:
    """Wait until the producer buffer is back under its mark, as Faust's `wait_until_ebb` does, but without its
    "producer buffer full" warning: a slice of tenants fills the buffer by design, so the wait is expected, not a
    fault to log (at 100,000 tenants a day closing logged it about a thousand times)."""
    if buffer.size > buffer.max_messages:
        await buffer.flush_atmost(buffer.max_messages)


def flushes(stream: faust.StreamT, settings: MonitorSettings) -> AsyncIterator[list[faust.EventT]]:
    """The monitor agent's records, `flush_ms` (or FLUSH_MAX_RECORDS, if sooner) of them at a time from the first
    one's arrival: each tenant's state is then read, written and changelogged once per flush, not once per answer.
    The agent acknowledges records only once they are applied and written, so a crash while they wait loses
    nothing: they are redelivered, and the ledger counts an answer once however often it comes. A progress report
    ends the wait: it may close days (and, on a worker that just took partitions over, puts their tenants on the
    operator's overview), which should not wait for more answers."""
    return greedy_batches(stream, FLUSH_MAX_RECORDS, settings.flush_ms / 1000.0, urgent=is_progress)


def is_progress(event: faust.EventT) -> bool:
    """A progress report (_report_progress sends them keyed so), not a tenant's record."""
    return event.message.key == PROGRESS_KEY


class _EventStore:
    """Ledger reads through the tables, in the partition of the event being processed (see acting_for)."""

    def __init__(self, tables: Mapping[str, faust.Table]) -> None:
        self.tables = tables

    def get(self, table: str, key: bytes) -> bytes | None:
        return self.tables[table].get(key)


class _PartitionStore:
    """Reads for the pages, which have no event: straight from the partition's RocksDB
    (faust_adapter.partition_dbs)."""

    def __init__(self, tables: Mapping[str, faust.Table], partition: int) -> None:
        self.dbs = {name: partition_dbs(table).get(partition) for name, table in tables.items()}

    @property
    def ready(self) -> bool:
        return all(db is not None for db in self.dbs.values())

    def get(self, table: str, key: bytes) -> bytes | None:
        db = self.dbs[table]
        return db.get(key) if db is not None else None


def review_headers(record: bytes) -> list[tuple[str, bytes]]:
    """A review record's headers: what it is and which event it samples (records are weekly: parsing is cheap)."""
    try:
        event_id = orjson.loads(record).get("event_id")
    except (orjson.JSONDecodeError, AttributeError):
        event_id = None
    return output_headers("review", REVIEW_VERSION, event_id if isinstance(event_id, str) else None)


class Host(Protocol):
    """What the monitor uses of the worker's service (agents/app.py, GuardService): its app, settings and
    measurements, and its sends. A protocol, so that the service can build the monitor without the two modules
    importing each other."""

    settings: StreamSettings
    app: faust.App
    limits: Limits
    registry: LatencyRegistry

    def source_of(self, message: Any) -> Source: ...

    async def send(self, topic: str, key: bytes | None, value: bytes | None,
                   headers: Sequence[Header] | Mapping[str, bytes] | None = None,
                   partition: int | None = None) -> asyncio.Future[Any]: ...

    async def dead_letter(self, message: Any, *, field_: str, reason: str, stage: str) -> asyncio.Future[Any]: ...

    async def refresh_lag(self) -> set[tuple[str, int]]: ...


@dataclass
class Monitor:
    service: Host
    settings: MonitorSettings

    def __post_init__(self) -> None:
        s = self.service.settings
        app = self.service.app
        self.app = app
        self.partitions = s.partitions
        self.by_tenant_topic = f"{s.app_id}-monitor-by-tenant"
        self.by_event_topic = f"{s.app_id}-labels-by-event"
        # Internal topics: Faust creates them (with these partition counts and the re-keyed topic's retention)
        # before its consumer subscribes; each is co-partitioned with the tables its agent keeps.
        internal = {"internal": True, "partitions": s.partitions,
                    "config": internal_topic_configs(s.repartition_retention_ms)}
        self.by_tenant = app.topic(self.by_tenant_topic, schema=raw_schema(), **internal)
        self.by_event = app.topic(self.by_event_topic, schema=raw_schema(), **internal)
        self.labels_in = app.topic(s.topics.labels, schema=raw_schema())
        self.tables = {name: app.Table(table, partitions=s.partitions, key_type=bytes, value_type=bytes,
                                       options=rocksdb_options(s), help=f"tenant monitoring: {name}")
                       for name, table in TABLE_NAMES.items()}
        self.index = app.Table("review-index", partitions=s.partitions, key_type=bytes, value_type=bytes,
                               options=rocksdb_options(s), help="sampled event_id -> tenant and week")
        self.candidates = CandidateFilter()
        self.overview = Overview()
        self._indexed: set[int] = set()  # monitor partitions whose tenants are all in the overview
        self.revocations = Revocations()
        self.sessions_topic = sessions_topic(s.app_id)
        self.allowed_hosts = frozenset({*ALWAYS_ALLOWED_HOSTS, *(h.lower() for h in self.settings.allowed_hosts),
                                        *(host_name(h) for h in (s.web_host, s.advertised_host)
                                          if h and h not in ("0.0.0.0", "::"))})
        # An answer's day: its produced_at, else its Kafka timestamp, within the days the monitor keeps and no
        # further ahead than max_future_minutes (a 2005 clock must not open a day in 2005).
        self.clocks = ClockWindow(self.settings.retention_days * DAY_MS, self.settings.max_future_ms)
        self.access = Access(self.settings)
        self.throttle = LoginThrottle(self.settings.login_max_failures, self.settings.login_lockout_minutes * 60)
        self.metrics = TenantMetrics(self.settings.tenants)
        self.counters: Counter[str] = Counter()
        self._snapshot_days: dict[str, int | None] = {}
        # Event-time progress (progress.py). Judging side: latest event time judged per partition, and which
        # partitions judged anything since the last report. Monitor side: the reports, per monitor partition.
        self.judged_until: dict[int, int] = {}
        self.judged_since_report: set[int] = set()
        self.reports: dict[int, dict[int, SourceProgress]] = {}
        self._reported: dict[int, tuple[int | None, bool]] = {}
        self._reported_at: dict[int, int] = {}
        self._closed_by_horizon: dict[int, float] = {}
        # Observations go one record per tenant per flush; with flush_ms = 0, one record per answer, the shape
        # monitors of every version read (for a rolling upgrade from a version before groups: groups.py).
        self.outbox = (TenantOutbox(self._send_group, self.settings.flush_ms / 1000.0, GROUP_MAX_BYTES)
                       if self.settings.flush_ms > 0 else None)
        app.agent(self.by_tenant, name="monitor")(self._monitor)
        app.agent(self.labels_in, name="label-intake")(self._label_intake)
        app.agent(self.by_event, name="label-join")(self._label_join)
        app.timer(s.alert_prune_interval_s, name="prune-monitor-seen")(self._sweep_seen)
        app.timer(s.metrics_interval_s, name="report-monitor-progress")(self._report_progress)
        app.timer(2.0, name="index-monitor-overview")(self._index_overview)
        app.timer(METRICS_OWNERSHIP_S, name="own-monitor-metrics")(self._own_metrics)
        app.task(self._read_revocations)
        if not self.settings.session_secret and self.access.configured:
            log.warning("monitor: no STREAM_GUARD_MONITOR_SESSION_SECRET: dashboard sessions last until this worker "
                        "restarts and work on this worker only")

    # --- the judge's hook ------------------------------------------------------------------------------------

    async def on_verdict(self, item: Judged, message: Any) -> list[asyncio.Future[Any]]:
        """Gather the counts of one judged verdict for its tenant's monitor; returns what to wait for before the
        input is acknowledged (its flush's sends). Never raises: monitoring must not cost a verdict."""
        try:
            verdict = orjson.loads(item.verdict or b"{}")
            # The event's day: its produced_at, else its Kafka timestamp, each only if plausible (a producer's
            # clock at zero, or seconds sent as milliseconds, must not open a day in 1970).
            produced = verdict.get("produced_at_ms")
            at_ms, _ = e2e_origin(produced if isinstance(produced, int) and not isinstance(produced, bool) else None,
                                  self.service.source_of(message).timestamp_ms, time.time() * 1000.0, self.clocks)
            obs = observe({**verdict, "produced_at_ms": at_ms})
            record = obs.to_record()
            if obs.at_ms is not None and obs.at_ms >= 0:
                self.judged_until[message.partition] = max(obs.at_ms, self.judged_until.get(message.partition, 0))
                self.judged_since_report.add(message.partition)
                week = week_of(day_of(obs.at_ms))
                score = sample_score(self.settings.review_salt, obs.tenant, week, obs.event_id)
                if self.candidates.offer(obs.tenant, week, score, obs.event_id, self.settings.sample_size_for(obs.tenant)):
                    event = decode_event(message.value, self.service.limits)
                    record["review"] = review_item(verdict, event.context, week, self.settings.review_max_context_chars)
            value = orjson.dumps(record)
            if self.outbox is not None:
                return [self.outbox.add(obs.tenant, value)]
            return [await self.service.send(self.by_tenant_topic, obs.tenant.encode(), value)]
        except Exception:
            self.counters["observe_failed"] += 1
            log.exception("monitor: could not observe a verdict")
            return []

    async def _send_group(self, tenant: bytes, value: bytes) -> asyncio.Future[Any]:
        return await self.service.send(self.by_tenant_topic, tenant, value)

    async def _report_progress(self) -> None:
        """Tell every monitor partition how far event time has got on each judging partition this worker owns
        (progress.py). A partition is idle when nothing waits on it or on the input topic that feeds it, and
        it judged nothing since the last report."""
        s = self.service.settings
        try:
            await self.service.refresh_lag()
        except Exception:  # a rebalance in progress: report next time
            return
        lag = self.service.registry.lag
        answers_busy = any(n > 0 for (topic, _), n in lag.items() if topic == s.topics.answers)
        owned = sorted(tp.partition for tp in self.app.consumer.assignment() if tp.topic == s.by_question_topic)
        now = int(time.time() * 1000)
        reports = []
        for source in owned:
            idle = (not answers_busy and lag.get((s.by_question_topic, source)) == 0
                    and source not in self.judged_since_report)
            state = (self.judged_until.get(source), idle)
            if self._reported.get(source) == state and now - self._reported_at.get(source, 0) < 60_000:
                continue  # nothing new: re-sent once a minute, so that a restarted monitor learns it again
            self._reported[source], self._reported_at[source] = state, now
            reports.append(orjson.dumps(SourceProgress(*state, now).to_record(source)))
        self.judged_since_report.clear()
        if self.outbox is not None and reports:
            # A report vouches for every answer judged before it: their gathered counts go first, so that on each
            # partition the monitor reads them before the report (one producer keeps a partition's order).
            await self.outbox.flush()
        pending = []
        for record in reports:
            for partition in range(self._partitions(self.by_tenant_topic)):
                pending.append(await self.service.send(self.by_tenant_topic, PROGRESS_KEY, record, None, partition))
        await asyncio.gather(*pending)

    # --- the monitor agent -----------------------------------------------------------------------------------

    async def _tenants_on(self, partition: int) -> list[str]:
        return list(await self._first_days(_PartitionStore(self.tables, partition).dbs[STATE]))

    async def _horizons(self, anchors: Mapping[int, faust.EventT],
                        groups: dict[str, tuple[faust.EventT, list[dict[str, Any]]]]) -> dict[int, float]:
        """Each monitor partition's horizon; when a partition's horizon closes another day, every tenant on it
        gets a (possibly empty) batch, so that its days close even if it has no traffic of its own now."""
        sources = self._partitions(self.service.settings.by_question_topic)
        out = {}
        for partition in {a.message.partition for a, _ in groups.values()} | set(anchors):
            reached = horizon(self.reports.get(partition, {}), sources)
            out[partition] = reached
            closes = closable_through(int(reached), self.settings.lateness_ms) if math.isfinite(reached) else reached
            if partition in anchors and closes != self._closed_by_horizon.get(partition):
                self._closed_by_horizon[partition] = closes
                for tenant in await self._tenants_on(partition):
                    groups.setdefault(tenant, (anchors[partition], []))
        return out

    async def _monitor(self, stream: faust.StreamT) -> None:
        stream = stream.noack()
        async for events in flushes(stream, self.settings):
            groups: dict[str, tuple[faust.EventT, list[dict[str, Any]]]] = {}
            anchors: dict[int, faust.EventT] = {}  # monitor partitions that got progress reports
            for event in events:
                try:
                    record = orjson.loads(event.message.value)
                    if record.get("type") == "progress":
                        merge(self.reports.setdefault(event.message.partition, {}), int(record["source"]),
                              SourceProgress.from_record(record))
                        anchors[event.message.partition] = event
                        continue
                    tenant = record["tenant"]
                    assert isinstance(tenant, str)
                    records, unreadable = records_of(record)  # a group of answers, or one record
                except Exception:  # our own topic: only a bug or a foreign producer writes this
                    self.counters["unreadable_record"] += 1
                    continue
                if unreadable:
                    self.counters["unreadable_record"] += unreadable
                groups.setdefault(tenant, (event, []))[1].extend(records)
            try:
                horizons = await self._horizons(anchors, groups)
            except Exception:  # never stop the worker over monitoring: close nothing this time
                log.exception("monitor: could not compute event-time horizons")
                horizons = {}
            now = int(time.time() * 1000)
            # A slice of tenants at a time, each applied, sent and written before the next: a day closing gives
            # every tenant of a partition a batch, and holding every tenant's changes at once (10,000 tenants:
            # about 130,000 objects the collector tracks) made each full collection take about 100 ms of CPU
            # while the pages of the dashboard were served.
            # Between slices, wait for the producer buffer to drain below its mark, as Faust does before each
            # message it hands to an agent: otherwise a day closing queues every tenant's changelog records in it.
            tenants = list(groups.items())
            for start in range(0, len(tenants), INDEX_SLICE):
                if start:
                    await ebb(self.app.producer.buffer)
                    await asyncio.sleep(0)
                await self._apply_slice(tenants[start:start + INDEX_SLICE], now, horizons)
            for event in events:
                await stream.ack(event)

    async def _apply_slice(self, tenants: list[tuple[str, tuple[faust.EventT, list[dict[str, Any]]]]], now: int,
                           horizons: Mapping[int, float]) -> None:
        """Apply some tenants' records, send what they produce (alerts, review items, sampled events), then write
        their state once the sends are done."""
        applied: list[tuple[str, faust.EventT, Changes]] = []
        for tenant, (anchor, records) in tenants:
            try:
                with acting_for(anchor):
                    changes = apply(_EventStore(self.tables), tenant, records, self.settings, now,
                                    horizons.get(anchor.message.partition, -math.inf))
            except Exception:  # a bug must cost these records' counts, never the worker's judging
                self.counters["apply_failed"] += len(records)
                log.exception("monitor: could not apply %d records of a tenant", len(records))
                continue
            applied.append((tenant, anchor, changes))
        pending = []
        for tenant, _, changes in applied:
            pending += [await self.service.send(self.service.settings.topics.alerts, a.key.encode(), a.to_json(),
                                                 alert_headers(a))
                        for a in changes.alerts]
            pending += [await self.service.send(self.service.settings.topics.review, tenant.encode(), r,
                                                 review_headers(r))
                        for r in changes.reviews]
            pending += [await self.service.send(self.by_event_topic, event_id.encode(), r)
                        for event_id, r in changes.sampled]
        await asyncio.gather(*pending)
        for tenant, anchor, changes in applied:
            with acting_for(anchor):
                self._write(self.tables, changes.puts)
                try:
                    self._book(tenant, changes)
                except Exception:  # metrics only
                    log.exception("monitor: could not update the metrics of a tenant")

    @staticmethod
    def _write(tables: Mapping[str, faust.Table], puts: Mapping[tuple[str, bytes], bytes | None]) -> None:
        for (name, key), value in puts.items():
            if value is None:
                if key in tables[name]:
                    del tables[name][key]
            else:
                tables[name][key] = value

    def _book(self, tenant: str, changes: Changes) -> None:
        """Metrics after a tenant's batch; the windows snapshot only when a day closed (or none is known)."""
        for outcome, n in changes.counters.items():
            if outcome in ("counted", "duplicate", "late", "late_for_sample") or outcome.startswith("skipped_"):
                self.metrics.counted(tenant, outcome, n)
        for alert in changes.alerts:
            self.metrics.alerted(tenant, alert.kind, alert.severity)
        state = TenantState.load(changes.puts.get((STATE, state_key(tenant))))
        partition = self.tenant_partition(tenant)
        if (STATE, state_key(tenant)) in changes.puts:
            self.overview.put(row_of(tenant, state), partition)
        if (tenant not in self.metrics.snapshots or changes.counters["graded"]
                or self._snapshot_days.get(tenant) != state.rates_day):
            self._snapshot_days[tenant] = state.rates_day
            self.metrics.update(tenant, self._snapshot(_EventStore(self.tables), tenant), partition)

    def _snapshot(self, store: Any, tenant: str) -> Snapshot:
        state = TenantState.load(store.get(STATE, state_key(tenant)))
        rules = self.settings.rules_for(tenant)
        if state.rates_day is None:
            return Snapshot.of(DayCounts(), DayCounts(), state.watermark_ms)
        windows = Windows(state.rates_day, rules.trailing_days, rules.baseline_days)
        days = load_days(store, tenant, windows.first_day, state.rates_day)
        trailing, baseline, _ = rate_windows(days, windows)
        review = None
        for week in range(week_of(state.rates_day), week_of(state.rates_day) - 3, -1):
            raw = store.get(STATE, sample_key(tenant, week))
            sample = Sample.load(raw, self.settings.sample_size_for(tenant)) if raw else None
            if sample is not None and sample.grades:
                review = (len(sample.grades), len(sample.wrong))
                break
        return Snapshot.of(trailing, baseline, state.watermark_ms, review)

    # --- the label agents ------------------------------------------------------------------------------------

    async def _label_intake(self, stream: faust.StreamT) -> None:
        """Grades in (guard.labels): validate (a bad one is dead-lettered) and re-key by event_id."""
        stream = stream.noack()
        async for events in greedy_batches(stream, self.service.settings.batch_max, 0.0):
            await asyncio.gather(*[await self._intake_label(event.message) for event in events])
            for event in events:
                await stream.ack(event)

    async def _label_join(self, stream: faust.StreamT) -> None:
        """Re-keyed grades and "sampled" records: join them in the review index (keyed by event_id) and send
        each grade on to its tenant's monitor."""
        stream = stream.noack()
        async for events in greedy_batches(stream, self.service.settings.batch_max, 0.0):
            pending: list[asyncio.Future[Any]] = []
            writes: list[tuple[faust.EventT, bytes, bytes]] = []
            overlay: dict[bytes, bytes] = {}
            for event in events:
                try:
                    record = orjson.loads(event.message.value)
                    key = str(record["event_id"]).encode()
                except Exception:
                    self.counters["unreadable_record"] += 1
                    continue
                if key in overlay:
                    index = overlay[key]
                else:
                    with acting_for(event):
                        index = self.index.get(key)
                value, grade = join(index, record)
                if grade is not None:
                    self.counters["grades_joined"] += 1
                    pending.append(await self.service.send(self.by_tenant_topic, grade["tenant"].encode(),
                                                            orjson.dumps(grade)))
                elif record.get("type") == "label":
                    self.counters["labels_unmatched"] += 1
                if value is not None:
                    overlay[key] = value
                    writes.append((event, key, value))
            await asyncio.gather(*pending)
            for event, key, value in writes:
                with acting_for(event):
                    self.index[key] = value
            for event in events:
                await stream.ack(event)

    async def _intake_label(self, message: Any) -> asyncio.Future[Any]:
        try:
            label = decode_label(message.value if isinstance(message.value, bytes) else b"")
        except EventError as exc:
            return await self.service.dead_letter(message, field_=exc.field, reason=exc.reason, stage="label")
        key = label.event_id.encode()
        return await self.service.send(self.by_event_topic, key, label_record(label), None,
                                        key_partition(key, self._partitions(self.by_event_topic)))

    def _partitions(self, topic: str) -> int:
        return self.app.consumer.topic_partitions(topic) or self.partitions

    # --- upkeep ----------------------------------------------------------------------------------------------

    def _active(self, table: faust.Table) -> set[int]:
        topic = table.changelog_topic_name
        return {tp.partition for tp in self.app.assignor.assigned_actives() if tp.topic == topic}

    async def _sweep_seen(self) -> None:
        """Delete the seen-records of days past each tenant's retention, with changelog tombstones, a thousand
        at a time (yielding to the stream in between). Keys start with their day, so each partition's expired
        records are its first keys (ledger.expired_seen)."""
        seen = self.tables[SEEN]
        for partition in sorted(self._active(seen) & self._active(self.tables[STATE])):
            store = _PartitionStore(self.tables, partition)
            db = store.dbs[SEEN]
            if not store.ready or db is None:
                continue
            expired = expired_seen(db.keys(), await self._first_days(store.dbs[STATE]))
            while chunk := list(itertools.islice(expired, 1000)):
                for key in chunk:
                    db.delete(key)
                    seen.send_changelog(partition, key, None)
                self.counters["seen_pruned"] += len(chunk)
                await asyncio.sleep(0)

    async def _index_overview(self) -> None:
        """Keep the overview to the partitions this worker owns: forget the tenants of partitions that moved
        away, and read those of partitions it took over, a slice at a time (yielding to the stream between)."""
        active = self._active(self.tables[STATE])
        self.overview.keep_partitions(active)
        self._indexed &= active
        for partition in sorted(active - self._indexed):
            db = _PartitionStore(self.tables, partition).dbs[STATE]
            if db is None:
                continue
            complete = True
            for n, (key, value) in enumerate(db.items(from_key=b"t"), 1):
                if not key.startswith(b"t"):
                    break  # past the tenants' states
                tenant = str(orjson.loads(key[1:])[0])
                # A tenant updated by a batch meanwhile has a newer row than this read: keep that one.
                self.overview.put(row_of(tenant, TenantState.load(value)), partition, only_new=True)
                if n % INDEX_SLICE == 0:
                    await asyncio.sleep(0)
                    if partition not in self._active(self.tables[STATE]):
                        complete = False
                        break
            if complete:
                self._indexed.add(partition)

    async def _own_metrics(self) -> None:
        """Keep the per-tenant gauges' sums to the partitions this worker owns (metrics.py keeps them as tenants
        change; this moves only the tenants of partitions that came or went), yielding to the stream between
        slices."""
        actives = self._active(self.tables[STATE])
        for _ in self.metrics.keep_partitions(actives, forget=bool(actives) and not self.app.rebalancing,
                                              slice_size=INDEX_SLICE):
            await asyncio.sleep(0)
        if len(self._snapshot_days) > len(self.metrics.snapshots):  # keep_partitions forgot tenants that moved away
            self._snapshot_days = {t: d for t, d in self._snapshot_days.items() if t in self.metrics.snapshots}

    async def _read_revocations(self) -> None:
        """Every sign-out on any worker, from the sessions topic's beginning (sessions.py); until they are all
        read, cookie sessions are refused."""
        s = self.service.settings
        while True:
            reader = None
            try:
                reader = await Reader(s.broker or "", [self.sessions_topic], from_beginning=True,
                                      options=client_options(s)).start()
                consumer = reader.consumer
                assert consumer is not None
                started_ms = int(time.time() * 1000)
                ends = {tp: OpenEnd(end, started_ms) for tp, end in
                        (await consumer.end_offsets(list(consumer.assignment()))).items()}
                while True:
                    batches = await consumer.getmany(timeout_ms=1000)
                    for records in batches.values():
                        for record in records:
                            found = read_revocation(record.value)
                            if found is not None:
                                self.revocations.revoke(*found)
                    if ends:
                        for tp in list(ends):
                            if ends[tp].take(batches.get(tp, []), await consumer.position(tp))[1]:
                                del ends[tp]
                        if not ends:
                            self.revocations.ready = True
                    self.revocations.prune(time.time())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the broker away, the topic not there yet: try again
                log.warning("monitor: cannot read sign-outs from %s (%r); retrying", self.sessions_topic, exc)
                await asyncio.sleep(2.0)
            finally:
                if reader is not None:
                    await reader.stop()

    @staticmethod
    async def _first_days(db: Any) -> dict[str, int]:
        """Each tenant's first kept day, from a partition's states, a slice at a time (yielding to the stream)."""
        out: dict[str, int] = {}
        if db is None:
            return out
        for n, (key, value) in enumerate(db.items(from_key=b"t"), 1):
            if not key.startswith(b"t"):
                break
            if n % INDEX_SLICE == 0:
                await asyncio.sleep(0)
            state = TenantState.load(value)
            if state.first_day is not None:
                out[str(orjson.loads(key[1:])[0])] = state.first_day
        return out

    # --- pages -----------------------------------------------------------------------------------------------

    def tenant_partition(self, tenant: str) -> int:
        return key_partition(tenant.encode(), self._partitions(self.by_tenant_topic))

    def _owns(self, tenant: str) -> bool:
        state = self.tables[STATE]
        return TP(state.changelog_topic_name, self.tenant_partition(tenant)) in self.app.assignor.assigned_actives()

    def local_view(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's page data from this worker's tables; None when another worker owns the tenant."""
        if not self._owns(tenant):
            return None
        store = _PartitionStore(self.tables, self.tenant_partition(tenant))
        if not store.ready:
            return None
        state = TenantState.load(store.get(STATE, state_key(tenant)))
        rules = self.settings.rules_for(tenant)
        days, samples = {}, {}
        if state.watermark_day is not None:
            first = state.watermark_day - self.settings.retention_days + 1
            days = load_days(store, tenant, first, state.watermark_day)
            for week in range(week_of(first), week_of(state.watermark_day) + 1):
                raw = store.get(STATE, sample_key(tenant, week))
                if raw:
                    samples[week] = Sample.load(raw, self.settings.sample_size_for(tenant))
        return tenant_view(tenant, state, days, samples, rules, self.settings.retention_days)

    def register_pages(self) -> None:
        pages: dict[str, dict[str, Callable[..., Awaitable[Any]]]] = {
            "/monitor": {"get": self._home},
            "/monitor/login": {"get": self._login_form, "post": self._login},
            "/monitor/logout": {"post": self._logout},
            "/monitor/t/{tenant}": {"get": self._tenant_html},
            "/monitor/api/t/{tenant}": {"get": self._tenant_json},
            "/monitor/all": {"get": self._all_html},
            "/monitor/api/all": {"get": self._all_json},
            "/monitor/api/local": {"get": self._local_json},
        }
        for path, handlers in pages.items():
            guarded = {method: self._guarded(handler) for method, handler in handlers.items()}
            self.app.page(path, name="monitor" + path.replace("/", "-").replace("{", "").replace("}", ""))(
                _view(path, guarded))

    def _guarded(self, handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """Every page: only under a Host the dashboard answers to (a rebinding attacker's name is refused)."""
        async def serve(web: Any, request: Any, **kwargs: Any) -> Any:
            if not host_allowed(request.headers.get("Host", ""), self.allowed_hosts):
                self.counters["host_refused"] += 1
                return self._respond(web, message_page("Misdirected request", "This dashboard does not answer to "
                                                       "that host name (monitor.allowed_hosts)."), 421)
            return await handler(web, request, **kwargs)
        return serve

    # Every response goes through here: no caching, no framing, no external anything.
    @staticmethod
    def _respond(web: Any, body: str | bytes, status: int = 200, content_type: str = "text/html",
                 headers: Mapping[str, str] | None = None) -> Any:
        data = body.encode() if isinstance(body, str) else body
        return web.bytes(data, status=status, content_type=content_type.split(";")[0].strip(),
                         headers={**SECURITY_HEADERS, **(headers or {})})

    def _json(self, web: Any, value: Any, status: int = 200) -> Any:
        return self._respond(web, orjson.dumps(value), status, "application/json")

    def _principal(self, request: Any) -> tuple[Principal | None, bool]:
        """Who is asking (a Bearer token, else the session cookie), and whether the client is locked out."""
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return self._sign_in(request, auth[7:].strip())
        return self.access.session(cookie_value(request.headers.get("Cookie")), time.time(), self.revocations), False

    def _sign_in(self, request: Any, token: str) -> tuple[Principal | None, bool]:
        """A token tried by a client: (None, True) while the client is locked out, whatever the token. A failure
        that reaches the limit is still answered as a failure; the next attempt is the one refused."""
        client, now = _client(request), time.monotonic()
        if self.throttle.retry_after(client, now) is not None:
            return None, True
        principal = self.access.authenticate(token)
        if principal is None:
            self.throttle.failed(client, now)
            self.counters["login_failed"] += 1
        else:
            self.throttle.succeeded(client)
        return principal, False

    def _locked_out(self, web: Any, request: Any, api: bool) -> Any:
        wait = self.throttle.retry_after(_client(request), time.monotonic()) or 0.0
        headers = {"Retry-After": str(max(1, int(wait + 0.999)))}
        if api:
            return self._respond(web, orjson.dumps({"error": "too many failed sign-ins"}), 429, "application/json",
                                 headers)
        return self._respond(web, login_page("Too many failed sign-ins from here; try again later."), 429,
                             headers=headers)

    def _unauthorized(self, web: Any, api: bool, request: Any, locked: bool) -> Any:
        if locked:
            return self._locked_out(web, request, api)
        if not self.access.configured:
            return self._not_configured(web, api)
        if api:
            return self._json(web, {"error": "unauthorized"}, 401)
        return self._respond(web, message_page("Sign in", "Sign in to see monitoring."), 401)

    def _not_configured(self, web: Any, api: bool) -> Any:
        """No token is configured: say how to configure one, rather than offer a sign-in that cannot succeed."""
        if api:
            return self._json(web, {"error": "no dashboard token is configured",
                                    "how": "python -m stream_guard.ops.monitoring.tokens new; set "
                                           "monitor.operator_token_sha256 "
                                           "(or STREAM_GUARD_MONITOR_OPERATOR_TOKEN_SHA256) "
                                           "to the hash it prints, and restart the worker"}, 401)
        return self._respond(web, setup_page(), 401)

    def _not_found(self, web: Any, api: bool) -> Any:
        if api:
            return self._json(web, {"error": "not found"}, 404)
        return self._respond(web, message_page("Not found", "There is nothing here."), 404)

    async def _home(self, web: Any, request: Any) -> Any:
        principal, _ = self._principal(request)
        if principal is None:
            return self._respond(web, "", 303, headers={"Location": "/monitor/login"})
        target = "/monitor/all" if principal.role == OPERATOR else tenant_path(principal.tenant or "")
        return self._respond(web, "", 303, headers={"Location": target})

    async def _login_form(self, web: Any, request: Any) -> Any:
        if not self.access.configured:
            return self._respond(web, setup_page())
        return self._respond(web, login_page())

    def _same_origin(self, request: Any) -> bool:
        """A state-changing request comes from the dashboard's own pages: its Origin (else its Referer) names
        the host and port it was sent to. A request with neither is refused: browsers send Origin with every
        form POST, so only a client hiding where it comes from lacks both."""
        source = request.headers.get("Origin") or request.headers.get("Referer")
        if not source or source == "null":
            return False
        origin = urlsplit(source)
        host = request.headers.get("Host", "")
        return origin.scheme in ("http", "https") and hmac.compare_digest(origin.netloc.lower().encode(),
                                                                          host.lower().encode())

    def _cross_site_refusal(self, web: Any) -> Any:
        self.counters["cross_site_refused"] += 1
        return self._respond(web, message_page("Refused", "Sign in and out from this dashboard's own pages."), 403)

    async def _login(self, web: Any, request: Any) -> Any:
        if not self._same_origin(request):
            return self._cross_site_refusal(web)
        if not self.access.configured:
            return self._not_configured(web, api=False)
        form = await request.post()
        principal, locked = self._sign_in(request, str(form.get("token", "")))
        if locked:
            return self._locked_out(web, request, api=False)
        if principal is None:
            return self._respond(web, login_page("That token is not valid."), 401)
        target = "/monitor/all" if principal.role == OPERATOR else tenant_path(principal.tenant or "")
        cookie = self.access.set_cookie(self.access.issue(principal, time.time()))
        return self._respond(web, "", 303, headers={"Location": target, "Set-Cookie": cookie})

    async def _logout(self, web: Any, request: Any) -> Any:
        """Revoke the session on every worker (the revocation is on the broker before the answer), then clear
        the cookie."""
        if not self._same_origin(request):
            return self._cross_site_refusal(web)
        principal = self.access.session(cookie_value(request.headers.get("Cookie")), time.time())
        if principal is not None and principal.session_id is not None:
            until = principal.expires_s or time.time() + self.settings.session_ttl_minutes * 60
            self.revocations.revoke(principal.session_id, until)
            try:
                await (await self.service.send(self.sessions_topic, principal.session_id.encode(),
                                               revocation_record(principal.session_id, until)))
            except Exception:  # this worker refuses the session already; the others learn it when it is sent
                log.warning("monitor: could not send a sign-out to %s", self.sessions_topic, exc_info=True)
                return self._respond(web, message_page("Signed out here", "Signed out on this worker; other "
                                                       "workers could not be told: try again."), 503)
        return self._respond(web, "", 303, headers={"Location": "/monitor/login",
                                                   "Set-Cookie": self.access.clear_cookie()})

    async def _tenant(self, web: Any, request: Any, tenant: str, api: bool) -> Any:
        principal, locked = self._principal(request)
        if principal is None:
            return self._unauthorized(web, api, request, locked)
        if not principal.may_see(tenant):
            return self._not_found(web, api)
        view = self.local_view(tenant)
        if view is None:
            return await self._forward(web, request, tenant, api)
        if view["event_time"] is None and principal.role == OPERATOR and tenant not in self.settings.tenants:
            return self._not_found(web, api)  # the operator asked for a tenant nobody has seen
        return self._json(web, view) if api else self._respond(web, tenant_page(view))

    async def _tenant_html(self, web: Any, request: Any, tenant: str) -> Any:
        return await self._tenant(web, request, tenant, api=False)

    async def _tenant_json(self, web: Any, request: Any, tenant: str) -> Any:
        return await self._tenant(web, request, tenant, api=True)

    async def _forward(self, web: Any, request: Any, tenant: str, api: bool) -> Any:
        """Another worker owns the tenant: ask it, with the caller's own credentials (it checks them again)."""
        if request.headers.get(FORWARDED):
            return self._respond(web, message_page("Unavailable", "Try again in a moment."), 503)
        try:
            owner = self.app.router.key_store(TABLE_NAMES[STATE], tenant.encode())
            url = f"{str(owner).rstrip('/')}{request.raw_path}"
            headers = {k: v for k, v in request.headers.items() if k in ("Cookie", "Authorization")}
            async with self.app.http_client.get(url, headers={**headers, FORWARDED: "1"}) as response:
                body = await response.read()
                return self._respond(web, body, response.status, response.headers.get("Content-Type", "text/html"))
        except Exception:
            log.warning("monitor: could not reach the worker that owns a tenant", exc_info=True)
            return self._respond(web, message_page("Unavailable", "Try again in a moment."), 503)

    def _page_args(self, request: Any) -> tuple[Any, int]:
        try:
            limit = int(request.query.get("limit", self.settings.page_size))
        except ValueError:
            limit = self.settings.page_size
        return decode_cursor(request.query.get("after")), max(1, min(limit, self.settings.page_size))

    def local_page(self, after: Any, limit: int) -> dict[str, Any]:
        """A page of this worker's tenants, worst first, and how many it keeps."""
        active = self._active(self.tables[STATE])
        return {"tenants": self.overview.page(after, limit), "total": len(self.overview),
                "complete": active <= self._indexed}

    async def _all(self, request: Any, principal: Principal) -> dict[str, Any] | None:
        """A page of every worker's tenants (each worker's page after the same cursor, merged), worst first."""
        if principal.role != OPERATOR:
            return None
        after, limit = self._page_args(request)
        pages = [self.local_page(after, limit)]
        if not request.headers.get(FORWARDED):
            pages += await self._from_peers(request, after, limit)
        rows, more = merge_pages([p["tenants"] for p in pages], limit)
        return {"tenants": rows, "total": sum(p["total"] for p in pages), "complete": all(p["complete"] for p in pages),
                "next": encode_cursor(rows[-1]["rank"]) if more and rows else None, "limit": limit}

    async def _from_peers(self, request: Any, after: Any, limit: int) -> list[dict[str, Any]]:
        pages: list[dict[str, Any]] = []
        me = str(self.app.conf.canonical_url)
        try:
            peers = [url for url in self.app.router.table_metadata(TABLE_NAMES[STATE]) if str(url) != me]
        except Exception:
            return pages
        headers = {k: v for k, v in request.headers.items() if k in ("Cookie", "Authorization")}
        query = f"?limit={limit}" + (f"&after={encode_cursor(after)}" if after is not None else "")
        for peer in peers:
            try:
                async with self.app.http_client.get(f"{str(peer).rstrip('/')}/monitor/api/local{query}",
                                                    headers={**headers, FORWARDED: "1"}) as response:
                    if response.status == 200:
                        pages.append(orjson.loads(await response.read()))
            except Exception:
                log.warning("monitor: peer %s did not answer", peer)
                pages.append({"tenants": [], "total": 0, "complete": False})
        return pages

    async def _all_html(self, web: Any, request: Any) -> Any:
        principal, locked = self._principal(request)
        if principal is None:
            return self._unauthorized(web, False, request, locked)
        page = await self._all(request, principal)
        return self._not_found(web, False) if page is None else self._respond(web, operator_page(page))

    async def _all_json(self, web: Any, request: Any) -> Any:
        principal, locked = self._principal(request)
        if principal is None:
            return self._unauthorized(web, True, request, locked)
        page = await self._all(request, principal)
        return self._not_found(web, True) if page is None else self._json(web, page)

    async def _local_json(self, web: Any, request: Any) -> Any:
        principal, _ = self._principal(request)
        if principal is None or principal.role != OPERATOR:
            return self._not_found(web, True)
        return self._json(web, self.local_page(*self._page_args(request)))

    def metrics_text(self) -> str:
        return self.metrics.text()


def _client(request: Any) -> str:
    """Who is signing in, for the lock-out: the peer address the web server sees."""
    return str(request.remote or "")


def _view(path: str, handlers: Mapping[str, Callable[..., Awaitable[Any]]]) -> type[View]:
    """A Faust view class whose methods call the monitor's handlers (Faust instantiates views itself)."""
    methods: dict[str, Any] = {}
    for method, handler in handlers.items():
        async def call(self: View, request: Any, _handler: Callable[..., Awaitable[Any]] = handler,
                       **kwargs: Any) -> Any:
            return await _handler(self.web, request, **kwargs)
        methods[method] = call
    return type("MonitorPage" + quote(path, safe="").replace("%", "_"), (View,), methods)
