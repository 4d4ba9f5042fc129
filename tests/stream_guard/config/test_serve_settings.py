"""`[serve]`: file < environment < flags, each value checked with its key."""

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


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("port", 70000, "must be 0-65535"),
    ("processes", -1, "must be 0 (one per core) or more"),
    ("max_batch_bytes", 10, "must be an integer of at least 1024"),
    ("shutdown_grace_s", 0, "must be positive"),
    ("nope", 1, "unknown serve setting(s): nope"),
])
def test_a_value_that_cannot_work_is_refused_with_its_key(key: str, value: object, reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"serve": {key: value}})
    assert raised.value.key == f"serve.{key}" and reason in raised.value.reason
