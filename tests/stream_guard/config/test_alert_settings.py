"""`[alerts]`: file < environment < flags, each value checked with its key, the header kept out of reprs."""

from __future__ import annotations

import pytest

from stream_guard.config.load import load
from stream_guard.config.schema import ConfigError


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("format", "pagerduty", "must be one of alertmanager, slack, json"),
    ("to", "ftp://x", "must be empty or an http:// or https:// URL"),
    ("dead_letter_topic", "bad topic", "must be a topic name"),
    ("backoff_initial_s", 60.0, "must not exceed backoff_max_s (30)"),
    ("header", "no colon here", "must be `Name: value`"),
])
def test_a_value_that_cannot_work_is_refused_with_its_key(key: str, value: object, reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"alerts": {key: value}})
    assert raised.value.key == f"alerts.{key}" and reason in raised.value.reason


def test_alerts_from_the_environment_and_the_header_stays_out_of_reprs() -> None:
    env = {"STREAM_GUARD_ALERTS_TO": "http://am:9093/api/v2/alerts", "STREAM_GUARD_ALERTS_FORMAT": "alertmanager",
           "STREAM_GUARD_ALERTS_HEADER": "Authorization: Bearer s3cret"}
    alerts = load(None, env, alerts={"dashboard_url": "https://guard.example.com"}).alerts
    assert (alerts.to, alerts.format, alerts.dashboard_url) == (
        "http://am:9093/api/v2/alerts", "alertmanager", "https://guard.example.com")
    assert "s3cret" not in repr(alerts)
