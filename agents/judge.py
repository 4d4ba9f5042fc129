"""Where the checks run: a child process, on a pipe that the event loop itself writes and watches.

The batch goes in and comes out as bytes (stream_guard/engine/judging.py), so crossing the process boundary is
cheap, and the event loop keeps a core of its own for fetching, sending, heartbeats and health. It costs a
second copy of the model in memory.

Why a bare pipe rather than a ProcessPoolExecutor: the pool hands each call through a feeder thread and a
manager thread, and each hand-over waits for the GIL, which a busy event loop holds for up to the 5 ms
switch interval. Measured on short events at 200/s: a batch of three took ~15 ms through the pool against
~2.5 ms of checks. The event loop is the only writer and reader here, so a call is one write, one
wake-up and one read.

Time per event is bounded twice. In the child, each event runs under its CPU budget (stream_guard/engine/budget.py:
a CPU-time timer interrupts Python code and the regex engine), and an event over it comes back as a
`timeout` while the rest of its batch is judged. Native code that never checks for signals is not
interrupted by that timer, so here the parent gives every call a wall-clock limit (CpuBudget.wall_limit_s):
past it the child is killed and replaced, and the batch is judged again one event at a time, each with its
own limit, so only the event that hangs is dead-lettered, as a timeout.

There is no thread executor any more: a judge thread cannot be stopped or replaced when an event overruns,
and while it runs it holds the GIL against the event loop, so one bad event would stall the whole worker.

One batch at a time: order within a question matters for drift, and one judge keeps that trivially true.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Mapping, Sequence

import orjson

from stream_guard.agents.embedded_broker import die_with_parent
from stream_guard.engine.budget import CpuBudget
from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.events import parse_event
from stream_guard.engine.judging import JudgedBatch, failed_batch, judge_payloads
from stream_guard.logs import use_json_logs
from stream_guard.engine.pipeline import Guard

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


class JudgeTimedOut(JudgeDied):
    """The judge process did not answer within the call's wall-clock limit; it has been killed."""

    def __init__(self, message: str, cost_ms: float | None) -> None:
        super().__init__(message)
        self.cost_ms = cost_ms


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) process `pid` has used so far, from /proc; None where that is not there."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def warm_up(guard: Guard) -> float:
    """Judge one event before taking traffic: loading spaCy and compiling patterns takes seconds, and a first
    batch that slow would show as a latency spike."""
    started = time.perf_counter()
    guard.evaluate_batch([parse_event(_WARMUP)], {})
    return time.perf_counter() - started


def _ner_backend(guard: Guard) -> str:
    return str(getattr(guard.detector, "ner_backend", "?"))


# Called with the child's Guard before it says ready: a module-level function (it is pickled by reference).
# For tests and benchmarks that need a judge that misbehaves on cue.
Setup = Callable[[Guard], None]


def _child_main(conn: Connection, config: DetectorConfig, setup: Setup | None = None,
                log_format: str = "text") -> None:
    """The judge process: build the Guard, say ready, then answer one pickled batch at a time."""
    die_with_parent()  # a SIGKILLed worker must not leave its judge behind
    # A spawned process starts with no logging set up: its warnings (an event over budget) would go out
    # bare, on stderr. Warnings and worse, in the worker's format, on its stream.
    if log_format == "json":
        use_json_logs(logging.WARNING)
    else:
        logging.basicConfig(level=logging.WARNING, stream=sys.stdout,
                            format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s")
    guard = Guard(config)
    warm_up(guard)
    if setup is not None:
        setup(guard)
    budget = CpuBudget(config.event_budget_ms)
    conn.send_bytes(pickle.dumps(_ner_backend(guard)))
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):  # the worker closed the pipe or died: nothing left to do
            return
        payloads, histories, now_ms, claims = pickle.loads(request)
        try:
            result = judge_payloads(guard, payloads, histories, now_ms, claims, budget=budget)
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

    def __init__(self, config: DetectorConfig, setup: Setup | None = None, log_format: str = "text") -> None:
        # spawn, not fork: the worker runs threads (Faust's consumer), and a forked child of a threaded
        # process can inherit a lock held by one of them.
        ctx = multiprocessing.get_context("spawn")
        self._conn, theirs = ctx.Pipe(duplex=True)
        self._proc = ctx.Process(target=_child_main, args=(theirs, config, setup, log_format),
                                 name="stream-guard-judge", daemon=True)
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
                   claims: Sequence[str | None] | None, wall_limit_s: float) -> JudgedBatch:
        """One batch; JudgeTimedOut (the process killed) when no answer comes within `wall_limit_s`."""
        request = pickle.dumps((list(payloads), dict(histories), now_ms, claims), protocol=pickle.HIGHEST_PROTOCOL)
        cpu_before = cpu_seconds(self._proc.pid) if self._proc.pid else None
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
            await asyncio.wait_for(readable, wall_limit_s)
        except asyncio.TimeoutError:
            self.out_of_step = True
            cpu_after = cpu_seconds(self._proc.pid) if self._proc.pid else None
            cost_ms = (cpu_after - cpu_before) * 1000.0 if cpu_before is not None and cpu_after is not None else None
            self._proc.kill()
            raise JudgeTimedOut(f"timeout: no answer within {wall_limit_s:.1f} s of wall-clock time"
                                + (f" ({cost_ms:.0f} ms of CPU)" if cost_ms is not None else "")
                                + "; the judge process was killed and replaced", cost_ms) from None
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


