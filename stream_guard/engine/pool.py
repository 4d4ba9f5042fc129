"""Judge AnswerEvent payloads on every core, with the output in input order and drift history exact.

Drift history is per question, so one question's events must be judged one after another, in input order,
against the history the earlier ones left. The runner shards by question: the first event of a question
goes to the least busy judge process and every later event of that question follows it there, so each
process sees its questions' events in input order and keeps their histories itself. An answer to no
question joins no history (pipeline.py), so those go wherever there is room: a file of summaries is not
serialised behind one "empty question".

Every process judges through `judging.judge_payloads` (bytes in, bytes out), exactly as the streaming judge
does, so whatever guards that path (limits, time budgets) guards this one too. `jobs=1` judges in this
process with the same code, so `--jobs N` can only differ from `--jobs 1` in the measured `latency_ms`
fields: the quality score's latency part is fixed for replays (REPLAY_QUALITY_LATENCY_MS), so that no
decision depends on how busy the machine is.

Processes are spawned (never forked from a caller that may run threads), ignore Ctrl-C (the caller decides
what an interrupt means and stops them), and exit when their parent disappears.
"""

from __future__ import annotations

import argparse
import multiprocessing
import logging
import os
import queue
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Iterable, Iterator, Sequence, TypeVar

import orjson

from stream_guard.config.detector import DetectorConfig
from stream_guard.errors import InternalError
from stream_guard.engine.history import HistoryStore, MemoryHistory, SQLiteHistory
from stream_guard.engine.budget import CpuBudget
from stream_guard.engine.judging import Judged, dump_history, judge_payloads, load_history
from stream_guard.engine.pipeline import Guard
from stream_guard.text.words import normalize_question, question_hash

T = TypeVar("T")

log = logging.getLogger(__name__)

# The quality score's latency part in replays: within budget (full marks), whatever this machine measures.
REPLAY_QUALITY_LATENCY_MS = 0.0
BATCH_SIZE = 16
# Batches a process may have queued beyond the one it is judging: enough to never leave it idle.
MAX_QUEUED_BATCHES = 3
# Events read ahead of the oldest one not yet written out, per process (bounds the reorder buffer).
WINDOW_PER_JOB = 256
START_TIMEOUT_S = 300.0
# A spawned judge costs a start-up (interpreter, imports, spaCy's model: about 1.5 s of CPU, the judging of
# a few hundred events) before it judges anything, so a file gets one process per this many events.
EVENTS_PER_PROCESS = 1000


