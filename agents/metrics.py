"""What a worker serves at /metrics: prometheus_client metrics in a registry of the worker's own.

- Latency per input partition, as real histograms: `stream_guard_processing_seconds` and
  `stream_guard_end_to_end_seconds` (topic, partition). Label sets stay bounded: the partitions are those
  `LatencyRegistry` keeps (at most `max_series`, the rest booked as topic "_overflow", partition "-1").
- What the guard decided: verdicts by routing (and partition), checks that flagged an answer, the
  distribution of `hallucination_score`; dead letters by stage, alerts by kind, and the counters of what was
  refused or skipped (tombstones, implausible clocks, Faust's acknowledgements of skipped messages).
- Kafka health as Faust and aiokafka see it: rebalances and their duration (GuardMonitor, Faust's sensor
  API), offset commits (their latency and failures, timed around the consumer's commit in
  agents/faust_adapter.py), send errors per topic (our sends bypass Faust's topic layer, so we count them).
- The process: prometheus_client's process, platform and GC collectors, the judge child's CPU and memory
  (`stream_guard_judge_process_*`), the tables' RocksDB memory against its budget
  (`stream_guard_rocksdb_memory_bytes`, `..._limit_bytes`), and `stream_guard_build_info`.

The per-partition quantile summaries of the metrics topic come from stream_guard/ops/latency.py, not from here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from faust.sensors import Monitor
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from stream_guard.ops.latency import LatencyRegistry, PartitionKey
from stream_guard.ops.process_metrics import service_registry
from stream_guard.wire.events import unknown_field_reason

log = logging.getLogger(__name__)

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Seconds. Processing is a batch's whole trip (judge, sends acknowledged); end to end adds time in Kafka.
LATENCY_BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0,
                     2.0, 5.0, 10.0, 30.0, 60.0, float("inf"))
SCORE_BUCKETS = tuple(round(0.05 * i, 2) for i in range(1, 20)) + (1.0,)
# Rebalances include table recovery; commits are usually milliseconds.
REBALANCE_BUCKETS_S = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, float("inf"))
# Distinct field names the unknown-field counter labels (producers choose them).
MAX_UNKNOWN_FIELD_LABELS = 50
COMMIT_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, float("inf"))


@dataclass
class Gauges:
    """Values read at scrape time (the worker's state), set by the service once it exists."""

    latency_budget_s: float = 0.0
    event_budget_s: float = 0.0
    unacknowledged: Callable[[], int] = lambda: 0
    judge_replaced: Callable[[], int] = lambda: 0
    refused_acks: Callable[[], int] = lambda: 0
    broker_link: Any = None  # agents.broker_link.BrokerLink
    rocksdb_memory: Any = None  # agents.faust_adapter.RocksDBMemory: the tables' shared memory budget


@dataclass
class WorkerMetrics:
    latency: LatencyRegistry
    judge_pid: Callable[[], int | None] = lambda: None
    gauges: Gauges = field(default_factory=Gauges)
    registry: CollectorRegistry = field(init=False)

    def __post_init__(self) -> None:
        r = self.registry = service_registry("faust-streaming", "aiokafka", "prometheus-client")
        part = ["topic", "partition"]
        self.processing = Histogram(
            "stream_guard_processing_seconds",
            "Time from a judge batch's arrival to the event's verdict being acknowledged by the broker.",
            part, buckets=LATENCY_BUCKETS_S, registry=r)
        self.end_to_end = Histogram(
            "stream_guard_end_to_end_seconds",
            "Time from the event's produced_at (else its Kafka timestamp) to its verdict being acknowledged.",
            part, buckets=LATENCY_BUCKETS_S, registry=r)
        self.verdicts = Counter("stream_guard_verdicts", "Verdicts sent (or events failed), by input partition "
                                "and routing.", [*part, "routing"], registry=r)
        self.checks_flagged = Counter("stream_guard_checks_flagged", "Answers a check flagged on its own, by check.",
                                      ["check"], registry=r)
        self.score = Histogram("stream_guard_hallucination_score", "hallucination_score of judged answers.",
                               buckets=SCORE_BUCKETS, registry=r)
        self.dead_letters = Counter("stream_guard_dead_letters", "Events sent to the dead-letter topic, by stage.",
                                    ["stage"], registry=r)
        self.dead_letter_values_omitted = Counter(
            "stream_guard_dead_letter_values_omitted",
            "Dead letters sent without their value because the record would not fit the topic or the producer.",
            registry=r)
        self.alerts = Counter("stream_guard_alerts", "Alerts sent, by kind.", ["kind"], registry=r)
        self.alerts_suppressed = Counter(
            "stream_guard_alerts_suppressed",
            "Alerts not sent again because their alert_id was already sent (redelivery or replay).", ["kind"],
            registry=r)
        self.pruned = Counter("stream_guard_state_records_pruned", "State records deleted after their time to live.",
                              ["table"], registry=r)
        self.tombstones = Counter("stream_guard_tombstones_skipped",
                                  "Input messages with no value (tombstones): skipped, not judged.", ["topic"],
                                  registry=r)
        self.clock_ignored = Counter(
            "stream_guard_clock_values_ignored",
            "produced_at values (or Kafka timestamps) outside the clock window (too_old: before clock_window_s or the "
            "answers topic's retention; future: past clock_skew_s), left out of latency figures and alerts.", ["reason"],
            registry=r)
        self.unknown_fields = Counter(
            "stream_guard_unknown_fields",
            "Events judged without a top-level field the contract does not name, by field (the first "
            f"{MAX_UNKNOWN_FIELD_LABELS} names seen; later ones count as \"(other)\").", ["field"], registry=r)
        self._unknown_field_labels: set[str] = set()
        self.send_errors = Counter("stream_guard_kafka_send_errors", "Messages the broker did not acknowledge, by "
                                   "topic (the worker then stops: its inputs are redelivered).", ["topic"], registry=r)
        self.rebalances = Counter("stream_guard_kafka_rebalances", "Consumer group rebalances this worker took "
                                  "part in.", registry=r)
        self.rebalance_seconds = Histogram("stream_guard_kafka_rebalance_seconds", "From a rebalance's start to "
                                           "its end, table recovery included.", buckets=REBALANCE_BUCKETS_S,
                                           registry=r)
        self.assignment_errors = Counter("stream_guard_kafka_assignment_errors",
                                         "Partition assignments that failed.", registry=r)
        self.commit_seconds = Histogram("stream_guard_kafka_commit_seconds", "Offset commits to the broker, "
                                        "by how long they took.", buckets=COMMIT_BUCKETS_S, registry=r)
        self.commit_failures = Counter("stream_guard_kafka_commit_failures", "Offset commits that failed.",
                                       registry=r)
        ProcessCollector(namespace="stream_guard_judge", pid=self._judge_pid, registry=r)
        r.register(_StateCollector(self))
        self._partition_children: dict[PartitionKey, tuple[Any, Any]] = {}

    def count_unknown_fields(self, names: tuple[str, ...]) -> None:
        """Count an event's stray keys. Producers choose them: the label values stay bounded."""
        for name in names:
            if name not in self._unknown_field_labels and len(self._unknown_field_labels) < MAX_UNKNOWN_FIELD_LABELS:
                self._unknown_field_labels.add(name)  # said once per name, counted every time
                log.warning("events carry the field %r: it %s; they are judged without it", name,
                            unknown_field_reason(name))
            self.unknown_fields.labels(name if name in self._unknown_field_labels else "(other)").inc()

    def _judge_pid(self) -> int | str:
        pid = self.judge_pid()
        return pid if pid is not None else "no-judge"  # /proc/no-judge does not exist: no judge samples

    def observe(self, topic: str, partition: int, processing_ms: float, end_to_end_ms: float | None,
                routing: str | None, ignored: Sequence[str] = ()) -> None:
        key = self.latency.observe(topic, partition, processing_ms, end_to_end_ms, routing, ignored)
        children = self._partition_children.get(key)
        if children is None:
            labels = (key[0], str(key[1]))
            children = self._partition_children[key] = (self.processing.labels(*labels), self.end_to_end.labels(*labels))
        children[0].observe(processing_ms / 1000.0)
        if end_to_end_ms is not None:
            children[1].observe(end_to_end_ms / 1000.0)
        if routing:
            self.verdicts.labels(key[0], str(key[1]), routing).inc()

    def judged(self, score: float | None, checks_flagged: Iterable[str]) -> None:
        if score is not None:
            self.score.observe(score)
        for check in checks_flagged:
            self.checks_flagged.labels(check).inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)

    def monitor(self, **kwargs: Any) -> "GuardMonitor":
        """Faust's Monitor sensor, also counting into these metrics (set as the app's `monitor`)."""
        return GuardMonitor(self, **kwargs)


