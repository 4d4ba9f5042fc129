"""The Faust application: decode, call the core, update tables, send. Nothing else lives here.

Flow, per worker (one agent reads both input topics):

  rag.answers ─┬─ keyed by its question hash, on the partition that hash maps to ─┐
               │                                                                  ├─judge─► guard.verdicts
               └─ anything else: validate, re-key ─► <app>-answers-repartition ───┘   │  ► guard.alerts
                       │ (bad payload)           drift-history table (RocksDB + changelog) │  ► guard.dlq
                       ▼                         alerts-sent table  (dedupe by alert_id)   │
                   guard.dlq                     metrics timer ──► guard.metrics, /metrics

The re-keyed topic, the input topic (when it has as many partitions) and the tables' changelogs are
co-partitioned: Faust gives partition p of each to the same worker. So an input event that its producer
keyed by question hash (`stream-guard produce` does; so can any client, see docs/ARCHITECTURE.md) is judged
where it arrives, and skips a produce, a broker round trip and a consume; the judge checks the key against
the event's own question and re-keys the event if they differ.

At least once: an input offset is acknowledged only after everything it caused (re-keyed copy, verdict,
alerts, dead letter, tenant monitoring's observation) has been acknowledged by the broker, and only once every
message before it on its partition is done too (agents/acks.py); Faust's own acknowledgements of messages it
skipped are refused (agents/faust_adapter.py); Faust flushes table changelog writes before it commits offsets.
On SIGTERM Faust stops fetching and waits for every message the service holds to be acknowledged: batches in
flight finish, and what was never taken stays uncommitted, for the next worker. A crash re-delivers; verdicts carry
event_id and alerts a deterministic alert_id so consumers de-duplicate, and the alerts-sent table keeps a
replayed event from paging twice.

Headers: verdicts and alerts carry content type, schema, event id and the input's W3C trace context
(stream_guard/wire/headers.py); the re-keyed copy carries every header of the original, so the trace survives the
hop; dead letters are the original record with `sg-dlt-*` error headers (stream_guard/wire/deadletter.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import faust
import faust.streams
from aiokafka.errors import MessageSizeTooLargeError

from stream_guard.agents.acks import InOrderAcks
from stream_guard.agents.batching import greedy_batches
from stream_guard.agents.broker_link import LOST, BrokerLink
from stream_guard.agents.metrics import CONTENT_TYPE, Gauges, WorkerMetrics
from stream_guard.agents.security import credentials
from stream_guard.agents.topics import key_partition, producer_max_request_size
from stream_guard.agents.faust_adapter import (STORE_SCHEME, GuardApp, acting_for, partition_dbs, raw_schema,
                                               keep_queued_on_resume, rocksdb_memory, rocksdb_options,
                                               shutdown_remaining, visible_items)
from stream_guard.ops.alerting import LatencyBudgetMonitor, already_sent, expired, sent_record
from stream_guard.wire.alert import Alert
from stream_guard.wire.deadletter import (
    DeadLetterHeaders,
    Header,
    Source,
    dead_letter_headers,
    error_headers,
    readable_event_id,
    record_size,
    without_value,
)
from stream_guard.wire.events import EventError, Limits, decode_event
from stream_guard.wire.headers import alert_headers, output_headers, trace_context
from stream_guard.engine.judging import MISROUTED, Judged, JudgedBatch
from stream_guard.engine.pool import Pool
from stream_guard.ops.latency import ClockWindow, LatencyRegistry, e2e_origin
from stream_guard.config.monitor import MonitorSettings
from stream_guard.engine.pipeline import qualified_name
from stream_guard.config.stream import StreamSettings
from stream_guard.text.questions import looks_like_question_hash, question_hash
from stream_guard.wire.verdict import VERDICT_VERSION

if TYPE_CHECKING:
    from stream_guard.agents.monitor import Monitor

log = logging.getLogger(__name__)

# Headers the intake puts on the re-keyed copy: where the original message was, for dead letters and for
# end-to-end latency when the event has no produced_at, and the original's key (absent when it had none),
# for its dead letter. The copy also carries every header of the original except these.
SRC_PREFIX = "sg-src-"
H_TOPIC, H_PARTITION, H_OFFSET, H_TIMESTAMP = "sg-src-topic", "sg-src-partition", "sg-src-offset", "sg-src-ts"
H_KEY = "sg-src-key"


def now_ms() -> int:
    return int(time.time() * 1000)


def header_list(message: Any) -> list[Header]:
    """A message's headers as (name, bytes) pairs, in order, duplicates kept."""
    raw = getattr(message, "headers", None) or ()
    items = raw.items() if isinstance(raw, Mapping) else raw
    return [(str(k), v if isinstance(v, bytes) else b"" if v is None else str(v).encode()) for k, v in items]


def _headers(message: Any) -> dict[str, bytes]:
    """By name; the last of each name wins, as the re-keyed copy's own headers come after the original's."""
    return dict(header_list(message))


def _int_header(headers: Mapping[str, bytes], name: str) -> int | None:
    try:
        return int(headers[name])
    except (KeyError, ValueError):
        return None


