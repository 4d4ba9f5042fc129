"""Membership against a real broker: two workers sharing the partitions, and a SIGKILL mid-stream.

At-least-once is what the crash test asserts: every event_id gets at least one verdict. A worker killed
between sending verdicts and committing their input offsets re-processes those events after the restart,
so duplicates are expected (consumers de-duplicate by event_id); the test reports how many there were.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from streamkit import Names, Worker, event, new_worker, produce, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(300)]


def owned_partitions(worker: Worker, topic: str) -> set[int]:
    return {int(labels["partition"]) for labels, _ in worker.series("stream_guard_consumer_lag", topic=topic)}


def verdict_counts(worker: Worker) -> int:
    return sum(int(value) for _, value in worker.series("stream_guard_verdicts_total"))


def many_events(prefix: str, n: int, questions: int) -> list[bytes]:
    return [event(f"{prefix}-{i}", f"How many days does plan {i % questions} allow?",
                  [f"Plan {i % questions} allows {10 + i % questions} days of storage."],
                  f"Plan {i % questions} allows {10 + i % questions} days of storage.") for i in range(n)]


def test_two_workers_share_the_partitions_and_every_event_gets_a_verdict(
    names: Names, tmp_path: Path, workers: list[Worker]
) -> None:
    one = new_worker(names, tmp_path, workers, "one").wait_ready()
    two = new_worker(names, tmp_path, workers, "two").wait_ready()
    by_question = names.settings().by_question_topic
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the first worker gives partitions up in the rebalance
        mine, theirs = owned_partitions(one, by_question), owned_partitions(two, by_question)
        if mine and theirs and not mine & theirs and mine | theirs == set(range(names.partitions)):
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"partitions not split: {mine} / {theirs}\n{one.log_tail()}\n{two.log_tail()}")

    payloads = many_events("pair", 200, questions=40)
    produce(names, payloads)
    records = wait_for(names, names.topics.verdicts,
                       lambda rs: {f"pair-{i}" for i in range(200)} <= {r["event_id"] for r in rs}, timeout=120)
    assert {r["event_id"] for r in records} >= {f"pair-{i}" for i in range(200)}
    time.sleep(1.5)  # metrics interval
    assert verdict_counts(one) > 0 and verdict_counts(two) > 0
    assert verdict_counts(one) + verdict_counts(two) == len([r for r in records if r["event_id"].startswith("pair-")])


def test_a_worker_killed_mid_stream_loses_no_event(names: Names, tmp_path: Path, workers: list[Worker]) -> None:
    n = 400
    victim = new_worker(names, tmp_path, workers, "victim", data_dir="crash").wait_ready()
    payloads = many_events("kill", n, questions=50)
    producer = threading.Thread(target=produce, args=(names, payloads), kwargs={"pace_s": 0.01})
    producer.start()
    wait_for(names, names.topics.verdicts, lambda rs: len(rs) >= n // 4, timeout=60)
    victim.kill()  # SIGKILL: no goodbye to the group, no flush, no commit
    producer.join(timeout=60)
    assert not producer.is_alive()

    new_worker(names, tmp_path, workers, "heir", data_dir="crash").wait_ready()
    wanted = {f"kill-{i}" for i in range(n)}
    records = wait_for(names, names.topics.verdicts, lambda rs: wanted <= {r["event_id"] for r in rs}, timeout=150)
    ids = [r["event_id"] for r in records if r["event_id"] in wanted]
    duplicates = len(ids) - len(set(ids))
    print(f"\n{n} events, {len(ids)} verdicts, {duplicates} duplicates after SIGKILL (at-least-once)")
    assert set(ids) == wanted