class JudgeProcessDied(InternalError):
    """A judge process exited (killed, out of memory, a native crash) before it answered."""


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def jobs_for(events: int | None) -> int:
    """The default number of judge processes for `events` events (None: unknown, e.g. stdin): one per core,
    but no more than the input can pay start-ups for."""
    if events is None:
        return default_jobs()
    return max(1, min(default_jobs(), events // EVENTS_PER_PROCESS))


def count_lines(path: str | Path) -> int:
    """Non-blank lines of a file: its events, for a JSONL file."""
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def parse_jobs(text: str) -> int:
    """`--jobs` on the command line: a whole number of processes, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be at least 1, got {value}")
    return value


def json_object(payload: bytes) -> dict[str, Any] | None:
    """The payload's JSON object, or None when it is not one (the judge reports why; callers just skip)."""
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def shard_key(payload: bytes) -> str | None:
    """The question hash a payload's event will be judged under (as events.parse_event reads tenant and
    question), or None when it has no question or does not parse: such payloads share no state."""
    obj = json_object(payload)
    if obj is None:
        return None
    tenant, question = obj.get("tenant"), obj.get("question")
    tenant = "default" if tenant is None else tenant
    if not isinstance(tenant, str) or not isinstance(question, str) or not normalize_question(question):
        return None
    return question_hash(tenant.strip() or "default", question)


class Shard:
    """One Guard and the drift histories of the questions it judges."""

    def __init__(self, config: DetectorConfig, drift_db: str | None = None) -> None:
        self.guard = Guard(config, quality_latency_ms=REPLAY_QUALITY_LATENCY_MS)
        # The streaming judge's per-event CPU budget: an event over it is an error object, never a stall.
        self.budget = CpuBudget(config.event_budget_ms)
        self.store: HistoryStore = SQLiteHistory(drift_db) if drift_db else MemoryHistory()

    @property
    def ner_backend(self) -> str:
        return str(self.guard.detector.ner_backend)

    def judge(self, payloads: Sequence[bytes], keys: Sequence[str | None]) -> list[Judged]:
        histories = {key: dump_history(self.store.get(key)) for key in set(keys) if key}
        try:
            batch = judge_payloads(self.guard, payloads, histories, budget=self.budget)
        except Exception as exc:  # judge_payloads keeps each event's failure to itself; this is a bug around it
            if len(payloads) > 1:
                return [item for one, key in zip(payloads, keys) for item in self.judge([one], [key])]
            log.exception("the judge failed outside its per-event guard")
            return [Judged(error_stage="judge", error_field="$",
                           error_reason=f"the judge failed: {type(exc).__name__}: {exc}")]
        for key, raw in batch.histories.items():
            self.store.put(key, load_history(raw), self.guard.config.window_size)
        return batch.items

    def close(self) -> None:
        self.store.close()


def _child_main(index: int, config: DetectorConfig, drift_db: str | None, tasks: Any, results: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    parent = os.getppid()
    shard = Shard(config, drift_db)
    results.put(("ready", index, shard.ner_backend))
    started_cpu = time.process_time()
    try:
        while True:
            try:
                task = tasks.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != parent:  # orphaned: nobody will read what we judge
                    return
                continue
            if task is None:
                return
            batch_id, payloads, keys = task
            judged = shard.judge(payloads, keys)
            results.put(("done", index, (batch_id, judged, time.process_time() - started_cpu)))
    finally:
        shard.close()


@dataclass
class _Batch(Generic[T]):
    seqs: list[int]
    payloads: list[bytes]
    keys: list[str | None]


class Judges:
    """`jobs` judges: this process alone for 1, else that many spawned processes.

        with Judges(config, jobs=4) as judges:
            for tag, judged in judges.judge((n, line) for n, line in numbered_lines):
                ...

    `judge` yields (tag, Judged) in input order, one per payload.
    """

    def __init__(self, config: DetectorConfig, jobs: int | None = None, drift_db: str | None = None,
                 batch_size: int = BATCH_SIZE) -> None:
        self.jobs = max(1, jobs or default_jobs())
        self.batch_size = max(1, batch_size)
        self._local: Shard | None = None
        self._procs: list[Any] = []
        self._tasks: list[Any] = []
        self._results: Any = None
        self._ready: dict[int, str] = {}
        # CPU seconds each process has spent judging so far, as it last reported (is the split even?).
        self.cpu_seconds = [0.0] * self.jobs
        if self.jobs == 1:
            self._local = Shard(config, drift_db)
            return
        ctx = multiprocessing.get_context("spawn")
        self._results = ctx.Queue()
        for index in range(self.jobs):
            tasks = ctx.Queue()
            proc = ctx.Process(target=_child_main, args=(index, config, drift_db, tasks, self._results),
                               name=f"stream-guard-judge-{index}", daemon=True)
            proc.start()
            self._tasks.append(tasks)
            self._procs.append(proc)

    def __enter__(self) -> "Judges":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def ner_backend(self) -> str:
        if self._local is not None:
            return self._local.ner_backend
        return ", ".join(sorted(set(self._ready.values()))) or "?"

    def wait_ready(self) -> "Judges":
        """Block until every process has loaded its model (seconds with spaCy); optional, for benchmarks."""
        while len(self._ready) < len(self._procs):
            self._receive(START_TIMEOUT_S)
        return self

    def judge(self, items: Iterable[tuple[T, bytes]]) -> Iterator[tuple[T, Judged]]:
        if self._local is not None:
            yield from self._judge_here(self._local, items)
        else:
            yield from self._judge_spread(items)

    def _judge_here(self, shard: Shard, items: Iterable[tuple[T, bytes]]) -> Iterator[tuple[T, Judged]]:
        tags: list[T] = []
        payloads: list[bytes] = []
        for tag, payload in items:
            tags.append(tag)
            payloads.append(payload)
            if len(payloads) >= self.batch_size:
                yield from zip(tags, shard.judge(payloads, [shard_key(p) for p in payloads]))
                tags, payloads = [], []
        if payloads:
            yield from zip(tags, shard.judge(payloads, [shard_key(p) for p in payloads]))

    def _judge_spread(self, items: Iterable[tuple[T, bytes]]) -> Iterator[tuple[T, Judged]]:
        jobs = self.jobs
        owner: dict[str, int] = {}
        pending: list[_Batch[T]] = [_Batch([], [], []) for _ in range(jobs)]
        self._in_flight = [0] * jobs
        self._sent: dict[int, list[int]] = {}
        self._done: dict[int, Judged] = {}
        tags: dict[int, T] = {}
        seq = next_out = 0
        window = WINDOW_PER_JOB * jobs

        def ready() -> Iterator[tuple[T, Judged]]:
            nonlocal next_out
            while next_out in self._done:
                yield tags.pop(next_out), self._done.pop(next_out)
                next_out += 1

        for tag, payload in items:
            key = shard_key(payload)
            shard = owner.get(key) if key is not None else None
            if shard is None:
                shard = min(range(jobs), key=lambda i: self._in_flight[i] + len(pending[i].seqs))
                if key is not None:
                    owner[key] = shard
            batch = pending[shard]
            batch.seqs.append(seq)
            batch.payloads.append(payload)
            batch.keys.append(key)
            tags[seq] = tag
            seq += 1
            if len(batch.seqs) >= self.batch_size:
                while self._in_flight[shard] >= self.batch_size * (MAX_QUEUED_BATCHES + 1):
                    self._receive()
                pending[shard] = self._send(shard, batch)
            if seq - next_out >= window:
                # The oldest event may sit in a batch not sent yet: send everything before waiting on it.
                pending = [self._send(i, b) if b.seqs else b for i, b in enumerate(pending)]
                while seq - next_out >= window:
                    self._receive()
                    yield from ready()
            yield from ready()
        pending = [self._send(i, b) if b.seqs else b for i, b in enumerate(pending)]
        while next_out < seq:
            self._receive()
            yield from ready()

    def _send(self, shard: int, batch: _Batch[T]) -> _Batch[T]:
        batch_id = batch.seqs[0]
        self._sent[batch_id] = batch.seqs
        self._in_flight[shard] += len(batch.seqs)
        self._tasks[shard].put((batch_id, batch.payloads, batch.keys))
        return _Batch([], [], [])

    def _receive(self, timeout: float | None = None) -> None:
        """Wait for one message from any process; raise if one of them died meanwhile."""
        waited = 0.0
        while True:
            try:
                kind, index, body = self._results.get(timeout=0.5)
                break
            except queue.Empty:
                waited += 0.5
                for i, proc in enumerate(self._procs):
                    if not proc.is_alive():
                        raise JudgeProcessDied(f"judge process {i} exited with code {proc.exitcode}") from None
                if timeout is not None and waited >= timeout:
                    raise JudgeProcessDied(f"no judge process answered within {timeout:.0f}s") from None
        if kind == "ready":
            self._ready[index] = body
            return
        batch_id, judged, self.cpu_seconds[index] = body
        seqs = self._sent.pop(batch_id)
        self._in_flight[index] -= len(seqs)
        self._done.update(zip(seqs, judged))

    def close(self) -> None:
        if self._local is not None:
            self._local.close()
            self._local = None
        for tasks, proc in zip(self._tasks, self._procs):
            tasks.cancel_join_thread()  # never block an exit on a queue nobody reads any more
            if proc.is_alive():
                tasks.put(None)  # an idle process exits on it; one still judging is stopped below
        for proc in self._procs:
            proc.join(timeout=2)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=10)
            if proc.is_alive():  # pragma: no cover - ignored SIGTERM
                proc.kill()
                proc.join(timeout=5)
        for q in [*self._tasks, *([self._results] if self._results is not None else [])]:
            q.cancel_join_thread()
            q.close()
        self._procs, self._tasks, self._results = [], [], None
