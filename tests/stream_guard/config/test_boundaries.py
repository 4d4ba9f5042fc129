"""Every configuration key at its boundaries: the last values that work are accepted and the first that cannot
are refused, from a file and (where a key has a variable) from the environment, with the key path named.

The table below is written by hand, one row per key; `test_every_key_has_a_row` fails when a key is added to
the model without one. Rules between keys have their own table (RELATIONS_CASES), with the key each blames.
"""

from __future__ import annotations

from typing import Any

import pytest

from stream_guard.config.alerts import AlertSettings
from stream_guard.config.detector import DetectorConfig, Limits
from stream_guard.config.load import load, variables
from stream_guard.config.monitor import MonitorSettings, RuleSettings, TenantSettings
from stream_guard.config.schema import ConfigError, specs
from stream_guard.config.serve import ServeSettings
from stream_guard.config.stream import StreamSettings, TopicNames

KiB, MiB, GiB, DAY = 1024, 1024**2, 1024**3, 86_400
EXISTING_FILE = __file__
HASH_A, HASH_B = "a" * 64, "b" * 64
UNIT = ([0, 1, 0.5], [-0.01, 1.01, "high", True])
BOOL = ([True, False], ["maybe", 1])
SIZE = ([1, 100_000_000], [0, 100_000_001, 2.5])
TOPIC = (["a", "x" * 249, "my.topic_1-2"], ["", "bad topic", "x" * 250, "a/b", 5])
HASHES = ([HASH_A, [HASH_A, HASH_B], []], ["abc", "A" * 63, "my-dashboard-token", 5])


def ints(low: int, high: int) -> tuple[list[Any], list[Any]]:
    return [low, high], [low - 1, high + 1, 1.5, "many"]


def above(low: float, high: float) -> tuple[list[Any], list[Any]]:
    """(low, high]: just above low and high itself accepted; low and just above high refused."""
    return [low + 0.001, high], [low, high + 0.5, "soon"]


