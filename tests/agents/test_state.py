"""State against a real broker: RocksDB across restarts, changelog recovery, alert dedupe records pruned after
their TTL. (Membership, two workers and a SIGKILL mid-stream, is in test_scaling.py: a file of its own, so that
`make test` runs the two in parallel.)
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from streamkit import Names, Worker, event, new_worker, produce, read_json, wait_for

from stream_guard.agents.clients import read_all

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(300)]

SKU_Q = "What is the price of SKU-441?"
SKU_CTX = ["SKU-441 (wireless headset) is priced at $49.99.", "Free shipping applies to orders over $35."]
CONSISTENT = ["SKU-441 costs $49.99.", "The wireless headset SKU-441 is priced at $49.99.",
              "SKU-441 is $49.99.", "SKU-441 costs $49.99."]


# Both drifted answers produced in the same hour, whenever the test runs: drift alerts are grouped by hour.
HOUR_START_MS = int(time.time() * 1000) // 3_600_000 * 3_600_000


def sku(event_id: str, answer: str) -> bytes:
    return event(event_id, SKU_Q, SKU_CTX, answer, tenant="shop", produced_at=HOUR_START_MS)


def verdict_of(names: Names, event_id: str, timeout: float = 60.0) -> dict[str, Any]:
    records = wait_for(names, names.topics.verdicts, lambda rs: any(r["event_id"] == event_id for r in rs), timeout)
    return next(r for r in records if r["event_id"] == event_id)


def test_drift_history_survives_a_restart_and_a_wiped_data_directory(
    names: Names, tmp_path: Path, workers: list[Worker]
) -> None:
    first = new_worker(names, tmp_path, workers, "a", data_dir="state").wait_ready()
    produce(names, [sku(f"h-{i}", answer) for i, answer in enumerate(CONSISTENT)])
    for i in range(len(CONSISTENT)):
        assert not verdict_of(names, f"h-{i}")["checks"]["drift"]["flagged"]
    assert first.stop() == 0

    # Same data directory: the history comes from the local RocksDB files.
    second = new_worker(names, tmp_path, workers, "b", data_dir="state").wait_ready()
    produce(names, [sku("drift-1", "SKU-441 now costs $39.99 after the spring discount.")])
    drifted = verdict_of(names, "drift-1")
    assert drifted["checks"]["drift"]["flagged"], drifted["checks"]["drift"]
    assert drifted["checks"]["drift"]["details"]
    assert second.stop() == 0

    # No data directory at all: the table is rebuilt from its changelog topic before processing resumes.
    shutil.rmtree(tmp_path / "state")
    third = new_worker(names, tmp_path, workers, "c", data_dir="state").wait_ready()
    produce(names, [sku("drift-2", "SKU-441 is on sale for $29.99 this week.")])
    drifted_again = verdict_of(names, "drift-2")
    assert drifted_again["checks"]["drift"]["flagged"], drifted_again["checks"]["drift"]
    # Drift alerts are grouped per question, one an hour: drift-1 paged (with the question and its baseline);
    # drift-2, an hour's same question, is suppressed by the dedupe record restored from the changelog too.
    alerts = wait_for(names, names.topics.alerts, lambda rs: any(a["kind"] == "drift" for a in rs))
    deadline = time.monotonic() + 30
    while not third.series("stream_guard_alerts_suppressed_total", kind="drift"):
        assert time.monotonic() < deadline, third.log_tail()
        time.sleep(0.5)
    alerts = read_json(names, names.topics.alerts, until=10**9, timeout=1.0)
    [paged] = [a for a in alerts if a["kind"] == "drift"]
    assert paged["event_id"] == "drift-1" and paged["question"] == SKU_Q
    assert paged["evidence"]["baseline"]["consensus_numbers"] != paged["evidence"]["observed"]["numbers"]
    assert third.stop() == 0


def test_alert_dedupe_records_are_pruned_after_their_ttl(names: Names, tmp_path: Path, workers: list[Worker]) -> None:
    worker = new_worker(names, tmp_path, workers, "p", extra_env={
        "STREAM_GUARD_ALERT_DEDUPE_TTL_S": "1", "STREAM_GUARD_ALERT_PRUNE_INTERVAL_S": "1"}).wait_ready()
    lie = event("ttl-1", "What is the refund window?", ["Refunds are accepted within 14 days of purchase."],
                "Refunds are accepted within 30 days of purchase.")
    produce(names, [lie])
    [alert] = wait_for(names, names.topics.alerts, lambda rs: len(rs) >= 1)
    changelog = f"{names.app_id}-alerts-sent-changelog"

    def records() -> list[Any]:
        return asyncio.run(read_all(names.broker, [changelog], until=10**9, timeout=1.0))

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(r.value is None for r in records()):
        time.sleep(0.5)
    history = [(r.key, r.value is None) for r in records()]
    # Written when the alert went out, then a tombstone once the TTL passed: compaction drops both.
    assert history == [(alert["alert_id"].encode(), False), (alert["alert_id"].encode(), True)], history
    assert sum(value for _, value in worker.series("stream_guard_state_records_pruned_total", table="alerts-sent")) >= 1
    # Past the TTL the same cause pages again: the dedupe window is the TTL, not forever.
    produce(names, [lie])
    wait_for(names, names.topics.alerts, lambda rs: len(rs) >= 2)
