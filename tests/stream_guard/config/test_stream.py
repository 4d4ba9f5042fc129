"""Stream settings: precedence file < env < flags, strict parsing, validation."""

from __future__ import annotations

import pytest

from msgspec.structs import fields

from stream_guard.config.load import environment, load
from stream_guard.config.stream import StreamSettings, TopicNames


def test_defaults_are_valid_and_name_the_issue_topics() -> None:
    s = load().stream
    assert s.topics == TopicNames()
    assert (s.topics.answers, s.topics.verdicts, s.topics.alerts, s.topics.dlq, s.topics.metrics) == (
        "rag.answers", "guard.verdicts", "guard.alerts", "guard.dlq", "guard.metrics")
    assert s.by_question_topic == "stream-guard-answers-repartition"
    assert s.repartition_retention_ms == 24 * 3600 * 1000 and s.log_format == "text"
    assert s.broker is None


def test_precedence_file_then_env_then_flags() -> None:
    doc = {"stream": {"partitions": 8, "batch_max": 16, "topics": {"verdicts": "file.verdicts"}}}
    env = {"STREAM_GUARD_PARTITIONS": "6", "STREAM_GUARD_TOPIC_VERDICTS": "env.verdicts", "PATH": "/bin"}
    s = load(doc, env, stream={"partitions": 2, "broker": None}).stream
    assert s.partitions == 2  # flag wins
    assert s.batch_max == 16  # only the file set it
    assert s.topics.verdicts == "env.verdicts"  # env beats file
    assert s.topics.alerts == "guard.alerts"


