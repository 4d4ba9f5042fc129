"""The monitor agent's own helpers, without a broker (the agent end to end: tests/agents/test_monitoring.py)."""

from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator

import pytest

from stream_guard.agents.monitor import PROGRESS_KEY, ebb, flushes
from stream_guard.config.monitor import MonitorSettings


class _Buffer:
    """The part of Faust's ProducerBufferT that `ebb` reads: a size, a mark, and a flush that sends messages."""

    def __init__(self, size: int, max_messages: int = 100) -> None:
        self.size, self.max_messages, self.flushed = size, max_messages, []

    async def flush_atmost(self, n: int) -> int:
        sent = min(n, self.size)
        self.flushed.append(n)
        self.size -= sent
        return sent


@pytest.mark.parametrize(("size", "flushes"), [(0, []), (100, []), (101, [100]), (250, [100])])
def test_ebb_waits_only_past_the_mark_and_logs_nothing(size: int, flushes: list[int],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    buffer = _Buffer(size)
    with caplog.at_level(logging.INFO):
        asyncio.run(ebb(buffer))  # type: ignore[arg-type]
    assert buffer.flushed == flushes
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


class _Message:
    def __init__(self, key: bytes) -> None:
        self.key = key


class _Event:
    def __init__(self, i: int, key: bytes) -> None:
        self.i, self.message = i, _Message(key)

    def __eq__(self, other: object) -> bool:  # compared by position, as the tests list them
        return other == self.i


class _Stream:
    """The part of a Faust stream that the agent's batching reads: events, here one per key `gap_s` apart."""

    def __init__(self, keys: list[bytes], gap_s: float) -> None:
        self.keys, self.gap_s = keys, gap_s

    async def events(self) -> AsyncIterator[_Event]:
        for i, key in enumerate(self.keys):
            yield _Event(i, key)
            await asyncio.sleep(self.gap_s)


async def _first_flush(flush_ms: int, keys: list[bytes] | None = None) -> list[_Event]:
    stream = _Stream(keys or [b"acme"] * 5, 0.002)
    batches = flushes(stream, MonitorSettings(flush_ms=flush_ms))  # type: ignore[arg-type]
    try:
        return await batches.__anext__()  # type: ignore[attr-defined]
    finally:
        await batches.aclose()  # type: ignore[attr-defined]


def test_records_arriving_within_the_flush_interval_are_applied_together() -> None:
    # Five records 2 ms apart: one flush of 400 ms takes them all (each tenant's state is written once for
    # them); with no flush interval the first is applied alone, as soon as it comes.
    assert asyncio.run(_first_flush(400)) == [0, 1, 2, 3, 4]
    assert asyncio.run(_first_flush(0)) == [0]


def test_a_progress_report_ends_the_flush_at_once() -> None:
    # It may close days (and put a taken-over partition's tenants on the overview): it does not wait for answers.
    assert asyncio.run(_first_flush(400, [b"acme", PROGRESS_KEY, b"acme", b"acme"])) == [0, 1]
    assert asyncio.run(_first_flush(400, [PROGRESS_KEY, b"acme"])) == [0]