# key path -> (accepted, refused[, other keys set with it]).
ROWS: dict[str, tuple[list[Any], list[Any]] | tuple[list[Any], list[Any], dict[str, Any]]] = {
    "detector.confidence_threshold": UNIT,
    "detector.faithfulness_threshold": UNIT,
    "detector.faithfulness_overlap_threshold": UNIT,
    "detector.drift_threshold": UNIT,
    "detector.drift_similarity_floor": UNIT,
    "detector.relevance_threshold": UNIT,
    "detector.flag_threshold": UNIT,
    "detector.accept_threshold": ([0.51, 1], [1.01, -0.1, "x"]),
    "detector.fallback_threshold": ([0, 0.74], [-0.01, 1.5]),
    "detector.db_path": ([":memory:", "drift.db"], ["", "  ", 5]),
    "detector.window_size": ([3, 10_000], [0, 10_001, 1.5]),
    "detector.log_flagged": BOOL,
    "detector.drift_compare_last": ints(1, 10_000),
    "detector.drift_min_history": ([1, 50], [0, 10_001, "x"]),
    "detector.ner": (["auto", "spacy", "regex"], ["bert", "", 5]),
    "detector.spacy_model": (["auto", "en_core_web_sm"], ["", " ", 5]),
    "detector.fallback_message": (["Sorry."], ["", "  ", 5]),
    "detector.decline_message": (["Sorry."], ["", "  ", 5]),
    "detector.score_model_path": ([""], ["/nonexistent/score_model.json", 5]),
    "detector.drift_decides": BOOL,
    "detector.event_budget_ms": ([0.001, 60_000], [0, 60_000.5, "inf", "fast"]),
    "detector.limits.max_answer_chars": SIZE,
    "detector.limits.max_question_chars": SIZE,
    "detector.limits.max_chunks": SIZE,
    "detector.limits.max_chunk_chars": SIZE,
    "detector.limits.max_event_bytes": ([1, 100_000_000], [0, 100_000_001], {"stream.max_message_bytes": GiB}),
    "detector.limits.strict_fields": BOOL,
    "stream.broker": (["kafka:9092", "k1:1,k2:65535"], ["kafka", "kafka:0", "kafka:65536", "k1:1,", "a b:1", 5]),
    "stream.app_id": (["a", "x" * 200, "my.app_1-2"], ["", "x" * 201, "a b", "ü", 5]),
    "stream.answers_partitions": ints(1, 10_000),
    "stream.partitions": ints(1, 10_000),
    "stream.output_partitions": ints(1, 10_000),
    "stream.replication_factor": ints(1, 100),
    "stream.data_dir": (["state", "/var/lib/stream-guard"], ["", " ", 5]),
    "stream.web_enabled": BOOL,
    "stream.web_host": (["0.0.0.0", "127.0.0.1"], ["", 5]),
    "stream.web_port": ints(0, 65_535),
    "stream.advertised_host": (["", "worker-0.guard.svc"], [5]),
    "stream.batch_max": ints(1, 10_000),
    "stream.batch_within_ms": ints(0, 60_000),
    "stream.executor": (["process"], ["thread", "gpu", ""]),
    "stream.latency_budget_ms": above(0, 3_600_000),
    "stream.latency_min_samples": ints(1, 1_000_000),
    "stream.latency_window_slots": ints(1, 1_000),
    "stream.metrics_interval_s": above(0, 3600),
    "stream.producer_linger_ms": ints(0, 60_000),
    "stream.fetch_max_wait_ms": ([1, 5000], [0, 5001, 999_999_999]),
    "stream.session_timeout_s": ([3.5, 1800], [0, 1800.5, "long"]),
    "stream.heartbeat_interval_s": ([0.001, 600], [0, 600.5], {"stream.session_timeout_s": 1800}),
    "stream.commit_interval_s": above(0, 3600),
    "stream.broker_lost_after_s": ([0.001, 300], [0, 300.5], {"stream.broker_lost_grace_s": 300}),
    "stream.broker_lost_grace_s": ([3, DAY], [0, DAY + 0.5]),
    "stream.producer_timeout_s": above(0, 3600),
    "stream.shutdown_timeout_s": above(0, 3600),
    "stream.connect_timeout_s": above(0, 300),
    "stream.clock_window_s": above(60, 366 * DAY),
    "stream.clock_skew_s": above(0, DAY),
    "stream.rocksdb_block_cache_bytes": ints(0, 64 * GiB),
    "stream.rocksdb_write_buffer_bytes": ([64 * KiB, 4 * GiB], [64 * KiB - 1, 0, 4 * GiB + 1]),
    "stream.rocksdb_memtable_bytes": ([MiB, 64 * GiB], [MiB - 1, 0, -1, 64 * GiB + 1]),
    "stream.rocksdb_max_write_buffers": ints(1, 64),
    "stream.rocksdb_max_open_files": ([-1, 16, 1_000_000], [0, 15, -2, 1_000_001]),
    "stream.security_protocol": (["PLAINTEXT", "SSL"], ["TLS", "", "plaintext"]),
    "stream.sasl_mechanism": (["PLAIN", "anything without SASL"], [5]),
    "stream.sasl_username": (["", "guard"], [5]),
    "stream.sasl_password": (["", "secret"], [5]),
    "stream.ssl_cafile": (["", EXISTING_FILE], ["/nonexistent/ca.pem", 5]),
    "stream.ssl_certfile": (["", EXISTING_FILE], ["/nonexistent/client.pem", 5]),
    "stream.ssl_keyfile": (["", EXISTING_FILE], ["/nonexistent/client.key", 5], {"stream.ssl_certfile": EXISTING_FILE}),
    "stream.max_message_bytes": ([64 * KiB, GiB], [64 * KiB - 1, GiB + 1, -5], {"detector.limits.max_event_bytes": 64 * KiB}),
    "stream.repartition_retention_ms": ints(60_000, 365 * DAY * 1000),
    "stream.log_format": (["text", "json"], ["xml", ""]),
    "stream.alert_dedupe_ttl_s": above(0, 366 * DAY),
    "stream.alert_prune_interval_s": above(0, DAY),
    **{f"stream.topics.{name}": TOPIC for name in ("answers", "verdicts", "alerts", "dlq", "metrics", "review", "labels")},
    "stream.topics.repartition": (["", "guard.by-question"], ["bad topic", "x" * 250, 5]),
    "monitor.enabled": BOOL,
    "monitor.retention_days": ([37, 3660], [6, 3661, "long"]),
    "monitor.lateness_minutes": ([0, 10_080], [-0.1, 10_080.5, "late"]),
    "monitor.max_future_minutes": ([0, 10_080], [-0.1, 10_080.5]),
    "monitor.flush_ms": ints(0, 60_000),
    "monitor.review_sample_size": ints(0, 10_000),
    "monitor.review_salt": (["", "pepper"], [5]),
    "monitor.review_max_context_chars": ints(0, 1_000_000),
    "monitor.operator_token_sha256": HASHES,
    "monitor.session_secret": (["", "s" * 32], ["s" * 31, 5]),
    "monitor.session_ttl_minutes": above(0, 43_200),
    "monitor.cookie_secure": BOOL,
    "monitor.login_max_failures": ints(0, 1000),
    "monitor.login_lockout_minutes": ([0, 1440], [-1, 1440.5]),
    "monitor.alerts_kept": ints(0, 1000),
    "monitor.allowed_hosts": ([["guard.example.com", ".example.com", "*", "[::1]", "10.0.0.1"], []],
                              [["guard.example.com:8080"], ["a b"], [""], "x y"]),
    "monitor.page_size": ints(1, 1000),
    "monitor.rules.rate_shift": ([0.001, 10], [0, 10.5, "big"]),
    "monitor.rules.trailing_days": ([1, 30], [0, 3661]),
    "monitor.rules.baseline_days": ([1, 53], [0, 3661]),
    "monitor.rules.rate_shift_rates": ([["refusal"], ["drift", "flagged"], []], [["nope"], "refusal,drift"]),
    "monitor.rules.min_trailing": ints(1, 1_000_000_000),
    "monitor.rules.min_baseline": ints(1, 1_000_000_000),
    "monitor.rules.min_events": ints(1, 1_000_000_000),
    "monitor.rules.drift_min_questions": ints(0, 1_000_000),
    "monitor.rules.rate_shift_rearm": ([0.001, 1], [0, 1.01]),
    "monitor.rules.citation_warning": ([0.001, 0.08], [0, 10.5]),
    "monitor.rules.citation_critical": ([0.04, 10], [10.5, 0]),
    "monitor.rules.citation_min": ints(1, 1_000_000_000),
    "monitor.rules.citation_rearm": ([0.001, 1], [0, 1.01]),
    "monitor.rules.review_max_wrong": ints(0, 10_000),
    "monitor.rules.review_min_graded": ints(1, 10_000),
    "monitor.tenants.acme.token_sha256": HASHES,
    "monitor.tenants.acme.review_sample_size": ints(0, 10_000),
    "serve.host": (["0.0.0.0", "127.0.0.1"], ["", "  ", 5]),
    "serve.port": ints(0, 65_535),
    "serve.processes": ints(0, 256),
    "serve.drift_db": ([":memory:", "drift.sqlite"], ["", "  ", 5]),
    "serve.batch_max": ints(1, 10_000),
    "serve.max_batch_events": ints(1, 100_000),
    "serve.max_batch_bytes": ints(KiB, GiB),
    "serve.stream_chunk_timeout_s": above(0, 3600),
    "serve.shutdown_grace_s": above(0, 3600),
    "alerts.webhook": (["", "http://am:9093/api/v2/alerts", "https://hooks.example.com/x"], ["am:9093", "ftp://x", 5]),
    "alerts.format": (["alertmanager", "slack", "json"], ["xml", "", 5]),
    "alerts.dashboard_url": (["", "https://guard.example.com"], ["guard.example.com", 5]),
    "alerts.group_id": (["stream-guard-alerts"], ["", "  ", 5]),
    "alerts.dead_letter_topic": (["a", "guard.alerts.dlq"], ["", "bad topic", "x" * 250, 5]),
    "alerts.max_attempts": ints(1, 1000),
    "alerts.backoff_initial_s": ([0.001, 3600], [0, 3600.5, "soon"], {"alerts.backoff_max_s": 3600}),
    "alerts.backoff_max_s": ([0.001, 86_400], [0, 86_400.5, "soon"], {"alerts.backoff_initial_s": 0.001}),
    "alerts.timeout_s": above(0, 3600),
    "alerts.header": (["", "Authorization: Bearer x"], [5]),
}

