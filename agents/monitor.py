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
from typing import Any, Awaitable, Callable, Mapping, Protocol, Sequence
from urllib.parse import quote

import faust
import orjson
from faust.types import TP
from faust.web import View

from stream_guard.agents.faust_adapter import acting_for, partition_dbs, raw_schema, rocksdb_options
from stream_guard.agents.batching import greedy_batches
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
from stream_guard.ops.monitoring.dashboard import (login_page, message_page, operator_page, tenant_page, tenant_path,
                                               tenant_view)
from stream_guard.ops.monitoring.ledger import (DAYS, SEEN, STATE, Changes, Sample, TenantState, apply,
                                            closable_through, expired_seen, load_days, sample_key, state_key)
from stream_guard.ops.monitoring.metrics import Snapshot, TenantMetrics
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
        # An answer's day: its produced_at, else its Kafka timestamp, within the days the monitor keeps and no
        # further ahead than max_future_minutes (a 2005 clock must not open a day in 2005).
        self.clocks = ClockWindow(self.settings.retention_days * DAY_MS, self.settings.max_future_ms)
        self.access = Access(self.settings)
        self.throttle = LoginThrottle(self.settings.login_max_failures, self.settings.login_lockout_minutes * 60)
        self.metrics = TenantMetrics(self.settings.tenants, owned=self._owns)
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
        app.agent(self.by_tenant, name="monitor")(self._monitor)
        app.agent(self.labels_in, name="label-intake")(self._label_intake)
        app.agent(self.by_event, name="label-join")(self._label_join)
        app.timer(s.alert_prune_interval_s, name="prune-monitor-seen")(self._sweep_seen)
        app.timer(s.metrics_interval_s, name="report-monitor-progress")(self._report_progress)
        if not self.settings.session_secret and self.access.configured:
            log.warning("monitor: no STREAM_GUARD_MONITOR_SESSION_SECRET: dashboard sessions last until this worker "
                        "restarts and work on this worker only")

    # --- the judge's hook ------------------------------------------------------------------------------------

    async def on_verdict(self, item: Judged, message: Any) -> list[asyncio.Future[Any]]:
        """Queue the counts of one judged verdict for its tenant's monitor; returns the send to wait for.
        Never raises: monitoring must not cost a verdict."""
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
            return [await self.service.send(self.by_tenant_topic, obs.tenant.encode(), orjson.dumps(record))]
        except Exception:
            self.counters["observe_failed"] += 1
            log.exception("monitor: could not observe a verdict")
            return []

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
        pending = []
        for source in owned:
            idle = (not answers_busy and lag.get((s.by_question_topic, source)) == 0
                    and source not in self.judged_since_report)
            state = (self.judged_until.get(source), idle)
            if self._reported.get(source) == state and now - self._reported_at.get(source, 0) < 60_000:
                continue  # nothing new: re-sent once a minute, so that a restarted monitor learns it again
            self._reported[source], self._reported_at[source] = state, now
            record = orjson.dumps(SourceProgress(*state, now).to_record(source))
            for partition in range(self._partitions(self.by_tenant_topic)):
                pending.append(await self.service.send(self.by_tenant_topic, b"progress", record, None, partition))
        self.judged_since_report.clear()
        await asyncio.gather(*pending)

    # --- the monitor agent -----------------------------------------------------------------------------------

    def _tenants_on(self, partition: int) -> list[str]:
        return list(self._first_days(_PartitionStore(self.tables, partition).dbs[STATE]))

    def _horizons(self, anchors: Mapping[int, faust.EventT],
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
                for tenant in self._tenants_on(partition):
                    groups.setdefault(tenant, (anchors[partition], []))
        return out

    async def _monitor(self, stream: faust.StreamT) -> None:
        stream = stream.noack()
        async for events in greedy_batches(stream, self.service.settings.batch_max, 0.0):
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
                except Exception:  # our own topic: only a bug or a foreign producer writes this
                    self.counters["unreadable_record"] += 1
                    continue
                groups.setdefault(tenant, (event, []))[1].append(record)
            try:
                horizons = self._horizons(anchors, groups)
            except Exception:  # never stop the worker over monitoring: close nothing this time
                log.exception("monitor: could not compute event-time horizons")
                horizons = {}
            now = int(time.time() * 1000)
            applied: list[tuple[str, faust.EventT, Changes]] = []
            for tenant, (anchor, records) in groups.items():
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
            for event in events:
                await stream.ack(event)

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
        if (tenant not in self.metrics.snapshots or changes.counters["graded"]
                or self._snapshot_days.get(tenant) != state.rates_day):
            self._snapshot_days[tenant] = state.rates_day
            self.metrics.update(tenant, self._snapshot(_EventStore(self.tables), tenant))

    def _snapshot(self, store: Any, tenant: str) -> Snapshot:
        state = TenantState.load(store.get(STATE, state_key(tenant)))
        rules = self.settings.rules_for(tenant)
        if state.rates_day is None:
            return Snapshot(DayCounts(), DayCounts(), state.watermark_ms)
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
        return Snapshot(trailing, baseline, state.watermark_ms, review)

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
            expired = expired_seen(db.keys(), self._first_days(store.dbs[STATE]))
            while chunk := list(itertools.islice(expired, 1000)):
                for key in chunk:
                    db.delete(key)
                    seen.send_changelog(partition, key, None)
                self.counters["seen_pruned"] += len(chunk)
                await asyncio.sleep(0)

    @staticmethod
    def _first_days(db: Any) -> dict[str, int]:
        out: dict[str, int] = {}
        if db is None:
            return out
        for key, value in db.items(from_key=b"t"):
            if not key.startswith(b"t"):
                break
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

    def local_tenants(self) -> list[str]:
        out: list[str] = []
        for partition in sorted(self._active(self.tables[STATE])):
            out += self._first_days(_PartitionStore(self.tables, partition).dbs[STATE]).keys()
        return sorted(out)

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
            self.app.page(path, name="monitor" + path.replace("/", "-").replace("{", "").replace("}", ""))(
                _view(path, handlers))

    # Every response goes through here: no caching, no framing, no external anything.
    @staticmethod
    def _respond(web: Any, body: str | bytes, status: int = 200, content_type: str = "text/html",
                 headers: Mapping[str, str] | None = None) -> Any:
        data = body.encode() if isinstance(body, str) else body
        return web.bytes(data, status=status, content_type=content_type.split(";")[0].strip(),
                         headers={**SECURITY_HEADERS, **(headers or {})})

    def _json(self, web: Any, value: Any, status: int = 200) -> Any:
        return self._respond(web, orjson.dumps(value), status, "application/json")

    def _principal(self, request: Any) -> Principal | None:
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return self._sign_in(request, auth[7:].strip())
        return self.access.session(cookie_value(request.headers.get("Cookie")), time.time())

    def _sign_in(self, request: Any, token: str) -> Principal | None:
        """A token tried by a client: None while the client is locked out, whatever the token."""
        client, now = _client(request), time.monotonic()
        if self.throttle.retry_after(client, now) is not None:
            return None
        principal = self.access.authenticate(token)
        if principal is None:
            self.throttle.failed(client, now)
            self.counters["login_failed"] += 1
        else:
            self.throttle.succeeded(client)
        return principal

    def _locked_out(self, web: Any, request: Any, api: bool) -> Any | None:
        wait = self.throttle.retry_after(_client(request), time.monotonic())
        if wait is None:
            return None
        headers = {"Retry-After": str(max(1, int(wait + 0.999)))}
        if api:
            return self._respond(web, orjson.dumps({"error": "too many failed sign-ins"}), 429, "application/json",
                                 headers)
        return self._respond(web, login_page("Too many failed sign-ins from here; try again later."), 429,
                             headers=headers)

    def _unauthorized(self, web: Any, api: bool, request: Any) -> Any:
        locked = self._locked_out(web, request, api)
        if locked is not None:
            return locked
        if api:
            return self._json(web, {"error": "unauthorized"}, 401)
        return self._respond(web, message_page("Sign in", "Sign in to see monitoring."), 401)

    def _not_found(self, web: Any, api: bool) -> Any:
        if api:
            return self._json(web, {"error": "not found"}, 404)
        return self._respond(web, message_page("Not found", "There is nothing here."), 404)

    async def _home(self, web: Any, request: Any) -> Any:
        principal = self._principal(request)
        if principal is None:
            return self._respond(web, "", 303, headers={"Location": "/monitor/login"})
        target = "/monitor/all" if principal.role == OPERATOR else tenant_path(principal.tenant or "")
        return self._respond(web, "", 303, headers={"Location": target})

    async def _login_form(self, web: Any, request: Any) -> Any:
        return self._respond(web, login_page())

    def _cross_site(self, request: Any) -> bool:
        origin = request.headers.get("Origin")
        if not origin or origin == "null":
            return origin == "null"
        host = request.headers.get("Host", "")
        return not hmac.compare_digest(origin.split("://", 1)[-1].encode(), host.encode())

    async def _login(self, web: Any, request: Any) -> Any:
        if self._cross_site(request):
            return self._respond(web, message_page("Refused", "Sign in from this site's own page."), 403)
        form = await request.post()
        principal = self._sign_in(request, str(form.get("token", "")))
        if principal is None:
            locked = self._locked_out(web, request, api=False)
            return locked if locked is not None else self._respond(web, login_page("That token is not valid."), 401)
        target = "/monitor/all" if principal.role == OPERATOR else tenant_path(principal.tenant or "")
        cookie = self.access.set_cookie(self.access.issue(principal, time.time()))
        return self._respond(web, "", 303, headers={"Location": target, "Set-Cookie": cookie})

    async def _logout(self, web: Any, request: Any) -> Any:
        return self._respond(web, "", 303, headers={"Location": "/monitor/login",
                                                   "Set-Cookie": self.access.clear_cookie()})

    async def _tenant(self, web: Any, request: Any, tenant: str, api: bool) -> Any:
        principal = self._principal(request)
        if principal is None:
            return self._unauthorized(web, api, request)
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

    async def _all(self, request: Any, principal: Principal) -> list[dict[str, Any]] | None:
        if principal.role != OPERATOR:
            return None
        rows = [view for tenant in self.local_tenants() if (view := self.local_view(tenant)) is not None]
        if not request.headers.get(FORWARDED):
            rows += await self._from_peers(request)
        return sorted(rows, key=lambda v: v["tenant"])

    async def _from_peers(self, request: Any) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        me = str(self.app.conf.canonical_url)
        try:
            peers = [url for url in self.app.router.table_metadata(TABLE_NAMES[STATE]) if str(url) != me]
        except Exception:
            return rows
        headers = {k: v for k, v in request.headers.items() if k in ("Cookie", "Authorization")}
        for peer in peers:
            try:
                async with self.app.http_client.get(f"{str(peer).rstrip('/')}/monitor/api/local",
                                                    headers={**headers, FORWARDED: "1"}) as response:
                    if response.status == 200:
                        rows += orjson.loads(await response.read())
            except Exception:
                log.warning("monitor: peer %s did not answer", peer)
        return rows

    async def _all_html(self, web: Any, request: Any) -> Any:
        principal = self._principal(request)
        if principal is None:
            return self._unauthorized(web, False, request)
        rows = await self._all(request, principal)
        return self._not_found(web, False) if rows is None else self._respond(web, operator_page(rows))

    async def _all_json(self, web: Any, request: Any) -> Any:
        principal = self._principal(request)
        if principal is None:
            return self._unauthorized(web, True, request)
        rows = await self._all(request, principal)
        return self._not_found(web, True) if rows is None else self._json(web, rows)

    async def _local_json(self, web: Any, request: Any) -> Any:
        principal = self._principal(request)
        if principal is None or principal.role != OPERATOR:
            return self._not_found(web, True)
        return self._json(web, [v for t in self.local_tenants() if (v := self.local_view(t)) is not None])

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
