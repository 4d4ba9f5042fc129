"""Every option of every command says what it does (`stream-guard COMMAND --help`)."""

from __future__ import annotations

import argparse

import pytest

from stream_guard.cli import STREAMING_COMMANDS, main

COMMANDS = ("check", "backtest", "calibrate", "serve", *STREAMING_COMMANDS)


class _Parsed(Exception):
    pass


def parser_of(command: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser a command builds, caught when it parses (before it does anything)."""
    seen: list[argparse.ArgumentParser] = []

    def catch(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        seen.append(self)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", catch)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
    with pytest.raises(_Parsed):
        main([command])
    return seen[-1]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parser = parser_of(command, monkeypatch)
    missing = [action.option_strings or [action.dest] for action in parser._actions
               if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()]
    assert not missing, f"stream-guard {command}: no help for {missing}"


def test_topic_is_the_destination_topic_and_from_to_a_range(monkeypatch: pytest.MonkeyPatch) -> None:
    options = {command: {o for a in parser_of(command, monkeypatch)._actions for o in a.option_strings}
               for command in ("produce", "replay-dlq", "backtest")}
    assert "--topic" in options["produce"] and "--topic" in options["replay-dlq"]
    assert {"--from", "--to"} <= options["backtest"]
    replay = {a.option_strings[0]: a.help for a in parser_of("replay-dlq", monkeypatch)._actions if a.option_strings}
    assert replay["--to"] == "deprecated: --topic"
