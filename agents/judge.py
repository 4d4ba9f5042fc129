"""Where the checks run: never on the event loop; in a child process, or in a thread.

- process (default): one child process holding its own Guard (and spaCy model), on a pipe that the event
  loop itself writes and watches. The batch goes in and comes out as bytes (stream_guard/judging.py), so
  crossing the process boundary is cheap, and the event loop keeps a core of its own for fetching and
  sending. It costs a second copy of the model in memory.
- thread: one thread beside the loop. Cheaper to start, one copy of everything, but the checks are pure
  Python and hold the GIL, so the worker tops out at about one core for everything.

Why a bare pipe rather than a ProcessPoolExecutor: the pool hands each call through a feeder thread and a
manager thread, and each hand-over waits for the GIL, which a busy event loop holds for up to the 5 ms
switch interval. Measured on short events at 200/s: a batch of three took ~15 ms through the pool against
~2.5 ms of checks. The event loop is the only writer and reader here, so a call is one write, one
wake-up and one read.

Either way one batch at a time: order within a question matters for drift, and one executor slot keeps
that trivially true.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import pickle
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, Mapping, Sequence

from stream_guard.agents.embedded_broker import die_with_parent
from stream_guard.config import DetectorConfig
from stream_guard.events import parse_event
from stream_guard.judging import JudgedBatch, failed_batch, judge_payloads
from stream_guard.pipeline import Guard

log = logging.getLogger(__name__)

_WARMUP = {
    "event_id": "warmup",
    "question": "How long is the refund window?",
    "context": ["Refunds are accepted within 14 days of purchase. Contact Dr. Ada Park at Acme Corp."],
    "answer": "You can request a refund within 14 days of purchase.",
}
# How long a judge process may take to load its model and report ready.
START_TIMEOUT_S = 300.0


class JudgeDied(RuntimeError):
    """The judge process exited (OOM-killed, or a native crash inside a library) before it answered."""


def warm_up(guard: Guard) -> float:
    """Judge one event before taking traffic: loading spaCy and compiling patterns takes seconds, and a first
    batch that slow would show as a latency spike."""
    started = time.perf_counter()
    guard.evaluate_batch([parse_event(_WARMUP)], {})
    return time.perf_counter() - started


def _ner_backend(guard: Guard) -> str:
    return str(getattr(guard.detector, "ner_backend", "?"))


def _child_main(conn: Connection, config: DetectorConfig) -> None:
    """The judge process: build the Guard, say ready, then answer one pickled batch at a time."""
    die_with_parent()  # a SIGKILLed worker must not leave its judge behind
    guard = Guard(config)
    warm_up(guard)
    conn.send_bytes(pickle.dumps(_ner_backend(guard)))
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):  # the worker closed the pipe or died: nothing left to do
            return
        payloads, histories, now_ms, claims = pickle.loads(request)
        try:
            result = judge_payloads(guard, payloads, histories, now_ms, claims)
        except Exception as exc:  # judge_payloads guards each event; this is a bug around it
            log.exception("judge process failed on a batch of %d", len(payloads))
            result = failed_batch(len(payloads), f"{type(exc).__name__}: {exc}")
        conn.send_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


class _JudgeProcess:
    """One spawned judge process and the worker's end of its pipe.

    Start it from the thread that will outlive it (the event loop's): the process is told to die with its
    parent, and on Linux "parent" means the thread that started it, so one started from an executor thread
    would be killed when that thread is retired.
    """

    def __init__(self, config: DetectorConfig) -> None:
        # spawn, not fork: the worker runs threads (Faust's consumer), and a forked child of a threaded
        # process can inherit a lock held by one of them.
        ctx = multiprocessing.get_context("spawn")
        self._conn, theirs = ctx.Pipe(duplex=True)
        self._proc = ctx.Process(target=_child_main, args=(theirs, config), name="stream-guard-judge", daemon=True)
        self._proc.start()
        theirs.close()
        self.ner_backend = "?"
        # Set when a call was abandoned half way: its answer would be read as the next call's.
        self.out_of_step = False

    def wait_ready(self) -> "_JudgeProcess":
        """Block until the process has loaded its model (seconds, with spaCy)."""
        if not self._conn.poll(START_TIMEOUT_S):
            self.close()
            raise JudgeDied(f"judge process not ready after {START_TIMEOUT_S:.0f}s")
        self.ner_backend = str(self._receive())
        return self

    def _receive(self) -> Any:
        try:
            return pickle.loads(self._conn.recv_bytes())
        except (EOFError, OSError) as exc:
            raise JudgeDied(f"judge process exited with {self._proc.exitcode}") from exc

    async def call(self, payloads: Sequence[bytes], histories: Mapping[str, bytes | None], now_ms: int,
                   claims: Sequence[str | None] | None) -> JudgedBatch:
        request = pickle.dumps((list(payloads), dict(histories), now_ms, claims), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            # A blocking write, but short: the process is idle, reading, whenever a call starts.
            self._conn.send_bytes(request)
        except OSError as exc:
            raise JudgeDied(f"judge process exited with {self._proc.exitcode}") from exc
        loop = asyncio.get_running_loop()
        readable = loop.create_future()
        fd = self._conn.fileno()
        loop.add_reader(fd, lambda: readable.done() or readable.set_result(None))
        try:
            await readable
        except asyncio.CancelledError:
            self.out_of_step = True
            raise
        finally:
            loop.remove_reader(fd)
        result = self._receive()  # readable: the process is writing its answer, or has died (EOF)
        assert isinstance(result, JudgedBatch)
        return result

    def close(self, grace_s: float = 5.0) -> None:
        """Close the pipe (an idle process exits on it) and kill the process if it is still there after
        `grace_s`."""
        self._conn.close()
        self._proc.join(timeout=grace_s)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=5)


class Judge:
    def __init__(self, config: DetectorConfig, mode: str = "process") -> None:
        if mode not in ("thread", "process"):
            raise ValueError(f"executor must be thread or process, got {mode!r}")
        self.config = config
        self.mode = mode
        self._guard: Guard | None = None
        self._threads: ThreadPoolExecutor | None = None
        self._process: _JudgeProcess | None = None
        if mode == "thread":
            self._guard = Guard(config)
            warm_up(self._guard)
            self.ner_backend = _ner_backend(self._guard)
            self._threads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge")
        else:
            self._process = _JudgeProcess(config).wait_ready()  # load the model now, not on the first batch
            self.ner_backend = self._process.ner_backend

    async def judge(self, payloads: Sequence[bytes], histories: Mapping[str, bytes | None], now_ms: int,
                    claimed_keys: Sequence[str | None] | None = None) -> JudgedBatch:
        """See judge_payloads."""
        if self._threads is not None:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._threads, judge_payloads, self._guard, payloads, histories,
                                              now_ms, claimed_keys)
        try:
            return await (await self._ensure_process()).call(payloads, histories, now_ms, claimed_keys)
        except JudgeDied:
            log.error("judge process died on a batch of %d; retrying one event at a time", len(payloads))
        self._discard_process()
        # Find the event that kills it, so that only that one is dead-lettered.
        items = []
        histories = dict(histories)
        updated: dict[str, bytes] = {}
        claims = list(claimed_keys) if claimed_keys is not None else [None] * len(payloads)
        for payload, claim in zip(payloads, claims):
            try:
                one = await (await self._ensure_process()).call([payload], histories, now_ms, [claim])
            except JudgeDied:
                self._discard_process()
                one = failed_batch(1, "the judge process died on this event")
            items.extend(one.items)
            histories.update(one.histories)
            updated.update(one.histories)
        return JudgedBatch(items, updated)

    async def _ensure_process(self) -> _JudgeProcess:
        if self._process is not None and self._process.out_of_step:
            self._discard_process()
        if self._process is None:
            process = _JudgeProcess(self.config)
            # Waited for from a thread: loading the model takes seconds, and the loop has acks to wait for.
            self._process = await asyncio.get_running_loop().run_in_executor(None, process.wait_ready)
        return self._process

    def _discard_process(self, grace_s: float = 0.0) -> None:
        """Drop the process. From the event loop no grace: a discarded process is dead already, or busy
        with an answer nobody will read, and waiting for it would stall the loop."""
        if self._process is not None:
            self._process.close(grace_s)
            self._process = None

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
        self._discard_process(grace_s=5.0)  # at shutdown, off the loop: let an idle process exit by itself
