"""`[stream]` and `[stream.topics]`: the streaming service's topics, partitions, broker, batching, latency budget,
state sizing and broker security.

Nothing here talks to a broker; agents/ reads the result. Every key has an environment variable
`STREAM_GUARD_<KEY>` (topics: `STREAM_GUARD_TOPIC_<KEY>`), so containers and Kubernetes configure workers without
files (load.py).
"""


import os
import re
from typing import Annotated, Any, ClassVar

import msgspec

from stream_guard.config.relations import valid_topic
from stream_guard.config.schema import (
    BOOLEAN,
    NON_EMPTY_TEXT,
    TEXT,
    Check,
    Doc,
    Secret,
    Section,
    above,
    count_between,
    one_of,
)

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
DAY_S = 24 * 3600.0
LOG_FORMATS = ("text", "json")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_BROKER_RE = re.compile(r"^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$")
Topic = Annotated[str, Check(valid_topic, "must be a topic name (letters, digits, '.', '_', '-'; at most 249 characters)")]
# Every number has both bounds: a unit mistake (milliseconds written as microseconds, bytes as kilobytes) is
# refused at start rather than becoming a worker that never gets ready or a crash once partitions arrive.
Partitions = Annotated[int, count_between(1, 10_000)]
Seconds = Annotated[float, above(0, DAY_S)]
Milliseconds = Annotated[int, count_between(0, 60_000)]
# An application id names the consumer group, the state directory and the internal topics: a topic name's
# characters, with room for the longest suffix (`-monitor-by-tenant-changelog`, `-answers-repartition`).
_APP_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
# A path that is set must name a readable file now, not when the first TLS handshake fails.
_FILE = Check(lambda v: isinstance(v, str) and (v == "" or os.path.isfile(v)), "must be empty or an existing file")


def _brokers_valid(value: Any) -> bool:
    return (isinstance(value, str) and _BROKER_RE.match(value) is not None
            and all(1 <= int(part.rsplit(":", 1)[1]) <= 65535 for part in value.split(",")))


def _executor_reason(value: Any) -> str:
    if value == "thread":
        return ("'thread' was removed: a judge thread cannot be stopped when an event overruns its CPU budget, and "
                "it stalls the worker meanwhile; use process")
    return "must be process"


class TopicNames(Section, frozen=True):
    WHAT: ClassVar[str] = "topic key"
    TABLE: ClassVar[str] = "a table of topic names"
    PREFIX: ClassVar[str] = "stream.topics."

    answers: Annotated[Topic, Doc("Input: AnswerEvents, ideally keyed by question hash.")] = "rag.answers"
    verdicts: Annotated[Topic, Doc("One verdict per judged event.")] = "guard.verdicts"
    alerts: Annotated[Topic, Doc("Alerts (verdict, latency budget, tenant monitoring).")] = "guard.alerts"
    dlq: Annotated[Topic, Doc("Dead letters: the original record plus `sg-dlt-*` error headers.")] = "guard.dlq"
    metrics: Annotated[Topic, Doc("Per-partition latency summaries.")] = "guard.metrics"
    # Tenant monitoring's review loop: the weekly sample out, graders' labels in.
    review: Annotated[Topic, Doc("Tenant monitoring: the weekly review sample, out.")] = "guard.review"
    labels: Annotated[Topic, Doc("Tenant monitoring: graders' labels, in.")] = "guard.labels"
    # The internal re-keyed copy of `answers`; empty means "<app_id>-answers-repartition". Before 0.2 it was
    # "<app_id>-answers-by-question": set that name here to keep using an existing topic (deploy/OPERATIONS.md).
    repartition: Annotated[str, Check(lambda v: v == "" or valid_topic(v), "must be empty or a topic name"),
                           Doc("The internal re-keyed copy of `answers`; empty: `<app_id>-answers-repartition` "
                               "(set `<app_id>-answers-by-question` to keep a pre-0.2 topic).")] = ""

    def outputs(self) -> tuple[str, ...]:
        return (self.verdicts, self.alerts, self.dlq, self.metrics)


