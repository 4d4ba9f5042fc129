"""The fault figures of deploy/OPERATIONS.md ("Faults"), from the tests that provoke each fault.

- broker loss: an idle and a busy worker whose broker is killed (seconds to /readyz 503 and /healthz 503, SIGTERM
  to exit), and a broker cut off mid-stream then restored (seconds to ready again, events lost);
- many tenants: /healthz polled while every page of the all-tenants view of 10,000 tenants is served (median and
  worst latency, largest page);
- configuration: bad values refused / tried, counted from the boundary table the tests run.

The figures are wall-clock seconds on the embedded broker, so they depend on how loaded the machine is: the load
average is stored beside them.

    .venv/bin/python bench/faults.py
    .venv/bin/python bench/faults.py --tenants 100000   # the many-tenants figure alone, at that scale (above
                                                        # 10,000 with SLOW_BROKER_ENV, see there)
    .venv/bin/python bench/faults.py --tenants 100000 --trace /tmp/stalls.log   # and what held the worker's loop

--trace FILE (with --tenants) runs the worker with a bench-only `sitecustomize` on its PYTHONPATH (nowhere in the
package) that logs to FILE, with wall-clock times, every collection of the oldest generation or of 20 ms or more
and every event-loop step of 50 ms or more with the coroutine chain it ran; the result then lists, for each of the
slowest /healthz polls, the lines logged from 1 s before it started to 1 s after it ended.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import machine, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TESTS = ["tests/agents/test_broker_loss.py", "tests/agents/test_dashboard.py"]
NUMBER = r"([0-9.]+)"
FIGURES = {
    "idle_worker": (rf"idle worker, broker killed: /readyz 503 after {NUMBER} s, /healthz 503 after {NUMBER} s, "
                    rf"SIGTERM to exit {NUMBER} s", ("to_readyz_503_s", "to_healthz_503_s", "sigterm_to_exit_s")),
    "busy_worker": (rf"busy worker, broker killed: /readyz 503 after {NUMBER} s, SIGTERM to exit {NUMBER} s",
                    ("to_readyz_503_s", "sigterm_to_exit_s")),
    "broker_back": (rf"mid-stream: ready again {NUMBER} s after it came back, {NUMBER} of {NUMBER} events lost",
                    ("ready_again_s", "events_lost", "events")),
    "tenants_10000": (rf"\b10000 tenants: pages of \d+ rows, {NUMBER} bytes at most; /healthz median {NUMBER} ms, worst {NUMBER} ms "
                      rf"over {NUMBER} polls", ("largest_page_bytes", "healthz_median_ms", "healthz_worst_ms", "polls")),
}


SCALE_TEST = "tests/agents/test_dashboard.py::test_the_all_tenants_view_of_10000_tenants_comes_a_page_at_a_time_while_healthz_keeps_answering"
# The scale test's worker above 10,000 tenants, on the embedded broker of a loaded 2-core machine. While the records
# are applied, every table write queues a changelog record, and Faust's offset commit first flushes its producer
# buffer, whose flush returns only once the buffer is empty or no message has left it for 0.1 s
# (faust/transport/consumer.py `_commit_offsets`, producer.py `flush_atmost`): under a steady stream of writes it
# chases them, so one commit lasts about as long as the records take to apply (5,000 tenants: a 100 s commit in a
# 142 s apply; 100,000: commits of 57-255 s). The event loop is not blocked meanwhile (its timers ran late by under
# a second). At 50,378 tenants and a load average of 14-19, with the tests' 6 s session timeout, the worker's
# membership expired (UnknownMemberIdError on the next commit) and the rebalance never ended. A 120 s
# session (heartbeats every 10 s) rides that out, and a commit every 10 s instead of 0.5 s asks the slow broker
# less. What is measured, /healthz while the view is served, comes after the records are applied (none is left to
# apply then): these settings change nothing there.
SLOW_BROKER_ENV = {"STREAM_GUARD_SESSION_TIMEOUT_S": "120", "STREAM_GUARD_HEARTBEAT_INTERVAL_S": "10",
                   "STREAM_GUARD_COMMIT_INTERVAL_S": "10"}


# The stall tracer of --trace, loaded in the worker only (its command line names `worker`). A step's CPU time
# beside its wall time tells a step that worked from one that waited for a core; gc_cpu is the part of it spent
# collecting.
STALL_TRACER = """
import os, sys
_path = os.environ.get("SG_STALL_TRACE")
if _path and "worker" in sys.argv:
    import asyncio.events, gc, time
    _out = open(_path, "a", buffering=1)
    _gc = {"wall": 0.0, "cpu": 0.0, "cpu_total": 0.0}

    def _on_gc(phase, info):
        if phase == "start":
            _gc["wall"], _gc["cpu"] = time.perf_counter(), time.thread_time()
            return
        wall, cpu = time.perf_counter() - _gc["wall"], time.thread_time() - _gc["cpu"]
        _gc["cpu_total"] += cpu
        if wall > 0.02 or info["generation"] == 2:
            _out.write(f"{time.time():.3f} GC gen={info['generation']} wall={wall * 1000:.1f}ms "
                       f"cpu={cpu * 1000:.1f}ms collected={info['collected']}\\n")

    gc.callbacks.append(_on_gc)
    _run = asyncio.events.Handle._run

    def _timed_run(self):
        gc0, wall0, cpu0 = _gc["cpu_total"], time.perf_counter(), time.thread_time()
        try:
            return _run(self)
        finally:
            wall = time.perf_counter() - wall0
            if wall > 0.05:
                what = getattr(self._callback, "__self__", self._callback)
                chain, coro = [], getattr(what, "get_coro", lambda: None)()
                while coro is not None and len(chain) < 8:
                    chain.append(getattr(coro, "__qualname__", type(coro).__name__))
                    coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
                _out.write(f"{time.time():.3f} SLOW wall={wall * 1000:.0f}ms "
                           f"cpu={(time.thread_time() - cpu0) * 1000:.0f}ms "
                           f"gc_cpu={(_gc['cpu_total'] - gc0) * 1000:.0f}ms {' > '.join(chain) or repr(what)[:200]}\\n")

    asyncio.events.Handle._run = _timed_run