class _StateCollector:
    """Gauges read from the worker's state when Prometheus scrapes."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        m, g = self.metrics, self.metrics.gauges
        lag = GaugeMetricFamily("stream_guard_consumer_lag",
                                "Messages between the partition's end and the worker's position.",
                                labels=["topic", "partition"])
        for (topic, partition), value in sorted(m.latency.lag.items()):
            lag.add_metric([topic, str(partition)], value)
        yield lag
        yield GaugeMetricFamily("stream_guard_latency_budget_seconds", "The configured end-to-end p99 budget.",
                                value=g.latency_budget_s)
        yield GaugeMetricFamily("stream_guard_event_budget_seconds", "CPU each event may spend in the judge.",
                                value=g.event_budget_s)
        yield GaugeMetricFamily("stream_guard_unacknowledged_inputs",
                                "Input messages taken and not yet acknowledged.", value=g.unacknowledged())
        yield CounterMetricFamily("stream_guard_judge_replaced", "Judge processes replaced (killed past a "
                                  "wall-clock limit, or found dead).", value=g.judge_replaced())
        link = g.broker_link
        if link is not None:
            yield GaugeMetricFamily("stream_guard_broker_connected", "1 while a broker answers (or answered within "
                                    "broker_lost_after_s), 0 once the link is lost.", value=int(link.state() != "lost"))
            yield CounterMetricFamily("stream_guard_broker_request_failures", "Requests to the broker that failed to "
                                      "connect or timed out.", value=link.failures_total)
            yield CounterMetricFamily("stream_guard_broker_losses", "Times every broker stopped answering for "
                                      "broker_lost_after_s.", value=link.losses_total)
        if g.rocksdb_memory is not None:
            yield from _rocksdb_memory(g.rocksdb_memory)
        yield CounterMetricFamily("stream_guard_skipped_acks_refused", "Acknowledgements Faust made for input "
                                  "messages it skipped, refused (see agents/faust_adapter.py).", value=g.refused_acks())


def _rocksdb_memory(memory: Any) -> Iterator[Metric]:
    """The tables' RocksDB memory, which no process collector separates from the rest of the RSS: what the shared
    block cache and memtables hold now, and the budgets they are held to (by kind)."""
    used = GaugeMetricFamily("stream_guard_rocksdb_memory_bytes", "Bytes RocksDB holds for the worker's tables, "
                             "all partitions together: the shared block cache and the memtables.", labels=["kind"])
    limit = GaugeMetricFamily("stream_guard_rocksdb_memory_limit_bytes", "The budget of each kind "
                              "(rocksdb_block_cache_bytes, rocksdb_memtable_bytes).", labels=["kind"])
    for family, figures in ((used, memory.usage()), (limit, memory.limits())):
        for kind, value in sorted(figures.items()):
            family.add_metric([kind], value)
        yield family


class GuardMonitor(Monitor):  # type: ignore[misc]
    """Faust's Monitor (the sensor every app has; it keeps the figures Faust's own views show), counting
    rebalances and failed assignments into the worker's metrics as well."""

    def __init__(self, metrics: WorkerMetrics, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._guard_metrics = metrics

    def on_rebalance_start(self, app: Any) -> dict[str, Any]:
        self._guard_metrics.rebalances.inc()
        state: dict[str, Any] = super().on_rebalance_start(app)
        return state

    def on_rebalance_end(self, app: Any, state: dict[str, Any]) -> None:
        super().on_rebalance_end(app, state)
        latency = state.get("latency_end")
        if isinstance(latency, float):
            self._guard_metrics.rebalance_seconds.observe(latency)

    def on_assignment_error(self, assignor: Any, state: dict[str, Any], exc: BaseException) -> None:
        super().on_assignment_error(assignor, state, exc)
        self._guard_metrics.assignment_errors.inc()
