"""A `stream-guard` command run through its entry function in the test's own process.

For tests that prove an exit code or a message: a real process costs a Python start-up and the imports (about a
CPU second each) and proves nothing more. Each command still runs as a real process somewhere (its own test file
keeps one, and tests/test_readme_commands.py runs the README's)."""

from __future__ import annotations

import subprocess

import pytest

from stream_guard.cli import main


def stream_guard(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """`stream-guard ARGS` as `subprocess.run(..., capture_output=True, text=True)` would report it."""
    capsys.readouterr()  # what the test printed before is not the command's
    code = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["stream-guard", *args], code, out, err)
