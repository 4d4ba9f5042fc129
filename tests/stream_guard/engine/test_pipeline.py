import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.events import AnswerEvent
from stream_guard.engine.history import MemoryHistory
from stream_guard.engine.pipeline import EVENT_TAG, EventFailure, Guard, remember
from stream_guard.text.questions import question_hash

from scenarios import BILLING, CLEAN, FABRICATED_CITATION, PRICE_DRIFTED, PRICE_STABLE, RETURN_POLICY, price_event


@pytest.fixture(scope="module")
def guard():
    return Guard(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=False))


def test_confident_lie_is_patched_from_the_source(guard):
    verdict, record = guard.evaluate(RETURN_POLICY)
    assert verdict.risk == "critical" and verdict.routing == "healed_accept"
    assert "14 days" in verdict.delivered_answer and "30 days" not in verdict.delivered_answer
    assert verdict.healing.strategy == "contradiction_patch"
    assert any(c.before == "30 days" and c.after == "14 days" for c in verdict.healing.changes)
    assert record is not None  # the healed answer was delivered, so it enters drift history


def test_fabricated_researchers_never_reach_the_user(guard):
    verdict, _ = guard.evaluate(FABRICATED_CITATION)
    assert verdict.flagged and verdict.risk in ("high", "critical")
    assert "Harrison" not in verdict.delivered_answer and "2204.09876" not in verdict.delivered_answer
    kinds = {s.type for s in verdict.hallucinated_statements}
    assert "fabricated_entity" in kinds


def test_billing_contradiction_is_patched_and_cycle_normalized(guard):
    verdict, _ = guard.evaluate(BILLING)
    assert verdict.routing == "healed_accept"
    # The contradicted sentence is patched; "cancel at any time" is in no source, so it does not stay.
    assert verdict.delivered_answer == ("The Pro plan costs $120 per year, billed annually. Note: removed what the "
                                        "sources do not support: a statement.")


def test_price_drift_after_stable_history_is_caught_and_rewritten(guard):
    history = []
    for i in range(4):
        verdict, record = guard.evaluate(price_event(f"p{i}", PRICE_STABLE), history)
        assert verdict.routing == "accept"
        history.append(record)
    verdict, _ = guard.evaluate(price_event("p-drift", PRICE_DRIFTED), history)
    assert verdict.checks.drift.flagged and verdict.risk == "critical"
    assert "$49.99" in verdict.delivered_answer and "$39.99" not in verdict.delivered_answer


def test_clean_answer_passes_unchanged(guard):
    verdict, record = guard.evaluate(CLEAN)
    assert (verdict.routing, verdict.risk, verdict.flagged) == ("accept", "low", False)
    assert verdict.delivered_answer == CLEAN.answer and not verdict.changed
    assert record is not None


def test_only_delivered_answers_enter_history(guard):
    # A rejected answer repeated many times must never become the norm the next answer is compared with.
    bad = AnswerEvent(event_id="b", question="Q?", context=("Refunds are processed in 5 business days.",),
                      answer="Refunds are instant and we also give a free iPhone from Apple Inc. to every customer.")
    history: list = []
    for _ in range(5):
        verdict, record = guard.evaluate(bad, history)
        if verdict.routing in ("fallback", "discard"):
            assert record is None
        else:
            assert record is not None and verdict.delivered_answer != bad.answer
            history.append(record)
    assert all("iphone" not in str(item).lower() for item in history)


def test_batch_threads_history_between_events_on_the_same_question(guard):
    events = [price_event(f"b{i}", PRICE_STABLE) for i in range(4)] + [price_event("b-drift", PRICE_DRIFTED)]
    verdicts, updated = guard.evaluate_batch(events, {})
    assert [v.routing for v in verdicts[:4]] == ["accept"] * 4
    assert verdicts[4].checks.drift.flagged and "drift" not in verdicts[4].triggered  # reported, not deciding
    key = question_hash("default", events[0].question)
    assert list(updated) == [key] and len(updated[key]) == 5


def test_batch_respects_window_and_returns_only_changed_keys():
    guard = Guard(DetectorConfig(db_path=":memory:", ner="regex", window_size=3, log_flagged=False))
    verdicts, updated = guard.evaluate_batch([price_event(f"w{i}", PRICE_STABLE) for i in range(5)], {"other": []})
    assert len(verdicts) == 5 and "other" not in updated
    assert all(len(v) == 3 for v in updated.values())


def test_one_failing_event_does_not_sink_the_batch(guard, monkeypatch):
    original = guard._decide

    def flaky(event, inspection, history):
        if event.event_id == "boom":
            raise RuntimeError("bug in a check")
        return original(event, inspection, history)

    monkeypatch.setattr(guard, "_decide", flaky)
    verdicts, _ = guard.evaluate_batch([CLEAN, AnswerEvent(event_id="boom", answer="x"), CLEAN], {})
    assert isinstance(verdicts[1], EventFailure) and "bug in a check" in verdicts[1].error
    assert verdicts[0].routing == verdicts[2].routing == "accept"


def test_process_reads_and_updates_a_history_store(guard):
    store = MemoryHistory()
    guard.process(CLEAN, store)
    assert len(store.get(question_hash(CLEAN.tenant, CLEAN.question))) == 1


