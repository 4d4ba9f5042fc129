"""Stopping a command a test started, as an operator would: SIGTERM, then a wait; a process that ignores it is
killed and the test fails with its log."""

from __future__ import annotations

import signal
import subprocess
from typing import Callable


def terminate(proc: subprocess.Popen[bytes], timeout: float, name: str, log: Callable[[], str]) -> int:
    """SIGTERM `proc` (if it still runs) and wait; its exit code. AssertionError (with `log()`) if it ignores it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            raise AssertionError(f"{name} ignored SIGTERM:\n{log()}") from None
    return proc.returncode
