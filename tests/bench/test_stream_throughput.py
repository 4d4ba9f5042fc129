"""bench/stream_throughput.py's CPU readings: a worker's event loop read apart from its other threads."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import stream_throughput  # noqa: E402


def test_the_main_threads_cpu_leaves_out_what_other_threads_spend() -> None:
    def spin() -> None:
        x = 0
        for i in range(3_000_000):
            x += i

    pid = os.getpid()
    before_main, before_all = stream_throughput.main_thread_cpu_seconds(pid), stream_throughput.cpu_seconds(pid)
    worker = threading.Thread(target=spin)
    worker.start()
    worker.join()
    spent_main = stream_throughput.main_thread_cpu_seconds(pid) - before_main
    spent_all = stream_throughput.cpu_seconds(pid) - before_all
    assert spent_all >= 0.05  # the other thread's spin, in the process's total
    assert spent_main < spent_all / 2  # and not in the main thread's
