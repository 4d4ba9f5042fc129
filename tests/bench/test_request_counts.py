"""bench/request_counts: the benchmark's count of a worker's Kafka requests, installed by PYTHONPATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"

# A connection that never connected: send() refuses the request, after the instrument has counted it.
SEND_ONE_FETCH = """
import aiokafka.conn, aiokafka.errors
from aiokafka.protocol.fetch import FetchRequest

class Unconnected:
    _writer = None
    _host, _port = "127.0.0.1", 9

request = FetchRequest(25, 1, 1024, 0, [("answers", [(0, 5, 1024), (1, 7, 1024)]), ("by-question", [(3, 0, 1024)])])
try:
    aiokafka.conn.AIOKafkaConnection.send(Unconnected(), request)
except aiokafka.errors.KafkaConnectionError:
    pass
"""


def test_each_request_is_counted_by_kind_and_a_fetch_by_the_partitions_it_lists(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(BENCH / "request_counts"), "BENCH_REQUEST_COUNTS": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SEND_ONE_FETCH], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (written,) = tmp_path.glob("*.json")
    assert json.loads(written.read_text()) == {"FetchRequest": 1, "fetch partitions answers": 2,
                                               "fetch partitions by-question": 1}


def test_nothing_is_counted_or_written_unless_asked(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(BENCH / "request_counts")}
    env.pop("BENCH_REQUEST_COUNTS", None)
    done = subprocess.run([sys.executable, "-c", "import aiokafka.conn, sys; "
                           "sys.exit(aiokafka.conn.AIOKafkaConnection.send.__name__ != 'send')"],
                          env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.iterdir())
