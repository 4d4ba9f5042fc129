"""The monitor agent's own helpers, without a broker (the agent end to end: tests/agents/test_monitoring.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from stream_guard.agents.monitor import ebb


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
