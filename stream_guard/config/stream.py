"""`[stream]` and `[stream.topics]`: the streaming service's topics, partitions, broker, batching, latency budget,
state sizing and broker security.

Nothing here talks to a broker; agents/ reads the result. Every key has an environment variable
`STREAM_GUARD_<KEY>` (topics: `STREAM_GUARD_TOPIC_<KEY>`), so containers and Kubernetes configure workers without
files (load.py).
"""


import re
from typing import Annotated, Any, ClassVar

import msgspec

from stream_guard.config.relations import valid_topic
from stream_guard.config.schema import (
    BOOLEAN,
    TEXT,
    Check,
    Doc,
    Secret,
    Section,
    at_least,
    non_negative,
    one_of,
    positive,
)

MiB = 1024 * 1024
LOG_FORMATS = ("text", "json")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_BROKER_RE = re.compile(r"^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$")
Topic = Annotated[str, Check(valid_topic, "must be a topic name (letters, digits, '.', '_', '-'; at most 249 characters)")]
AtLeastOne = Annotated[int, at_least(1)]
Seconds = Annotated[float, positive()]


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

    broker: Annotated[str | None, Check(lambda v: v is None or _BROKER_RE.match(v) is not None,
                                        "must be host:port[,host:port]"),
                      Doc("`host:port[,host:port]`. None: `worker` refuses to start (unless `--embedded`), `up` "
                          "starts the embedded broker.")] = None
    app_id: Annotated[str, TEXT, Doc("Consumer group and state prefix.")] = "stream-guard"
    topics: Annotated[TopicNames, Doc("Topic names: `[stream.topics]`.")] = msgspec.field(default_factory=TopicNames)

    # Partition counts used when the service creates a topic (existing topics are left as they are).
    # `partitions` is the unit of parallelism: the re-keyed topic and the state tables' changelogs have it,
    # so at most that many workers do useful work.
    answers_partitions: Annotated[AtLeastOne, Doc("Partitions of the answers topic, when the service creates "
                                                  "it.")] = 4
    partitions: Annotated[AtLeastOne, Doc("Partitions of the re-keyed topic and the state changelogs: at most this "
                                          "many workers do useful work.")] = 4
    output_partitions: Annotated[AtLeastOne, Doc("Partitions of the output topics, when the service creates "
                                                 "them.")] = 4
    replication_factor: Annotated[AtLeastOne, Doc("Replication of the topics the service creates.")] = 1

    data_dir: Annotated[str, TEXT, Doc("Where RocksDB state lives.")] = "stream-guard-data"
    web_enabled: Annotated[bool, BOOLEAN, Doc("Serve /metrics, /healthz, /readyz and the dashboard.")] = True
    web_host: Annotated[str, TEXT, Doc("Interface the web port binds (0.0.0.0 in containers).")] = "127.0.0.1"
    web_port: Annotated[int, Check(lambda v: isinstance(v, int) and 0 <= v <= 65535, "must be 0-65535"),
                        Doc("The web port.")] = 6066
    # The name other workers reach this one's web port by (a dashboard page for a tenant this worker owns is
    # fetched from it). Empty: web_host, or this host's fully qualified name when web_host is every interface.
    advertised_host: Annotated[str, TEXT, Doc("The name other workers reach this one's web port by; empty: "
                                              "web_host, or the FQDN when bound to every interface.")] = ""

    # Batching: a batch is the first waiting event plus whatever else is already waiting, up to `batch_max`;
    # `batch_within_ms` > 0 also waits that long after the first event for more (throughput over latency).
    batch_max: Annotated[AtLeastOne, Doc("Most events judged in one batch.")] = 32
    batch_within_ms: Annotated[int, non_negative(), Doc("Wait this long after a batch's first event for more "
                                                        "(0: take what is waiting).")] = 0

    # Where the checks run: "process", a child process (the event loop keeps its own core). The "thread"
    # executor was removed: a judge thread cannot be stopped when an event overruns its CPU budget.
    executor: Annotated[str, Check(lambda v: v == "process", _executor_reason, "must be process"),
                        Doc("Where the checks run: `process` (the only choice).")] = "process"

    # An alert fires when a partition's end-to-end p99 over the recent window passes the budget.
    latency_budget_ms: Annotated[float, positive(), Doc("End-to-end p99 per partition above which a "
                                                        "latency_budget alert fires.")] = 250.0
    latency_min_samples: Annotated[AtLeastOne, Doc("Events a window needs before its p99 is judged.")] = 20
    latency_window_slots: Annotated[AtLeastOne, Doc("Metrics intervals in the recent-latency window.")] = 6
    metrics_interval_s: Annotated[Seconds, Doc("How often summaries go to the metrics topic.")] = 10.0

    # How long the producer holds a message to batch it with others. Each hop pays it, so 0; our own batches
    # already hand the producer many messages at once, which it packs into few requests regardless.
    producer_linger_ms: Annotated[int, non_negative(), Doc("How long the producer holds a message to batch "
                                                           "it.")] = 0

    # How long a fetch waits at the broker for data. Short, because some brokers (the embedded one) answer
    # at the end of the wait rather than when data arrives; see agents/faust_adapter.py.
    # 25 ms measured best on the embedded broker at 200 events/s (end-to-end p99 56-103 ms over five runs,
    # against 111-153 at 10 ms and 78-127 at 50), and it halves the idle polling of 10 ms.
    fetch_max_wait_ms: Annotated[AtLeastOne, Doc("How long a fetch waits at the broker (100-500 against a real "
                                                 "Kafka cluster).")] = 25

    session_timeout_s: Annotated[Seconds, Doc("Consumer group session timeout.")] = 30.0
    heartbeat_interval_s: Annotated[Seconds, Doc("Consumer heartbeat; below session_timeout_s.")] = 3.0
    commit_interval_s: Annotated[Seconds, Doc("How often finished offsets are committed.")] = 1.0

    # RocksDB, per table partition: small, since a fingerprint history is a few KiB per question.
    rocksdb_block_cache_bytes: Annotated[int, Doc("RocksDB block cache per table partition.")] = 8 * MiB
    rocksdb_write_buffer_bytes: Annotated[int, Doc("RocksDB write buffer per table partition.")] = 4 * MiB
    rocksdb_max_write_buffers: Annotated[int, Doc("RocksDB write buffers per table partition.")] = 2
    rocksdb_max_open_files: Annotated[int, Doc("RocksDB open files per table partition.")] = 256

    # Broker security, for the worker and for produce / tail / up alike. SSL verifies the broker against
    # `ssl_cafile` (else the system's CAs); `ssl_certfile` (+ `ssl_keyfile`) is a client certificate for
    # mutual TLS. SASL takes a username and password: pass the password as STREAM_GUARD_SASL_PASSWORD (a
    # Kubernetes Secret), never in the config file.
    security_protocol: Annotated[str, one_of(*SECURITY_PROTOCOLS), Doc("PLAINTEXT, SSL, SASL_PLAINTEXT or "
                                                                       "SASL_SSL.")] = "PLAINTEXT"
    sasl_mechanism: Annotated[str, Doc("PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (with SASL).")] = "PLAIN"
    sasl_username: Annotated[str, Doc("SASL username.")] = ""
    sasl_password: Annotated[str, Secret(), Doc("SASL password: from STREAM_GUARD_SASL_PASSWORD (a Secret), never "
                                                "the file.")] = ""
    ssl_cafile: Annotated[str, Doc("CA bundle to verify the broker (default: the system's).")] = ""
    ssl_certfile: Annotated[str, Doc("Client certificate for mutual TLS.")] = ""
    ssl_keyfile: Annotated[str, Doc("Client key for mutual TLS (needs ssl_certfile).")] = ""

    # Largest message the clients fetch or send; must cover the largest payload we are to dead-letter. Topics
    # the service creates for the input take this much; the dead-letter and re-keyed topics, and the producer,
    # 64 KiB more (a dead letter is the original plus its error headers: stream_guard/wire/deadletter.py).
    max_message_bytes: Annotated[int, Doc("Largest message fetched or sent; the dead-letter and re-keyed topics "
                                          "and the producer take 64 KiB more.")] = 8 * MiB
    # How long the internal topics (the re-keyed copy of the answers, the monitor's) keep records, set when the
    # service creates them. A re-keyed copy is judged within seconds; what it must outlive is an outage of
    # every worker (the input's offset is committed once the copy is acknowledged, so an expired unjudged copy
    # is an event without a verdict). A day covers a night without workers while the lag alert pages, and
    # keeps a full copy of every answer and its context for a day rather than for the broker's default week.
    repartition_retention_ms: Annotated[int, at_least(60_000, "must be at least 60000 (a minute); a re-keyed event "
                                                              "must outlive a restart"),
                                        Doc("Retention of the internal topics the service creates.")] = 24 * 3600 * 1000
    # "json": every log line of the worker (ours, Faust's, aiokafka's) as one JSON object; "text" for people.
    log_format: Annotated[str, one_of(*LOG_FORMATS), Doc("`json`: every log line one JSON object; `text` for "
                                                         "people.")] = "text"
    alert_dedupe_ttl_s: Annotated[Seconds, Doc("How long an alert id suppresses a repeat.")] = 7 * 24 * 3600.0
    # How often a worker deletes dedupe records past the TTL from its partitions (and their changelog).
    alert_prune_interval_s: Annotated[Seconds, Doc("How often expired dedupe records are deleted.")] = 3600.0

    @property
    def by_question_topic(self) -> str:
        """The internal re-keyed topic (its records keyed by question hash)."""
        return self.topics.repartition or f"{self.app_id}-answers-repartition"

    @property
    def batch_within_s(self) -> float:
        return self.batch_within_ms / 1000.0
