"""`[alerts]`: file < environment < flags, each value checked with its key, the header kept out of reprs; the
webhook's old key `to` still read, with a warning naming `webhook`."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from stream_guard.config.load import DeprecatedSetting, load
from stream_guard.config.schema import ConfigError


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("format", "pagerduty", "must be one of alertmanager, slack, json"),
    ("webhook", "ftp://x", "must be empty or an http:// or https:// URL"),
    ("dead_letter_topic", "bad topic", "must be a topic name"),
    ("backoff_initial_s", 60.0, "must not exceed backoff_max_s (30)"),
    ("header", "no colon here", "must be `Name: value`"),
])
def test_a_value_that_cannot_work_is_refused_with_its_key(key: str, value: object, reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"alerts": {key: value}})
    assert raised.value.key == f"alerts.{key}" and reason in raised.value.reason


def test_alerts_from_the_environment_and_the_header_stays_out_of_reprs() -> None:
    env = {"STREAM_GUARD_ALERTS_WEBHOOK": "http://am:9093/api/v2/alerts", "STREAM_GUARD_ALERTS_FORMAT": "alertmanager",
           "STREAM_GUARD_ALERTS_HEADER": "Authorization: Bearer s3cret"}
    alerts = load(None, env, alerts={"dashboard_url": "https://guard.example.com"}).alerts
    assert (alerts.webhook, alerts.format, alerts.dashboard_url) == (
        "http://am:9093/api/v2/alerts", "alertmanager", "https://guard.example.com")
    assert "s3cret" not in repr(alerts)


URL = "http://am:9093/api/v2/alerts"


# (file, environment, the webhook loaded, the warning's words; None when no warning is due)
@pytest.mark.parametrize(("file", "env", "webhook", "warning"), [
    ({"alerts": {"webhook": URL}}, {}, URL, None),
    ({}, {"STREAM_GUARD_ALERTS_WEBHOOK": URL}, URL, None),
    ({"alerts": {"to": URL}}, {}, URL, "[alerts] to is deprecated: use [alerts] webhook"),
    ({}, {"STREAM_GUARD_ALERTS_TO": URL}, URL,
     "STREAM_GUARD_ALERTS_TO is deprecated: use STREAM_GUARD_ALERTS_WEBHOOK (alerts.webhook)"),
    # Layers keep their precedence whatever the spelling: the environment over the file.
    ({"alerts": {"to": "http://old"}}, {"STREAM_GUARD_ALERTS_WEBHOOK": URL}, URL,
     "[alerts] to is deprecated: use [alerts] webhook"),
    ({"alerts": {"webhook": "http://file"}}, {"STREAM_GUARD_ALERTS_TO": URL}, URL,
     "STREAM_GUARD_ALERTS_TO is deprecated"),
])
def test_the_old_key_of_the_webhook_still_works_and_warns(file: dict[str, Any], env: dict[str, str], webhook: str,
                                                         warning: str | None) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert load(file, env).alerts.webhook == webhook
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecatedSetting)]
    assert messages == ([] if warning is None else [messages[0]]) and (warning is None or warning in messages[0])


@pytest.mark.parametrize(("file", "env", "key"), [
    ({"alerts": {"to": URL, "webhook": URL}}, {}, "alerts.to"),
    ({}, {"STREAM_GUARD_ALERTS_TO": URL, "STREAM_GUARD_ALERTS_WEBHOOK": URL}, "STREAM_GUARD_ALERTS_TO"),
])
def test_both_names_at_once_is_refused_naming_the_one_to_keep(file: dict[str, Any], env: dict[str, str],
                                                              key: str) -> None:
    with pytest.raises(ConfigError, match="both") as raised, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecatedSetting)
        load(file, env)
    assert raised.value.key == key and "keep" in raised.value.reason and "webhook" in raised.value.reason.lower()


def test_an_old_value_is_checked_under_the_new_key() -> None:
    with pytest.raises(ConfigError) as raised, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecatedSetting)
        load({"alerts": {"to": "ftp://x"}})
    assert raised.value.key == "alerts.webhook"