def _timestamp_ms(message: Any) -> int | None:
    ts = getattr(message, "timestamp", None)
    return int(ts * 1000) if ts else None  # Faust gives seconds


def own_source(message: Any) -> Source:
    return Source(message.topic, message.partition, message.offset, _timestamp_ms(message),
                  message.key if isinstance(message.key, bytes) else None)


def rekeyed_source(message: Any, answers_topic: str, answers_partitions: int | None) -> Source | None:
    """The original position the intake wrote on a re-keyed copy, if it is one we could have written: the
    answers topic, a partition it has, numbers that parse. Anything else is not believed."""
    headers = _headers(message)
    if headers.get(H_TOPIC) != answers_topic.encode():
        return None
    partition, offset = _int_header(headers, H_PARTITION), _int_header(headers, H_OFFSET)
    if partition is None or offset is None or partition < 0 or offset < 0:
        return None
    if answers_partitions is not None and partition >= answers_partitions:
        return None
    return Source(topic=answers_topic, partition=partition, offset=offset,
                  timestamp_ms=_int_header(headers, H_TIMESTAMP),
                  key=message.key if isinstance(message.key, bytes) else None)


def faust_options(settings: StreamSettings) -> dict[str, Any]:
    assert settings.broker, "a broker address is required"
    return {
        "broker": [f"kafka://{hostport}" for hostport in settings.broker.split(",")],
        "broker_credentials": credentials(settings),
        # Faust's RocksDB store (rocksdict), its databases sharing one memory budget (agents/faust_adapter.py).
        "store": f"{STORE_SCHEME}://",
        "datadir": settings.data_dir,
        "web_enabled": settings.web_enabled,
        # Belt and braces: GuardApp serves none of Faust's views at all (agents/faust_adapter.py).
        "web_tables_enabled": False,
        "web_router_enabled": False,
        "web_stats_enabled": False,
        "web_graph_enabled": False,
        "web_metrics_enabled": False,
        "web_port": settings.web_port,
        "web_bind": settings.web_host,
        "web_host": advertised_host(settings),
        "topic_partitions": settings.partitions,
        "topic_replication_factor": settings.replication_factor,
        "broker_session_timeout": settings.session_timeout_s,
        "broker_heartbeat_interval": settings.heartbeat_interval_s,
        "broker_commit_interval": settings.commit_interval_s,
        "broker_request_timeout": max(40.0, settings.session_timeout_s + 10),
        "broker_rebalance_timeout": max(20.0, settings.session_timeout_s * 2),
        "consumer_auto_offset_reset": "earliest",
        # A re-keyed copy is its original plus our headers: the fetch and the producer take the headroom too.
        "consumer_max_fetch_size": producer_max_request_size(settings),
        "producer_max_request_size": producer_max_request_size(settings),
        "producer_acks": -1,
        # A send the broker has not acknowledged by then fails (Faust's default: 20 minutes of retries), and the
        # worker stops with its inputs uncommitted: the bound on how long a broker may be away (broker_link.py).
        "producer_request_timeout": settings.producer_timeout_s,
        "producer_linger": settings.producer_linger_ms / 1000.0,
        # Faust sleeps this long after every rebalance before recovering tables and resuming (default 3 s),
        # in case more members join; every second of it is end-to-end latency on all partitions.
        "stream_recovery_delay": 0.5,
        "table_cleanup_interval": 300.0,
        "worker_redirect_stdouts": False,
    }


@dataclass
class _Batch:
    """A judged batch on its way out: sends to wait for, state to write after, events to acknowledge."""

    events: list[faust.EventT]
    pending: list[asyncio.Future[Any]]
    # The monitoring observations' sends (their tenants' flush: agents/tenant_outbox.py): waited for before the
    # inputs are acknowledged, not before the verdicts count as delivered.
    monitored: list[asyncio.Future[Any]] = field(default_factory=list)
    history: list[tuple[str, faust.EventT, bytes]] = field(default_factory=list)
    alerts: list[tuple[Alert, faust.EventT, int]] = field(default_factory=list)
    items: list[Judged] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)


