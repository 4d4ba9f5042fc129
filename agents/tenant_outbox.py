"""The judging side's sends to `<app>-monitor-by-tenant`: each tenant's observations gathered for a flush, then
sent as one record per tenant (stream_guard/ops/monitoring/groups.py).

A flush starts with the first record after the last one and ends `flush_s` later, or at once when the next
record would make it too large, or when `flush()` is called (before a progress report, which must follow the
records it vouches for on every partition; and when the judge stops). Each record's caller gets the flush's
future, which resolves once every group record of that flush is acknowledged by the broker (or fails with the
first send that failed): the judge acknowledges an input only after its verdict's sends and this future, so a
crash before then redelivers the input, and the monitor's ledger counts its answer once.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from stream_guard.ops.monitoring.groups import TenantGroups

# What sends one group record (key: the tenant, value: the group) and returns the broker's acknowledgement.
Send = Callable[[bytes, bytes], Awaitable["asyncio.Future[Any]"]]


class TenantOutbox:
    def __init__(self, send: Send, flush_s: float, max_bytes: int) -> None:
        self._send = send
        self.flush_s = flush_s
        self._groups = TenantGroups(max_bytes)
        self._done: asyncio.Future[None] | None = None  # the open flush's future
        self._timer: asyncio.TimerHandle | None = None
        # Flushes queue their sends one at a time, in the order they started (tasks start in creation order and
        # the lock is fair), so once the latest flush has queued its sends, every earlier one has too.
        self._queueing = asyncio.Lock()
        self._queued: asyncio.Future[None] | None = None  # the latest flush's sends are on the producer
        self._tasks: set[asyncio.Future[None]] = set()

    def add(self, tenant: str, record: bytes) -> asyncio.Future[None]:
        """Gather one encoded observation record; returns the future of the flush that will send it."""
        if not self._groups.fits(record):
            self._start_flush()
        if self._done is None:
            loop = asyncio.get_running_loop()
            self._done = loop.create_future()
            self._timer = loop.call_later(self.flush_s, self._start_flush)
        self._groups.add(tenant, record)
        return self._done

    async def flush(self) -> None:
        """Send what is gathered now; returns once every flush started so far has queued its sends on the
        producer (not once the broker has them: the futures `add` returned say that)."""
        self._start_flush()
        if self._queued is not None:
            await asyncio.shield(self._queued)

    def _start_flush(self) -> None:
        if self._done is None:
            return
        done, groups = self._done, self._groups.take()
        self._done = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._queued = queued = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(self._send_groups(done, queued, groups))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_groups(self, done: asyncio.Future[None], queued: asyncio.Future[None],
                           groups: list[tuple[str, bytes]]) -> None:
        try:
            async with self._queueing:
                sent = [await self._send(tenant.encode(), value) for tenant, value in groups]
            queued.set_result(None)
            await asyncio.gather(*sent)
            done.set_result(None)
        except BaseException as exc:  # the inputs waiting on it fail, and the worker stops (app._fail_fast)
            if not queued.done():
                queued.set_result(None)
            if isinstance(exc, Exception) and not done.done():
                done.set_exception(exc)
            elif not done.done():
                done.cancel()
            if not isinstance(exc, Exception):
                raise
