import orjson

from stream_guard.wire.events import Chunk
from stream_guard.wire.labels import Label
from stream_guard.ops.monitoring.ledger import expired_seen, seen_key
from stream_guard.ops.monitoring.review import grade_record, join, label_record, review_item, sampled_record


def test_a_grade_joins_its_sample_in_either_order_and_a_regrade_goes_through_again():
    sampled = orjson.loads(sampled_record("acme", 2900, "e1"))
    label = orjson.loads(label_record(Label("e1", 1, "ana", "wrong date")))
    index, grade = join(None, sampled)
    assert grade is None and orjson.loads(index) == {"tenant": "acme", "week": 2900}
    unchanged, grade = join(index, label)
    assert unchanged is None and grade == grade_record("acme", 2900, {"event_id": "e1", "label": 1, "grader": "ana",
                                                                      "note": "wrong date"})
    # The label first (a grader quicker than our own record): kept pending, joined when the sample arrives.
    pending, grade = join(None, label)
    assert grade is None and "pending" in orjson.loads(pending)
    index, grade = join(pending, sampled)
    assert grade["tenant"] == "acme" and grade["label"] == 1 and orjson.loads(index)["week"] == 2900


def test_a_review_item_has_what_a_grader_needs_and_cuts_long_context_saying_so():
    verdict = {"event_id": "e1", "tenant": "acme", "question": "Refund window?", "delivered_answer": "14 days.",
               "original_answer": "30 days.", "routing": "healed_accept", "risk": "high", "produced_at_ms": 5,
               "hallucinated_statements": [{"type": "contradiction", "statement": "30 days."}] * 30,
               "healing": {"strategy": "contradiction_patch", "changes": [{"from": "30", "to": "14"}]},
               "checks": {"faithfulness": {"score": 0.5, "flagged": True, "details": {"claims": 2}}}}
    item = review_item(verdict, [Chunk("p1", "Refunds within 14 days. " * 200), Chunk("p2", "Short.")], 2900, 1000)
    assert (item["question"], item["delivered_answer"], item["original_answer"]) == ("Refund window?", "14 days.", "30 days.")
    assert item["week"] == "2025-W31" and len(item["findings"]) == 20
    assert len(item["context"][0]["text"]) == 500 and item["context"][0]["truncated_from_chars"] == 4800
    assert item["context"][1] == {"id": "p2", "text": "Short."}
    assert item["checks"] == {"faithfulness": {"score": 0.5, "flagged": True}}
    assert review_item({}, [], 2900, 100)["findings"] == []  # nothing required


def test_the_sweep_takes_expired_seen_keys_in_order_and_stops_where_everything_is_kept():
    keys = sorted([seen_key(d, t, f"{t}{d}") for d in range(10, 20) for t in ("a", "b", "ghost")])
    expired = list(expired_seen(iter(keys), {"a": 15, "b": 12}))
    assert {k for k in expired} == {seen_key(d, "a", f"a{d}") for d in range(10, 15)} | {
        seen_key(d, "b", f"b{d}") for d in range(10, 12)}
    assert list(expired_seen(iter(keys), {})) == []
    consumed = []

    def counting():
        for key in keys:
            consumed.append(key)
            yield key

    list(expired_seen(counting(), {"a": 11, "b": 11}))
    assert len(consumed) == 3 * 1 + 1  # day 10's three keys, then the first of day 11 ends the sweep
