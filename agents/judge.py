"""Where the checks run: never on the event loop; in a child process, or in a thread.

- process (default): one child process holding its own Guard (and spaCy model). The batch goes in and
  comes out as bytes (stream_guard/judging.py), so crossing the process boundary is cheap, and the event
  loop keeps a core of its own for fetching and sending. It costs a second copy of the model in memory.
- thread: one thread beside the loop. Cheaper to start, one copy of everything, but the checks are pure
  Python and hold the GIL, so the worker tops out at about one core for everything.

Either way one batch at a time: order within a question matters for drift, and one executor slot keeps
that trivially true.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Mapping, Sequence

from agents.embedded_broker import die_with_parent
from stream_guard.config import DetectorConfig
from stream_guard.events import parse_event
from stream_guard.judging import JudgedBatch, failed_batch, judge_payloads
from stream_guard.pipeline import Guard

log = logging.getLogger("agents.judge")

_WARMUP = {
    "event_id": "warmup",
    "question": "How long is the refund window?",
    "context": ["Refunds are accepted within 14 days of purchase. Contact Dr. Ada Park at Acme Corp."],
    "answer": "You can request a refund within 14 days of purchase.",
}

# The child process's Guard, built once by the pool initializer.
_child_guard: Guard | None = None


def warm_up(guard: Guard) -> float:
    """Judge one event before taking traffic: loading spaCy and compiling patterns takes seconds, and a first
    batch that slow would show as a latency spike."""
    started = time.perf_counter()
    guard.evaluate_batch([parse_event(_WARMUP)], {})
    return time.perf_counter() - started


def _init_child(config: DetectorConfig) -> None:
    global _child_guard
    die_with_parent()  # a SIGKILLed worker must not leave its judge behind
    _child_guard = Guard(config)
    warm_up(_child_guard)


def _judge_in_child(payloads: Sequence[bytes], histories: Mapping[str, bytes | None], now_ms: int) -> JudgedBatch:
    assert _child_guard is not None, "pool initializer did not run"
    return judge_payloads(_child_guard, payloads, histories, now_ms)


def _ner_in_child() -> str:
    assert _child_guard is not None
    return str(getattr(_child_guard.detector, "ner_backend", "?"))


class Judge:
    def __init__(self, config: DetectorConfig, mode: str = "process") -> None:
        if mode not in ("thread", "process"):
            raise ValueError(f"executor must be thread or process, got {mode!r}")
        self.config = config
        self.mode = mode
        self._guard: Guard | None = None
        self.ner_backend = "?"
        self._pool: Executor = self._new_pool()

    def _new_pool(self) -> Executor:
        if self.mode == "thread":
            if self._guard is None:
                self._guard = Guard(self.config)
                warm_up(self._guard)
                self.ner_backend = str(getattr(self._guard.detector, "ner_backend", "?"))
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge")
        # spawn, not fork: when a pool is rebuilt the worker runs threads (Faust's consumer), and a forked
        # child of a threaded process can inherit a lock held by one of them.
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_child, initargs=(self.config,))
        self.ner_backend = pool.submit(_ner_in_child).result()  # load the model now, not on the first batch
        return pool

    async def judge(self, payloads: Sequence[bytes], histories: Mapping[str, bytes | None], now_ms: int
                    ) -> JudgedBatch:
        loop = asyncio.get_running_loop()
        if self.mode == "thread":
            assert self._guard is not None
            return await loop.run_in_executor(self._pool, judge_payloads, self._guard, payloads, histories, now_ms)
        try:
            return await loop.run_in_executor(self._pool, _judge_in_child, payloads, histories, now_ms)
        except BrokenProcessPool:
            log.error("judge process died on a batch of %d; retrying one event at a time", len(payloads))
        # The child died (OOM-killed, or a native crash inside a library): find the event that does it, so
        # that only that one is dead-lettered.
        items = []
        histories = dict(histories)
        updated: dict[str, bytes] = {}
        broken = True
        for payload in payloads:
            if broken:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = await loop.run_in_executor(None, self._new_pool)
                broken = False
            try:
                one = await loop.run_in_executor(self._pool, _judge_in_child, [payload], histories, now_ms)
            except BrokenProcessPool:
                broken = True
                one = failed_batch(1, "the judge process died on this event")
            items.extend(one.items)
            histories.update(one.histories)
            updated.update(one.histories)
        return JudgedBatch(items, updated)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

