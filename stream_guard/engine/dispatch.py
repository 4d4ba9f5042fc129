"""Many concurrent callers onto the pool's judge processes: the front-end of `stream-guard serve`.

Each caller awaits the results of its own events. Whenever a process is free it takes what is waiting, up to a
batch (greedy: nothing waits for a batch to fill), so a lone request is judged at once and a burst shares the
pipe round trips. Drift history lives in a HistoryTable (engine/history.py) owned here in the parent, as the
worker owns its table: a batch takes its questions' histories along as stored bytes, the process judges, the new
histories are written back before anything else about those questions is sent; the parent never parses them. A question whose events are on a process already waits until that
batch is back, so each event sees exactly the history the ones before it left, whichever process judges it;
events of different questions run side by side on every process.

Work that is not a whole event (a streamed answer's sentences, engine/incremental.py) runs on a free process
too, preferring the one that has the stream's context analysed already.

An idle process that dies (killed, out of memory) is replaced at once, before a request needs it: its exit is
watched on the event loop. A process that dies during a call is the pool's death policy's (engine/pool.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

from stream_guard.engine.history import HistoryTable
from stream_guard.engine.judging import Judged
from stream_guard.engine.pool import BATCH_SIZE, Call, Pool

T = TypeVar("T")
log = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _Job:
    """One event to judge (`payload`, under question `key`), or one call; its caller awaits `future`."""

    future: asyncio.Future[Any]
    payload: bytes = b""
    key: str | None = None
    call: Call | None = None
    prefer: int | None = None


@dataclass
class Dispatcher:
    """`await judge(payloads, keys)` for events, `await run(fn, *args)` for other work with a process's Guard."""

    pool: Pool
    histories: HistoryTable
    batch_max: int = BATCH_SIZE
    _waiting: deque[_Job] = field(default_factory=deque)
    _idle: list[int] = field(init=False)
    _in_flight: dict[str, int] = field(default_factory=dict)  # question key -> the process judging it
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.pool.processes < 1:
            raise ValueError("the dispatcher needs judge processes (Pool(..., processes=N), N >= 1)")
        self._idle = []
        self._watched: dict[int, int] = {}  # idle process -> the exit sentinel watched for it
        for slot in range(self.pool.processes):
            self._free(slot)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def busy(self) -> int:
        """Processes with a call in flight."""
        return self.pool.processes - len(self._idle)

    async def judge(self, payloads: Sequence[bytes], keys: Sequence[str | None]) -> list[Judged]:
        """The Judged of each payload, in order. `keys[i]`: the question hash payload i is judged under
        (pool.address), None when it has none; what serialises a question's events."""
        loop = asyncio.get_running_loop()
        jobs = [_Job(loop.create_future(), payload, key) for payload, key in zip(payloads, keys, strict=True)]
        self._waiting.extend(jobs)
        self._pump()
        try:
            return list(await asyncio.gather(*(job.future for job in jobs)))
        finally:
            for job in jobs:  # a caller that went away: what has not been sent yet never will be
                job.future.cancel()

    async def run(self, fn: Callable[..., T], *args: Any, prefer: int | None = None) -> tuple[T, int]:
        """`fn(guard, *args)` on a free process, `prefer` when that one is free: its value and the process it
        ran on. Raises pool.CallFailed."""
        job = _Job(asyncio.get_running_loop().create_future(), call=(fn, args), prefer=prefer)
        self._waiting.append(job)
        self._pump()
        try:
            value, slot = await job.future
        finally:
            job.future.cancel()
        return value, slot

    async def drain(self) -> None:
        """Wait for every call in flight (the waiting ones are sent as processes free up), then stop watching the
        processes: closing the pool ends them, and nothing must replace them then."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        loop = asyncio.get_running_loop()
        for sentinel in self._watched.values():
            loop.remove_reader(sentinel)
        self._watched.clear()

    # --- scheduling ---------------------------------------------------------------------------------------------

    def _pump(self) -> None:
        while self._idle and self._waiting:
            while self._waiting and self._waiting[0].future.done():  # callers gone
                self._waiting.popleft()
            if not self._waiting:
                return
            taken = self._take()
            if taken is None:
                return  # everything waiting is about questions in flight: their batches free them
            slot, jobs = taken
            task = asyncio.ensure_future(self._send(slot, jobs))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _take(self) -> tuple[int, list[_Job]] | None:
        """The next process and what it takes: the first call alone, or events in arrival order (a question
        whose earlier event is in flight elsewhere or left waiting stays behind, with its later events)."""
        blocked: set[str] = set()
        slot: int | None = None
        batch: list[_Job] = []
        kept: deque[_Job] = deque()
        while self._waiting:
            job = self._waiting.popleft()
            if job.future.done():
                continue
            if job.call is not None:
                if batch:
                    kept.append(job)
                    continue
                slot = job.prefer if job.prefer in self._idle else self._idle[0]
                batch = [job]
                break
            key = job.key
            # In flight on this slot means taken into this batch a moment ago (the slot is idle): it may follow.
            if key is not None and (key in blocked or (key in self._in_flight and self._in_flight[key] != slot)):
                blocked.add(key)
                kept.append(job)
                continue
            if slot is None:
                slot = self._idle[0]
            if key is not None:
                self._in_flight[key] = slot
            batch.append(job)
            if len(batch) >= self.batch_max:
                break
        self._waiting.extendleft(reversed(kept))
        if slot is None:
            return None
        self._busy(slot)
        return slot, batch

    async def _send(self, slot: int, jobs: list[_Job]) -> None:
        try:
            if jobs[0].call is not None:
                await self._call(slot, jobs[0])
            else:
                await self._judge(slot, jobs)
        finally:
            for job in jobs:
                if job.key is not None and self._in_flight.get(job.key) == slot:
                    del self._in_flight[job.key]
            self._free(slot)
            self._pump()

    def _free(self, slot: int) -> None:
        """`slot` takes work again. Its process's exit is watched (a call may have replaced the process: then
        the new one's); a process that exits during a call is the call's to handle (engine/pool.py)."""
        self._idle.append(slot)
        sentinel = self.pool.sentinel(slot)
        watched = self._watched.get(slot)
        if sentinel == watched:
            return
        with contextlib.suppress(RuntimeError):  # no running loop (built outside one): watched from the first call
            loop = asyncio.get_running_loop()
            if watched is not None:
                loop.remove_reader(watched)
                del self._watched[slot]
            if sentinel is not None:
                loop.add_reader(sentinel, self._died, slot)
                self._watched[slot] = sentinel

    def _busy(self, slot: int) -> None:
        self._idle.remove(slot)

    def _died(self, slot: int) -> None:
        """A process exited. Idle: replace it now, out of the way of requests; busy: its call does (and its
        replacement is watched once the call is over). Either way this exit is not watched any more."""
        asyncio.get_running_loop().remove_reader(self._watched.pop(slot))
        if slot not in self._idle:
            return
        log.error("judge process %d exited while idle; replacing it", slot)
        self._busy(slot)
        task = asyncio.ensure_future(self._revive(slot))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _revive(self, slot: int) -> None:
        try:
            await self.pool.revive(slot)
        finally:
            self._free(slot)
            self._pump()

    async def _judge(self, slot: int, jobs: list[_Job]) -> None:
        keys = {job.key for job in jobs if job.key is not None}
        histories = {key: self.histories.get_raw(key) for key in keys}
        try:
            batch = await self.pool.judge_batch([job.payload for job in jobs], histories, now_ms(), slot=slot)
        except Exception as exc:  # no process could be started for this slot: each event fails, cleanly
            log.exception("judge process %d could not take a batch of %d", slot, len(jobs))
            failed = Judged(error_stage="judge", error_field="$", error_reason=f"the judge is unavailable: {exc}")
            for job in jobs:
                if not job.future.done():
                    job.future.set_result(failed)
            return
        for key, raw in batch.histories.items():
            self.histories.put_raw(key, raw)
        for job, item in zip(jobs, batch.items):
            if not job.future.done():
                job.future.set_result(item)

    async def _call(self, slot: int, job: _Job) -> None:
        assert job.call is not None
        fn, args = job.call
        try:
            value = await self.pool.run_in(slot, fn, *args)
        except Exception as exc:
            if not job.future.done():
                job.future.set_exception(exc)
            return
        if not job.future.done():
            job.future.set_result((value, slot))
