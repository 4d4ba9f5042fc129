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


def _run_until_it_fails(names: Names, tmp_path: Path, script: str, name: str, event_id: str,
                        env: dict[str, str] | None = None) -> str:
    """Run a worker patched by `script`, give it one event, and wait for it to exit non-zero; returns its log."""
    broken = Worker(names, tmp_path / f"{name}-data", tmp_path / f"{name}.log", name=name)
    cmd = [sys.executable, "-c", script, "worker", "--broker", names.broker, "--data-dir",
           str(broken.data_dir), "--web-port", str(broken.web_port), "--ner", "regex", "--name", name]
    with open(broken.log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **names.env(), **(env or {})}, stdout=log,
                                stderr=subprocess.STDOUT)
        broken.proc = proc
        try:
            broken.wait_ready()
            produce(names, [event(event_id, "What is the refund window?",
                                  ["Refunds are accepted within 14 days of purchase."],
                                  "Refunds are accepted within 14 days of purchase.")])
            code = proc.wait(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert code != 0
    return broken.log_path.read_text(errors="replace")


def test_a_worker_that_cannot_deliver_exits_and_its_events_are_redelivered(
    names: Names, tmp_path: Path, workers: list[Worker]
) -> None:
    log = _run_until_it_fails(names, tmp_path, BROKEN_WORKER, "broken", "lost-1")
    assert "broker unreachable (injected by the test)" in log

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
    log = _run_until_it_fails(names, tmp_path, UNMONITORED_WORKER, "unmonitored", "unobserved-1",
                              {"STREAM_GUARD_MONITOR_ENABLED": "true"})
    assert "monitoring observations undeliverable" in log

    new_worker(names, tmp_path, workers, "healthy").wait_ready()
    wait_for(names, names.topics.verdicts, lambda rs: sum(r["event_id"] == "unobserved-1" for r in rs) >= 2)