# Rules between keys: (keys set, the key blamed).
RELATIONS_CASES = [
    ({"detector.accept_threshold": 0.5, "detector.fallback_threshold": 0.5}, "fallback_threshold"),
    ({"detector.window_size": 5, "detector.drift_min_history": 6}, "drift_min_history"),
    ({"stream.heartbeat_interval_s": 30, "stream.session_timeout_s": 30}, "stream.heartbeat_interval_s"),
    ({"stream.broker_lost_after_s": 10, "stream.broker_lost_grace_s": 9}, "stream.broker_lost_grace_s"),
    ({"stream.topics.alerts": "guard.verdicts"}, "stream.topics"),
    ({"stream.app_id": "x" * 200}, None),  # its re-keyed topic's name has 220 characters: fine
    ({"stream.security_protocol": "SASL_SSL"}, "stream.sasl_username"),
    ({"stream.security_protocol": "SASL_SSL", "stream.sasl_username": "u", "stream.sasl_password": "p",
      "stream.sasl_mechanism": "GSSAPI"}, "stream.sasl_mechanism"),
    ({"stream.ssl_keyfile": EXISTING_FILE}, "stream.ssl_keyfile"),
    ({"stream.max_message_bytes": 999_999}, "stream.max_message_bytes"),
    ({"detector.limits.max_event_bytes": 8 * MiB + 1}, "stream.max_message_bytes"),
    ({"monitor.retention_days": 36}, "monitor.rules"),
    ({"monitor.rules.citation_warning": 0.09}, "monitor.rules.citation_critical"),
    ({"monitor.operator_token_sha256": HASH_A, "monitor.tenants.acme.token_sha256": HASH_A},
     "monitor.tenants.acme.token_sha256"),
]


