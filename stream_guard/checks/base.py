"""The interface every check implements."""

from __future__ import annotations

import time
from typing import Protocol

from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import CheckResult


class Check(Protocol):
    """A pure, deterministic, thread-safe check: no I/O, no shared mutable state."""

    name: str

    def run(self, inspection: Inspection) -> CheckResult: ...


def elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
