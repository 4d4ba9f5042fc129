"""Settings of the streaming service: topics, partitions, broker, batching, latency budget, state sizing.

Pure: built from plain mappings (a parsed TOML file's `[stream]` table, the environment, command-line
overrides), in that order of precedence, lowest first. Nothing here talks to a broker; agents/ reads the
result. Every setting has an environment variable `STREAM_GUARD_<NAME>` (topics: `STREAM_GUARD_TOPIC_<NAME>`)
so containers and Kubernetes configure workers without files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from stream_guard.config.detector import LIMITS_ENV_PREFIX, ConfigError, coerce, detector_setting_names, limit_names
from stream_guard.config.monitor import monitor_variable_names

ENV_PREFIX = "STREAM_GUARD_"
TOPIC_ENV_PREFIX = "STREAM_GUARD_TOPIC_"
# The project's `STREAM_GUARD_*` variables that are not settings. Any other `STREAM_GUARD_*` variable that
# names no stream or detector setting is refused at start: a misspelt one would otherwise be ignored.
OTHER_VARIABLES = frozenset({
    "STREAM_GUARD_DATA",              # the labelled data sets (bench/)
    "STREAM_GUARD_TANSU_BIN",         # the embedded broker's binary (agents/embedded_broker.py)
    "STREAM_GUARD_TEST_BROKER",       # `embedded`: the tests skip Docker (tests/conftest.py)
    "STREAM_GUARD_REQUIRE_BROWSER",   # CI: a missing chromium fails the page tests
    "STREAM_GUARD_CHROMIUM",          # the page tests' chromium binary
    "STREAM_GUARD_WORKER_NAME",       # a worker's name in metrics and dead letters (agents/app.py)
})
# Kafka topic names: letters, digits, '.', '_', '-', at most 249 characters.
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_BROKER_RE = re.compile(r"^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$")

MiB = 1024 * 1024
LOG_FORMATS = ("text", "json")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class TopicNames:
    answers: str = "rag.answers"
    verdicts: str = "guard.verdicts"
    alerts: str = "guard.alerts"
    dlq: str = "guard.dlq"
    metrics: str = "guard.metrics"
    # Tenant monitoring's review loop: the weekly sample out, graders' labels in.
    review: str = "guard.review"
    labels: str = "guard.labels"
    # The internal re-keyed copy of `answers`; empty means "<app_id>-answers-repartition". Before 0.2 it was
    # "<app_id>-answers-by-question": set that name here to keep using an existing topic (deploy/OPERATIONS.md).
    repartition: str = ""

    def outputs(self) -> tuple[str, ...]:
        return (self.verdicts, self.alerts, self.dlq, self.metrics)


@dataclass(frozen=True)
class StreamSettings:
    # host:port[,host:port]. None: `worker` refuses to start (unless --embedded), `up` starts the embedded one.
    broker: str | None = None
    app_id: str = "stream-guard"
    topics: TopicNames = field(default_factory=TopicNames)

    # Partition counts used when the service creates a topic (existing topics are left as they are).
    # `partitions` is the unit of parallelism: the re-keyed topic and the state tables' changelogs have it,
    # so at most that many workers do useful work.
    answers_partitions: int = 4
    partitions: int = 4
    output_partitions: int = 4
    replication_factor: int = 1

    data_dir: str = "stream-guard-data"
    web_enabled: bool = True
    web_host: str = "127.0.0.1"
    web_port: int = 6066
    # The name other workers reach this one's web port by (a dashboard page for a tenant this worker owns is
    # fetched from it). Empty: web_host, or this host's fully qualified name when web_host is every interface.
    advertised_host: str = ""

    # Batching: a batch is the first waiting event plus whatever else is already waiting, up to `batch_max`;
    # `batch_within_ms` > 0 also waits that long after the first event for more (throughput over latency).
    batch_max: int = 32
    batch_within_ms: int = 0

    # Where the checks run: "process", a child process (the event loop keeps its own core). The "thread"
    # executor was removed: a judge thread cannot be stopped when an event overruns its CPU budget.
    executor: str = "process"

    # An alert fires when a partition's end-to-end p99 over the recent window passes the budget.
    latency_budget_ms: float = 250.0
    latency_min_samples: int = 20
    latency_window_slots: int = 6
    metrics_interval_s: float = 10.0

    # How long the producer holds a message to batch it with others. Each hop pays it, so 0; our own batches
    # already hand the producer many messages at once, which it packs into few requests regardless.
    producer_linger_ms: int = 0

    # How long a fetch waits at the broker for data. Short, because some brokers (the embedded one) answer
    # at the end of the wait rather than when data arrives; see agents/faust_adapter.py.
    # 25 ms measured best on the embedded broker at 200 events/s (end-to-end p99 56-103 ms over five runs,
    # against 111-153 at 10 ms and 78-127 at 50), and it halves the idle polling of 10 ms.
    fetch_max_wait_ms: int = 25

    session_timeout_s: float = 30.0
    heartbeat_interval_s: float = 3.0
    commit_interval_s: float = 1.0

    # RocksDB, per table partition: small, since a fingerprint history is a few KiB per question.
    rocksdb_block_cache_bytes: int = 8 * MiB
    rocksdb_write_buffer_bytes: int = 4 * MiB
    rocksdb_max_write_buffers: int = 2
    rocksdb_max_open_files: int = 256

    # Broker security, for the worker and for produce / tail / up alike. SSL verifies the broker against
    # `ssl_cafile` (else the system's CAs); `ssl_certfile` (+ `ssl_keyfile`) is a client certificate for
    # mutual TLS. SASL takes a username and password: pass the password as STREAM_GUARD_SASL_PASSWORD (a
    # Kubernetes Secret), never in the config file.
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "PLAIN"
    sasl_username: str = ""
    sasl_password: str = field(default="", repr=False)
    ssl_cafile: str = ""
    ssl_certfile: str = ""
    ssl_keyfile: str = ""

    # Largest message the clients fetch or send; must cover the largest payload we are to dead-letter. Topics
    # the service creates for the input take this much; the dead-letter and re-keyed topics, and the producer,
    # 64 KiB more (a dead letter is the original plus its error headers: stream_guard/wire/deadletter.py).
    max_message_bytes: int = 8 * MiB
    # How long the internal topics (the re-keyed copy of the answers, the monitor's) keep records, set when the
    # service creates them. A re-keyed copy is judged within seconds; what it must outlive is an outage of
    # every worker (the input's offset is committed once the copy is acknowledged, so an expired unjudged copy
    # is an event without a verdict). A day covers a night without workers while the lag alert pages, and
    # keeps a full copy of every answer and its context for a day rather than for the broker's default week.
    repartition_retention_ms: int = 24 * 3600 * 1000
    # "json": every log line of the worker (ours, Faust's, aiokafka's) as one JSON object; "text" for people.
    log_format: str = "text"
    alert_dedupe_ttl_s: float = 7 * 24 * 3600.0
    # How often a worker deletes dedupe records past the TTL from its partitions (and their changelog).
    alert_prune_interval_s: float = 3600.0

    @property
    def by_question_topic(self) -> str:
        """The internal re-keyed topic (its records keyed by question hash)."""
        return self.topics.repartition or f"{self.app_id}-answers-repartition"

    @property
    def batch_within_s(self) -> float:
        return self.batch_within_ms / 1000.0

    def with_overrides(self, **overrides: Any) -> "StreamSettings":
        return settings_from_mapping(overrides, base=self)

    def validate(self) -> "StreamSettings":
        for name in (*self.topics.outputs(), self.topics.answers, self.by_question_topic):
            if not _TOPIC_RE.match(name):
                raise ValueError(f"invalid topic name {name!r}")
        if len(set((*self.topics.outputs(), self.topics.answers, self.by_question_topic))) != 6:
            raise ValueError("topic names must be distinct")
        if self.broker is not None and not _BROKER_RE.match(self.broker):
            raise ValueError(f"broker must be host:port[,host:port], got {self.broker!r}")
        for name in ("answers_partitions", "partitions", "output_partitions", "replication_factor", "batch_max",
                     "fetch_max_wait_ms",
                     "latency_min_samples", "latency_window_slots"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.repartition_retention_ms < 60_000:
            raise ConfigError("repartition_retention_ms", "must be at least 60000 (a minute); a re-keyed event "
                                                          f"must outlive a restart, got {self.repartition_retention_ms}")
        if self.log_format not in LOG_FORMATS:
            raise ConfigError("log_format", f"must be one of {', '.join(LOG_FORMATS)}, got {self.log_format!r}")
        if self.producer_linger_ms < 0:
            raise ValueError("producer_linger_ms must not be negative")
        if self.batch_within_ms < 0:
            raise ValueError("batch_within_ms must not be negative")
        for name in ("latency_budget_ms", "metrics_interval_s", "session_timeout_s",
                     "heartbeat_interval_s", "commit_interval_s", "alert_dedupe_ttl_s", "alert_prune_interval_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.executor == "thread":
            raise ConfigError("executor", "'thread' was removed: a judge thread cannot be stopped when an event "
                                          "overruns its CPU budget, and it stalls the worker meanwhile; use process")
        if self.executor != "process":
            raise ConfigError("executor", f"must be process, got {self.executor!r}")
        if not 0 <= self.web_port <= 65535:
            raise ValueError(f"web_port must be 0-65535, got {self.web_port}")
        if self.heartbeat_interval_s >= self.session_timeout_s:
            raise ValueError("heartbeat_interval_s must be below session_timeout_s")
        self._validate_security()
        return self

    def _validate_security(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                             f"got {self.security_protocol!r}")
        if self.security_protocol.startswith("SASL"):
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise ValueError(f"sasl_mechanism must be one of {', '.join(SASL_MECHANISMS)}, "
                                 f"got {self.sasl_mechanism!r}")
            if not self.sasl_username or not self.sasl_password:
                raise ValueError(f"sasl_username and sasl_password are required with {self.security_protocol} "
                                 "(the password from STREAM_GUARD_SASL_PASSWORD)")
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ValueError("ssl_keyfile needs ssl_certfile")


def _topics_from(data: Mapping[str, Any], base: TopicNames) -> TopicNames:
    known = {f.name for f in fields(TopicNames)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown topic key(s): {', '.join(unknown)}")
    return replace(base, **{k: coerce(f"topics.{k}", "str", v) for k, v in data.items()})


def settings_from_mapping(data: Mapping[str, Any], base: StreamSettings | None = None) -> StreamSettings:
    """Apply a mapping of setting names to values; unknown names are an error, never ignored."""
    base = base or StreamSettings()
    kinds = {f.name: f.type for f in fields(StreamSettings)}
    unknown = sorted(set(data) - set(kinds))
    if unknown:
        raise ValueError(f"unknown stream setting(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name == "topics":
            if isinstance(value, TopicNames):
                values[name] = value
            elif isinstance(value, Mapping):
                values[name] = _topics_from(value, base.topics)
            else:
                raise ValueError(f"topics: expected a table of topic names, got {type(value).__name__}")
        else:
            values[name] = coerce(name, kinds[name], value)
    return replace(base, **values)


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """`STREAM_GUARD_*` variables that name no stream setting, topic, detector setting, limit or monitoring
    setting, and are not one of the project's other variables (OTHER_VARIABLES): misspellings, most likely."""
    stream = {f.name for f in fields(StreamSettings)} - {"topics"}
    topics = {f.name for f in fields(TopicNames)}
    detector = detector_setting_names() - {"limits"}
    limits = limit_names()
    monitor = monitor_variable_names()
    out = []
    for key in env:
        if not key.startswith(ENV_PREFIX) or key in OTHER_VARIABLES or key in monitor:
            continue
        if key.startswith(TOPIC_ENV_PREFIX) and key[len(TOPIC_ENV_PREFIX):].lower() in topics:
            continue
        if key.startswith(LIMITS_ENV_PREFIX) and key[len(LIMITS_ENV_PREFIX):].lower() in limits:
            continue
        name = key[len(ENV_PREFIX):]
        if name.isupper() and name.lower() in stream | detector:
            continue
        out.append(key)
    return sorted(out)


