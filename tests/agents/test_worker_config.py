"""`stream-guard worker` refuses a bad configuration at start, as `check` does: exit 2, the key and the reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from streamkit import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _worker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "STREAM_GUARD_BROKER"}
    return subprocess.run([sys.executable, "-m", "stream_guard.agents", "worker", "--without-web", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env={**clean, **(env or {})})


def test_a_bad_setting_stops_the_worker_process_before_it_connects() -> None:
    """The process as an orchestrator sees it: exit 2, the key and the reason, no traceback. (The other bad values
    below run the same entry point in this process: a process start costs ~1 CPU s each.)"""
    proc = _worker("--broker", "127.0.0.1:9", env={"STREAM_GUARD_FLAG_THRESHOLD": "5"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "flag_threshold: must be a number from 0 to 1, got 5" in proc.stderr and "Traceback" not in proc.stderr


def test_a_worker_without_a_broker_exits_non_zero_and_says_how_to_give_one() -> None:
    """A container missing STREAM_GUARD_BROKER must fail, not look healthy on a private in-memory broker."""
    proc = _worker()
    assert proc.returncode == 2
    assert "no broker configured: pass --broker HOST:PORT or set STREAM_GUARD_BROKER" in proc.stderr
    assert "--embedded" in proc.stderr and "Traceback" not in proc.stderr


def _refused(args: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> str:
    """`worker` run in this process with `env` set: it must exit 2 before it connects; its stderr."""
    from stream_guard.agents.cli import run

    monkeypatch.delenv("STREAM_GUARD_BROKER", raising=False)
    for name, text in env.items():
        monkeypatch.setenv(name, text)
    assert run("worker", ["--without-web", *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(("env", "needle"), [
    ({"STREAM_GUARD_NER": "foo"}, "ner: must be one of auto, spacy, regex, got 'foo'"),
    ({"STREAM_GUARD_DRIFT_MIN_HISTORY": "0"}, "drift_min_history: must be an integer of at least 1"),
    ({"STREAM_GUARD_EXECUTOR": "thread"}, "executor: 'thread' was removed"),
    ({"STREAM_GUARD_BATCH_MAKS": "8"}, "unknown environment variable(s): STREAM_GUARD_BATCH_MAKS"),
    ({"STREAM_GUARD_LOG_FORMAT": "xml"}, "log_format: must be one of text, json, got 'xml'"),
    ({"STREAM_GUARD_REPARTITION_RETENTION_MS": "10"}, "repartition_retention_ms: must be from 60000"),
])
def test_a_bad_setting_stops_the_worker_before_it_connects(env: dict[str, str], needle: str,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert needle in _refused(["--broker", "127.0.0.1:9"], env, monkeypatch, capsys)


def test_embedded_and_a_configured_broker_are_refused_together(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert "choose one" in _refused(["--embedded"], {"STREAM_GUARD_BROKER": "127.0.0.1:9"}, monkeypatch, capsys)


def test_an_unknown_preset_stops_the_worker_with_the_key(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(["--preset", "nonsense", "--broker", "127.0.0.1:9"], {}, monkeypatch, capsys)
    assert "preset: unknown preset 'nonsense'" in err


# The bad values an operator tried against 0.2 (issue 17): two crashed late with a traceback, eight were accepted
# or hung, one named the value but not the key. Each now stops `worker` before it connects: exit 2, key and value.
ISSUE_17 = [
    ({"STREAM_GUARD_ROCKSDB_BLOCK_CACHE_BYTES": "-1"}, "stream.rocksdb_block_cache_bytes", "-1"),
    ({"STREAM_GUARD_APP_ID": ""}, "stream.app_id", "''"),
    ({"STREAM_GUARD_MAX_MESSAGE_BYTES": "-5"}, "stream.max_message_bytes", "-5"),
    ({"STREAM_GUARD_MAX_MESSAGE_BYTES": "100"}, "stream.max_message_bytes", "100"),
    ({"STREAM_GUARD_MAX_MESSAGE_BYTES": "500000"}, "stream.max_message_bytes", "500000"),
    ({"STREAM_GUARD_LIMITS_MAX_EVENT_BYTES": "9000000"}, "stream.max_message_bytes", "9000000"),
    ({"STREAM_GUARD_ROCKSDB_MAX_OPEN_FILES": "0"}, "stream.rocksdb_max_open_files", "0"),
    ({"STREAM_GUARD_ROCKSDB_WRITE_BUFFER_BYTES": "0"}, "stream.rocksdb_write_buffer_bytes", "0"),
    ({"STREAM_GUARD_DATA_DIR": ""}, "stream.data_dir", "''"),
    ({"STREAM_GUARD_FETCH_MAX_WAIT_MS": "999999999"}, "stream.fetch_max_wait_ms", "999999999"),
    ({"STREAM_GUARD_TOPIC_VERDICTS": "guard verdicts"}, "stream.topics.verdicts", "'guard verdicts'"),
]


@pytest.mark.parametrize(("env", "key", "value"), ISSUE_17, ids=[k for _, k, _ in ISSUE_17])
def test_the_values_that_crashed_or_hung_a_worker_are_refused_before_it_starts(
    env: dict[str, str], key: str, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from stream_guard.agents.cli import run

    for name, text in env.items():
        monkeypatch.setenv(name, text)
    assert run("worker", ["--broker", "127.0.0.1:9", "--without-web"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stream-guard: bad configuration: {key}: ") and value in err, err