@dataclass
class GuardService:
    """One worker's Faust app plus what its agents share: the core, the executor and the measurements."""

    settings: StreamSettings
    judge: Pool
    worker: str
    monitoring: MonitorSettings = field(default_factory=MonitorSettings)
    # How long the answers topic keeps records (None: unknown): the clock window is no longer.
    answers_retention_ms: int | None = None
    app: faust.App = field(init=False)
    registry: LatencyRegistry = field(init=False)
    metrics: WorkerMetrics = field(init=False)
    budget: LatencyBudgetMonitor = field(init=False)
    positions: dict[tuple[str, int], int] = field(default_factory=dict)
    # State a batch in flight has decided but not yet written to the tables (see _judge).
    _history_overlay: dict[str, bytes] = field(default_factory=dict)
    _alerts_overlay: set[str] = field(default_factory=set)
    _warned_partitions: bool = False
    # Input messages taken and not yet acknowledged, in offset order per partition.
    _order: InOrderAcks = field(default_factory=InOrderAcks)
    # Batches whose verdicts are delivered, waiting for their monitoring observations' flush to acknowledge inputs.
    _acking: set[asyncio.Future[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        s = self.settings
        self.registry = LatencyRegistry(window_slots=s.latency_window_slots)
        self.clocks = ClockWindow(s.clock_window_s * 1000, s.clock_skew_s * 1000).within(self.answers_retention_ms)
        self.budget = LatencyBudgetMonitor(s.latency_budget_ms, min_samples=s.latency_min_samples)
        self.limits: Limits = self.judge.config.limits
        self.app = app = GuardApp(s.app_id, fetch_max_wait_ms=s.fetch_max_wait_ms, **faust_options(s))
        self.link = app.broker_link = BrokerLink(s.broker_lost_after_s, s.broker_lost_grace_s)
        self.link.quiet_retries()
        self.metrics = WorkerMetrics(self.registry, judge_pid=lambda: self.judge.pid, gauges=Gauges(
            latency_budget_s=s.latency_budget_ms / 1000.0, event_budget_s=self.judge.config.event_budget_ms / 1000.0,
            unacknowledged=self._order.pending, judge_replaced=lambda: self.judge.replaced,
            refused_acks=lambda: int(getattr(app.consumer, "refused_acks", 0)), broker_link=self.link,
            rocksdb_memory=rocksdb_memory(s.rocksdb_block_cache_bytes, s.rocksdb_memtable_bytes)))
        app.monitor = self.metrics.monitor()
        app.commit_observer = self._on_commit
        app.guarded_topics = frozenset({s.topics.answers, s.by_question_topic})
        app.on_partitions_revoked.connect(self._on_revoked)
        # Both inputs in one stream, so that one batch of the judge takes from either.
        self.inputs = app.topic(s.topics.answers, s.by_question_topic, schema=raw_schema())
        # key_type/value_type bytes: that is what makes a Faust table use the raw serializer.
        self.history = app.Table("drift-history", partitions=s.partitions, key_type=bytes, value_type=bytes,
                                 options=rocksdb_options(s), help="question hash -> bounded fingerprint list")
        self.alerts_sent = app.Table("alerts-sent", partitions=s.partitions, key_type=bytes, value_type=bytes,
                                     options=rocksdb_options(s), help="alert_id -> when it was sent")
        app.agent_error_hook = self._on_judge_error
        app.agent(self.inputs, name="judge")(self._judge)
        app.timer(s.metrics_interval_s, name="publish-metrics")(self._publish_metrics)
        app.timer(s.alert_prune_interval_s, name="prune-alerts-sent")(self._prune_alerts_sent)
        app.timer(1.0, name="watch-broker-link")(self._watch_link)
        self.monitor: Monitor | None = None
        if self.monitoring.enabled:  # tenant monitoring: its own tables, agents and pages (agents/monitor.py)
            from stream_guard.agents.monitor import Monitor
            self.monitor = Monitor(self, self.monitoring)
            self.monitor.register_pages()
        # Faust binds a page handler as the view's `get`: it must be a plain (view, request) function.
        for path, handler in (("/metrics", self._metrics_page), ("/healthz", self._health_page),
                              ("/readyz", self._ready_page)):
            app.page(path, name=path.strip("/"))(_page(handler))

    def _on_commit(self, seconds: float, ok: bool) -> None:
        self.metrics.commit_seconds.observe(seconds)
        if not ok:
            self.metrics.commit_failures.inc()

    # --- sending -----------------------------------------------------------------------------------------

    async def send(self, topic: str, key: bytes | None, value: bytes | None,
                    headers: Sequence[Header] | Mapping[str, bytes] | None = None,
                    partition: int | None = None) -> asyncio.Future[Any]:
        """Queue one message; the returned future resolves when the broker has acknowledged it.

        Straight to Faust's producer, not through `Topic.send`: the values are bytes already, and the topic
        layer's per-message channel, schema and callback work was a tenth of the worker's CPU (profiled). So
        Faust's sensors never see these sends: a send that fails is counted here."""
        items = list(headers.items()) if isinstance(headers, Mapping) else list(headers or ())
        future: asyncio.Future[Any] = await self.app.producer.send(topic, key, value, partition, None, items or None)
        future.add_done_callback(functools.partial(self._count_send_error, topic))
        return future

    def _count_send_error(self, topic: str, future: asyncio.Future[Any]) -> None:
        if not future.cancelled() and future.exception() is not None:
            self.metrics.send_errors.labels(topic).inc()

    async def dead_letter(
        self, message: Any, *, field_: str, reason: str, stage: str, source: Source | None = None,
        event_id: str | None = None, cost_ms: float | None = None, exception_class: str | None = None,
    ) -> asyncio.Future[Any]:
        """Send `message` as it was read (for a re-keyed copy: the original as the producer wrote it) to the
        dead-letter topic, with why in `sg-dlt-*` headers (stream_guard/wire/deadletter.py)."""
        self.metrics.dead_letters.labels(stage).inc()
        key, value, headers = self.original_record(message)
        error = error_headers(stage=stage, error_field=field_, reason=reason, source=source or self.source_of(message),
                              failed_at_ms=now_ms(), worker=self.worker, event_id=event_id,
                              exception_class=exception_class, cost_ms=cost_ms)
        letter_headers = dead_letter_headers(headers, error)
        if record_size(key, value, letter_headers) > producer_max_request_size(self.settings):
            return await self._dead_letter_without_value(key, value, headers, error)
        future = await self.send(self.settings.topics.dlq, key, value, letter_headers)
        return asyncio.ensure_future(self._or_without_value(future, key, value, headers, error))

    async def _or_without_value(self, sent: asyncio.Future[Any], key: bytes | None, value: bytes | None,
                                headers: list[Header], error: DeadLetterHeaders) -> Any:
        """The broker refused the dead letter as too large (a dead-letter topic with a smaller limit than the
        input's): send it again without its value, rather than stop the worker over it."""
        try:
            return await sent
        except MessageSizeTooLargeError:
            log.warning("the dead-letter topic refused a %d-byte dead letter of %s[%s]@%s as too large: sending it "
                        "without its value", len(value or b""), error.original_topic, error.original_partition,
                        error.original_offset)
            return await (await self._dead_letter_without_value(key, value, headers, error))

    async def _dead_letter_without_value(self, key: bytes | None, value: bytes | None, headers: list[Header],
                                         error: DeadLetterHeaders) -> asyncio.Future[Any]:
        self.metrics.dead_letter_values_omitted.inc()
        return await self.send(self.settings.topics.dlq, key, None if value is None else b"",
                                dead_letter_headers(headers, without_value(value, error)))

    def original_record(self, message: Any) -> tuple[bytes | None, bytes | None, list[Header]]:
        """Key, value and headers as the producer wrote them. A re-keyed copy carries the original's headers
        and its key (`sg-src-key`, absent when it had none) beside our `sg-src-*` ones."""
        value = message.value if isinstance(message.value, bytes) else None
        key = message.key if isinstance(message.key, bytes) else None
        headers = header_list(message)
        if message.topic == self.settings.by_question_topic:
            key = next((v for n, v in headers if n == H_KEY), None)
            headers = [(n, v) for n, v in headers if not n.startswith(SRC_PREFIX)]
        return key, value, headers

    def source_of(self, message: Any) -> Source:
        """Where an event was first read: on the internal re-keyed topic, the position our intake wrote in its
        headers; anywhere else (and for headers we could not have written), the message's own. `sg-src-*`
        headers on rag.answers are anybody's to write, so they are never believed there."""
        if message.topic == self.settings.by_question_topic:
            answers = self.settings.topics.answers
            found = rekeyed_source(message, answers, self.app.consumer.topic_partitions(answers))
            if found is not None:
                return found
        return own_source(message)

    # --- routing: judge here, or validate and re-key first ------------------------------------------------------

    def _partition_count(self) -> int | None:
        """Partitions of the re-keyed topic when the input topic has as many (then the two are co-partitioned
        and an input event can be judged where it lands); None otherwise, or before metadata arrives. Looked
        up every time (two dict reads): partitions can be added to a live topic."""
        consumer = self.app.consumer
        answers = consumer.topic_partitions(self.settings.topics.answers)
        by_question = consumer.topic_partitions(self.settings.by_question_topic)
        if answers is None or by_question is None:
            return None
        if answers != by_question:
            if not self._warned_partitions:
                self._warned_partitions = True
                log.warning("%s has %d partitions and %s %d: every input event is re-keyed before it is judged",
                            self.settings.topics.answers, answers, self.settings.by_question_topic, by_question)
            return None
        return by_question

    def _claimed_key(self, message: Any) -> str | None:
        """The question hash an input message is keyed by, if it already sits on the partition that hash
        maps to (so its question's state is on this worker); None if it has to be re-keyed."""
        key = message.key
        if not isinstance(key, bytes) or not looks_like_question_hash(key):
            return None
        partitions = self._partition_count()
        if partitions is None or key_partition(key, partitions) != message.partition:
            return None
        return key.decode("ascii")

    def _route(self, events: Sequence[faust.EventT]) -> tuple[list[faust.EventT], list[str | None],
                                                              list[faust.EventT]]:
        """Split a batch into events to judge here (with the key each claims, for the judge to verify; None
        for re-keyed copies, which our own intake keyed) and input events to re-key."""
        here: list[faust.EventT] = []
        claims: list[str | None] = []
        rekey: list[faust.EventT] = []
        for event in events:
            message = event.message
            if message.topic != self.settings.topics.answers:
                here.append(event)
                claims.append(None)
            elif (claim := self._claimed_key(message)) is not None:
                here.append(event)
                claims.append(claim)
            else:
                rekey.append(event)
        return here, claims, rekey

    async def _rekey(self, message: Any) -> asyncio.Future[Any]:
        """Validate an input event and send it on to the re-keyed topic, or dead-letter it. The copy keeps the
        original's headers (a trace context must survive the hop), minus any `sg-src-*` a producer wrote."""
        try:
            raw = message.value if isinstance(message.value, bytes) else b""
            answer = decode_event(raw, self.limits)
            key = question_hash(answer.tenant, answer.question).encode()
            headers = [(n, v) for n, v in header_list(message) if not n.startswith(SRC_PREFIX)]
            headers += [
                (H_TOPIC, message.topic.encode()), (H_PARTITION, str(message.partition).encode()),
                (H_OFFSET, str(message.offset).encode()), (H_TIMESTAMP, str(_timestamp_ms(message) or "").encode()),
            ]
            if isinstance(message.key, bytes):
                headers.append((H_KEY, message.key))
            partitions = self.app.consumer.topic_partitions(self.settings.by_question_topic)
            return await self.send(self.settings.by_question_topic, key, raw, headers,
                                    key_partition(key, partitions) if partitions else None)
        except EventError as exc:
            return await self.dead_letter(message, field_=exc.field, reason=exc.reason, stage="decode",
                                           event_id=readable_event_id(message.value))
        except Exception as exc:  # a bug must cost one event, never the worker
            log.exception("intake failed on %s[%s]@%s", message.topic, message.partition, message.offset)
            return await self.dead_letter(message, field_="$", reason=f"{type(exc).__name__}: {exc}",
                                           stage="intake", exception_class=qualified_name(type(exc)))

    # --- judge: the core, the tables, the verdicts -------------------------------------------------------------

    async def _judge(self, stream: faust.StreamT) -> None:
        """Three stages, each one batch at a time and in order, overlapping one another:

        1. decide (here): re-key what must be, read state, run the checks on batch N+1 in the judge process;
        2. dispatch (a task): queue batch N's verdicts, alerts and dead letters on the producer;
        3. finish (a task per batch): wait for the broker's acks, write the tables, acknowledge the inputs (once
           their monitoring observations, sent a tenant's flush at a time, are acknowledged too).

        Batches come unacknowledged (`noack`): an input event is acknowledged only after the broker has
        acknowledged everything it caused (for a re-keyed event: its copy).
        """
        s = self.settings
        keep_queued_on_resume(self.app, stream)  # a table restore must not drop what was delivered to it
        stream = stream.noack()
        decided: asyncio.Queue[_Batch | tuple[list[faust.EventT], dict[str, faust.EventT], JudgedBatch | None, int]
                               | None]
        decided = asyncio.Queue(maxsize=1)
        dispatching = self._fail_fast(asyncio.ensure_future(self._dispatch_all(stream, decided)))
        try:
            async for events in greedy_batches(stream, s.batch_max, s.batch_within_s):
                self._order.taken(events)
                if dispatching.done():  # a send failed: stop taking work; the error surfaces below
                    break
                tombstones = [e for e in events if e.message.value is None]
                if tombstones:  # a deletion marker, not an event: nothing to judge, nothing to dead-letter
                    for event in tombstones:
                        self.metrics.tombstones.labels(event.message.topic).inc()
                    await decided.put(_Batch(tombstones, []))
                    events = [e for e in events if e.message.value is not None]
                here, claims, rekey = self._route(events)
                if rekey:
                    await decided.put(_Batch(rekey, [await self._rekey(event.message) for event in rekey]))
                if not here:
                    continue
                try:
                    item = await self._decide(here, claims)
                except Exception:  # a bug outside the core: the batch is dead-lettered by dispatch
                    log.exception("judge failed on a batch of %d", len(here))
                    item = (here, {}, None, now_ms())
                await decided.put(item)
        finally:
            await self._drain(dispatching, decided)

    async def _drain(self, dispatching: asyncio.Future[Any], decided: asyncio.Queue[Any]) -> None:
        """The judge loop ended: let the batches in flight finish. In a shutdown, only until its deadline (or not
        at all once the broker is lost): their sends cannot complete without a broker, and what they leave is
        unacknowledged, so it is redelivered (faust_adapter.begin_shutdown)."""
        remaining = shutdown_remaining(self.app)
        if remaining is None:
            if not dispatching.done():
                await decided.put(None)
            await dispatching
            await self._acknowledged()
            return
        with contextlib.suppress(asyncio.QueueFull):
            decided.put_nowait(None)  # when full, the dispatcher is busy: the deadline decides
        try:
            await asyncio.wait_for(self._dispatched_and_acknowledged(dispatching), remaining)
        except asyncio.TimeoutError:
            log.warning("shutdown: %d input message(s) in flight wait for a broker that does not answer: left "
                        "unacknowledged, for the next worker", self._order.pending())

    async def _dispatched_and_acknowledged(self, dispatching: asyncio.Future[Any]) -> None:
        await dispatching
        await self._acknowledged()

    async def _acknowledged(self) -> None:
        """The batches waiting for their monitoring observations' flush: flush now, and wait for their inputs to
        be acknowledged."""
        if self.monitor is not None and self.monitor.outbox is not None:
            await self.monitor.outbox.flush()
        if self._acking:
            await asyncio.gather(*self._acking)

    def _fail_fast(self, task: asyncio.Future[Any]) -> asyncio.Future[Any]:
        """A dispatch or finish task runs beside the judge loop: its failure must not wait for the next batch
        (there may be none) to be noticed."""
        def done(task: asyncio.Future[Any]) -> None:
            if not task.cancelled() and task.exception() is not None:
                asyncio.ensure_future(self._on_judge_error(None, task.exception()))  # type: ignore[arg-type]

        task.add_done_callback(done)
        return task

    async def _on_judge_error(self, agent: Any, exc: BaseException) -> None:
        """The judge stopped on something no event can be blamed for: a send or a state write failed for
        good (core failures are dead-lettered, never raised). Faust would restart the agent, but the events
        it held stay unacknowledged, so commits would stall at them until the worker next restarted. So fail
        fast: the worker exits non-zero, its orchestrator restarts it, and the broker redelivers them."""
        log.critical("the judge failed, stopping the worker so that its events are redelivered: %r", exc)
        await self.app.crash(exc)

    async def _decide(self, events: Sequence[faust.EventT], claims: Sequence[str | None]
                      ) -> tuple[list[faust.EventT], dict[str, faust.EventT], JudgedBatch | None, int]:
        """Read state and judge. The message key is the question hash (set by our re-keying, or claimed by the
        producer and verified by the judge), so state is read without decoding here. Table reads go through
        an event of the key's own partition (see acting_for).
        A history that a batch still in flight changed but has not written yet comes from the overlay, so a
        question's events see each other in order across batches."""
        anchors: dict[str, faust.EventT] = {}  # question hash -> an event of its partition
        for event in events:
            key = event.message.key
            if isinstance(key, bytes):
                anchors[key.decode("utf-8", "replace")] = event
        histories: dict[str, bytes | None] = {}
        for key, anchor in anchors.items():
            if key in self._history_overlay:
                histories[key] = self._history_overlay[key]
            else:
                with acting_for(anchor):
                    histories[key] = self.history.get(key.encode())
        at = now_ms()
        judged = await self.judge.judge_batch([e.message.value for e in events], histories, at, claims)
        for key, raw in judged.histories.items():
            if key not in anchors:  # only if a producer other than our intake wrote the re-keyed topic
                anchors[key] = next(e for e, item in zip(events, judged.items) if item.question_hash == key)
            self._history_overlay[key] = raw
        return list(events), anchors, judged, at

    async def _dispatch_all(self, stream: faust.StreamT, decided: asyncio.Queue[Any]) -> None:
        previous: asyncio.Future[None] | None = None
        while (item := await decided.get()) is not None:
            batch = item if isinstance(item, _Batch) else await self._dispatch(*item)
            if previous is not None:
                await previous
            previous = self._fail_fast(asyncio.ensure_future(self._finish(stream, batch)))
        if previous is not None:
            await previous

    async def _dispatch(self, events: list[faust.EventT], anchors: dict[str, faust.EventT],
                        judged: JudgedBatch | None, at: int) -> _Batch:
        """Queue every send of a decided batch; returns what its finisher waits for and writes."""
        batch = _Batch(events, [])
        if judged is None:
            for event in events:
                batch.pending.append(await self.dead_letter(event.message, field_="$",
                                                             reason="the judge failed on this batch", stage="judge"))
            return batch
        batch.history = [(key, anchors[key], raw) for key, raw in judged.histories.items()]
        for event, item in zip(events, judged.items):
            if item.error_stage == MISROUTED:  # keyed by another question: re-key it, judge it over there
                batch.pending.append(await self._rekey(event.message))
                continue
            if not item.ok:
                batch.pending.append(await self.dead_letter(
                    event.message, field_=item.error_field or "$", reason=item.error_reason or "unknown",
                    stage=item.error_stage or "judge", event_id=item.event_id, cost_ms=item.cost_ms,
                    exception_class=item.error_exception))
                continue
            if item.unknown_fields:
                self.metrics.count_unknown_fields(item.unknown_fields)
            trace = trace_context(header_list(event.message))
            batch.pending.append(await self.send(
                self.settings.topics.verdicts, (item.question_hash or "").encode(), item.verdict or b"",
                output_headers("verdict", VERDICT_VERSION, item.event_id, trace)))
            if self.monitor is not None:
                batch.monitored.extend(await self.monitor.on_verdict(item, event.message))
            for alert in item.alerts:
                if alert.alert_id in self._alerts_overlay:
                    seen = True
                else:
                    with acting_for(event):
                        seen = already_sent(self.alerts_sent.get(alert.alert_id.encode()), at,
                                            self.settings.alert_dedupe_ttl_s * 1000)
                if seen:
                    self.metrics.alerts_suppressed.labels(alert.kind).inc()
                    continue
                self._alerts_overlay.add(alert.alert_id)
                batch.alerts.append((alert, event, at))
                batch.pending.append(await self.send(self.settings.topics.alerts, alert.key.encode(),
                                                      alert.to_json(), alert_headers(alert, trace)))
        batch.items = judged.items
        return batch

    async def _finish(self, stream: faust.StreamT, batch: _Batch) -> None:
        """Once the broker has a batch's verdicts (and alerts, dead letters, re-keyed copies): write its state and
        book its latency; then acknowledge its inputs, at once or, when its monitoring observations wait for
        their flush (up to monitor.flush_ms), in a task of their own, so that the next batch's finish does not
        wait for that flush."""
        await asyncio.gather(*batch.pending)
        # Only now that the broker has the verdicts: a crash before this point re-delivers the batch, and the
        # history gets each delivered answer once. Faust flushes these changelog writes before it commits.
        for key, anchor, raw in batch.history:
            with acting_for(anchor):
                self.history[key.encode()] = raw
            if self._history_overlay.get(key) is raw:  # a later batch may have moved it on already
                del self._history_overlay[key]
        for alert, event, at in batch.alerts:
            with acting_for(event):
                self.alerts_sent[alert.alert_id.encode()] = sent_record(alert, at)
            self._alerts_overlay.discard(alert.alert_id)
            self.metrics.alerts.labels(alert.kind).inc()
        self._observe(batch)
        if all(f.done() for f in batch.monitored):
            await self._acknowledge(stream, batch)
        else:
            acking = self._fail_fast(asyncio.ensure_future(self._acknowledge(stream, batch)))
            self._acking.add(acking)
            acking.add_done_callback(self._acking.discard)

    async def _acknowledge(self, stream: faust.StreamT, batch: _Batch) -> None:
        """Acknowledge a batch's inputs once its monitoring observations are on the broker too (in offset order per
        partition: agents/acks.py)."""
        await asyncio.gather(*batch.monitored)
        consumer: Any = self.app.consumer
        for event in self._order.done(batch.events):
            with consumer.releasing():
                await stream.ack(event)
            self._advance(event.message)

    async def _on_revoked(self, app: Any, revoked: set[Any], **kwargs: Any) -> None:
        """Faust has waited for every message we held to be acknowledged; anything still registered on a
        revoked partition was not finished, stays unacknowledged, and is the next owner's."""
        dropped = self._order.forget(revoked)
        if dropped:
            log.warning("%d unfinished input message(s) on revoked partitions left for their next owner", dropped)

    def _observe(self, batch: _Batch) -> None:
        """Processing: batch taken to its verdicts acknowledged. End to end: the event's produced_at (else
        its Kafka timestamp on the answers topic) to its verdict acknowledged. Both are booked to the input
        partition the event arrived on, whichever way it came to be judged."""
        processing_ms = (time.perf_counter() - batch.started) * 1000.0
        done_ms = time.time() * 1000.0
        for event, item in zip(batch.events, batch.items):
            if item.error_stage == MISROUTED:  # booked where it is judged
                continue
            source = self.source_of(event.message)
            origin, ignored = e2e_origin(item.produced_at_ms, source.timestamp_ms, done_ms, self.clocks)
            for reason in ignored:
                self.metrics.clock_ignored.labels(reason).inc()
            e2e = done_ms - origin if origin is not None else None
            routing = item.routing if item.ok else "failed"
            self.metrics.observe(source.topic, source.partition, processing_ms, e2e, routing, ignored)
            if item.ok:
                self.metrics.judged(item.hallucination_score, item.checks_flagged)

    def _advance(self, message: Any) -> None:
        self.positions[(message.topic, message.partition)] = message.offset + 1

    # --- state upkeep ----------------------------------------------------------------------------------------------

    async def _prune_alerts_sent(self) -> None:
        """Delete alert dedupe records past the TTL from the partitions this worker owns, each with a
        changelog tombstone, so the table and its compacted changelog hold only records that still suppress
        something. (Faust expires keys only of windowed tables; this one is keyed by alert_id, and a table has no
        public way to list one partition's keys or to write outside a stream event: agents/faust_adapter.py.)"""
        table = self.alerts_sent
        topic = table.changelog_topic_name
        mine = {tp.partition for tp in self.app.assignor.assigned_actives() if tp.topic == topic}
        ttl_ms = self.settings.alert_dedupe_ttl_s * 1000
        for partition, db in partition_dbs(table).items():
            if partition not in mine:
                continue  # a standby copy: the owner prunes it, and its tombstones reach us
            # A thousand records at a time, so that a large table never holds up the stream for long.
            records = visible_items(table, db)
            while chunk := list(itertools.islice(records, 1000)):
                keys = expired(chunk, now_ms(), ttl_ms)
                for key in keys:
                    db.delete(key)
                    table.send_changelog(partition, key, None)
                self.metrics.pruned.labels("alerts-sent").inc(len(keys))
                await asyncio.sleep(0)

    # --- metrics ----------------------------------------------------------------------------------------------

    async def refresh_lag(self) -> set[tuple[str, int]]:
        consumer = self.app.consumer
        ours = {self.settings.topics.answers, self.settings.by_question_topic}
        tps = [tp for tp in consumer.assignment() if tp.topic in ours]
        owned = {(tp.topic, tp.partition) for tp in tps}
        # The high watermark of the consumer's own last fetch: what the broker holds. A broker's listed end
        # offsets can be stale (agents/faust_adapter.py); those are asked for only where no fetch has answered yet.
        ends: dict[Any, int] = {}
        for tp in tps:
            with contextlib.suppress(Exception):  # not fetched yet, or moving away in a rebalance
                fetched = consumer.highwater(tp)
                if fetched is not None:
                    ends[tp] = fetched
        missing = [tp for tp in tps if tp not in ends]
        if missing:
            ends.update(await consumer.highwaters(*missing))
        for tp in tps:
            position = self.positions.get((tp.topic, tp.partition))
            if position is None:
                position = await consumer.position(tp) or 0
            self.registry.set_lag(tp.topic, tp.partition, (ends.get(tp) or 0) - position)
        self.registry.forget_lag(owned)
        return owned

    async def _publish_metrics(self) -> None:
        try:
            owned = await self.refresh_lag()
        except Exception:  # lag is best effort: a rebalance in progress must not stop the summaries
            log.debug("lag refresh failed", exc_info=True)
            owned = set(self.registry.lag)
        at = now_ms()
        pending = []
        for summary in self.registry.summaries(worker=self.worker, at_ms=at,
                                               interval_s=self.settings.metrics_interval_s):
            key = (summary.topic, summary.partition)
            if key not in owned and not summary.interval.processing_ms.count:
                continue  # a partition that moved to another worker: that worker reports it now
            pending.append(await self.send(self.settings.topics.metrics, f"{key[0]}:{key[1]}".encode(),
                                            summary.to_json(), output_headers("metrics-summary", summary.version)))
            stats = self.registry.partitions.get(key)
            alert = self.budget.check(key[0], key[1], summary.recent.end_to_end_ms, at, self.worker, summary.window_s,
                                      stats.recent_ignored() if stats is not None else None)
            if alert is not None:
                self.metrics.alerts.labels(alert.kind).inc()
                pending.append(await self.send(self.settings.topics.alerts, alert.key.encode(), alert.to_json(),
                                                alert_headers(alert)))
        self.budget.forget(owned)  # a breach on a partition that moved away is the new owner's to report
        self.registry.rotate()
        await asyncio.gather(*pending)

    def metrics_text(self) -> bytes:
        text = self.metrics.text()
        return text + self.monitor.metrics_text().encode() if self.monitor is not None else text

    async def _metrics_page(self, web: Any, request: Any) -> Any:
        return web.bytes(self.metrics_text(), headers={"Content-Type": CONTENT_TYPE})

    def _judge_status(self) -> dict[str, Any]:
        busy = self.judge.busy
        return {"busy_s": round(time.monotonic() - busy.since, 1) if busy else 0.0,
                "batch": busy.events if busy else 0, "limit_s": round(busy.limit_s, 1) if busy else None,
                "replaced": self.judge.replaced}

    async def _watch_link(self) -> None:
        """Evaluate the broker link once a second, so that its loss is logged even when nobody probes."""
        self.link.state()

    def _link_problem(self, grace: bool) -> str | None:
        """Why the broker link fails readiness (lost) or health (lost for the grace period)."""
        if grace and self.link.unhealthy():
            return (f"no broker has answered for {self.link.silent_for():.0f} s (more than broker_lost_grace_s "
                    f"{self.settings.broker_lost_grace_s:g} s): restart this worker")
        if not grace and self.link.state() == LOST:
            return f"no broker has answered for {self.link.silent_for():.1f} s"
        return None

    async def _health_page(self, web: Any, request: Any) -> Any:
        problem = self.judge.stuck() or self._link_problem(grace=True)
        body: dict[str, Any] = {"status": "ok" if problem is None else "stuck", "worker": self.worker,
                                "judge": self._judge_status(), "broker": self.link.describe()}
        if problem:
            body["reason"] = problem
        return web.json(body, status=503 if problem else 200)

    async def _ready_page(self, web: Any, request: Any) -> Any:
        recovery = self.app.tables.recovery
        problem = self.judge.stuck() or self._link_problem(grace=False)
        ready = recovery.completed.is_set() and not self.app.rebalancing and problem is None
        body: dict[str, Any] = {"ready": ready, "rebalancing": bool(self.app.rebalancing),
                                "recovered": recovery.completed.is_set(), "worker": self.worker,
                                "broker": self.link.describe()}
        if problem:
            body["reason"] = problem
        return web.json(body, status=200 if ready else 503)


def _page(handler: Any) -> Any:
    async def get(view: Any, request: Any) -> Any:
        return await handler(view, request)

    get.__name__ = handler.__name__.strip("_")
    return get


def advertised_host(settings: StreamSettings) -> str:
    """How other workers reach this one. A StatefulSet pod's bare hostname does not resolve from other pods;
    its fully qualified name (pod.service.namespace.svc...) does, and the pod's own /etc/hosts has it."""
    if settings.advertised_host:
        return settings.advertised_host
    return settings.web_host if settings.web_host not in ("0.0.0.0", "::") else socket.getfqdn()


def worker_name() -> str:
    return os.environ.get("STREAM_GUARD_WORKER_NAME") or f"{socket.gethostname()}-{os.getpid()}"


def build_service(settings: StreamSettings, judge: Pool, worker: str | None = None,
                  monitoring: MonitorSettings | None = None, answers_retention_ms: int | None = None) -> GuardService:
    return GuardService(settings=settings, judge=judge, worker=worker or worker_name(),
                        monitoring=monitoring or MonitorSettings(), answers_retention_ms=answers_retention_ms)