def check_environment(env: Mapping[str, str]) -> None:
    """Refuse unknown `STREAM_GUARD_*` variables by name (ConfigError), as a config file's unknown key is."""
    unknown = unknown_variables(env)
    if unknown:
        raise ConfigError(unknown[0], f"unknown environment variable(s): {', '.join(unknown)}; settings are "
                                      "STREAM_GUARD_<SETTING>, STREAM_GUARD_TOPIC_<TOPIC> and "
                                      "STREAM_GUARD_LIMITS_<LIMIT> (see README, Configuration)")


def settings_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The stream settings among the `STREAM_GUARD_*` variables, as a mapping for `settings_from_mapping`.
    Detector settings are config.py's to read; unknown variables are refused by `check_environment`."""
    names = {f.name for f in fields(StreamSettings)} - {"topics"}
    topic_names = {f.name for f in fields(TopicNames)}
    out: dict[str, Any] = {}
    topics: dict[str, str] = {}
    for key, value in env.items():
        if key.startswith(TOPIC_ENV_PREFIX):
            name = key[len(TOPIC_ENV_PREFIX):].lower()
            if name in topic_names:
                topics[name] = value
        elif key.startswith(ENV_PREFIX):
            name = key[len(ENV_PREFIX):].lower()
            if name in names:
                out[name] = value
    if topics:
        out["topics"] = topics
    return out


def load_settings(
    file_doc: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> StreamSettings:
    """Defaults < the file's `[stream]` table < environment < explicit overrides (command-line flags)."""
    if env:
        check_environment(env)
    settings = StreamSettings()
    if file_doc:
        section = file_doc.get("stream", {})
        if not isinstance(section, Mapping):
            raise ValueError("[stream] must be a table")
        settings = settings_from_mapping(section, settings)
    if env:
        settings = settings_from_mapping(settings_from_env(env), settings)
    if overrides:
        settings = settings_from_mapping({k: v for k, v in overrides.items() if v is not None}, settings)
    return settings.validate()
