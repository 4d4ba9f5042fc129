"""judge_payloads: raw bytes in, verdict bytes and history bytes out; bad payloads and core failures."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.judging import dump_history, failed_batch, judge_payloads, load_history
from stream_guard.engine.pipeline import Guard
from stream_guard.text.questions import question_hash


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard(DetectorConfig(ner="regex", log_flagged=False))


def payload(event_id: str, answer: str, question: str = "What is the refund window?", **extra: Any) -> bytes:
    return orjson.dumps({"event_id": event_id, "tenant": "support", "question": question,
                         "context": ["Refunds are accepted within 14 days of purchase."], "answer": answer, **extra})


def test_one_result_per_payload_in_order_with_verdict_bytes_and_alerts(guard: Guard) -> None:
    batch = judge_payloads(guard, [
        payload("ok", "Refunds are accepted within 14 days of purchase.", produced_at=1_000),
        b"{not json",
        payload("lie", "Refunds are accepted within 30 days of purchase."),
        orjson.dumps({"event_id": "no-answer"}),
    ], {}, now_ms=42)
    ok, bad_json, lie, missing = batch.items
    assert ok.ok and ok.event_id == "ok" and ok.routing == "accept" and ok.produced_at_ms == 1_000
    verdict = orjson.loads(ok.verdict or b"")
    assert verdict["event_id"] == "ok" and verdict["question_hash"] == ok.question_hash
    assert ok.alerts == ()
    assert (bad_json.ok, bad_json.error_stage, bad_json.error_field) == (False, "decode", "$")
    assert "not valid JSON" in (bad_json.error_reason or "")
    assert lie.ok and [a.kind for a in lie.alerts] == ["critical_risk"]
    assert lie.alerts[0].created_at_ms == 42
    assert (missing.error_stage, missing.error_field) == ("decode", "answer")


def test_histories_go_in_and_come_out_as_stored_bytes(guard: Guard) -> None:
    key = question_hash("support", "What is the refund window?")
    first = judge_payloads(guard, [payload("a", "Refunds are accepted within 14 days of purchase.")], {})
    assert set(first.histories) == {key}
    stored = first.histories[key]
    assert len(load_history(stored)) == 1
    second = judge_payloads(guard, [payload("b", "Refunds are accepted within 14 days of purchase.")],
                            {key: stored})
    assert len(load_history(second.histories[key])) == 2


def test_unreadable_history_counts_as_none(guard: Guard) -> None:
    key = question_hash("support", "What is the refund window?")
    batch = judge_payloads(guard, [payload("c", "Refunds are accepted within 14 days of purchase.")],
                           {key: b"\xff not json"})
    assert batch.items[0].ok and len(load_history(batch.histories[key])) == 1
    assert load_history(b'{"not": "a list"}') == [] and load_history(None) == []
    assert load_history(b'[{"v": 1}, "junk"]') == [{"v": 1}]
    assert load_history(dump_history([{"v": 1}])) == [{"v": 1}]


class ChokingGuard:
    """A Guard whose batch call fails, and which fails again on one poisoned event."""

    def __init__(self, real: Guard) -> None:
        self.real = real
        self.config = real.config

    def evaluate_batch(self, events: Any, histories: Any) -> Any:
        if len(events) > 1 or events[0].event_id == "poison":
            raise RuntimeError("boom")
        return self.real.evaluate_batch(events, histories)


def test_a_core_failure_costs_only_the_event_that_caused_it(guard: Guard) -> None:
    batch = judge_payloads(ChokingGuard(guard), [  # type: ignore[arg-type]
        payload("before", "Refunds are accepted within 14 days of purchase."),
        payload("poison", "Refunds are accepted within 14 days of purchase."),
        payload("after", "Refunds are accepted within 14 days of purchase."),
    ], {})
    before, poison, after = batch.items
    assert before.ok and after.ok
    assert (poison.ok, poison.error_stage, poison.event_id) == (False, "judge", "poison")
    assert poison.error_reason == "RuntimeError: boom"
    # The history carried from "before" to "after" across the one-by-one retry.
    key = question_hash("support", "What is the refund window?")
    assert len(load_history(batch.histories[key])) == 2


def test_failed_batch() -> None:
    batch = failed_batch(3, "the judge process died")
    assert len(batch.items) == 3 and not any(item.ok for item in batch.items) and batch.histories == {}


def test_a_payload_keyed_by_another_question_is_handed_back_unjudged(guard: Guard) -> None:
    key = question_hash("support", "What is the refund window?")
    other = question_hash("support", "Who approves refunds?")
    batch = judge_payloads(guard, [
        payload("right", "Refunds are accepted within 14 days of purchase."),
        payload("wrong", "Refunds are accepted within 14 days of purchase."),
        b"{broken",
        payload("unclaimed", "Refunds are accepted within 14 days of purchase."),
    ], {}, claimed_keys=[key, other, other, None])
    right, wrong, broken, unclaimed = batch.items
    assert right.ok and unclaimed.ok
    # Not judged: its drift check would have read the other question's history.
    assert (wrong.ok, wrong.error_stage, wrong.error_field) == (False, "misrouted", "key")
    assert wrong.question_hash == key and wrong.event_id == "wrong"
    assert other in (wrong.error_reason or "") and key in (wrong.error_reason or "")
    assert broken.error_stage == "decode"  # a bad payload is bad wherever it was keyed
    # Only the two judged events entered the history.
    assert set(batch.histories) == {key} and len(load_history(batch.histories[key])) == 2


# --- isolation: whatever goes wrong with one event is that event's alone -------------------------------------


def other_tenants(n: int) -> list[bytes]:
    return [orjson.dumps({"event_id": f"t{i}", "tenant": f"tenant-{i}", "question": "What is the refund window?",
                          "context": ["Refunds are accepted within 14 days of purchase."],
                          "answer": "Refunds are accepted within 14 days of purchase."}) for i in range(n)]


def test_poison_payloads_cost_only_themselves(guard: Guard) -> None:
    deep = b'{"event_id": "deep", "answer": "a", "metadata": ' + b'{"a": ' * 300 + b"1" + b"}" * 300 + b"}"
    valid = other_tenants(4)
    batch = judge_payloads(guard, [valid[0], None, valid[1], deep, valid[2], b"", valid[3]],  # type: ignore[list-item]
                           {}, now_ms=1)
    assert [i.event_id for i in batch.items if i.ok] == ["t0", "t1", "t2", "t3"]
    failed = [(i.error_stage, i.error_field) for i in batch.items if not i.ok]
    assert failed == [("decode", "$"), ("decode", "metadata"), ("decode", "$")]


def test_a_verdict_that_cannot_be_serialised_fails_alone(guard: Guard, monkeypatch: pytest.MonkeyPatch) -> None:
    from stream_guard.wire import verdict as verdict_module

    to_json = verdict_module.Verdict.to_json

    def broken_for_t1(self: Any) -> bytes:
        if self.event_id == "t1":
            return verdict_module._ENCODER.encode({"unserialisable": object()})
        return to_json(self)

    monkeypatch.setattr(verdict_module.Verdict, "to_json", broken_for_t1)
    batch = judge_payloads(guard, other_tenants(3), {}, now_ms=1)
    assert [(i.event_id, i.ok) for i in batch.items] == [("t0", True), ("t1", False), ("t2", True)]
    assert batch.items[1].error_stage == "judge" and "could not be serialised" in (batch.items[1].error_reason or "")


def test_an_event_over_its_cpu_budget_times_out_alone_with_its_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    from stream_guard.engine.budget import CpuBudget

    guard = Guard(DetectorConfig(ner="regex", log_flagged=False))
    decide = guard._decide

    def slow_for_t1(event: Any, *args: Any) -> Any:
        while event.event_id == "t1":
            sum(range(1000))
        return decide(event, *args)

    monkeypatch.setattr(guard, "_decide", slow_for_t1)
    batch = judge_payloads(guard, other_tenants(3), {}, now_ms=1, budget=CpuBudget(40))
    assert [(i.event_id, i.error_stage) for i in batch.items] == [("t0", None), ("t1", "timeout"), ("t2", None)]
    slow = batch.items[1]
    assert slow.cost_ms is not None and slow.cost_ms >= 40
    assert slow.error_object()["cost_ms"] >= 40 and slow.error_object()["stage"] == "timeout"
    assert slow.error_object()["error"].startswith("$: timeout: spent")


def test_an_entity_pass_over_budget_is_retried_one_event_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from stream_guard.engine.budget import CpuBudget

    guard = Guard(DetectorConfig(ner="regex", log_flagged=False))
    with_entities = guard.detector.with_entities

    def slow_on_t1(inspections: Any) -> Any:
        while any(i.tenant == "tenant-1" for i in inspections):
            sum(range(1000))
        return with_entities(inspections)

    monkeypatch.setattr(guard.detector, "with_entities", slow_on_t1)
    batch = judge_payloads(guard, other_tenants(3), {}, now_ms=1, budget=CpuBudget(40))
    assert [(i.event_id, i.error_stage) for i in batch.items] == [("t0", None), ("t1", "timeout"), ("t2", None)]
