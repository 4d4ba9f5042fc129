"""The CPU-time budget of one event: how much of a core judging it may take before it is stopped.

Where it is enforced: in the main thread of a process (the worker's judge process, `stream-guard check`) an
interval timer on the process's CPU time (ITIMER_PROF: user + system) delivers SIGPROF when the budget is
spent, and the handler raises OverBudget wherever the work is: any Python code, and C code that checks for
signals (the `re` matcher does, so a regex that backtracks is stopped too). C code that never checks (a long
call inside a native library) runs on until it returns; the worker bounds that with a wall-clock limit on its
judge process, which it kills and replaces (engine/pool.py, `wall_limit_s` below).

Anywhere else (another thread: signals only reach the main thread) the budget is measured, not enforced: the
event runs to its end and is then failed as over budget, so the contract (over budget: a timeout, never a
verdict) holds, but the time is spent.

Scopes do not nest: inside an active scope of the same thread, another one only measures.
"""

from __future__ import annotations

import contextlib
import gc
import signal
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import Iterator

from stream_guard.text.ner import loading_model, model_load_cpu_s

# A judge process whose batch takes longer than this many times the batch's CPU budget in wall time is
# taken to be stuck in native code (the CPU timer cannot interrupt that) and is replaced. Wall time runs
# ahead of CPU time on a busy machine: 2 cores shared by the broker, the worker and its judge can give the
# judge a third of a core, and a garbage collection or a page-in adds to that.
WALL_FACTOR = 4.0
# ...plus this, for everything that is not the events' own work: the pipe, unpickling, a cold cache.
WALL_SLACK_S = 2.0


class OverBudget(BaseException):
    """An event spent its CPU budget. A BaseException, like KeyboardInterrupt, so that the `except Exception`
    with which the core keeps one failing check from sinking an event cannot swallow it; for the same reason it
    stands outside the StreamGuardError tree (stream_guard/errors.py): it is caught where an event is judged and
    becomes that event's `timeout`, never a command's error."""

    def __init__(self, spent_ms: float, budget_ms: float) -> None:
        super().__init__(f"timeout: spent {spent_ms:.0f} ms of CPU, over the budget of {budget_ms:g} ms")
        self.spent_ms = spent_ms
        self.budget_ms = budget_ms

    def __reduce__(self) -> tuple[type["OverBudget"], tuple[float, float]]:
        return OverBudget, (self.spent_ms, self.budget_ms)


@dataclass
class _Scope:
    started: float
    budget_s: float
    loads_before: float  # model_load_cpu_s() when the scope opened: a model load is the process's, not the event's

    def spent(self) -> float:
        return time.process_time() - self.started - (model_load_cpu_s() - self.loads_before)


_active = threading.local()
_main_scope: _Scope | None = None
_installed = False


# An exception raised in a garbage-collector callback, a weakref callback or a finaliser (`__del__`) is printed
# as "ignored" and dropped, so the event would run on unstopped. Past the budget there, the stop waits a moment
# (_RETRY_S of CPU) until the event's own code runs again; and every stop arms the timer once more (_AGAIN_S),
# in case it still lands somewhere that swallows it. Caught as it should be, the scope's exit disarms that.
_RETRY_S = 0.001
_AGAIN_S = 0.01
_collecting = False


def _on_gc(phase: str, info: dict[str, int]) -> None:
    """First in gc.callbacks: a collection's weakref callbacks and finalisers run while this says so."""
    global _collecting
    _collecting = phase == "start"


def _cannot_raise_in(frame: FrameType | None) -> bool:
    if _collecting or loading_model():  # a model load runs to its end, even when the event was over before it
        return True
    callbacks = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    while frame is not None:  # the other gc callbacks (after ours has seen "stop"), and finalisers
        if frame.f_code in callbacks or frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _on_sigprof(signum: int, frame: FrameType | None) -> None:
    scope = _main_scope
    if scope is None:  # a timer that fired as its scope closed: nothing to stop any more
        return
    spent = scope.spent()
    if spent < scope.budget_s:  # the timer runs on the kernel's tick accounting and can fire a tick or two
        signal.setitimer(signal.ITIMER_PROF, max(scope.budget_s - spent, 0.001))  # early: wait the rest
        return
    if _cannot_raise_in(frame):
        signal.setitimer(signal.ITIMER_PROF, _RETRY_S)
        return
    signal.setitimer(signal.ITIMER_PROF, _AGAIN_S)
    raise OverBudget(spent * 1000.0, scope.budget_s * 1000.0)


# Ctrl-C has the same problem: Python's default handler raises KeyboardInterrupt wherever the main thread is, and
# in a collection's callbacks or a finaliser it is printed as "ignored" and lost (a backtest interrupted there ran
# to its end and exited 0). Where it cannot be raised, it is raised again a moment later (_RETRY_S of wall time:
# the interrupt is the user's, not the event's) from a one-shot SIGALRM, whose earlier handler is then restored.
_alarm_before: object = None


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _alarm_before
    if not _cannot_raise_in(frame):
        raise KeyboardInterrupt
    if _alarm_before is None:
        _alarm_before = signal.signal(signal.SIGALRM, _on_sigalrm)
    signal.setitimer(signal.ITIMER_REAL, _RETRY_S)


def _on_sigalrm(signum: int, frame: FrameType | None) -> None:
    global _alarm_before
    if _cannot_raise_in(frame):
        signal.setitimer(signal.ITIMER_REAL, _RETRY_S)
        return
    signal.signal(signal.SIGALRM, _alarm_before)  # type: ignore[arg-type]
    _alarm_before = None
    raise KeyboardInterrupt


def _install() -> None:
    """Our handlers for good, never restored: SIGPROF's default action kills the process, and a signal can
    still be on its way when a scope closes. SIGINT only where Python's default handler is in place (a judge
    process ignores it, an application may have its own)."""
    global _installed
    if not _installed:
        signal.signal(signal.SIGPROF, _on_sigprof)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)
        gc.callbacks.insert(0, _on_gc)
        _installed = True


@contextlib.contextmanager
def _enforced(budget_s: float) -> Iterator[None]:
    global _main_scope
    _install()
    _main_scope = _Scope(time.process_time(), budget_s, model_load_cpu_s())
    signal.setitimer(signal.ITIMER_PROF, budget_s)
    try:
        yield
    finally:
        _main_scope = None  # first: a signal still on its way finds no scope and does nothing
        signal.setitimer(signal.ITIMER_PROF, 0)


@contextlib.contextmanager
def _measured(budget_s: float) -> Iterator[None]:
    started, loads_before = time.thread_time(), model_load_cpu_s()
    _active.scope = True
    try:
        yield
    finally:
        _active.scope = False
    spent = time.thread_time() - started - (model_load_cpu_s() - loads_before)
    if spent > budget_s:
        raise OverBudget(spent * 1000.0, budget_s * 1000.0)


@dataclass(frozen=True)
class CpuBudget:
    """`budget_ms` of CPU per event; `limit(n)` is a scope for work on n events at once."""

    budget_ms: float

    def limit(self, events: int = 1) -> contextlib.AbstractContextManager[None]:
        budget_s = max(1, events) * self.budget_ms / 1000.0
        if threading.current_thread() is threading.main_thread():
            return _enforced(budget_s) if _main_scope is None else contextlib.nullcontext()
        return _measured(budget_s) if not getattr(_active, "scope", False) else contextlib.nullcontext()

    def wall_limit_s(self, events: int) -> float:
        """How long (wall clock) a judge may take over `events` events before it counts as stuck."""
        return WALL_FACTOR * max(1, events) * self.budget_ms / 1000.0 + WALL_SLACK_S
