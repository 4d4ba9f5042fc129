"""The judge process: same results as judging in place, and it survives being killed or abandoned mid-call."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Iterator

import orjson
import pytest

from stream_guard.agents.judge import Judge
from stream_guard.config import DetectorConfig
from stream_guard.judging import judge_payloads
from stream_guard.pipeline import Guard

pytestmark = pytest.mark.timeout(120)
CONFIG = DetectorConfig(ner="regex", log_flagged=False)


def payload(event_id: str, days: int) -> bytes:
    return orjson.dumps({"event_id": event_id, "tenant": "t", "question": "What is the refund window?",
                         "context": ["Refunds are accepted within 14 days of purchase."],
                         "answer": f"Refunds are accepted within {days} days of purchase."})


@pytest.fixture(scope="module")
def judge() -> Iterator[Judge]:
    judge = Judge(CONFIG)
    yield judge
    judge.close()


def test_the_process_judges_as_the_core_does_in_place(judge: Judge) -> None:
    payloads = [payload("a", 14), payload("b", 30), b"{bad"]
    remote = asyncio.run(judge.judge(payloads, {}, 7))
    local = judge_payloads(Guard(CONFIG), payloads, {}, 7)
    assert [(i.event_id, i.routing, i.error_stage) for i in remote.items] == \
        [(i.event_id, i.routing, i.error_stage) for i in local.items]
    assert remote.histories.keys() == local.histories.keys()
    assert judge.ner_backend == "regex"


def test_a_killed_process_is_replaced_and_the_batch_still_judged(judge: Judge) -> None:
    asyncio.run(judge.judge([payload("warm", 14)], {}, 0))
    assert judge._process is not None
    os.kill(judge._process._proc.pid, signal.SIGKILL)
    judge._process._proc.join(10)
    result = asyncio.run(judge.judge([payload("c", 14), payload("d", 30)], {}, 0))
    assert [(i.event_id, i.ok) for i in result.items] == [("c", True), ("d", True)]
    # The replacement outlives the thread pool that waited for it to load.
    replacement = judge._process
    assert replacement is not None
    replacement._proc.join(1.0)
    assert replacement._proc.is_alive()


def test_an_abandoned_call_does_not_hand_its_answer_to_the_next_one(judge: Judge) -> None:
    async def abandon_then_ask() -> list[str | None]:
        slow = asyncio.ensure_future(judge.judge([payload(f"old-{i}", 30) for i in range(2000)], {}, 0))
        await asyncio.sleep(0.05)  # the process is busy with the batch now
        assert not slow.done()
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        result = await judge.judge([payload("new", 14)], {}, 0)
        return [item.event_id for item in result.items]

    assert asyncio.run(abandon_then_ask()) == ["new"]
