"""stream_guard.client's KafkaGuardClient against a real broker and a real worker: the event goes to the answers
topic keyed by question hash, the verdict comes back from the one partition it lands on; without a worker, the
caller's policy; a dead letter for the event ends the wait at once; a bad event is refused before it is sent."""

from __future__ import annotations

import asyncio
import time
from typing import Iterator

import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client import CollectorRegistry

from stream_guard.agents.topics import ensure_topics, key_partition
from stream_guard.client import GuardResult, KafkaGuardClient, SyncKafkaGuardClient
from stream_guard.client.kafka import partition_for
from stream_guard.text.questions import question_hash
from stream_guard.wire.deadletter import Source, error_headers
from stream_guard.wire.events import EventError

from streamkit import Names, Worker

pytestmark = [pytest.mark.broker, pytest.mark.timeout(240)]

EVENT = {"event_id": "k1", "tenant": "kc", "question": "What is the refund window?",
         "context": ["Refunds are accepted within 14 days of purchase."],
         "answer": "You can return any item within 30 days of purchase."}


@pytest.fixture(scope="module")
def guarded(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Names]:
    names = Names(kafka_bootstrap)
    asyncio.run(ensure_topics(names.settings()))
    tmp = tmp_path_factory.mktemp("kafka-client")
    worker = Worker(names, tmp / "data", tmp / "worker.log", name="kc").start().wait_ready()
    yield names
    assert worker.stop() == 0, worker.log_tail()


def test_the_verdict_comes_back_from_its_partition(guarded: Names) -> None:
    registry = CollectorRegistry()
    with SyncKafkaGuardClient(guarded.broker, topics=guarded.topics, registry=registry) as guard:
        results = [guard.check({**EVENT, "event_id": f"k1-{i}"}, timeout=60) for i in range(3)]
        assert [r.outcome for r in results] == ["checked"] * 3
        assert [r.verdict.event_id for r in results if r.verdict] == ["k1-0", "k1-1", "k1-2"]
        assert results[0].verdict is not None and results[0].verdict.routing == "healed_accept"
        assert "14 days" in results[0].answer
        readers = {topic: sorted(p for t, p in guard._client._readers if t == topic)
                   for topic in (guarded.topics.verdicts, guarded.topics.dlq)}
    key = question_hash("kc", EVENT["question"]).encode()
    assert readers == {topic: [partition_for(key, [0, 1])] for topic in readers}
    assert {s.labels["outcome"]: s.value for m in registry.collect() for s in m.samples
            if s.name == "stream_guard_client_checks_total"} == {"checked": 3.0}


def test_a_bad_event_is_refused_before_it_is_sent(guarded: Names) -> None:
    async def go() -> None:
        async with KafkaGuardClient(guarded.broker, topics=guarded.topics) as guard:
            started = time.monotonic()
            with pytest.raises(EventError) as raised:
                await guard.check({"event_id": "bad", "answer": "x", "context": 7}, timeout=30)
            assert raised.value.field == "context" and time.monotonic() - started < 5
    asyncio.run(go())


def test_without_a_worker_the_policy_decides_and_a_dead_letter_ends_the_wait(kafka_bootstrap: str) -> None:
    names = Names(kafka_bootstrap)  # topics, but nobody judging them
    asyncio.run(ensure_topics(names.settings()))

    async def go() -> tuple[GuardResult, GuardResult, float]:
        async with KafkaGuardClient(names.broker, topics=names.topics, on_timeout="fallback") as guard:
            waited = await guard.check(EVENT, timeout=1.0)
            failing = asyncio.ensure_future(guard.check({**EVENT, "event_id": "dead"}, timeout=60))
            await asyncio.sleep(1.0)  # the client is reading by now
            started = time.monotonic()
            await _dead_letter(names, "dead")
            return waited, await failing, time.monotonic() - started

    waited, dead, took = asyncio.run(go())
    assert (waited.outcome, waited.reason) == ("fallback", "no verdict in time")
    assert dead.outcome == "fallback" and dead.reason == "the worker failed on the event: timeout: spent 900 ms"
    assert took < 30


async def _dead_letter(names: Names, event_id: str) -> None:
    """What a worker sends when it cannot judge an event: the original record with `sg-dlt-*` headers."""
    key = question_hash("kc", EVENT["question"]).encode()
    error = error_headers(stage="timeout", error_field="$", reason="spent 900 ms",
                          source=Source(names.topics.answers, 0, 0), failed_at_ms=0, event_id=event_id)
    producer = AIOKafkaProducer(bootstrap_servers=names.broker, enable_idempotence=False)
    await producer.start()
    try:
        await producer.send_and_wait(names.topics.dlq, b"{}", key=key, headers=error.to_headers())
    finally:
        await producer.stop()


def test_the_partition_is_the_one_the_worker_computes() -> None:
    for i in range(50):
        key = question_hash("t", f"question {i}").encode()
        assert partition_for(key, range(4)) == key_partition(key, 4)
