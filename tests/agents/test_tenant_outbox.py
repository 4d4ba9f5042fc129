"""The judging side's by-tenant sends: one record per tenant per flush, and a future per flush that resolves only
once the broker has all of them (the judge acknowledges inputs after it)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from stream_guard.agents.tenant_outbox import TenantOutbox
from stream_guard.ops.monitoring.groups import records_of


class _Producer:
    """Sends as the service's `send` queues them: each returns a future the test resolves as the broker would."""

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[bytes, dict[str, Any], asyncio.Future[Any]]] = []
        self.fail = fail

    async def send(self, key: bytes, value: bytes) -> asyncio.Future[Any]:
        if self.fail:
            raise ConnectionError("broker unreachable")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.sent.append((key, orjson.loads(value), future))
        return future

    def ack_all(self) -> None:
        for _, _, future in self.sent:
            if not future.done():
                future.set_result(None)

    def event_ids(self) -> list[tuple[bytes, list[str]]]:
        return [(key, [r["event_id"] for r in records_of(value)[0]]) for key, value, _ in self.sent]


def _record(event_id: str) -> bytes:
    return orjson.dumps({"type": "answer", "event_id": event_id})


def test_a_flush_sends_one_record_per_tenant_and_resolves_once_the_broker_has_them_all() -> None:
    async def run() -> None:
        producer = _Producer()
        outbox = TenantOutbox(producer.send, 0.05, 10_000)
        waits = [outbox.add(t, _record(e)) for t, e in (("acme", "1"), ("zeta", "2"), ("acme", "3"))]
        assert len({id(w) for w in waits}) == 1  # one flush
        await asyncio.sleep(0.01)
        assert producer.sent == []  # still gathering
        await asyncio.sleep(0.08)
        assert producer.event_ids() == [(b"acme", ["1", "3"]), (b"zeta", ["2"])]
        assert not waits[0].done()  # sent, not yet acknowledged: the inputs wait
        producer.sent[0][2].set_result(None)
        await asyncio.sleep(0)
        assert not waits[0].done()
        producer.ack_all()
        await asyncio.wait_for(waits[0], 1)
        later = outbox.add("acme", _record("4"))
        assert later is not waits[0]  # the next record opens the next flush

    asyncio.run(run())


def test_flush_puts_what_is_gathered_on_the_producer_before_it_returns() -> None:
    # A progress report vouches for the answers judged before it: their records must be queued ahead of it.
    async def run() -> None:
        producer = _Producer()
        outbox = TenantOutbox(producer.send, 60.0, 10_000)
        outbox.add("acme", _record("1"))
        await outbox.flush()
        assert producer.event_ids() == [(b"acme", ["1"])]
        await outbox.flush()  # nothing gathered: nothing sent
        assert len(producer.sent) == 1

    asyncio.run(run())


def test_a_record_that_would_make_the_flush_too_large_starts_the_next_one() -> None:
    async def run() -> None:
        producer = _Producer()
        record = _record("1")
        outbox = TenantOutbox(producer.send, 60.0, 2 * len(record) + 1)
        first = [outbox.add("acme", _record(e)) for e in "12"]
        third = outbox.add("acme", _record("3"))
        assert first[0] is first[1] and third is not first[0]
        await asyncio.sleep(0)
        assert producer.event_ids() == [(b"acme", ["1", "2"])]

    asyncio.run(run())


def test_a_send_that_fails_fails_the_flush_so_its_inputs_stay_unacknowledged() -> None:
    async def run() -> None:
        outbox = TenantOutbox(_Producer(fail=True).send, 60.0, 10_000)
        waiting = outbox.add("acme", _record("1"))
        await outbox.flush()
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(waiting, 1)

    asyncio.run(run())
