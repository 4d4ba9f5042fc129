"""Greedy batches off a Faust stream: the first event at once, plus whatever else is already waiting.

Faust's `take`/`take_events` wait out their whole `within` window, woken on a timer, whenever the batch is
not full: every event pays up to that window in latency, on every hop, however idle the worker. Here a
batch closes as soon as nothing more is waiting (or after `linger_s` from its first event, if asked), so a
quiet worker answers one event at once and a busy one batches by itself: whatever arrived while the
previous batch was being judged forms the next.

Events are not acknowledged here: the caller acknowledges each one (`stream.ack`) once everything it
caused has been delivered, which is what makes the service at-least-once.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator, Callable

import faust


async def greedy_batches(stream: faust.StreamT, max_size: int, linger_s: float = 0.0,
                         urgent: Callable[[faust.EventT], bool] | None = None) -> AsyncIterator[list[faust.EventT]]:
    """Yield lists of 1..max_size unacknowledged events from `stream` (a `stream.noack()` stream). A batch that
    holds an event for which `urgent` says True stops lingering: it takes what is waiting and goes."""
    queue: asyncio.Queue[faust.EventT] = asyncio.Queue(maxsize=max(1, max_size) * 2)

    async def pump() -> None:
        async for event in stream.events():
            await queue.put(event)  # blocks when we are behind: Faust's own buffers then apply back-pressure

    pumping = asyncio.ensure_future(pump())
    try:
        while True:
            getting = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getting, pumping}, return_when=asyncio.FIRST_COMPLETED)
            if getting not in done:  # the stream ended (worker stopping) or failed
                getting.cancel()
                pumping.result()
                return
            batch = [getting.result()]
            if linger_s > 0 and not (urgent is not None and urgent(batch[0])):
                deadline = asyncio.get_running_loop().time() + linger_s
                while len(batch) < max_size and not (urgent is not None and urgent(batch[-1])):
                    remaining = deadline - asyncio.get_running_loop().time()
                    if remaining <= 0:
                        break
                    try:
                        batch.append(await asyncio.wait_for(queue.get(), remaining))
                    except asyncio.TimeoutError:
                        break
            while len(batch) < max_size and not queue.empty():
                batch.append(queue.get_nowait())
            yield batch
    finally:
        pumping.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pumping
