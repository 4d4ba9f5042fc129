"""The broker goes away under a worker: the loss shows on /readyz within seconds and on /healthz after the grace
period, the log says so once with counts (not once per retry), SIGTERM ends the worker within its shutdown
timeout whatever the broker does, and a broker back within the producer timeout loses nothing.

Each test has a broker of its own (it is killed, or cut off behind a relay), never the session's.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest
from netfault import broker_behind_relay
from streamkit import Names, Worker, event, new_worker, produce, read_json, wait_for

from stream_guard.agents.embedded_broker import EmbeddedBroker
from stream_guard.agents.topics import ensure_topics

# Wall-clock bounds (seconds to 503, SIGTERM to exit) need the cores to themselves: run serially by `make test-long`.
pytestmark = [pytest.mark.broker, pytest.mark.long, pytest.mark.timeout(180)]

LOST_AFTER_S, GRACE_S, SHUTDOWN_S = 2.0, 4.0, 8.0
FAULT_ENV = {
    "STREAM_GUARD_BROKER_LOST_AFTER_S": str(LOST_AFTER_S),
    "STREAM_GUARD_BROKER_LOST_GRACE_S": str(GRACE_S),
    "STREAM_GUARD_SHUTDOWN_TIMEOUT_S": str(SHUTDOWN_S),
    # Alone in its group: join fast.
    "STREAM_GUARD_SESSION_TIMEOUT_S": "6",
    "STREAM_GUARD_HEARTBEAT_INTERVAL_S": "1.5",
}
# The lines aiokafka logs on every retry while no broker answers (thousands a minute before).
RETRY_LINES = ("Unable connect", "Unable to update metadata", "Failed fetch messages", "Got error produce response",
               "Group Coordinator Request failed", "Heartbeat send request failed")


def answers(n: int, prefix: str) -> list[bytes]:
    return [event(f"{prefix}-{i}", f"What is the refund window for plan {i % 40}?",
                  ["Refunds are accepted within 14 days of purchase."],
                  "Refunds are accepted within 14 days of purchase.") for i in range(n)]


def status(worker: Worker, path: str) -> tuple[int, dict[str, Any]]:
    code, body = worker.get(path)
    return code, orjson.loads(body)


def seconds_until(condition: Callable[[], bool], limit: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if condition():
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"not within {limit} s")


def sigterm_seconds(worker: Worker) -> tuple[float, int]:
    assert worker.proc is not None
    started = time.monotonic()
    worker.proc.send_signal(signal.SIGTERM)
    code = worker.proc.wait(timeout=SHUTDOWN_S + 20)
    return time.monotonic() - started, code


def retry_lines(worker: Worker) -> int:
    log = worker.log_path.read_text(errors="replace")
    return sum(log.count(line) for line in RETRY_LINES)


def private_names(broker: str) -> Names:
    names = Names(broker)
    asyncio.run(ensure_topics(names.settings()))
    return names


def test_a_killed_broker_under_an_idle_worker_fails_readiness_then_health_and_sigterm_still_ends_it(
    tmp_path: Path, workers: list[Worker]
) -> None:
    broker = EmbeddedBroker().start()
    try:
        names = private_names(broker.bootstrap)
        worker = new_worker(names, tmp_path, workers, "idle", extra_env=FAULT_ENV).wait_ready()
        assert status(worker, "/readyz")[1]["broker"]["state"] == "connected"
        broker.stop()  # every connection refused from now on
        to_unready = seconds_until(lambda: worker.get("/readyz")[0] == 503, 15)
        code, body = status(worker, "/healthz")
        assert code == 200 and body["broker"]["state"] == "lost"  # within the grace period
        to_unhealthy = seconds_until(lambda: worker.get("/healthz")[0] == 503, 15)
        code, body = status(worker, "/healthz")
        assert "no broker has answered" in body["reason"] and "restart this worker" in body["reason"]
        assert to_unready <= LOST_AFTER_S + 2.5
        assert to_unready + to_unhealthy <= GRACE_S + 2.5
        took, exit_code = sigterm_seconds(worker)
    finally:
        broker.stop()
    print(f"\nidle worker, broker killed: /readyz 503 after {to_unready:.1f} s, /healthz 503 after "
          f"{to_unready + to_unhealthy:.1f} s, SIGTERM to exit {took:.1f} s, {retry_lines(worker)} retry lines")
    assert exit_code == 0 and took <= SHUTDOWN_S, worker.log_tail()
    log = worker.log_path.read_text(errors="replace")
    assert log.count("broker connection lost: no broker has answered") == 1
    assert retry_lines(worker) <= 20  # one line of each kind, then the count in the lost line


def test_a_killed_broker_under_a_busy_worker_lets_sigterm_end_it_within_the_timeout(
    tmp_path: Path, workers: list[Worker]
) -> None:
    broker = EmbeddedBroker().start()
    try:
        names = private_names(broker.bootstrap)
        worker = new_worker(names, tmp_path, workers, "busy", extra_env=FAULT_ENV).wait_ready()
        produce(names, answers(12000, "busy"))  # far more than it can check before the broker goes
        wait_for(names, names.topics.verdicts, lambda rs: len(rs) >= 1, timeout=60)
        broker.stop()  # mid-stream: batches in flight wait on sends that cannot complete
        to_unready = seconds_until(lambda: worker.get("/readyz")[0] == 503, 15)
        took, exit_code = sigterm_seconds(worker)
    finally:
        broker.stop()
    print(f"\nbusy worker, broker killed: /readyz 503 after {to_unready:.1f} s, SIGTERM to exit {took:.1f} s")
    assert to_unready <= LOST_AFTER_S + 2.5
    assert exit_code == 0 and took <= SHUTDOWN_S, worker.log_tail()
    assert "stay uncommitted, for the next worker" in worker.log_path.read_text(errors="replace")


def test_a_broker_back_within_the_producer_timeout_loses_nothing(tmp_path: Path, workers: list[Worker]) -> None:
    with broker_behind_relay() as (_, relay):
        names = private_names(relay.address)
        worker = new_worker(names, tmp_path, workers, "cut", extra_env=FAULT_ENV).wait_ready()
        wanted = answers(500, "cut")
        wanted_ids = {orjson.loads(e)["event_id"] for e in wanted}
        produce(names, wanted)
        wait_for(names, names.topics.verdicts, lambda rs: len(rs) >= 50, timeout=60)
        relay.cut()  # a network partition: every connection reset, new ones refused
        seconds_until(lambda: worker.get("/readyz")[0] == 503, 15)
        time.sleep(3)
        relay.restore()
        back = seconds_until(worker.ready, 30)
        # Until every event has its verdict, not until 500 verdicts: a produce request that the broker took just
        # before the cut is sent again (at least once), and counting its duplicate stopped the wait one verdict short.
        verdicts = wait_for(names, names.topics.verdicts, lambda rs: {r["event_id"] for r in rs} >= wanted_ids,
                            timeout=120)
        ids = {r["event_id"] for r in verdicts}
        assert worker.series("stream_guard_broker_losses_total")[0][1] == 1
        assert read_json(names, names.topics.dlq, until=1, timeout=2) == []
        assert worker.stop() == 0, worker.log_tail()
    print(f"\nbroker cut off for about {LOST_AFTER_S + 3:.0f} s mid-stream: ready again {back:.1f} s after it came "
          f"back, {len(wanted) - len(ids)} of {len(wanted)} events lost, {len(verdicts) - len(ids)} verdict(s) "
          "sent again")
    assert ids == wanted_ids
    log = worker.log_path.read_text(errors="replace")
    assert log.count("broker connection lost") == 1 and log.count("broker connection restored after") == 1
