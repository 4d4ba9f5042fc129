"""The one pool of judge processes, for `check --jobs N`, `backtest`, `calibrate` and the streaming worker.

One way to start a judge (spawn, load the model and warm it, say ready), one way to call it (a batch of
payloads and their questions' drift histories in, bytes; a JudgedBatch out), one wall-clock limit per call,
and one death policy: when a process dies (killed, out of memory, a native crash) or runs past its limit
(native code the CPU timer of budget.py cannot interrupt), it is killed and replaced, and its batch is judged
again one event at a time, each with its own limit, so that only the event that kills or hangs a process
fails, as an error item (stage `judge` or `timeout`) that `check` prints and the worker dead-letters.

Two front-ends over that core:

- `Pool.judge(items)`: an iterator of (tag, Judged) in input order, over `processes` children (or this
  process, with processes=0). Drift history lives here, in the parent (memory, or SQLite with --drift-db), and
  goes out with each batch; a question's events always go to the same child (question affinity), which has at
  most one batch in flight, so each event sees exactly the history the ones before it left. An answer to no
  question joins no history (pipeline.py) and goes wherever there is room.
- `await Pool.judge_batch(payloads, histories, now_ms, claims, slot=i)`: one batch at a time on child i (the
  worker has one child; engine/dispatch.py spreads the HTTP service's requests over several); the event loop
  writes and watches the pipe itself (a ProcessPoolExecutor's feeder thread and result thread fight a busy
  loop for the GIL: a batch of three took ~15 ms through one, against ~2.5 ms of checks). `await
  Pool.run_in(i, fn, *args)` runs other work with the child's Guard the same way (the sentence checks of a
  streamed answer, engine/incremental.py).

Children are forked by a fork server (START_METHOD: never forked from the parent itself, which may run threads,
as Faust's consumer does): a clean process, started with the first judge, that imports the core (PRELOAD) and,
when the pool's NER may use spaCy, imports spaCy and loads its model once, so that every judge it forks (a
replacement for one that died included) finds them loaded and only builds its Guard (bench/cpu_profile.py
measures what each costs). Judges ignore Ctrl-C (the parent decides what an
interrupt means), stay alive across batches (start-up is paid once per process, not per batch) and die with
the fork server, which dies with the thread that started it (engine/judge_server.py). The server stops when
the last pool that used it closes, and the parent waits for it: the judges are the server's children and the
server is the parent's, so the parent's CPU accounting (`time stream-guard check -j 2`, wait4) counts them.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable, Generator, Generic, Iterable, Iterator, Mapping, Sequence, TypeVar

import orjson

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.budget import CpuBudget, OverBudget
from stream_guard.collector import settle_warm_heap
from stream_guard.engine.history import HistoryStore, MemoryHistory, SQLiteHistory
from stream_guard.engine.judging import Judged, JudgedBatch, dump_history, failed_batch, judge_events, judge_payloads, \
    load_history
from stream_guard.engine.pipeline import Guard
from stream_guard.errors import InternalError
from stream_guard.logs import use_json_logs
from stream_guard.text.ner import SPACY_AVAILABLE, make_recognizer
from stream_guard.text.questions import address
from stream_guard.wire.events import parse_event

T = TypeVar("T")
log = logging.getLogger(__name__)

# How judge processes start: the one place to choose. forkserver and spawn are safe whatever the parent runs
# (Faust's consumer thread, an event loop); forkserver shares the imports below among all judge processes.
START_METHOD = "forkserver"
# What the fork server imports before forking anything: its own start-up, which ties its life to its parent's,
# imports the whole core and loads the spaCy model named in SERVER_MODEL_ENV (set while the server starts, when
# the pool's NER may use spaCy), so that its judges are forked with the model loaded.
PRELOAD = ("stream_guard.engine.judge_server",)
SERVER_MODEL_ENV = "STREAM_GUARD_FORK_SERVER_MODEL"
# Pools with judge processes started and not closed yet: the fork server stops with the last (guarded by a lock:
# the worker closes its pool from another thread than the one that opened it).
_open_pools = 0
_open_lock = threading.Lock()
# How long a judge process may take to load its model and say ready.
START_TIMEOUT_S = 300.0
# The quality score's latency part in replays (check, backtest, calibrate): within budget, whatever this
# machine measures, so no decision depends on how busy it is and any number of processes gives the same routing.
REPLAY_QUALITY_LATENCY_MS = 0.0
BATCH_SIZE = 16
# Events read ahead of the oldest one not yet written out, per process (bounds the reorder buffer).
WINDOW_PER_JOB = 256
# Judging in several processes costs start-ups before anything is judged (the fork server's imports and spaCy
# model, about 2 s of CPU on a busy machine, then each judge's Guard and warm-up, a few hundredths of a second),
# so a file gets one process per this many events.
EVENTS_PER_PROCESS = 1000

# The answer names someone its context does not, so that warming up runs (and so loads) the NER model, which
# is otherwise loaded only when an answer first needs it (text/ner.py).
_WARMUP = {
    "event_id": "warmup",
    "question": "How long is the refund window?",
    "context": ["Refunds are accepted within 14 days of purchase. Contact Dr. Ada Park at Acme Corp."],
    "answer": "You can request a refund within 14 days of purchase, says Maria Lopez.",
}


class JudgeProcessDied(InternalError):
    """A judge process could not be started or replaced (it exited, or never said ready)."""


class CallFailed(InternalError):
    """A call of `Pool.run_in` failed: it raised, overran its budget (`stage` timeout), or its process died."""

    def __init__(self, reason: str, stage: str) -> None:
        super().__init__(reason)
        self.reason, self.stage = reason, stage


class _Failed(Exception):
    """A call whose process died (`stage` judge) or ran past its wall-clock limit (`timeout`); the process is
    gone when this is raised."""

    def __init__(self, reason: str, stage: str, cost_ms: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.stage, self.cost_ms = reason, stage, cost_ms


# --- sizing ---------------------------------------------------------------------------------------------------


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
    """The question hash a payload's event will be judged under, or None when it has no question or does not
    parse: such payloads share no state."""
    return address(json_object(payload))[1]


def _event_id(payload: bytes) -> str | None:
    """The event id of a payload the judge could not answer for, so that its error names it."""
    value = json_object(payload) if isinstance(payload, bytes) else None
    found = value.get("event_id", value.get("id")) if value is not None else None
    return str(found) if isinstance(found, (str, int)) and not isinstance(found, bool) else None


# --- one judge process ----------------------------------------------------------------------------------------


def die_with_parent() -> None:
    """In a child process (or as a subprocess's preexec_fn): on Linux, SIGTERM it when the thread that started
    it dies, so a killed worker, test run or CLI never leaves a judge, broker or worker behind."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def cpu_seconds(pid: int, thread: int | None = None) -> float | None:
    """CPU time (user + system) process `pid` (or only its thread `thread`) has used so far, from /proc; None
    where that is not there."""
    try:
        with open(f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def warm_up(guard: Guard) -> float:
    """Judge one event before taking traffic: loading spaCy and compiling patterns takes seconds, and a first
    batch that slow would show as a latency spike. A judge process is started to judge many events (check
    gives one a thousand), so it loads the model at once rather than when the first answer needs it."""
    started = time.perf_counter()
    guard.evaluate_batch([parse_event(_WARMUP)], {})
    return time.perf_counter() - started


# Called with the child's Guard before it says ready: a module-level function (it is pickled by reference).
# For tests and benchmarks that need a judge that misbehaves on cue.
Setup = Callable[[Guard], None]


@dataclass(frozen=True)
class Options:
    """How each judge process is built: the one place its NLP model is loaded (Guard) and warmed."""

    config: DetectorConfig
    quality_latency_ms: float | None = None
    setup: Setup | None = None
    # None: leave the child's logging alone (its warnings go to stderr); "text" / "json": the worker's format,
    # warnings and worse, on stdout as the worker's own lines are.
    log_format: str | None = None


def _child_main(conn: Connection, options: Options) -> None:
    """A judge process: build the Guard, say ready, then answer one pickled batch at a time."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if options.log_format == "json":
        use_json_logs(logging.WARNING)
    elif options.log_format is not None:
        logging.basicConfig(level=logging.WARNING, stream=sys.stdout,
                            format="[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s")
    guard = Guard(options.config, quality_latency_ms=options.quality_latency_ms)
    warm_up(guard)
    settle_warm_heap()  # the model and the warm-up's caches: out of the collector's walks (stream_guard/collector.py)
    if options.setup is not None:
        options.setup(guard)
    budget = CpuBudget(options.config.event_budget_ms)
    conn.send_bytes(pickle.dumps(str(getattr(guard.detector, "ner_backend", "?"))))
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):  # the parent closed the pipe or died: nothing left to do
            return
        payloads, histories, now_ms, claims, call = pickle.loads(request)
        result: JudgedBatch | Called
        if call is not None:
            result = _run_call(guard, budget, call)
        else:
            try:
                result = judge_payloads(guard, payloads, histories, now_ms, claims, budget=budget)
            except Exception as exc:  # judge_payloads guards each event; this is a bug around it
                log.exception("judge process failed on a batch of %d", len(payloads))
                result = failed_batch(len(payloads), f"{type(exc).__name__}: {exc}")
        conn.send_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


# A function a judge process runs with its Guard (`fn(guard, *args)`), and its arguments: module-level, as it is
# pickled by reference. For work other than judging whole events (engine/incremental.py's sentence checks).
Call = tuple[Callable[..., Any], tuple[Any, ...]]


@dataclass(frozen=True)
class Called:
    """What a call returned in the judge process, or why it raised (its CPU budget is one event's)."""

    value: Any = None
    error: str | None = None


def _run_call(guard: Guard, budget: CpuBudget, call: Call) -> Called:
    fn, args = call
    try:
        with budget.limit(1):
            return Called(fn(guard, *args))
    except OverBudget as exc:
        return Called(error=str(exc))
    except Exception as exc:  # the call's own failure, reported to its caller; the process stays
        log.exception("a call in the judge process failed")
        return Called(error=f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Request:
    """One call: payloads, their questions' stored histories (bytes), the time, the keys they were read under."""

    payloads: list[bytes]
    histories: dict[str, bytes | None]
    now_ms: int = 0
    claims: list[str | None] | None = None
    # Set: not a batch to judge but this function to run (Pool.run_in); payloads and histories are empty.
    call: Call | None = None


class JudgeProcess:
    """One spawned judge process and the parent's end of its pipe. Start it from the thread that will outlive
    it: the process dies with its parent, and on Linux "parent" means the thread that started it."""

    def __init__(self, options: Options) -> None:
        ctx = multiprocessing.get_context(START_METHOD)
        if START_METHOD == "forkserver":  # read when the server starts, ignored while it runs
            ctx.set_forkserver_preload(list(PRELOAD))
        self.conn, theirs = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_child_main, args=(theirs, options), name="stream-guard-judge", daemon=True)
        with _server_model(options.config):
            self.process.start()
        theirs.close()
        self.ner_backend: str | None = None  # set when it says ready
        self.call_started: float | None = None  # monotonic, while a call is in flight
        self.call_limit_s = 0.0
        self._cpu_before: float | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> "JudgeProcess":
        """Block until the process has loaded its model (seconds, with spaCy)."""
        if not self.conn.poll(timeout_s):
            self.close(0.0)
            raise JudgeProcessDied(f"judge process not ready after {timeout_s:.0f}s")
        try:
            self.ner_backend = str(pickle.loads(self.conn.recv_bytes()))
        except (EOFError, OSError):
            raise JudgeProcessDied(f"judge process exited with code {self.process.exitcode} while starting") from None
        return self

    def send(self, request: Request, limit_s: float) -> None:
        """Start a call. A blocking write, but short: the process is idle, reading, whenever a call starts."""
        self.call_started, self.call_limit_s = time.monotonic(), limit_s
        self._cpu_before = cpu_seconds(self.process.pid) if self.process.pid else None
        try:
            self.conn.send_bytes(pickle.dumps((request.payloads, request.histories, request.now_ms, request.claims,
                                               request.call), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            raise self._died() from None

    def receive(self) -> Any:
        """The call's answer (the pipe is readable: the process is writing it, or has died): a JudgedBatch, or
        for a Request with a `call`, what it Called."""
        try:
            result = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            raise self._died() from None
        self.call_started = None
        assert isinstance(result, (JudgedBatch, Called))
        return result

    def overdue(self, now: float) -> bool:
        return self.call_started is not None and now - self.call_started > self.call_limit_s

    def time_out(self) -> _Failed:
        """Kill the process for running past its call's limit; the failure to report for its events."""
        after = cpu_seconds(self.process.pid) if self.process.pid else None
        before = self._cpu_before
        cost_ms = (after - before) * 1000.0 if before is not None and after is not None else None
        self.close(0.0)
        return _Failed(f"timeout: no answer within {self.call_limit_s:.1f} s of wall-clock time"
                       + (f" ({cost_ms:.0f} ms of CPU)" if cost_ms is not None else "")
                       + "; the judge process was killed and replaced", "timeout", cost_ms)

    def _died(self) -> _Failed:
        self.close(0.0)
        return _Failed(f"the judge process died on this event (exit code {self.process.exitcode})", "judge")

    def close(self, grace_s: float = 5.0) -> None:
        """Close the pipe (an idle process exits on it) and kill the process if it is still there after
        `grace_s`."""
        self.conn.close()
        self.process.join(timeout=grace_s)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


@contextlib.contextmanager
def _server_model(config: DetectorConfig) -> Iterator[None]:
    """SERVER_MODEL_ENV names the spaCy model `config`'s NER may load, while a judge process starts (the fork
    server, started with the first judge, reads its environment then; later starts leave it as it is). A pool
    whose NER is regex, or that names another model than the server loaded, loads in its judges what they need."""
    if START_METHOD != "forkserver" or config.ner == "regex" or not SPACY_AVAILABLE:
        yield
        return
    with _server_env_lock:
        before = os.environ.get(SERVER_MODEL_ENV)
        os.environ[SERVER_MODEL_ENV] = config.spacy_model
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(SERVER_MODEL_ENV, None)
            else:
                os.environ[SERVER_MODEL_ENV] = before


_server_env_lock = threading.Lock()


def _pool_opened() -> None:
    global _open_pools
    with _open_lock:
        _open_pools += 1


def _pool_closed() -> None:
    """The last open pool closed: stop the fork server and wait for it, so that it and the judges it forked
    (and reaped) count in this process's CPU, and none outlives its use."""
    global _open_pools
    with _open_lock:
        _open_pools -= 1
        if _open_pools == 0 and START_METHOD == "forkserver":
            # The standard library's own way to stop its fork server (its tests use it); private, so guarded:
            # without it the server stops when this process exits, and its CPU goes uncounted.
            from multiprocessing import forkserver

            stop = getattr(getattr(forkserver, "_forkserver", None), "_stop", None)
            if callable(stop):
                stop()


# --- the death policy -------------------------------------------------------------------------------------------


Outcome = JudgedBatch | _Failed


def recovering(request: Request) -> Generator[Request, Outcome, JudgedBatch]:
    """The one death policy, however a front-end waits for its calls: yields the calls to make and receives
    their outcomes. First the batch; if its process failed, each event alone (on a fresh process), an event
    that fails a process again becoming an error item with the failure's stage and reason."""
    outcome = yield request
    if isinstance(outcome, JudgedBatch):
        return outcome
    log.error("judge process failed on a batch of %d (%s); judging its events one at a time",
              len(request.payloads), outcome.reason)
    histories = dict(request.histories)
    claims = request.claims if request.claims is not None else [None] * len(request.payloads)
    items: list[Judged] = []
    updated: dict[str, bytes] = {}
    for payload, claim in zip(request.payloads, claims):
        outcome = yield Request([payload], histories, request.now_ms, [claim] if request.claims is not None else None)
        if isinstance(outcome, _Failed):
            reason = outcome.reason if outcome.stage == "timeout" else "the judge process died on this event"
            outcome = failed_batch(1, reason, stage=outcome.stage, cost_ms=outcome.cost_ms, event_id=_event_id(payload))
        items.extend(outcome.items)
        histories.update(outcome.histories)
        updated.update(outcome.histories)
    return JudgedBatch(items, updated)


# --- the pool ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Busy:
    """The call a judge is in: since when (monotonic), over how many events, with what wall-clock limit."""

    since: float
    events: int
    limit_s: float


@dataclass
class _Slot(Generic[T]):
    """One child and what it is doing: the tags of the batch in flight, and the batch's death-policy state."""

    process: JudgeProcess | None
    tags: list[tuple[int, T]] = field(default_factory=list)
    policy: Generator[Request, Outcome, JudgedBatch] | None = None


class Pool:
    """`processes` judge processes (0: judge in this process) built from one Options.

        with Pool(config, processes=4) as pool:
            for tag, judged in pool.judge((n, line) for n, line in numbered_lines):
                ...
    """

    def __init__(self, config: DetectorConfig, jobs: int | None = None, *, processes: int | None = None,
                 drift_db: str | None = None, batch_size: int = BATCH_SIZE, setup: Setup | None = None,
                 log_format: str | None = None, affinity: bool = True,
                 quality_latency_ms: float | None = REPLAY_QUALITY_LATENCY_MS) -> None:
        """`jobs`: judges for the sync front-end (default one per core); one judges in this process. Or
        `processes`: that many judge processes whatever the front-end (the worker asks for one). `affinity`:
        a question's events go to one process, in order (what keeps drift exact); off, every batch goes to the
        least busy process (for inputs whose drift does not matter, or whose caller keeps it otherwise).

        Processes asked for by `processes` start at once (the worker's judge is warm before traffic comes);
        those of `jobs` start with the first event (`start`), so an empty input pays no start-up."""
        self.affinity = affinity
        self.config = config
        self.options = Options(config, quality_latency_ms, setup, log_format)
        self.budget = CpuBudget(config.event_budget_ms)
        self.batch_size = max(1, batch_size)
        lazy = processes is None
        if processes is None:
            jobs = max(1, jobs or default_jobs())
            processes = 0 if jobs == 1 else jobs
        self.processes = max(0, processes)
        self.jobs = max(1, self.processes)
        self.replaced = 0  # processes killed for running past a wall-clock limit, or found dead
        self._busy: dict[int, Busy] = {}  # the async front-end's calls in flight, by process
        # Drift history of the sync front-end; the worker passes its own, from its table, with each batch.
        self.store: HistoryStore = SQLiteHistory(drift_db) if drift_db else MemoryHistory()
        self._local: Guard | None = None
        self._slots: list[_Slot[Any]] = []
        self._started = False
        if self.processes == 0:
            self._local = Guard(config, quality_latency_ms=quality_latency_ms)
        else:
            self._slots = [_Slot(None) for _ in range(self.processes)]
            if not lazy:
                self.start()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def children(self) -> list[JudgeProcess]:
        return [slot.process for slot in self._slots if slot.process is not None]

    @property
    def pid(self) -> int | None:
        """The first judge process's id (the worker's one, for its CPU and memory metrics); None meanwhile."""
        children = self.children
        return children[0].pid if children else None

    @property
    def cpu_seconds(self) -> list[float]:
        """CPU seconds each judge process has used so far (is the split even?)."""
        return [cpu_seconds(child.pid) or 0.0 for child in self.children if child.pid]

    @property
    def ner_backend(self) -> str:
        """The recognizer judging (or, before any process has said ready, the one the configuration asks for)."""
        if self._local is not None:
            return str(self._local.detector.ner_backend)
        names = sorted({c.ner_backend for c in self.children if c.ner_backend})
        if names:
            return ", ".join(names)
        try:
            return make_recognizer(self.config.ner, self.config.spacy_model).name
        except Exception:  # noqa: BLE001 - spaCy asked for and missing: the processes would say so on start
            return "?"

    def start(self) -> "Pool":
        """Start the processes (once; they load their models side by side). Returns without waiting."""
        if not self._started and self._slots:
            self._started = True
            _pool_opened()
            for slot in self._slots:
                if slot.process is None:
                    slot.process = JudgeProcess(self.options)
        return self

    def wait_ready(self) -> "Pool":
        """Start the processes if they are not, and block until each has loaded its model (seconds with spaCy)."""
        self.start()
        for child in self.children:
            if child.ner_backend is None:
                child.wait_ready()
        return self

    def close(self) -> None:
        for slot in self._slots:
            if slot.process is not None:
                slot.process.close(grace_s=5.0)
                slot.process = None
        if self._started:
            self._started = False
            _pool_closed()
        self.store.close()

    def _replace(self, slot: _Slot[Any]) -> JudgeProcess:
        """A fresh process for a slot whose process failed (blocking: the sync front-end's)."""
        self.replaced += 1
        slot.process = JudgeProcess(self.options).wait_ready()
        return slot.process

    # --- the sync front-end: in input order, drift exact --------------------------------------------------------

    def judge(self, items: Iterable[tuple[T, bytes]]) -> Iterator[tuple[T, Judged]]:
        """(tag, Judged) for every (tag, payload), in input order."""
        if self._local is not None:
            yield from self._judge_here(self._local, items)
        else:
            yield from _Spread(self).run(items)

    def _judge_here(self, guard: Guard, items: Iterable[tuple[T, bytes]]) -> Iterator[tuple[T, Judged]]:
        tags: list[T] = []
        payloads: list[bytes] = []
        for tag, payload in items:
            tags.append(tag)
            payloads.append(payload)
            if len(payloads) >= self.batch_size:
                yield from zip(tags, self._judge_local(guard, payloads))
                tags, payloads = [], []
        if payloads:
            yield from zip(tags, self._judge_local(guard, payloads))

    def _judge_local(self, guard: Guard, payloads: Sequence[bytes]) -> list[Judged]:
        """In this process: histories stay lists (no bytes round trip), the CPU budget is enforced here."""
        try:
            items, updated = judge_events(guard, payloads, self.store.get, budget=self.budget)
        except Exception as exc:  # judge_events keeps each event's failure to itself; this is a bug around it
            if len(payloads) > 1:
                return [item for one in payloads for item in self._judge_local(guard, [one])]
            log.exception("the judge failed outside its per-event guard")
            return [Judged(error_stage="judge", error_field="$",
                           error_reason=f"the judge failed: {type(exc).__name__}: {exc}")]
        for key, history in updated.items():
            self.store.put(key, history, self.config.window_size)
        return items

    def request(self, payloads: Sequence[bytes], keys: Sequence[str | None]) -> Request:
        """A call for the sync front-end: the stored histories of the batch's questions go with it."""
        return Request(list(payloads), {key: dump_history(self.store.get(key)) for key in set(keys) if key})

    def remember(self, batch: JudgedBatch) -> None:
        for key, raw in batch.histories.items():
            self.store.put(key, load_history(raw), self.config.window_size)

    # --- the async front-end: the worker's, one batch at a time --------------------------------------------------

    @property
    def busy(self) -> Busy | None:
        """The oldest call in flight on the async front-end, or None."""
        return min(self._busy.values(), key=lambda b: b.since, default=None)

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

    async def judge_batch(self, payloads: Sequence[bytes], histories: Mapping[str, bytes | None], now_ms: int,
                          claimed_keys: Sequence[str | None] | None = None, *, slot: int = 0) -> JudgedBatch:
        """One batch on process `slot` (see judging.judge_payloads for the arguments). The caller keeps at most
        one call in flight per process (the worker has one process; engine/dispatch.py spreads over several)."""
        self._busy[slot] = Busy(time.monotonic(), len(payloads), self.budget.wall_limit_s(len(payloads)))
        try:
            policy = recovering(Request(list(payloads), dict(histories), now_ms,
                                        list(claimed_keys) if claimed_keys is not None else None))
            call = next(policy)
            while True:
                try:
                    outcome: Outcome = await self._call_async(call, slot)
                except _Failed as failed:
                    outcome = failed
                try:
                    call = policy.send(outcome)
                except StopIteration as done:
                    return done.value
        finally:
            self._busy.pop(slot, None)

    async def run_in(self, slot: int, fn: Callable[..., T], *args: Any) -> T:
        """`fn(guard, *args)` in process `slot`, under one event's CPU budget and wall-clock limit; what it
        returns must pickle. Raises CallFailed when it raised, or when its process died or ran past the limit
        (the process is then replaced for the next call: there is no retry, the caller decides)."""
        self._busy[slot] = Busy(time.monotonic(), 1, self.budget.wall_limit_s(1))
        try:
            outcome = await self._call_async(Request([], {}, call=(fn, args)), slot)
        except _Failed as failed:
            raise CallFailed(failed.reason, failed.stage) from None
        finally:
            self._busy.pop(slot, None)
        if outcome.error is not None:
            raise CallFailed(outcome.error, "timeout" if outcome.error.startswith("timeout") else "judge")
        value: T = outcome.value
        return value

    def sentinel(self, index: int) -> int | None:
        """A file descriptor that becomes readable when process `index` exits (None: it has none now), for a
        caller that replaces idle processes as they die (engine/dispatch.py) rather than on their next call."""
        process = self._slots[index].process
        return process.process.sentinel if process is not None else None

    async def revive(self, index: int) -> None:
        """Replace process `index`, idle and gone (an out-of-memory kill, a crash), with a loaded one, so that
        no request waits for the start-up. A process that cannot start leaves the slot empty: its next call
        starts one."""
        import asyncio  # loaded by the loop running this; not at module level: `check` and the judges never need it

        slot = self._slots[index]
        if slot.process is not None:
            slot.process.close(0.0)
        self.replaced += 1
        process = slot.process = JudgeProcess(self.options)  # on the loop's thread: it dies with this thread
        try:
            await asyncio.get_running_loop().run_in_executor(None, process.wait_ready)
        except JudgeProcessDied:
            log.exception("judge process %d could not be replaced", index)
            slot.process = None

    async def _call_async(self, request: Request, index: int = 0) -> Any:
        import asyncio  # loaded by the loop running this (see revive)

        slot = self._slots[index]
        self.start()  # on the loop's thread, if not started yet: the processes die with this thread
        if slot.process is None:
            self.replaced += 1
            process = JudgeProcess(self.options)  # on the loop's thread: the process dies with this thread
            slot.process = process
            # Waited for from a thread: loading the model takes seconds, and the loop has acks to wait for.
            await asyncio.get_running_loop().run_in_executor(None, process.wait_ready)
        process = slot.process
        if process.ner_backend is None:
            await asyncio.get_running_loop().run_in_executor(None, process.wait_ready)
        limit = self.budget.wall_limit_s(len(request.payloads))
        try:
            process.send(request, limit)
        except _Failed:
            slot.process = None
            raise
        loop = asyncio.get_running_loop()
        readable = loop.create_future()
        fd = process.conn.fileno()
        loop.add_reader(fd, lambda: readable.done() or readable.set_result(None))
        try:
            await asyncio.wait_for(readable, limit)
        except asyncio.TimeoutError:
            slot.process = None
            raise process.time_out() from None
        except asyncio.CancelledError:
            # Abandoned half way: its answer would be read as the next call's. The next call gets a new process.
            slot.process = None
            process.close(0.0)
            raise
        finally:
            loop.remove_reader(fd)
        try:
            return process.receive()
        except _Failed:
            slot.process = None
            raise


class _Spread(Generic[T]):
    """The sync front-end over several processes: batches per process with question affinity, at most one in
    flight per process (so the histories it takes along are current), outputs reordered to input order."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.slots: list[_Slot[T]] = pool._slots  # type: ignore[assignment]
        self.owner: dict[str, int] = {}
        self.pending: list[tuple[list[tuple[int, T]], list[bytes], list[str | None]]] = [
            ([], [], []) for _ in self.slots]
        self.done: dict[int, tuple[T, Judged]] = {}

    def run(self, items: Iterable[tuple[T, bytes]]) -> Iterator[tuple[T, Judged]]:
        seq = next_out = 0
        window = WINDOW_PER_JOB * len(self.slots)
        for tag, payload in items:
            self.pool.start()  # with the first event: an empty input starts no process
            key = shard_key(payload)
            index = self.owner.get(key) if key is not None and self.pool.affinity else None
            if index is None:
                index = min(range(len(self.slots)), key=self._load)
                if key is not None and self.pool.affinity:
                    self.owner[key] = index
            tags, payloads, keys = self.pending[index]
            tags.append((seq, tag))
            payloads.append(payload)
            keys.append(key)
            seq += 1
            if len(payloads) >= self.pool.batch_size:
                while self.slots[index].policy is not None:
                    self._receive()
                self._start(index)
            while seq - next_out >= window:
                self._flush()  # the oldest event may wait in a batch not sent yet
                self._receive()
                next_out = yield from self._ready(next_out)
            next_out = yield from self._ready(next_out)
        while next_out < seq:
            self._flush()
            if any(slot.policy is not None for slot in self.slots):
                self._receive()
            next_out = yield from self._ready(next_out)

    def _load(self, index: int) -> int:
        slot = self.slots[index]
        return len(slot.tags) + len(self.pending[index][1])

    def _ready(self, next_out: int) -> Generator[tuple[T, Judged], None, int]:
        while next_out in self.done:
            yield self.done.pop(next_out)
            next_out += 1
        return next_out

    def _flush(self) -> None:
        """Send every pending batch whose process is free."""
        for index, (_, payloads, _) in enumerate(self.pending):
            if payloads and self.slots[index].policy is None:
                self._start(index)

    def _start(self, index: int) -> None:
        tags, payloads, keys = self.pending[index]
        self.pending[index] = ([], [], [])
        slot = self.slots[index]
        slot.tags = tags
        slot.policy = recovering(self.pool.request(payloads, keys))
        self._call(slot, next(slot.policy))

    def _call(self, slot: _Slot[T], request: Request) -> None:
        process = slot.process if slot.process is not None else self.pool._replace(slot)
        if process.ner_backend is None:
            process.wait_ready()
        try:
            process.send(request, self.pool.budget.wall_limit_s(len(request.payloads)))
        except _Failed as failed:
            slot.process = None
            self._advance(slot, failed)

    def _receive(self) -> None:
        """Wait for one process to answer (or to die, or to run past its limit) and move its batch on."""
        busy = [slot for slot in self.slots if slot.policy is not None and slot.process is not None]
        if not busy:
            return
        now = time.monotonic()
        deadline = min(slot.process.call_started + slot.process.call_limit_s for slot in busy  # type: ignore[union-attr]
                       if slot.process.call_started is not None)  # type: ignore[union-attr]
        ready = wait([slot.process.conn for slot in busy], timeout=max(0.0, deadline - now))  # type: ignore[union-attr]
        for slot in busy:
            process = slot.process
            assert process is not None
            if process.conn in ready:
                try:
                    outcome: Outcome = process.receive()
                except _Failed as failed:
                    slot.process, outcome = None, failed
                self._advance(slot, outcome)
            elif process.overdue(time.monotonic()):
                slot.process = None
                self._advance(slot, process.time_out())

    def _advance(self, slot: _Slot[T], outcome: Outcome) -> None:
        assert slot.policy is not None
        try:
            request = slot.policy.send(outcome)
        except StopIteration as finished:
            batch: JudgedBatch = finished.value
            self.pool.remember(batch)
            for (seq, tag), judged in zip(slot.tags, batch.items):
                self.done[seq] = (tag, judged)
            slot.policy, slot.tags = None, []
            return
        self._call(slot, request)
