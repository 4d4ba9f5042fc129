"""End offsets are never trusted alone: the embedded broker lists the newest batch's first offset + 1 after
multi-record batches, so every read that must reach the end confirms it by what it sees (clients.OpenEnd).
Also here: a dead letter of the decode stage names the event when its bytes hold a readable id."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka.structs import ConsumerRecord
from streamkit import Names, Worker, create_topic, event, new_worker, produce, wait_for

from stream_guard.agents.cli import _tail
from stream_guard.agents.clients import OpenEnd, Reader, read_all, start_producer

pytestmark = pytest.mark.timeout(240)


def record(offset: int, timestamp: int) -> ConsumerRecord:
    return ConsumerRecord("t", 0, offset, timestamp, 0, None, b"v", None, -1, 1, ())


def test_a_read_goes_past_a_short_listed_end_and_stops_at_what_came_after_it_started() -> None:
    end = OpenEnd(listed_end=1, started_ms=1000)  # the broker said 1; records 0-4 were there before we started
    keep, ended = end.take([record(o, 900) for o in range(5)], position=5)
    assert [r.offset for r in keep] == [0, 1, 2, 3, 4] and not ended
    keep, ended = end.take([record(5, 950), record(6, 1200), record(7, 1300)], position=8)
    assert [r.offset for r in keep] == [5] and ended  # 6 was written after the read started


def test_a_read_ends_after_two_empty_fetches_at_or_past_the_listed_end() -> None:
    end = OpenEnd(listed_end=3, started_ms=1000)
    assert end.take([], position=1) == ([], False)
    assert end.take([], position=1) == ([], False)  # idle, but short of the listed end: keep fetching
    assert end.take([record(1, 10), record(2, 10)], position=3) == ([record(1, 10), record(2, 10)], False)
    assert end.take([], position=3) == ([], False)
    assert end.take([], position=3) == ([], True)


async def _batched(broker: str, topic: str, per_partition: int, partitions: int) -> None:
    await create_topic(broker, topic, partitions)
    producer = await start_producer(broker)
    try:  # sent without waiting: the producer packs them into multi-record batches
        sent = [await producer.send(topic, f"{{\"n\": {i}}}".encode(), partition=i % partitions)
                for i in range(per_partition * partitions)]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


@pytest.mark.broker
def test_tail_to_end_prints_every_record_of_multi_record_batches(kafka_bootstrap: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"t{id(capsys):x}.batched"
    asyncio.run(_batched(kafka_bootstrap, topic, per_partition=100, partitions=3))

    async def listed() -> dict[Any, int]:
        reader = await Reader(kafka_bootstrap, [topic], from_beginning=True).start()
        try:
            assert reader.consumer is not None
            return await reader.consumer.end_offsets(list(reader.consumer.assignment()))
        finally:
            await reader.stop()

    short = sum(asyncio.run(listed()).values())
    count = asyncio.run(_tail(kafka_bootstrap, topic, "verdicts", True, None, False, to_end=True))
    printed = capsys.readouterr().out.splitlines()
    assert count == 300 and sorted(orjson.loads(line)["n"] for line in printed) == list(range(300))
    assert short <= 300  # what the broker listed (3 on the embedded broker: one per partition's last batch)


async def _ends(broker: str, topic: str) -> tuple[dict[int, int], dict[int, int]]:
    """The end offsets the broker lists for each partition, and the records each holds."""
    reader = await Reader(broker, [topic], from_beginning=True).start()
    try:
        assert reader.consumer is not None
        listed = {tp.partition: end for tp, end in
                  (await reader.consumer.end_offsets(list(reader.consumer.assignment()))).items()}
    finally:
        await reader.stop()
    held: dict[int, int] = {}
    for r in await read_all(broker, [topic], until=10**9, timeout=3.0):
        held[r.partition] = held.get(r.partition, 0) + 1
    return listed, held


@pytest.mark.broker
def test_a_table_written_in_multi_record_batches_is_restored_key_by_key(
    names: Names, tmp_path: Path, workers: list[Worker]
) -> None:
    """A worker writes one drift history per question (its changelog written in multi-record batches); a worker
    with no data directory restores the table from the changelog, and every question's next answer finds the
    history of the first. Bad events ride along: their dead letters name them."""
    questions = [f"What is the warranty on model {i}?" for i in range(60)]
    first = [event(f"first-{i}", q, [f"Model {i} has a warranty of 2 years."], f"Model {i} has a warranty of 2 years.")
             for i, q in enumerate(questions)]
    bad = [orjson.dumps({"event_id": "bad-unkeyed", "tenant": "support", "question": questions[0]}),  # no answer
           orjson.dumps({"event_id": "bad-keyed", "tenant": "support", "question": questions[1], "answer": 7})]
    # A producer that lingers packs the changelog writes into multi-record batches.
    writer = new_worker(names, tmp_path, workers, "writer", data_dir="state",
                        extra_env={"STREAM_GUARD_PRODUCER_LINGER_MS": "100"}).wait_ready()
    # The unkeyed one is re-keyed first (the intake decodes it); the keyed one is judged where it lands.
    produce(names, first + bad, keys=None)
    produce(names, [bad[0]], keys=[None])
    wait_for(names, names.topics.verdicts, lambda rs: len(rs) >= len(first), timeout=90)
    dead = wait_for(names, names.topics.dlq, lambda rs: len(rs) >= 3, timeout=30)
    assert writer.stop() == 0, writer.log_tail()
    changelog = f"{names.app_id}-drift-history-changelog"
    listed, held = asyncio.run(_ends(names.broker, changelog))
    assert sum(held.values()) == len(questions) and sum(listed.values()) < len(questions)  # the broker lists short

    shutil.rmtree(tmp_path / "state")  # nothing local: the table comes back from its changelog alone
    reader = new_worker(names, tmp_path, workers, "reader", data_dir="state").wait_ready()
    produce(names, [event(f"second-{i}", q, [f"Model {i} has a warranty of 2 years."], f"Model {i} has 2 years.")
                    for i, q in enumerate(questions)])
    verdicts = wait_for(names, names.topics.verdicts,
                        lambda rs: sum(r["event_id"].startswith("second-") for r in rs) >= len(questions), timeout=90)
    histories = {r["event_id"]: r["checks"]["drift"]["details"]["history"] for r in verdicts
                 if r["event_id"].startswith("second-")}
    deadline = time.monotonic() + 30  # lag is sampled periodically: a quick run can finish before the first sample
    while not (lag := reader.series("stream_guard_consumer_lag")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert reader.stop() == 0, reader.log_tail()
    assert [k for k, n in histories.items() if n != 1] == []  # every key restored
    assert lag and all(value >= 0 for _, value in lag)
    assert {(d["event_id"], d["stage"]) for d in dead} == {("bad-unkeyed", "decode"), ("bad-keyed", "decode")}


@pytest.mark.broker
def test_a_full_read_goes_on_while_records_keep_arriving(kafka_bootstrap: str, tmp_path: Path) -> None:
    """read_all's `timeout` is a quiet spell, not a window: a topic written for longer than it is read whole."""
    topic = f"t{id(tmp_path):x}.trickle"

    async def trickle_and_read() -> list[ConsumerRecord]:
        await create_topic(kafka_bootstrap, topic)
        producer = await start_producer(kafka_bootstrap)

        async def trickle() -> None:  # 12 records over about 3 s: longer than the read's 1 s timeout
            for i in range(12):
                await producer.send_and_wait(topic, f"{{\"n\": {i}}}".encode())
                await asyncio.sleep(0.25)

        try:
            writing = asyncio.ensure_future(trickle())
            read = await read_all(kafka_bootstrap, [topic], until=10**9, timeout=1.0)
            await writing
        finally:
            await producer.stop()
        return read

    started = time.monotonic()
    read = asyncio.run(trickle_and_read())
    assert sorted(orjson.loads(r.value)["n"] for r in read) == list(range(12))
    assert time.monotonic() - started < 60  # it ended once the topic went quiet, not at its upper bound