def document(values: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for path, value in values.items():
        *tables, key = path.split(".")
        table = doc
        for name in tables:
            table = table.setdefault(name, {})
        table[key] = value
    return doc


def reported(path: str) -> str:
    """How an error names the key: [detector] keys sit at the top of a flat file, so without "detector."."""
    return path.removeprefix("detector.")


def variable(path: str) -> str | None:
    for name, (table, spec) in variables().items():
        if spec is not None and ".".join((*table, spec.key)) == path:
            return name
    return None


def as_text(value: Any) -> str | None:
    """A value as the environment can give it (None when it cannot: a list of lists, a number for a text key)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return ",".join(value)
    return None


def row(path: str) -> tuple[list[Any], list[Any], dict[str, Any]]:
    accepted, refused, *rest = ROWS[path]
    return accepted, refused, (rest[0] if rest else {})


def specs_type(path: str) -> Any:
    sections = {"detector": DetectorConfig, "detector.limits": Limits, "stream": StreamSettings,
                "stream.topics": TopicNames, "monitor": MonitorSettings, "serve": ServeSettings,
                "alerts": AlertSettings}
    table, key = path.rsplit(".", 1)
    return next(s.type for s in specs(sections[table]) if s.key == key)


def from_environment(path: str, value: Any) -> bool:
    """Whether the environment can give this value: text only, so not a number for a text key (that is just
    text there), nor 1 for a boolean ("1" means true), nor a list with a blank item (blanks are dropped)."""
    kind = specs_type(path) if variable(path) is not None else None
    return (kind is not None and as_text(value) is not None
            and not (kind in (str, str | None) and not isinstance(value, str))
            and not (kind is bool and not isinstance(value, (bool, str))))


def refusal(load_it: Any) -> ConfigError | None:
    try:
        load_it()
    except ConfigError as exc:
        return exc
    return None


@pytest.mark.parametrize("path", list(ROWS))
def test_each_key_at_its_boundaries_from_a_file_and_the_environment(path: str) -> None:
    accepted, refused, companions = row(path)
    env_companions = {variable(k): as_text(v) for k, v in companions.items()}
    for value, ok in [(v, True) for v in accepted] + [(v, False) for v in refused]:
        tries = {"file": lambda: load(document({**companions, path: value}))}
        if from_environment(path, value):
            tries["environment"] = lambda: load(env={**env_companions, variable(path): as_text(value)})
        for where, load_it in tries.items():
            error = refusal(load_it)
            if ok:
                assert error is None, f"{value!r} from the {where} refused: {error}"
                continue
            assert error is not None, f"{value!r} from the {where} accepted"
            assert error.key == reported(path), f"{value!r} from the {where}: {error}"
            assert shown(value) in str(error).lower(), f"{value!r} from the {where}: {error}"


def shown(value: Any) -> str:
    """What of a refused value its error must show (a list's first item; a long text's head; as read: stripped,
    hashes lower-cased)."""
    if isinstance(value, list):
        return shown(value[0]) if value else ""
    return str(value).strip()[:12].lower()


@pytest.mark.parametrize(("values", "blamed"), RELATIONS_CASES, ids=lambda v: repr(v)[:50])
def test_rules_between_keys_blame_one_key(values: dict[str, Any], blamed: str | None) -> None:
    if blamed is None:
        load(document(values))
        return
    with pytest.raises(ConfigError) as refused:
        load(document(values))
    assert refused.value.key == blamed, str(refused.value)


def test_every_key_has_a_row() -> None:
    sections = {"detector": DetectorConfig, "detector.limits": Limits, "stream": StreamSettings,
                "stream.topics": TopicNames, "monitor": MonitorSettings, "monitor.rules": RuleSettings,
                "monitor.tenants.acme": TenantSettings, "serve": ServeSettings, "alerts": AlertSettings}
    keys = {f"{table}.{spec.key}" for table, section in sections.items() for spec in specs(section)
            if spec.section is None and spec.key not in ("tenants", "name")}
    assert keys - ROWS.keys() == set(), "keys without a boundary row"
    assert ROWS.keys() - keys == set(), "rows for keys that do not exist"
