"""The errors stream-guard raises, under one root, and the two exceptions that deliberately stand outside it.

    StreamGuardError                 any stream-guard failure a caller may catch as one
    ├── InputError                   input that cannot be read or breaks the event contract (exit 1)
    ├── ConfigurationError           a setting, a flag or a request that cannot work (exit 2)
    ├── BrokerError                  the broker cannot be reached, or refused what was asked (exit 1)
    └── InternalError                the guard itself failed: a bug, a judge process that died (exit 1)

Each carries what the command line prints (`str(error)`, without the program name) and its exit code; the CLI
maps every one of them in one place (`report` below, which both command-line entry points call). Modules subclass these for their own
cases (wire.events.EventError, config.ConfigError, engine.pool.JudgeProcessDied, ...). Input and configuration
errors are also ValueErrors, as they always were, so a caller's `except ValueError` keeps working.

Outside the tree, on purpose:

- `engine.budget.OverBudget` is a BaseException, like KeyboardInterrupt: it stops an event that spent its CPU
  budget from anywhere in the core, and the core's `except Exception` (one failing check must not sink an
  event) must not swallow it.
- `HallucinationBlocked` (below) is not a failure of the guard but its verdict, raised for library users who
  asked for a flagged answer to stop delivery (the seed library's contract). `except StreamGuardError` means
  "the guard could not judge"; it must not also catch "the guard judged and blocked".
"""

from __future__ import annotations

import sys
from typing import IO, Any, Mapping


class StreamGuardError(Exception):
    """The root of every error stream-guard raises. `exit_code`: what a command exits with when it ends on one;
    `cli_message()`: what it prints then (after the program's name)."""

    exit_code = 1

    def cli_message(self) -> str:
        return str(self)


class InputError(StreamGuardError, ValueError):
    """Input that cannot be read, or that breaks the event contract (the field and the reason in the message)."""

    exit_code = 1


class ConfigurationError(StreamGuardError, ValueError):
    """A configuration value, a command-line argument or a request that cannot work."""

    exit_code = 2


class BrokerError(StreamGuardError):
    """The broker could not be reached, lacks a topic, or failed a read or a send."""

    exit_code = 1


class InternalError(StreamGuardError):
    """The guard itself failed: a bug outside the per-event guards, or a judge process that died."""

    exit_code = 1


def report(error: StreamGuardError, program: str, stderr: IO[str] | None = None) -> int:
    """The one mapping of errors to the command line: print `program: message` on stderr and return the exit
    code. Both entry points call it (stream_guard.cli for every command, stream_guard.agents.cli when the
    streaming commands are started as `python -m stream_guard.agents`)."""
    print(f"{program}: {error.cli_message()}", file=stderr or sys.stderr, flush=True)
    return error.exit_code


def _report_dict(report: Any) -> dict[str, Any]:
    if isinstance(report, Mapping):
        return dict(report)
    to_dict = getattr(report, "to_dict", None)
    if callable(to_dict):
        return dict(to_dict())
    raise TypeError(f"HallucinationBlocked needs a report or a mapping, got {type(report).__name__}")


def _risk_of(body: Mapping[str, Any]) -> str:
    return str(body.get("risk", body.get("risk_level", "unknown")))


def _checks_of(body: Mapping[str, Any]) -> list[str]:
    return list(body.get("triggered", body.get("triggered_checks", ())))


class HallucinationBlocked(Exception):
    """Raised to stop a flagged answer from being delivered: control flow for library users, not a failure
    (so not a StreamGuardError; see the module docstring).

    `report` is the full report as a JSON-ready dict, so a monitoring layer can log it as is without
    holding on to (or importing) the report classes.
    """

    def __init__(self, report: Any) -> None:
        body = _report_dict(report)
        super().__init__(f"hallucination blocked: risk={_risk_of(body)}, checks={_checks_of(body)}")
        self.report: Any = body

    @property
    def risk(self) -> str:
        body = self.report if isinstance(self.report, Mapping) else _report_dict(self.report)
        return _risk_of(body)
