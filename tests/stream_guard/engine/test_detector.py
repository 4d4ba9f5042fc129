import pytest
from hypothesis import given, strategies as st

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.detector import HallucinationDetector
from stream_guard.engine.history import MemoryHistory
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import Risk

from scenarios import CLEAN, PRICE_CONTEXT, PRICE_DRIFTED, PRICE_QUESTION, PRICE_STABLE, RETURN_POLICY


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
