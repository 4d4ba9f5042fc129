"""The one loader: every section refuses a bad value with its key path, the value and the reason, from a file and
from the environment alike."""

from __future__ import annotations

import pytest

from stream_guard.config.load import load
from stream_guard.config.schema import ConfigError


@pytest.mark.parametrize(("doc", "message"), [
    ({"detector": {"window_size": 0}}, "window_size: must be an integer of at least 1 and at most 10000, got 0"),
    ({"detector": {"limits": {"max_chunks": -3}}}, "limits.max_chunks: must be a positive integer, at most 100000000, got -3"),
    ({"stream": {"partitions": 0}}, "stream.partitions: must be an integer of at least 1 and at most 10000, got 0"),
    ({"stream": {"topics": {"verdicts": "bad topic!"}}}, "stream.topics.verdicts: must be a topic name"),
    ({"stream": {"heartbeat_interval_s": 40}}, "stream.heartbeat_interval_s: must be below session_timeout_s"),
    ({"monitor": {"retention_days": 3}}, "monitor.retention_days: must be an integer of at least 7 and at most 3660, got 3"),
    ({"monitor": {"rules": {"rate_shift": -1}}}, "monitor.rules.rate_shift: must be above 0 and at most 10 (a rate or relative move, not a percentage), got -1.0"),
    ({"monitor": {"tenants": {"acme": {"rules": {"citation_rearm": 2}}}}},
     "monitor.tenants.acme.rules.citation_rearm: must be in (0, 1], got 2"),
    ({"monitor": {"tenants": {"acme": {"review_sample_size": "many"}}}},
     "monitor.tenants.acme.review_sample_size: expected an integer, got 'many'"),
])
def test_each_section_names_the_key_path_the_value_and_the_reason(doc: dict, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load(doc)
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize(("env", "message"), [
    ({"STREAM_GUARD_WINDOW_SIZE": "0"}, "window_size: must be an integer of at least 1 and at most 10000, got 0"),
    ({"STREAM_GUARD_PARTITIONS": "0"}, "stream.partitions: must be an integer of at least 1 and at most 10000, got 0"),
    ({"STREAM_GUARD_TOPIC_DLQ": "a b"}, "stream.topics.dlq: must be a topic name"),
    ({"STREAM_GUARD_MONITOR_RETENTION_DAYS": "3"}, "monitor.retention_days: must be an integer of at least 7 and at most 3660, got 3"),
    ({"STREAM_GUARD_MONITOR_OPERATOR_TOKEN_SHA256": "a" * 64 + ",not-a-hash"},
     "monitor.operator_token_sha256: 'not-a-hash'... is not a SHA-256 hex digest"),
])
def test_the_environment_is_checked_as_the_file_is(env: dict, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load(env=env)
    assert str(refused.value).startswith(message)


def test_the_value_is_kept_on_the_error_and_the_command_line_says_bad_configuration() -> None:
    with pytest.raises(ConfigError) as refused:
        load({"stream": {"batch_max": 0}})
    assert (refused.value.key, refused.value.value, refused.value.exit_code) == ("stream.batch_max", 0, 2)
    assert refused.value.cli_message() == "bad configuration: stream.batch_max: must be an integer of at least 1 and at most 10000, got 0"


def test_one_load_gives_every_section_with_the_flags_on_top(tmp_path) -> None:
    path = tmp_path / "guard.toml"
    path.write_text('[detector]\nflag_threshold = 0.5\n[stream]\nbatch_max = 8\n[monitor]\nretention_days = 40\n')
    config = load(path, {"STREAM_GUARD_BATCH_MAX": "9", "STREAM_GUARD_MONITOR_RETENTION_DAYS": "50"},
                  detector={"ner": "regex"}, stream={"batch_max": 10})
    assert (config.detector.flag_threshold, config.detector.ner) == (0.5, "regex")
    assert config.stream.batch_max == 10 and config.monitor.retention_days == 50


def test_secrets_stay_out_of_reprs() -> None:
    config = load(env={"STREAM_GUARD_SASL_PASSWORD": "s3cret", "STREAM_GUARD_MONITOR_SESSION_SECRET": "k3y-k3y-k3y-k3y-k3y-k3y-k3y-k3y-k3y"})
    assert "s3cret" not in repr(config) and "k3y" not in repr(config)
