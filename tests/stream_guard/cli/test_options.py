"""Every option of every command says what it does (`stream-guard COMMAND --help`)."""

from __future__ import annotations

import argparse

import pytest

from cli_parsers import COMMANDS, parser_of


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parser = parser_of(command, monkeypatch)
    missing = [action.option_strings or [action.dest] for action in parser._actions
               if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()]
    assert not missing, f"stream-guard {command}: no help for {missing}"


def helps(command: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return {o: a.help or "" for a in parser_of(command, monkeypatch)._actions for o in a.option_strings}


def test_topic_is_the_destination_topic_and_from_to_a_range(monkeypatch: pytest.MonkeyPatch) -> None:
    options = {command: helps(command, monkeypatch) for command in ("produce", "replay-dlq", "backtest", "alerts")}
    assert "--topic" in options["produce"] and "--topic" in options["replay-dlq"]
    for command in ("backtest", "replay-dlq"):
        assert "(exclusive)" in options[command]["--to"] and "--from" in options[command]
    # `--to` is nowhere a destination any more: the old spellings are kept, marked deprecated.
    assert options["replay-dlq"]["--to-offset"] == "deprecated: --to"
    assert options["alerts"]["--to"] == "deprecated: --webhook" and "--webhook" in options["alerts"]


def test_old_spellings_still_work_and_warn(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from stream_guard.agents.alert_forwarder import cmd_alerts
    from stream_guard.agents.dlq import range_end
    from stream_guard.errors import ConfigurationError
    from stream_guard.ops.sources import UsageError

    monkeypatch.delenv("STREAM_GUARD_BROKER", raising=False)
    monkeypatch.delenv("STREAM_GUARD_ALERTS_TO", raising=False)
    monkeypatch.delenv("STREAM_GUARD_ALERTS_WEBHOOK", raising=False)
    # alerts: --to URL still names the webhook (the command gets as far as wanting a broker), with a warning.
    for flag, warns in (("--webhook", False), ("--to", True)):
        with pytest.raises(ConfigurationError, match="no broker"):
            cmd_alerts([flag, "http://hooks.example/alerts"])
        assert ("--to is deprecated, use --webhook" in capsys.readouterr().err) is warns
    with pytest.raises(ConfigurationError, match="no webhook: pass --webhook URL"):
        cmd_alerts([])
    # replay-dlq: --to ends the range; --to-offset is its old name; --to TOPIC is the old name of --topic.
    assert range_end("0:120,1:98", None)[0].per_partition == {0: 120, 1: 98}
    assert capsys.readouterr().err == ""
    assert range_end(None, "42") == (range_end("42", None)[0], None)
    assert "--to-offset is deprecated, use --to" in capsys.readouterr().err
    assert range_end("2026-11-22T10:00:00Z", None)[0].time_ms == 1795341600000
    assert range_end("rag.answers.retry", None) == (None, "rag.answers.retry")
    assert "use --topic rag.answers.retry" in capsys.readouterr().err
    with pytest.raises(UsageError, match="--to 'not a topic'"):
        range_end("not a topic", None)
    assert range_end(None, None) == (None, None)
