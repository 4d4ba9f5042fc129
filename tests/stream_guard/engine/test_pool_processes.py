"""The pool's judge processes through the worker's front-end: same results as judging in place, and a process
that is killed, abandoned mid-call, over budget or stuck in native code is handled by the one death policy."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import orjson
import pytest

from stream_guard.engine.pool import Pool
from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.judging import judge_payloads
from stream_guard.engine.pipeline import Guard

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
CONFIG = DetectorConfig(ner="regex", log_flagged=False)


def payload(event_id: str, days: int) -> bytes:
    return orjson.dumps({"event_id": event_id, "tenant": "t", "question": "What is the refund window?",
                         "context": ["Refunds are accepted within 14 days of purchase."],
                         "answer": f"Refunds are accepted within {days} days of purchase."})


def Judge(config: DetectorConfig, **options: Any) -> Pool:
    """One judge process, as the worker runs it (agents/worker.py)."""
    return Pool(config, processes=1, quality_latency_ms=None, **options).wait_ready()


@pytest.fixture(scope="module")
def judge() -> Iterator[Pool]:
    judge = Judge(CONFIG)
    yield judge
    judge.close()


def test_the_process_judges_as_the_core_does_in_place(judge: Pool) -> None:
    payloads = [payload("a", 14), payload("b", 30), b"{bad"]
    remote = asyncio.run(judge.judge_batch(payloads, {}, 7))
    local = judge_payloads(Guard(CONFIG), payloads, {}, 7)
    assert [(i.event_id, i.routing, i.error_stage) for i in remote.items] == \
        [(i.event_id, i.routing, i.error_stage) for i in local.items]
    assert remote.histories.keys() == local.histories.keys()
    assert judge.ner_backend == "regex"


def test_a_killed_process_is_replaced_and_the_batch_still_judged(judge: Pool) -> None:
    asyncio.run(judge.judge_batch([payload("warm", 14)], {}, 0))
    assert judge.children
    os.kill(judge.children[0].process.pid, signal.SIGKILL)
    judge.children[0].process.join(10)
    result = asyncio.run(judge.judge_batch([payload("c", 14), payload("d", 30)], {}, 0))
    assert [(i.event_id, i.ok) for i in result.items] == [("c", True), ("d", True)]
    # The replacement outlives the thread pool that waited for it to load.
    [replacement] = judge.children
    replacement.process.join(1.0)
    assert replacement.process.is_alive()


def test_an_abandoned_call_does_not_hand_its_answer_to_the_next_one(judge: Pool) -> None:
    async def abandon_then_ask() -> list[str | None]:
        slow = asyncio.ensure_future(judge.judge_batch([payload(f"old-{i}", 30) for i in range(2000)], {}, 0))
        await asyncio.sleep(0.05)  # the process is busy with the batch now
        assert not slow.done()
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        result = await judge.judge_batch([payload("new", 14)], {}, 0)
        return [item.event_id for item in result.items]

    assert asyncio.run(abandon_then_ask()) == ["new"]


def test_an_event_over_its_cpu_budget_is_stopped_and_its_batch_mates_judged() -> None:
    from judge_hooks import misbehave

    judge = Judge(DetectorConfig(ner="regex", log_flagged=False, event_budget_ms=50), setup=misbehave)
    try:
        result = asyncio.run(judge.judge_batch([payload("a", 14), payload("spin-1", 14), payload("b", 30)], {}, 0))
    finally:
        judge.close()
    assert [(i.event_id, i.ok, i.error_stage) for i in result.items] == \
        [("a", True, None), ("spin-1", False, "timeout"), ("b", True, None)]
    spun = result.items[1]
    assert spun.cost_ms is not None and spun.cost_ms >= 50
    assert spun.error_reason is not None and spun.error_reason.startswith("timeout: spent")
    assert judge.replaced == 0  # the CPU timer stopped it: no process had to go


def test_an_event_stuck_in_native_code_is_killed_replaced_and_reported_stuck_meanwhile() -> None:
    from judge_hooks import misbehave

    judge = Judge(DetectorConfig(ner="regex", log_flagged=False, event_budget_ms=50), setup=misbehave)
    limit_s = judge.budget.wall_limit_s(3)
    reasons: list[str] = []

    async def judge_and_watch() -> Any:
        call = asyncio.ensure_future(judge.judge_batch([payload("c", 14), payload("hang-1", 14), payload("d", 30)], {}, 0))
        while not call.done():
            reason = judge.stuck()
            if reason:
                reasons.append(reason)
            await asyncio.sleep(0.1)
        return call.result()

    try:
        assert judge.stuck() is None
        result = asyncio.run(asyncio.wait_for(judge_and_watch(), 60))
        assert judge.stuck() is None  # the batch is done: healthy again
    finally:
        judge.close()
    assert [(i.event_id, i.ok) for i in result.items[::2]] == [("c", True), ("d", True)]
    hung = result.items[1]
    assert (hung.ok, hung.error_stage) == (False, "timeout")
    assert hung.error_reason is not None and "killed and replaced" in hung.error_reason
    assert judge.replaced >= 2  # the batch's process, then the one the hanging event had to itself
    # Health saw it: past the batch's wall-clock limit, with the reason.
    assert reasons and "past the" in reasons[0] and f"{limit_s:.1f} s" in reasons[0]


@pytest.mark.parametrize("bad, stage, reason", [("crash-1", "judge", "the judge process died on this event"),
                                                ("hang-1", "timeout", "killed and replaced")])
def test_a_process_that_dies_or_hangs_is_handled_alike_by_check_jobs_and_the_worker(
        bad: str, stage: str, reason: str) -> None:
    """The one death policy: the process is replaced, its batch judged again one event at a time, and only the
    event that kills or hangs a process fails, the same way through either front-end."""
    from judge_hooks import misbehave

    config = DetectorConfig(ner="regex", log_flagged=False, event_budget_ms=50)
    payloads = [payload("a", 14), payload(bad, 14), payload("b", 30)]

    def outcome(items: Any) -> list[tuple[str | None, bool, str | None]]:
        return [(i.event_id, i.ok, i.error_stage) for i in items]

    with Pool(config, jobs=2, setup=misbehave) as pool:  # check --jobs 2
        spread = [judged for _, judged in pool.judge(enumerate(payloads))]
        assert pool.replaced >= 1
    worker = Judge(config, setup=misbehave)
    try:
        streamed = asyncio.run(worker.judge_batch(payloads, {}, 0)).items
        assert worker.replaced >= 1
    finally:
        worker.close()
    assert outcome(spread) == outcome(streamed) == [("a", True, None), (bad, False, stage), ("b", True, None)]
    assert reason in (spread[1].error_reason or "") and reason in (streamed[1].error_reason or "")


PARENT = """
import asyncio, sys
sys.path.insert(0, {support!r})
from judge_hooks import misbehave
from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.pool import Pool