def test_verdict_serializes_every_field_consumers_rely_on(guard):
    verdict, _ = guard.evaluate(BILLING)
    body = verdict.to_dict()
    for key in ("event_id", "tenant", "flagged", "hallucination_score", "risk", "routing", "delivered_answer",
                "original_answer", "hallucinated_statements", "verified_statements", "checks", "healing",
                "latency_ms", "question_hash"):
        assert key in body
    assert set(body["checks"]) == {"confidence", "faithfulness", "contradiction", "entities", "citations",
                                   "relevance", "drift"}
    assert verdict.to_json().startswith(b"{")


def test_drift_alone_is_reported_but_a_grounded_answer_is_not_rewritten(guard):
    # Three delivered answers say one thing; a fourth, fully grounded in the same context, says another.
    context = ("Standard shipping takes 5 business days. Express shipping takes 2 business days.",)
    first = "Standard shipping takes 5 business days."
    other = "Express shipping takes 2 business days."
    history = []
    for i in range(3):
        _, record = guard.evaluate(AnswerEvent(event_id=f"s{i}", question="How long is shipping?",
                                               context=context, answer=first), history)
        history.append(record)
    verdict, _ = guard.evaluate(AnswerEvent(event_id="s-new", question="How long is shipping?",
                                            context=context, answer=other), history)
    assert verdict.checks.drift.flagged and verdict.risk == "medium"
    assert verdict.routing == "accept" and verdict.delivered_answer == other


def test_answers_without_a_question_never_share_drift_history(guard):
    # Summaries carry no question: different documents' summaries must not be compared with each other.
    events = [AnswerEvent(event_id=f"sum{i}", question="", context=(f"Report {i}: revenue grew {i + 3}%.",),
                          answer=f"Revenue grew {i + 3}%.") for i in range(6)]
    verdicts, updated = guard.evaluate_batch(events, {})
    assert all(not v.checks.drift.flagged and "drift" not in v.triggered for v in verdicts)
    # They neither read nor join a history, so they share no state at all (stream_guard/engine/pool.py spreads
    # them over processes freely, and the drift table keeps no hot "empty question" key).
    assert updated == {}
    assert all(v.checks.drift.details["history"] == 0 for v in verdicts)


def test_a_redelivered_event_counts_once_in_history_and_is_judged_as_the_first_time(guard):
    history = []
    for i in range(3):
        _, record = guard.evaluate(price_event(f"s{i}", PRICE_STABLE), history)
        history.append(record)
    drifted = price_event("late", PRICE_DRIFTED)
    key = question_hash(drifted.tenant, drifted.question)
    (first,), after_first = guard.evaluate_batch([drifted], {key: history})
    # The same event again (a redelivery after a crash, or a replayed topic) with the history it left.
    (again,), after_again = guard.evaluate_batch([drifted], {key: after_first[key]})
    assert len(after_first[key]) == 4 and after_again[key] == after_first[key]
    assert first.checks.drift.flagged
    assert msgspec.structs.replace(again.checks.drift, latency_ms=0.0) == msgspec.structs.replace(first.checks.drift, latency_ms=0.0)
    # History records carry a digest of the event id, never the id itself.
    assert all("late" not in str(value) for value in after_first[key][-1].values())


def test_process_does_not_append_a_redelivered_event_twice(guard):
    store = MemoryHistory()
    guard.process(CLEAN, store)
    guard.process(CLEAN, store)
    assert len(store.get(question_hash(CLEAN.tenant, CLEAN.question))) == 1


def test_a_rewrite_from_crawled_chunks_falls_back_and_the_verdict_says_why(guard):
    # The only source text is a crawl artefact (a chunk cut mid-word, sentences glued): nothing clean to rebuild
    # the answer from, so the user gets the fallback message and the verdict says why.
    context = ("ost of tiling a bathroom floor runs about $800.Prices rise with mosaic tiles and labour.",)
    event = AnswerEvent(event_id="crawl", question="How much does tiling a bathroom floor cost?", context=context,
                        answer="Tiling a bathroom floor costs $25,000 and Dr. Tile Master guarantees it for life.")
    verdict, _ = guard.evaluate(event)
    assert verdict.flagged and verdict.routing == "fallback"
    assert verdict.delivered_answer == guard.config.fallback_message
    assert verdict.reason is not None and verdict.reason.code == "hallucination"
    assert "clean prose" in verdict.reason.detail or "would not read like the answer" in verdict.reason.detail


@given(st.lists(st.sampled_from("abcdef"), max_size=8), st.sampled_from("abcdefg"), st.integers(-1, 6))
def test_remember_appends_a_new_event_bounded_and_an_event_it_holds_not_again(tags, tag, window):
    history = [{EVENT_TAG: t, "n": i} for i, t in enumerate(tags)]
    record = {EVENT_TAG: tag, "n": -1}
    kept = remember(history, record, window)
    assert kept is not history and history == [{EVENT_TAG: t, "n": i} for i, t in enumerate(tags)]
    assert kept == (history if tag in tags else (history + [record])[-max(1, window):])


def test_a_verdict_scores_its_quality_once_of_the_answer_it_delivers(guard, monkeypatch):
    from stream_guard.engine import pipeline

    compute = pipeline.QualityScore.compute
    calls = []
    monkeypatch.setattr(pipeline.QualityScore, "compute",
                        lambda *a, **k: calls.append(a[1] if len(a) > 1 else None) or compute(*a, **k))
    for event, repaired in ((RETURN_POLICY, True), (CLEAN, False)):
        calls.clear()
        verdict, _ = guard.evaluate(event)
        assert len(calls) == 1 and (calls[0] is not None) == repaired
        assert verdict.quality.basis == ("healed" if repaired else "original")
