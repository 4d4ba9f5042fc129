"""`[serve]` and `[alerts]`: file < environment < flags, each value checked with its key."""

from __future__ import annotations

import pytest

from stream_guard.config.load import load
from stream_guard.config.schema import ConfigError


def test_serve_precedence_file_then_env_then_flags() -> None:
    doc = {"serve": {"port": 9000, "processes": 3, "drift_db": "file.sqlite"}}
    env = {"STREAM_GUARD_SERVE_PORT": "9100", "STREAM_GUARD_SERVE_MAX_BATCH_EVENTS": "8"}
    serve = load(doc, env, serve={"port": 9200, "host": None}).serve
    assert (serve.port, serve.processes, serve.drift_db, serve.max_batch_events, serve.host) == (
        9200, 3, "file.sqlite", 8, "127.0.0.1")


@pytest.mark.parametrize(("table", "key", "value", "reason"), [
    ("serve", "port", 70000, "must be 0-65535"),
    ("serve", "processes", -1, "must be 0 (one per core) or more"),
    ("serve", "max_batch_bytes", 10, "must be an integer of at least 1024"),
    ("serve", "shutdown_grace_s", 0, "must be positive"),
    ("serve", "nope", 1, "unknown serve setting(s): nope"),
    ("alerts", "format", "pagerduty", "must be one of alertmanager, slack, json"),
    ("alerts", "to", "ftp://x", "must be empty or an http:// or https:// URL"),
    ("alerts", "dead_letter_topic", "bad topic", "must be a topic name"),
    ("alerts", "backoff_initial_s", 60.0, "must not exceed backoff_max_s (30)"),
    ("alerts", "header", "no colon here", "must be `Name: value`"),
])
def test_a_value_that_cannot_work_is_refused_with_its_key(table: str, key: str, value: object, reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({table: {key: value}})
    assert raised.value.key == f"{table}.{key}" and reason in raised.value.reason


def test_alerts_from_the_environment_and_the_header_stays_out_of_reprs() -> None:
    env = {"STREAM_GUARD_ALERTS_TO": "http://am:9093/api/v2/alerts", "STREAM_GUARD_ALERTS_FORMAT": "alertmanager",
           "STREAM_GUARD_ALERTS_HEADER": "Authorization: Bearer s3cret"}
    alerts = load(None, env, alerts={"dashboard_url": "https://guard.example.com"}).alerts
    assert (alerts.to, alerts.format, alerts.dashboard_url) == (
        "http://am:9093/api/v2/alerts", "alertmanager", "https://guard.example.com")
    assert "s3cret" not in repr(alerts)
