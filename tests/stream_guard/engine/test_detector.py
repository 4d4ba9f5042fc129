import pytest
from hypothesis import given, strategies as st

from stream_guard.checks.faithfulness import FaithfulnessCheck
from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.detector import HallucinationDetector
from stream_guard.engine.history import MemoryHistory
from stream_guard.text.fingerprint import event_fingerprint
from stream_guard.text.inspection import Entity, Inspection
from stream_guard.wire.report import Risk

from scenarios import CLEAN, PRICE_CONTEXT, PRICE_DRIFTED, PRICE_QUESTION, PRICE_STABLE, RETURN_POLICY
from verdicts import without_timings


@pytest.fixture(scope="module")
def detector():
    return HallucinationDetector(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=False),
                                 history=MemoryHistory())


@given(st.text(max_size=200), st.lists(st.text(max_size=300), max_size=4), st.text(max_size=400))
def test_no_input_crashes_and_every_score_stays_in_unit_interval(detector, question, context, answer):
    report = detector.analyze(Inspection.build(question, context, answer), ())
    assert 0.0 <= report.hallucination_score <= 1.0
    for check in report.checks.values():
        assert 0.0 <= check.score <= 1.0, check.name
    assert report.flagged == (report.hallucination_score >= detector.config.flag_threshold)


def test_only_unflagged_answers_are_remembered_for_drift():
    store = MemoryHistory()
    detector = HallucinationDetector(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=False),
                                     history=store)
    detector.inspect(RETURN_POLICY.question, RETURN_POLICY.chunk_texts, RETURN_POLICY.answer)
    detector.inspect(CLEAN.question, CLEAN.chunk_texts, CLEAN.answer)
    assert store.get(detector_key(RETURN_POLICY)) == []
    assert len(store.get(detector_key(CLEAN))) == 1


def detector_key(event):
    from stream_guard.text.questions import question_hash
    return question_hash(event.tenant, event.question)


def test_drift_fires_through_inspect_after_three_consistent_answers():
    detector = HallucinationDetector(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=False),
                                     history=MemoryHistory())
    context = [c.text for c in PRICE_CONTEXT]
    for _ in range(3):
        assert not detector.inspect(PRICE_QUESTION, context, PRICE_STABLE).drift_detected
    report = detector.inspect(PRICE_QUESTION, context, PRICE_DRIFTED)
    assert report.drift_detected and report.risk is Risk.CRITICAL


def test_batched_entities_give_the_same_report_as_one_at_a_time(detector):
    events = [RETURN_POLICY, CLEAN]
    inspections = [Inspection.build(e.question, e.context, e.answer) for e in events]
    batched = detector.with_entities(inspections)
    for inspection, pre in zip(inspections, batched):
        alone = detector.analyze(inspection, ())
        together = detector.analyze(pre, ())
        assert alone.hallucination_score == together.hallucination_score
        assert alone.hallucinated_statements == together.hallucinated_statements


def _repair_detector(monkeypatch) -> tuple[HallucinationDetector, list[str]]:
    """A fresh detector (its own repairs cache) and the answers its faithfulness check has run on."""
    ran: list[str] = []
    run = FaithfulnessCheck.run
    monkeypatch.setattr(FaithfulnessCheck, "run", lambda self, inspection: ran.append(inspection.answer)
                        or run(self, inspection))
    return HallucinationDetector(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=False),
                                 history=MemoryHistory()), ran


def _price(answer: str, tenant: str = "default", question: str = PRICE_QUESTION) -> Inspection:
    return Inspection.build(question, PRICE_CONTEXT, answer, tenant=tenant).with_entities(())


def test_a_recurring_repair_is_checked_once_and_reported_as_analyze_reports_it(monkeypatch):
    detector, ran = _repair_detector(monkeypatch)
    first = detector.analyze_repair(_price(PRICE_DRIFTED))
    again = detector.analyze_repair(_price(PRICE_DRIFTED))  # another event's inspection: its own memo
    assert ran == [PRICE_DRIFTED]
    fresh = detector.analyze(_price(PRICE_DRIFTED))
    assert without_timings(again.to_dict()) == without_timings(first.to_dict()) == without_timings(fresh.to_dict())


def test_a_repair_is_checked_again_when_anything_it_reads_differs(monkeypatch):
    detector, ran = _repair_detector(monkeypatch)
    detector.analyze_repair(_price(PRICE_DRIFTED))
    detector.analyze_repair(_price(PRICE_DRIFTED, tenant="other"))
    detector.analyze_repair(_price(PRICE_DRIFTED, question="What does SKU-1 cost now?"))
    detector.analyze_repair(_price(PRICE_DRIFTED).with_entities((Entity("Acme", "ORG"),)))
    detector.analyze_repair(_price(PRICE_STABLE))
    assert len(ran) == 5


def test_a_recurring_repair_is_judged_for_drift_against_its_own_history(monkeypatch):
    detector, _ = _repair_detector(monkeypatch)
    stable = _price(PRICE_STABLE)
    history = [event_fingerprint(stable, PRICE_STABLE)] * 3
    assert not detector.analyze_repair(_price(PRICE_DRIFTED)).drift_detected
    drifted = detector.analyze_repair(_price(PRICE_DRIFTED), history)
    assert drifted.drift_detected
    assert without_timings(drifted.to_dict()) == without_timings(detector.analyze(_price(PRICE_DRIFTED), history).to_dict())


def test_findings_are_listed_most_severe_first(detector):
    report = detector.analyze(Inspection.build(RETURN_POLICY.question, RETURN_POLICY.context, RETURN_POLICY.answer))
    assert report.hallucinated_statements[0].type.value == "contradiction"
    assert report.to_dict()["hallucinated_statements"][0]["source_value"] == "14 days"


def test_flagged_reports_are_logged_as_structured_warnings(caplog):
    detector = HallucinationDetector(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=True),
                                     history=MemoryHistory())
    with caplog.at_level("WARNING", logger="stream_guard"):
        detector.inspect(RETURN_POLICY.question, RETURN_POLICY.chunk_texts, RETURN_POLICY.answer)
    record = next(r for r in caplog.records if r.name == "stream_guard.detector")
    assert record.report["risk"] == "critical"
