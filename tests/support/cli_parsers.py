"""The argparse parser each `stream-guard` command builds, caught as it parses (before the command does anything)."""

from __future__ import annotations

import argparse

import pytest

from stream_guard.cli import STREAMING_COMMANDS, main

COMMANDS = ("check", "backtest", "calibrate", "serve", *STREAMING_COMMANDS)


class _Parsed(Exception):
    pass


def parser_of(command: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser `stream-guard COMMAND` builds (parse_args is patched for the rest of the test)."""
    seen: list[argparse.ArgumentParser] = []

    def catch(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        seen.append(self)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", catch)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
    with pytest.raises(_Parsed):
        main([command])
    return seen[-1]