def test_env_values_are_coerced_and_foreign_variables_ignored() -> None:
    env = {
        "STREAM_GUARD_BROKER": "kafka-0:9092,kafka-1:9092",
        "STREAM_GUARD_WEB_ENABLED": "false",
        "STREAM_GUARD_LATENCY_BUDGET_MS": "120.5",
        "STREAM_GUARD_DATA": "/data/labelled",  # the benchmark's variable, not a setting
        "STREAM_GUARD_TANSU_BIN": "/usr/bin/tansu",
    }
    s = load(env=env).stream
    assert s.broker == "kafka-0:9092,kafka-1:9092"
    assert s.web_enabled is False
    assert s.latency_budget_ms == 120.5
    assert "data" not in environment(env)["stream"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"partitions": "many"}, "expected an integer"),
        ({"partitions": True}, "expected an integer"),
        ({"web_enabled": "maybe"}, "expected a boolean"),
        ({"latency_budget_ms": "nan"}, "finite number"),
        ({"colour": "blue"}, "unknown stream setting"),
        ({"topics": {"answerz": "x"}}, "unknown topic key"),
        ({"topics": "rag"}, "table of topic names"),
    ],
)
def test_bad_values_are_rejected_with_the_setting_named(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load({"stream": data})


@pytest.mark.parametrize(
    "overrides",
    [
        {"partitions": 0},
        {"broker": "no-port"},
        {"topics": {"verdicts": "bad topic!"}},
        {"topics": {"verdicts": "rag.answers"}},
        {"web_port": 70000},
        {"heartbeat_interval_s": 40, "session_timeout_s": 30},
        {"batch_within_ms": -1},
        {"producer_linger_ms": -1},
        {"executor": "gpu"},
    ],
)
def test_validation_refuses_unworkable_settings(overrides: dict) -> None:
    with pytest.raises(ValueError):
        load(stream=overrides)


def test_with_overrides_keeps_other_fields() -> None:
    s = StreamSettings(app_id="guard-a").with_overrides(broker="127.0.0.1:9092")
    assert s.app_id == "guard-a" and s.broker == "127.0.0.1:9092"
    assert s.by_question_topic == "guard-a-answers-repartition"
    # An existing deployment keeps its pre-0.2 topic by naming it.
    kept = load(env={"STREAM_GUARD_TOPIC_REPARTITION": "guard-a-answers-by-question"}).stream
    assert kept.by_question_topic == "guard-a-answers-by-question"
    assert s.batch_within_s == 0.0  # greedy batches by default: no waiting for a batch to fill
    assert s.with_overrides(batch_within_ms=5).batch_within_s == pytest.approx(0.005)


# --- the environment: every STREAM_GUARD_* variable is a setting or a known other variable --------------------

import re  # noqa: E402
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

from stream_guard.config.detector import DetectorConfig  # noqa: E402
from stream_guard.config.load import OTHER_VARIABLES, check_environment, unknown_variables  # noqa: E402
from stream_guard.config.schema import ConfigError  # noqa: E402


def test_a_misspelt_variable_is_refused_by_name() -> None:
    env = {"STREAM_GUARD_FLAG_TRESHOLD": "0.5", "STREAM_GUARD_PARTITONS": "8", "STREAM_GUARD_PARTITIONS": "8",
           "STREAM_GUARD_LIMITS_MAX_ANSWER_CHARS": "10", "STREAM_GUARD_TOPIC_VERDICTS": "v",
           "STREAM_GUARD_TOPIC_VERDICT": "v", "STREAM_GUARD_DATA": "/data", "OTHER_THING": "x"}
    assert unknown_variables(env) == ["STREAM_GUARD_FLAG_TRESHOLD", "STREAM_GUARD_PARTITONS",
                                      "STREAM_GUARD_TOPIC_VERDICT"]
    with pytest.raises(ConfigError, match="STREAM_GUARD_FLAG_TRESHOLD"):
        load(env=env)


def test_stream_and_detector_settings_do_not_share_a_variable_name() -> None:
    assert not ({f.name for f in fields(StreamSettings)} & ({f.name for f in fields(DetectorConfig)} | {"preset"}))


def test_every_stream_guard_variable_the_repository_uses_is_known() -> None:
    """A new STREAM_GUARD_* variable must be a setting or be listed in OTHER_VARIABLES, or every command that
    sees it set would refuse to start."""
    repo = Path(__file__).resolve().parents[3]
    listed = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True).stdout.split()
    used: set[str] = set()
    for name in listed:
        path = repo / name
        if path.name.startswith("test_"):  # tests misspell names on purpose
            continue
        if path.suffix in {".py", ".md", ".yml", ".yaml", ".toml", ""} and path.is_file():
            used |= set(re.findall(r"STREAM_GUARD_[A-Z0-9_]*[A-Z0-9]", path.read_text(errors="replace")))
    # Prefixes and placeholders written in prose, not variables.
    used -= {"STREAM_GUARD_TOPIC", "STREAM_GUARD_LIMITS", "STREAM_GUARD_MONITOR", "STREAM_GUARD_SERVE",
             "STREAM_GUARD_ALERTS"}
    unknown = [v for v in unknown_variables({v: "" for v in used}) if not v.endswith(("_NAME", "_SETTING"))]
    assert unknown == []
    assert {"STREAM_GUARD_DATA", "STREAM_GUARD_TANSU_BIN", "STREAM_GUARD_TEST_BROKER"} <= OTHER_VARIABLES
    check_environment({v: "" for v in OTHER_VARIABLES})


def test_the_thread_executor_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="'thread' was removed: a judge thread cannot be stopped"):
        load(stream={"executor": "thread"})


def test_monitoring_variables_are_settings_and_their_misspellings_are_refused():
    from stream_guard.config.load import unknown_variables

    env = {"STREAM_GUARD_MONITOR_ENABLED": "false", "STREAM_GUARD_MONITOR_SESSION_SECRET": "s",
           "STREAM_GUARD_MONITOR_REVIEW_SALT": "x", "STREAM_GUARD_MONITOR_ENABLD": "false"}
    assert unknown_variables(env) == ["STREAM_GUARD_MONITOR_ENABLD"]
