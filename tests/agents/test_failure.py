"""A worker that cannot deliver stops, and the events it held are delivered by the next one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from streamkit import REPO, Names, Worker, event, new_worker, produce, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.timeout(240)]

# A worker whose every verdict send fails as a producer would when the broker is gone for good.
BROKEN_WORKER = """
import sys
from stream_guard.agents import app
from stream_guard.agents.cli import run

async def refuse(self, *args, **kwargs):
    raise ConnectionError("broker unreachable (injected by the test)")

app.GuardService._dispatch = refuse
sys.exit(run(sys.argv[1], sys.argv[2:]))
"""


def test_a_worker_that_cannot_deliver_exits_and_its_events_are_redelivered(
    names: Names, tmp_path: Path, workers: list[Worker]
) -> None:
    broken = Worker(names, tmp_path / "broken-data", tmp_path / "broken.log", name="broken")
    env = {**os.environ, **names.env()}
    cmd = [sys.executable, "-c", BROKEN_WORKER, "worker", "--broker", names.broker, "--data-dir",
           str(broken.data_dir), "--web-port", str(broken.web_port), "--ner", "regex", "--name", "broken"]
    with open(broken.log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        broken.proc = proc
        broken.wait_ready()
        produce(names, [event("lost-1", "What is the refund window?",
                              ["Refunds are accepted within 14 days of purchase."],
                              "Refunds are accepted within 14 days of purchase.")])
        code = proc.wait(timeout=90)
    assert code != 0
    assert "broker unreachable (injected by the test)" in broken.log_path.read_text(errors="replace")

    new_worker(names, tmp_path, workers, "healthy").wait_ready()
    verdicts = wait_for(names, names.topics.verdicts, lambda rs: any(r["event_id"] == "lost-1" for r in rs))
    assert [r["routing"] for r in verdicts if r["event_id"] == "lost-1"] == ["accept"]


# A worker whose monitoring observations (one record per tenant per flush) cannot be sent.
UNMONITORED_WORKER = """
import sys
from stream_guard.agents import monitor
from stream_guard.agents.cli import run

async def refuse(self, *args, **kwargs):
    raise ConnectionError("monitoring observations undeliverable (injected by the test)")

monitor.Monitor._send_group = refuse
sys.exit(run(sys.argv[1], sys.argv[2:]))
"""


def test_an_input_whose_monitoring_observation_is_not_sent_is_redelivered(
    names: Names, tmp_path: Path, workers: list[Worker]
) -> None:
    # Its verdict is delivered at once; its input is acknowledged only after its tenant's flush is on the broker
    # too. That flush fails here: the worker stops, and the next one judges the event again (the ledger counts
    # its answer once, by event_id).
    broken = Worker(names, tmp_path / "unmonitored-data", tmp_path / "unmonitored.log", name="unmonitored")
    env = {**os.environ, **names.env(), "STREAM_GUARD_MONITOR_ENABLED": "true"}
    cmd = [sys.executable, "-c", UNMONITORED_WORKER, "worker", "--broker", names.broker, "--data-dir",
           str(broken.data_dir), "--web-port", str(broken.web_port), "--ner", "regex", "--name", "unmonitored"]
    with open(broken.log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        broken.proc = proc
        try:
            broken.wait_ready()
            produce(names, [event("unobserved-1", "What is the refund window?",
                                  ["Refunds are accepted within 14 days of purchase."],
                                  "Refunds are accepted within 14 days of purchase.")])
            code = proc.wait(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert code != 0
    assert "monitoring observations undeliverable" in broken.log_path.read_text(errors="replace")

    new_worker(names, tmp_path, workers, "healthy").wait_ready()
    wait_for(names, names.topics.verdicts, lambda rs: sum(r["event_id"] == "unobserved-1" for r in rs) >= 2)
