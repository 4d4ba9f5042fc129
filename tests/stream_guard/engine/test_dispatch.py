"""Many callers at once onto two judge processes: each question's events are judged in arrival order, each seeing
exactly the drift history the ones before it left, whichever process judges it; other questions run alongside."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.dispatch import Dispatcher
from stream_guard.engine.history import HistoryTable
from stream_guard.engine.judging import judge_events
from stream_guard.engine.pipeline import Guard
from stream_guard.engine.pool import Pool
from stream_guard.text.questions import address

pytestmark = pytest.mark.slow

QUESTIONS = ["What is the price of SKU-441?", "How long is the warranty?", "What is the refund window?"]


def payload(i: int) -> bytes:
    question = QUESTIONS[i % len(QUESTIONS)]
    answer = f"It is {10 + (i % 7)} dollars or days, as the catalog says." if i % 5 else "It is 14."
    return orjson.dumps({"event_id": f"d{i}", "tenant": "disp", "question": question,
                         "context": ["The SKU-441 widget is priced at $12. The warranty is 14 days. Refunds: 14 days."],
                         "answer": answer})


def test_concurrent_callers_see_the_history_sequential_judging_gives() -> None:
    config = DetectorConfig(ner="regex", window_size=8, drift_min_history=2)
    payloads = [payload(i) for i in range(45)]
    keys = [address(orjson.loads(p))[1] for p in payloads]

    async def concurrently() -> list[bytes | None]:
        dispatcher = Dispatcher(Pool(config, processes=2, quality_latency_ms=0.0), HistoryTable(), batch_max=4)
        try:
            # One caller per event, all at once, and a batch caller in the middle.
            singles = [dispatcher.judge([p], [k]) for p, k in zip(payloads[:20], keys[:20])]
            batch = dispatcher.judge(payloads[20:30], keys[20:30])
            rest = [dispatcher.judge([p], [k]) for p, k in zip(payloads[30:], keys[30:])]
            done = await asyncio.gather(*singles, batch, *rest)
            await dispatcher.drain()
            return [item.verdict for group in done for item in group]
        finally:
            dispatcher.pool.close()

    verdicts = asyncio.run(concurrently())
    histories: dict[str, list] = {}
    sequential: list[bytes | None] = []
    for p in payloads:  # one at a time, histories carried: the order the dispatcher must keep per question
        (item,), updated = judge_events(Guard(config, quality_latency_ms=0.0), [p], lambda key: histories.get(key, []))
        histories.update(updated)
        sequential.append(item.verdict)

    def drift(raw: bytes | None) -> object:
        return orjson.loads(raw or b"{}")["checks"]["drift"]["details"]

    assert [drift(v) for v in verdicts] == [drift(v) for v in sequential]
    assert any(drift(v).get("history", 0) >= 2 for v in verdicts)