class StreamSettings(Section, frozen=True):
    WHAT: ClassVar[str] = "stream setting"
    PREFIX: ClassVar[str] = "stream."

    broker: Annotated[str | None, Check(lambda v: v is None or _brokers_valid(v), "must be host:port[,host:port] "
                                                                                  "(ports 1-65535)"),
                      Doc("`host:port[,host:port]`. None: `worker` refuses to start (unless `--embedded`), `up` "
                          "starts the embedded broker.")] = None
    app_id: Annotated[str, Check(lambda v: isinstance(v, str) and _APP_ID_RE.match(v) is not None,
                                 "must be 1-200 letters, digits, '.', '_' or '-' (it names the consumer group and "
                                 "the internal topics)"),
                      Doc("Consumer group and state prefix.")] = "stream-guard"
    topics: Annotated[TopicNames, Doc("Topic names: `[stream.topics]`.")] = msgspec.field(default_factory=TopicNames)

    # Partition counts used when the service creates a topic (existing topics are left as they are).
    # `partitions` is the unit of parallelism: the re-keyed topic and the state tables' changelogs have it,
    # so at most that many workers do useful work.
    answers_partitions: Annotated[Partitions, Doc("Partitions of the answers topic, when the service creates "
                                                  "it.")] = 4
    partitions: Annotated[Partitions, Doc("Partitions of the re-keyed topic and the state changelogs: at most this "
                                          "many workers do useful work.")] = 4
    output_partitions: Annotated[Partitions, Doc("Partitions of the output topics, when the service creates "
                                                 "them.")] = 4
    replication_factor: Annotated[int, count_between(1, 100), Doc("Replication of the topics the service creates.")] = 1

    data_dir: Annotated[str, NON_EMPTY_TEXT, Doc("Where RocksDB state lives.")] = "stream-guard-data"
    web_enabled: Annotated[bool, BOOLEAN, Doc("Serve /metrics, /healthz, /readyz and the dashboard.")] = True
    web_host: Annotated[str, NON_EMPTY_TEXT, Doc("Interface the web port binds (0.0.0.0 in containers).")] = "127.0.0.1"
    web_port: Annotated[int, Check(lambda v: isinstance(v, int) and 0 <= v <= 65535, "must be 0-65535"),
                        Doc("The web port.")] = 6066
    # The name other workers reach this one's web port by (a dashboard page for a tenant this worker owns is
    # fetched from it). Empty: web_host, or this host's fully qualified name when web_host is every interface.
    advertised_host: Annotated[str, TEXT, Doc("The name other workers reach this one's web port by; empty: "
                                              "web_host, or the FQDN when bound to every interface.")] = ""

    # Batching: a batch is the first waiting event plus whatever else is already waiting, up to `batch_max`;
    # `batch_within_ms` > 0 also waits that long after the first event for more (throughput over latency).
    batch_max: Annotated[int, count_between(1, 10_000), Doc("Most events judged in one batch.")] = 32
    batch_within_ms: Annotated[Milliseconds, Doc("Wait this long after a batch's first event for more "
                                                        "(0: take what is waiting).")] = 0

    # Where the checks run: "process", a child process (the event loop keeps its own core). The "thread"
    # executor was removed: a judge thread cannot be stopped when an event overruns its CPU budget.
    executor: Annotated[str, Check(lambda v: v == "process", _executor_reason, "must be process"),
                        Doc("Where the checks run: `process` (the only choice).")] = "process"

    # An alert fires when a partition's end-to-end p99 over the recent window passes the budget.
    latency_budget_ms: Annotated[float, above(0, 3_600_000), Doc("End-to-end p99 per partition above which a "
                                                        "latency_budget alert fires.")] = 250.0
    latency_min_samples: Annotated[int, count_between(1, 1_000_000), Doc("Events a window needs before its p99 is judged.")] = 20
    latency_window_slots: Annotated[int, count_between(1, 1_000), Doc("Metrics intervals in the recent-latency window.")] = 6
    metrics_interval_s: Annotated[float, above(0, 3600), Doc("How often summaries go to the metrics topic.")] = 10.0

    # How long the producer holds a message to batch it with others. Each hop pays it, so 0; our own batches
    # already hand the producer many messages at once, which it packs into few requests regardless.
    # 5 ms measured at 50 events/s (w23, bench/cpu_profile.py --request-counts): produce requests per event
    # 1.45 -> 1.36 with monitoring off, 1.60 -> 1.64 on, worker CPU unchanged beyond the noise: an event's
    # sends follow one another's acknowledgements (verdict, then the state it decided), so there is little
    # to pack.
    producer_linger_ms: Annotated[Milliseconds, Doc("How long the producer holds a message to batch "
                                                           "it.")] = 0

    # How long a fetch waits at the broker for data. Short, because some brokers (the embedded one) answer
    # at the end of the wait rather than when data arrives; see agents/faust_adapter.py.
    # 25 ms measured best on the embedded broker at 200 events/s (end-to-end p99 56-103 ms over five runs,
    # against 111-153 at 10 ms and 78-127 at 50), and it halves the idle polling of 10 ms.
    # At most 5 s: a fetch waits at the broker that long, and a wait near the request timeout never answers.
    # CPU against latency (w23, 50 events/s, embedded broker): the worker's consumer thread pays about 1 ms of
    # CPU per fetch whether it brings anything or not; 50 ms halves the fetches (36 -> 19 per idle second, the
    # worker's idle CPU 33 -> 19 ms/s) and adds about 10 ms to the end-to-end p50.
    fetch_max_wait_ms: Annotated[int, count_between(1, 5_000), Doc(
        "How long a fetch waits at the broker (100-500 against a real Kafka cluster). On a broker that answers "
        "only when the wait ends (the embedded one) every hop waits up to this long, and a longer wait means "
        "fewer fetches: less idle CPU in the worker and the broker, more latency.")] = 25

    # Kafka brokers accept session timeouts from 6 s to 30 minutes by default (group.min/max.session.timeout.ms).
    session_timeout_s: Annotated[float, above(0, 1800), Doc("Consumer group session timeout.")] = 30.0
    heartbeat_interval_s: Annotated[float, above(0, 600), Doc("Consumer heartbeat; below session_timeout_s.")] = 3.0
    commit_interval_s: Annotated[float, above(0, 3600), Doc("How often finished offsets are committed.")] = 1.0

    # When the broker goes away (deploy/OPERATIONS.md, "Broker loss"). No broker has answered for
    # broker_lost_after_s and requests failed meanwhile: /readyz says 503 (a rebalance waits without failing, so
    # it never counts). No answer for broker_lost_grace_s: /healthz says 503 too, so that an orchestrator restarts a
    # worker that cannot recover. A message the broker has not acknowledged within producer_timeout_s fails, and
    # the worker then stops with its inputs uncommitted (they are redelivered); a broker back within that time
    # loses nothing. SIGTERM ends the worker within shutdown_timeout_s whatever the broker does: under
    # Kubernetes' default grace period of 30 s.
    broker_lost_after_s: Annotated[float, above(0, 300), Doc("No broker answered this long while requests failed: "
                                                             "/readyz answers 503.")] = 3.0
    broker_lost_grace_s: Annotated[float, above(0, DAY_S), Doc("Lost, and no broker answered this long: /healthz "
                                                               "answers 503 too (not below "
                                                               "broker_lost_after_s).")] = 60.0
    producer_timeout_s: Annotated[float, above(0, 3600), Doc("A message the broker has not acknowledged within "
                                                             "this fails; the worker then stops, inputs "
                                                             "uncommitted.")] = 30.0
    shutdown_timeout_s: Annotated[float, above(0, 3600), Doc("SIGTERM ends the worker within this, whatever the "
                                                             "broker does.")] = 20.0
    # At start: how long `worker`, `produce`, `tail`, `up` and `backtest --topic` try to reach the broker before
    # they exit 1 naming it (`--wait`: keep trying).
    connect_timeout_s: Annotated[float, above(0, 300), Doc("How long a command tries to reach the broker at start "
                                                           "before it exits 1 (`--wait`: keep trying).")] = 5.0
    # Clocks: a produced_at (or Kafka timestamp) counts only within this window before now (less when the
    # answers topic keeps records for less) and this skew after it; others are counted by reason and kept out of
    # latency figures, latency alerts and the monitor's days.
    clock_window_s: Annotated[float, above(60, 366 * DAY_S), Doc("How far before now a produced_at or Kafka "
                                                                 "timestamp may be (at most the answers topic's "
                                                                 "retention).")] = 7 * DAY_S
    clock_skew_s: Annotated[float, above(0, 86_400), Doc("How far after now a produced_at or Kafka timestamp "
                                                         "may be.")] = 300.0

    # RocksDB: one block cache and one memtable budget for all of a worker's table partitions (Faust would give
    # each its own, and a worker's memory would grow with tables x partitions); small, since a fingerprint
    # history is a few KiB per question.
    rocksdb_block_cache_bytes: Annotated[int, count_between(0, 64 * GiB, "must be from 0 to 64 GiB (68719476736)"),
                                         Doc("RocksDB block cache of a worker, shared by all its table "
                                             "partitions.")] = 16 * MiB
    rocksdb_memtable_bytes: Annotated[int, count_between(1 * MiB, 64 * GiB, "must be from 1 MiB (1048576) to 64 "
                                                                            "GiB (68719476736)"),
                                      Doc("RocksDB memtables of a worker, all table partitions together: past it, "
                                          "the one being written is flushed.")] = 32 * MiB
    rocksdb_write_buffer_bytes: Annotated[int, count_between(64 * KiB, 4 * GiB, "must be from 64 KiB (65536) to 4 "
                                                                                "GiB (4294967296)"),
                                          Doc("RocksDB write buffer per table partition.")] = 4 * MiB
    rocksdb_max_write_buffers: Annotated[int, count_between(1, 64), Doc("RocksDB write buffers per table "
                                                                        "partition.")] = 2
    # RocksDB takes -1 as "keep every file open"; a few files per partition cannot hold a database.
    rocksdb_max_open_files: Annotated[int, Check(lambda v: isinstance(v, int) and not isinstance(v, bool)
                                                 and (v == -1 or 16 <= v <= 1_000_000),
                                                 "must be -1 (no limit) or from 16 to 1000000"),
                                      Doc("RocksDB open files per table partition (-1: no limit).")] = 256

    # Broker security, for the worker and for produce / tail / up alike. SSL verifies the broker against
    # `ssl_cafile` (else the system's CAs); `ssl_certfile` (+ `ssl_keyfile`) is a client certificate for
    # mutual TLS. SASL takes a username and password: pass the password as STREAM_GUARD_SASL_PASSWORD (a
    # Kubernetes Secret), never in the config file.
    security_protocol: Annotated[str, one_of(*SECURITY_PROTOCOLS), Doc("PLAINTEXT, SSL, SASL_PLAINTEXT or "
                                                                       "SASL_SSL.")] = "PLAINTEXT"
    sasl_mechanism: Annotated[str, TEXT, Doc("PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (with SASL).")] = "PLAIN"
    sasl_username: Annotated[str, TEXT, Doc("SASL username.")] = ""
    sasl_password: Annotated[str, Secret(), TEXT, Doc("SASL password: from STREAM_GUARD_SASL_PASSWORD (a Secret), never "
                                                "the file.")] = ""
    ssl_cafile: Annotated[str, _FILE, Doc("CA bundle to verify the broker (default: the system's).")] = ""
    ssl_certfile: Annotated[str, _FILE, Doc("Client certificate for mutual TLS.")] = ""
    ssl_keyfile: Annotated[str, _FILE, Doc("Client key for mutual TLS (needs ssl_certfile).")] = ""

    # Largest message the clients fetch or send; must cover the largest payload we are to dead-letter. Topics
    # the service creates for the input take this much; the dead-letter and re-keyed topics, and the producer,
    # 64 KiB more (a dead letter is the original plus its error headers: stream_guard/wire/deadletter.py).
    max_message_bytes: Annotated[int, count_between(64 * KiB, GiB, "must be from 64 KiB (65536) to 1 GiB "
                                                                   "(1073741824)"), Doc("Largest message fetched or sent; the dead-letter and re-keyed topics "
                                          "and the producer take 64 KiB more.")] = 8 * MiB
    # How long the internal topics (the re-keyed copy of the answers, the monitor's) keep records, set when the
    # service creates them. A re-keyed copy is judged within seconds; what it must outlive is an outage of
    # every worker (the input's offset is committed once the copy is acknowledged, so an expired unjudged copy
    # is an event without a verdict). A day covers a night without workers while the lag alert pages, and
    # keeps a full copy of every answer and its context for a day rather than for the broker's default week.
    repartition_retention_ms: Annotated[int, count_between(60_000, 365 * 24 * 3600 * 1000,
                                                           "must be from 60000 (a minute; a re-keyed event must "
                                                           "outlive a restart) to a year"),
                                        Doc("Retention of the internal topics the service creates.")] = 24 * 3600 * 1000
    # "json": every log line of the worker (ours, Faust's, aiokafka's) as one JSON object; "text" for people.
    log_format: Annotated[str, one_of(*LOG_FORMATS), Doc("`json`: every log line one JSON object; `text` for "
                                                         "people.")] = "text"
    alert_dedupe_ttl_s: Annotated[float, above(0, 366 * DAY_S), Doc("How long an alert id suppresses a repeat.")] = 7 * 24 * 3600.0
    # How often a worker deletes dedupe records past the TTL from its partitions (and their changelog).
    alert_prune_interval_s: Annotated[Seconds, Doc("How often expired dedupe records are deleted.")] = 3600.0

    @property
    def by_question_topic(self) -> str:
        """The internal re-keyed topic (its records keyed by question hash)."""
        return self.topics.repartition or f"{self.app_id}-answers-repartition"

    @property
    def batch_within_s(self) -> float:
        return self.batch_within_ms / 1000.0