if __name__ == "__main__":
    # A budget so large that the parent would wait minutes before killing the stuck judge itself.
    pool = Pool(DetectorConfig(ner="regex", log_flagged=False, event_budget_ms=60_000), processes=1,
                setup=misbehave).wait_ready()
    print(pool.pid, flush=True)
    asyncio.run(pool.judge_batch([{hang!r}], {{}}, 0))
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"  # exited, not reaped yet
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="dying with the parent is Linux's PR_SET_PDEATHSIG")
def test_killing_the_parent_kills_a_judge_stuck_in_native_code_and_its_fork_server(tmp_path: Path) -> None:
    support = str(Path(__file__).resolve().parents[2] / "support")
    script = tmp_path / "parent.py"
    script.write_text(PARENT.format(support=support, hang=payload("hang-1", 14)))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        judge = int(parent.stdout.readline())
        with open(f"/proc/{judge}/stat", "rb") as fh:
            server = int(fh.read().rsplit(b")", 1)[1].split()[1])  # the judge's parent: the fork server
        assert server != parent.pid
        time.sleep(1.0)  # the judge is inside PBKDF2 now, reading nothing
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (_gone(judge) and _gone(server)):
        time.sleep(0.2)
    survivors = [pid for pid in (judge, server) if not _gone(pid)]
    for pid in survivors:  # a failed run must not leave them spinning
        os.kill(pid, signal.SIGKILL)
    assert server not in survivors, "the fork server outlived its parent"
    assert judge not in survivors, "the judge outlived its parent"


def _collector_state(guard: Guard) -> tuple[int, int]:
    """In a judge: how many objects its warm-up left out of collections, and its young threshold."""
    import gc

    return gc.get_freeze_count(), gc.get_threshold()[0]


def test_a_judge_leaves_its_warm_heap_out_of_collections(judge: Pool) -> None:
    from stream_guard.collector import YOUNG_THRESHOLD

    frozen, young = asyncio.run(judge.run_in(0, _collector_state))
    assert frozen > 1000 and young == YOUNG_THRESHOLD  # the modules and the warm-up's caches at least
