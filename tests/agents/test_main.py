"""`python -m stream_guard.agents`: the streaming commands started without the `stream-guard` program."""

from __future__ import annotations

import subprocess
import sys

# A fresh interpreter without the variable runs the module as `-m` does, with the command replaced by one that
# reports what the process had when the command started.
CODE = """
import os, runpy, sys
os.environ.pop("OPENBLAS_NUM_THREADS", None)
import stream_guard.agents.cli as cli
cli.run = lambda command, argv: print(command, os.environ.get("OPENBLAS_NUM_THREADS"), "numpy" in sys.modules) or 0
sys.argv = ["stream_guard.agents", "worker"]
runpy.run_module("stream_guard.agents", run_name="__main__", alter_sys=True)
"""


def test_a_worker_started_as_a_module_runs_numpy_s_blas_on_one_thread() -> None:
    # As `stream-guard worker` does (cli.entry), set before numpy is imported: the worker's judges inherit it
    # through the pool's fork server, and without it each lifted the per-call limit after every NER call and
    # woke OpenBLAS's second thread (stream_guard/blas.py).
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["worker", "1", "False"]