"""


def run_tests(tests: list[str], env: dict[str, str] | None = None) -> tuple[str, int]:
    done = subprocess.run([sys.executable, "-m", "pytest", *tests, "-q", "-s", "-p", "no:cacheprovider"], cwd=REPO,
                          capture_output=True, text=True, check=False, env={**os.environ, **(env or {})})
    return done.stdout, done.returncode


def many_tenants(tenants: int, trace: Path | None = None) -> dict[str, Any]:
    """The scale test alone at `tenants` tenants: time to apply their records, then /healthz while every page of
    the all-tenants view is served (with `trace`, the worker's loop traced into that file)."""
    worker_env = SLOW_BROKER_ENV if tenants > 10_000 else {}
    env = {"SG_SCALE_TENANTS": str(tenants),
           "SG_SCALE_WORKER_ENV": " ".join(f"{k}={v}" for k, v in worker_env.items())}
    with tempfile.TemporaryDirectory() as hook:
        if trace:
            (Path(hook) / "sitecustomize.py").write_text(STALL_TRACER)
            trace.write_text("")
            env.update(SG_STALL_TRACE=str(trace.resolve()),
                       PYTHONPATH=os.pathsep.join(filter(None, [hook, os.environ.get("PYTHONPATH")])))
        output, code = run_tests(["-m", "long", SCALE_TEST], env)
    applied = re.search(rf"{tenants + 1} tenants' records applied in {NUMBER} s", output)
    pattern, fields = FIGURES["tenants_10000"]
    found = re.search(pattern.replace("10000", str(tenants), 1), output)
    slowest = re.search(r"slowest /healthz polls \(started at, ms\): (.*)", output)
    slowest_polls = [[float(v) for v in pair.split()] for pair in slowest.group(1).split(", ")] if slowest else None
    return {"tests_exit_code": code, "tenants": tenants, "worker_env": worker_env,
            "applied_s": float(applied.group(1)) if applied else None,
            "figures": {f: float(v) for f, v in zip(fields, found.groups())} if found else None,
            "slowest_polls": slowest_polls,  # [started at (epoch s), ms], to match the worker's log
            "output_tail": output[-2000:] if not found else None,
            "trace_around_slowest": (around(trace, slowest_polls) if trace and trace.exists() and slowest_polls
                                     else None)}


def around(trace: Path, polls: list[list[float]]) -> dict[str, list[str]]:
    """The trace's lines from 1 s before each poll started to 1 s after it ended, by poll."""
    lines = [(float(line.split(" ", 1)[0]), line.rstrip()) for line in trace.read_text().splitlines() if line]
    return {f"{start:.3f} {ms}": [line for at, line in lines if start - 1 <= at <= start + ms / 1000 + 1]
            for start, ms in polls}


def parse(output: str) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name, (pattern, fields) in FIGURES.items():
        found = re.search(pattern, output)
        figures[name] = {f: float(v) for f, v in zip(fields, found.groups())} if found else None
    return figures


def configuration() -> dict[str, int]:
    """Bad values refused naming their key / tried, over the boundary table (file and environment)."""
    sys.path.insert(0, str(REPO / "tests/stream_guard/config"))
    import test_boundaries as table  # the table the tests run, not a copy of it

    tried = refused = accepted = 0
    for path in table.ROWS:
        good, bad, companions = table.row(path)
        env = {table.variable(k): table.as_text(v) for k, v in companions.items()}
        for value, ok in [(v, True) for v in good] + [(v, False) for v in bad]:
            loads = [lambda: table.load(table.document({**companions, path: value}))]
            if table.from_environment(path, value):
                loads.append(lambda: table.load(env={**env, table.variable(path): table.as_text(value)}))
            for load_it in loads:
                error = table.refusal(load_it)
                if ok:
                    accepted += error is None
                    continue
                tried += 1
                refused += error is not None and error.key == table.reported(path)
    return {"keys": len(table.ROWS), "bad_values_tried": tried, "refused_naming_the_key": refused,
            "good_values_accepted": accepted}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, help="run only the many-tenants figure, at this many tenants")
    parser.add_argument("--trace", type=Path, help="with --tenants: trace the worker's event loop into this file")
    args = parser.parse_args()
    if args.trace and not args.tenants:
        parser.error("--trace needs --tenants")
    load_before = os.getloadavg()
    if args.tenants:
        scale = many_tenants(args.tenants, args.trace)
        scale.update(machine=machine(), load_average_before=load_before, load_average_after=os.getloadavg())
        print(write_result(f"faults_tenants_{args.tenants}", scale))
        print(scale)
        return int(scale["tests_exit_code"])
    # The broker-loss and 10,000-tenant tests are marked long (`make test` leaves them out): run them here.
    output, code = run_tests(["-m", "long or not long", *TESTS], {"SG_SCALE_TENANTS": "10000"})
    result = {"machine": machine(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
              "tests_exit_code": code, "figures": parse(output), "configuration": configuration()}
    print(write_result("faults", result))
    for name, figures in result["figures"].items():
        print(f"{name}: {figures}")
    print(f"configuration: {result['configuration']}")
    return code


if __name__ == "__main__":
    sys.exit(main())