def _event_id(payload: bytes) -> str | None:
    """The event id of a payload the judge could not answer for, so that its dead letter names it. JSON work on
    the event loop, but only for an event that just cost a judge process."""
    try:
        value = orjson.loads(payload)
    except (orjson.JSONDecodeError, TypeError):
        return None
    found = value.get("event_id", value.get("id")) if isinstance(value, dict) else None
    return str(found) if isinstance(found, (str, int)) and not isinstance(found, bool) else None


@dataclass(frozen=True)
class Busy:
    """The call a judge is in: since when (monotonic), over how many events, with what wall-clock limit."""

    since: float
    events: int
    limit_s: float


class Judge:
    def __init__(self, config: DetectorConfig, *, setup: Setup | None = None, log_format: str = "text") -> None:
        self.config = config
        self.budget = CpuBudget(config.event_budget_ms)
        self._setup = setup
        self._log_format = log_format
        self.busy: Busy | None = None
        self.replaced = 0  # judge processes killed for running past a wall-clock limit, or found dead
        self._process: _JudgeProcess | None = _JudgeProcess(config, setup, log_format).wait_ready()  # load it now
        self.ner_backend = self._process.ner_backend

    @property
    def pid(self) -> int | None:
        """The judge process's id (for its CPU and memory metrics); None while it is being replaced."""
        process = self._process
        return process._proc.pid if process is not None else None

    def stuck(self, now: float | None = None) -> str | None:
        """Why the judge is not keeping up now, or None: it has been on one batch for longer than the batch's
        wall-clock limit (an event hanging in native code: being killed, replaced and retried alone)."""
        busy = self.busy
        if busy is None:
            return None
        running = (now if now is not None else time.monotonic()) - busy.since
        if running <= busy.limit_s:
            return None
        return (f"the judge has been on a batch of {busy.events} event(s) for {running:.1f} s, past the "
                f"{busy.limit_s:.1f} s it may take ({self.config.event_budget_ms:g} ms of CPU per event); "
                f"{self.replaced} judge process(es) replaced so far")

    async def judge(self, payloads: Sequence[bytes], histories: Mapping[str, bytes | None], now_ms: int,
                    claimed_keys: Sequence[str | None] | None = None) -> JudgedBatch:
        """See judge_payloads."""
        self.busy = Busy(time.monotonic(), len(payloads), self.budget.wall_limit_s(len(payloads)))
        try:
            return await self._judge(payloads, histories, now_ms, claimed_keys)
        finally:
            self.busy = None

    async def _judge(self, payloads: Sequence[bytes], histories: Mapping[str, bytes | None], now_ms: int,
                     claimed_keys: Sequence[str | None] | None) -> JudgedBatch:
        try:
            return await self._call(payloads, histories, now_ms, claimed_keys)
        except JudgeDied as exc:
            log.error("judge process failed on a batch of %d (%s); retrying one event at a time", len(payloads), exc)
        self._discard_process()
        # Find the event that kills or hangs it, so that only that one is dead-lettered.
        items = []
        histories = dict(histories)
        updated: dict[str, bytes] = {}
        claims = list(claimed_keys) if claimed_keys is not None else [None] * len(payloads)
        for payload, claim in zip(payloads, claims):
            try:
                one = await self._call([payload], histories, now_ms, [claim])
            except JudgeTimedOut as exc:
                self._discard_process()
                one = failed_batch(1, str(exc), stage="timeout", cost_ms=exc.cost_ms, event_id=_event_id(payload))
            except JudgeDied:
                self._discard_process()
                one = failed_batch(1, "the judge process died on this event", event_id=_event_id(payload))
            items.extend(one.items)
            histories.update(one.histories)
            updated.update(one.histories)
        return JudgedBatch(items, updated)

    async def _call(self, payloads: Sequence[bytes], histories: Mapping[str, bytes | None], now_ms: int,
                    claims: Sequence[str | None] | None) -> JudgedBatch:
        process = await self._ensure_process()
        return await process.call(payloads, histories, now_ms, claims, self.budget.wall_limit_s(len(payloads)))

    async def _ensure_process(self) -> _JudgeProcess:
        if self._process is not None and self._process.out_of_step:
            self._discard_process()
        if self._process is None:
            self.replaced += 1
            process = _JudgeProcess(self.config, self._setup, self._log_format)
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
        self._discard_process(grace_s=5.0)  # at shutdown, off the loop: let an idle process exit by itself
