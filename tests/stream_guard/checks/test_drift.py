from __future__ import annotations

import pytest

from stream_guard.checks.drift import DriftCheck, consensus
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.fingerprint import fingerprint
from stream_guard.engine.history import MemoryHistory, SQLiteHistory
from stream_guard.text.inspection import Inspection
from stream_guard.text.questions import question_hash

QUESTION = "What is the price of SKU-441?"
CONTEXT = ["Product SKU-441 is priced at $49.99 with free shipping."]
STABLE = "SKU-441 is priced at $49.99 with free shipping."
DRIFTED = "SKU-441 currently costs $39.99. Standard rates apply."


def inspect(answer: str, question: str = QUESTION) -> Inspection:
    return Inspection.build(question, CONTEXT, answer)


@pytest.fixture
def check() -> DriftCheck:
    return DriftCheck(DetectorConfig())


class Monitor:
    """What a caller does: evaluate against the store, then record the answer (as inspect() would)."""

    def __init__(self, check: DriftCheck, store) -> None:
        self.check, self.store = check, store

    def record(self, question: str, answer: str):
        key = question_hash("default", question)
        result = self.check.evaluate(inspect(answer, question), self.store.get(key))
        self.store.append(key, fingerprint(answer), 50)
        return result


def test_name_and_run_without_history(check):
    result = check.run(inspect(DRIFTED))
    assert check.name == "drift" and result.name == "drift"
    assert not result.flagged and result.score == 0.0


def test_no_drift_on_first_answer(check):
    result = Monitor(check, MemoryHistory()).record(QUESTION, STABLE)
    assert not result.flagged
    assert result.score == 0.0


def test_no_drift_on_consistent_answers(check):
    monitor = Monitor(check, MemoryHistory())
    results = [monitor.record(QUESTION, STABLE) for _ in range(6)]
    assert not any(r.flagged for r in results)
    assert results[-1].score == 0.0


def test_drift_after_meaningful_change(check):
    monitor = Monitor(check, MemoryHistory())
    for _ in range(5):
        monitor.record(QUESTION, STABLE)
    result = monitor.record(QUESTION, DRIFTED)
    assert result.flagged
    assert result.score > 0.35
    assert result.details["numbers"] == ["39.99"]
    assert result.details["consensus_numbers"] == ["49.99"]


def test_needs_minimum_history_before_it_fires(check):
    history = [fingerprint(STABLE)] * 2
    assert not check.evaluate(inspect(DRIFTED), history).flagged
    assert check.evaluate(inspect(DRIFTED), history + [fingerprint(STABLE)]).flagged


def test_minimum_history_is_configurable():
    check = DriftCheck(DetectorConfig(drift_min_history=1))
    assert check.evaluate(inspect(DRIFTED), [fingerprint(STABLE)]).flagged


def test_different_questions_do_not_interfere(check):
    monitor = Monitor(check, MemoryHistory())
    other_q, other_a = "What is the return policy?", "Returns are accepted within 14 days."
    for _ in range(5):
        monitor.record(QUESTION, STABLE)
        monitor.record(other_q, other_a)
    assert not monitor.record(QUESTION, STABLE).flagged
    assert not monitor.record(other_q, other_a).flagged


def test_persistence_across_store_instances(check, tmp_path):
    path = tmp_path / "drift.db"
    first = SQLiteHistory(path)
    for _ in range(5):
        Monitor(check, first).record(QUESTION, "The price is $49.99 with free shipping included.")
    first.close()
    fresh = SQLiteHistory(path)
    result = Monitor(DriftCheck(DetectorConfig()), fresh).record(QUESTION, "Currently the price is $29.99. Shipping not included.")
    fresh.close()
    assert result.flagged


def test_clear_resets_history(check):
    store = MemoryHistory()
    monitor = Monitor(check, store)
    for _ in range(5):
        monitor.record(QUESTION, STABLE)
    store.clear(question_hash("default", QUESTION))
    assert not monitor.record(QUESTION, DRIFTED).flagged


def test_only_the_last_compare_window_counts():
    check = DriftCheck(DetectorConfig(drift_compare_last=10))
    # Old regime far outside the window, the window itself is all the new regime.
    history = [fingerprint(STABLE)] * 30 + [fingerprint(DRIFTED)] * 10
    result = check.evaluate(inspect(DRIFTED), history)
    assert not result.flagged
    assert result.details["compared"] == 10


def test_one_odd_answer_in_the_window_does_not_make_normal_answers_drift(check):
    history = [fingerprint(STABLE)] * 6 + [fingerprint(DRIFTED)]
    result = check.evaluate(inspect(STABLE), history)
    assert not result.flagged
    assert result.score < 0.1


def test_similarity_floor_fires_even_under_a_lenient_threshold():
    lenient = DriftCheck(DetectorConfig(drift_threshold=0.99, drift_similarity_floor=0.65))
    history = [fingerprint(STABLE)] * 5
    result = lenient.evaluate(inspect(DRIFTED), history)
    assert result.flagged
    assert result.details["reason"] == "mean similarity below floor"


def test_stricter_threshold_flags_smaller_changes():
    history = [fingerprint("Returns are accepted within 14 days of purchase in original packaging.")] * 5
    answer = "You can return items within 14 days if they are in the original box."
    default = DriftCheck(DetectorConfig()).evaluate(inspect(answer), history)
    strict = DriftCheck(DetectorConfig(drift_threshold=0.05, drift_similarity_floor=0.0)).evaluate(inspect(answer), history)
    assert not default.flagged
    assert strict.flagged
    assert strict.score == pytest.approx(default.score)


def test_blank_answer_is_not_drift(check):
    assert not check.evaluate(inspect("   "), [fingerprint(STABLE)] * 5).flagged


def test_consensus_excludes_the_outlier():
    window = [fingerprint(STABLE)] * 4 + [fingerprint(DRIFTED)]
    agreed = consensus(window, 0.35)
    assert len(agreed) == 4
    assert all(fp["numbers"] == ["49.99"] for fp in agreed)


def test_each_history_fingerprint_is_converted_once_across_events(check, monkeypatch):
    from stream_guard.text import fingerprint as fingerprint_module

    convert = fingerprint_module.features
    converted = []
    monkeypatch.setattr(fingerprint_module, "features", lambda fp: converted.append(fp) or convert(fp))
    history = [fingerprint(STABLE) for _ in range(4)]
    first = check.evaluate(inspect(STABLE), history)
    second = check.evaluate(inspect(DRIFTED), list(history))  # the next event: a new list of the same records
    assert len(converted) == len(history) and all(a is b for a, b in zip(converted, history))
    assert first.details["compared"] == second.details["compared"] == len(history)
    assert second.flagged and not first.flagged


def test_a_window_of_repeated_answers_is_measured_once_per_distinct_answer(check, monkeypatch):
    from stream_guard.checks import drift as drift_module
    from stream_guard.text.fingerprint import features, features_distance

    history = [fingerprint(STABLE), fingerprint(DRIFTED)] * 3 + [fingerprint(STABLE)]
    mine = features(fingerprint(STABLE))
    check.evaluate(inspect(STABLE), history)  # the window's own consensus, measured (and kept) once
    measured = []
    monkeypatch.setattr(drift_module, "features_distance",
                        lambda a, b: measured.append(b) or features_distance(a, b))
    result = check.evaluate(inspect(STABLE), history)
    assert len(measured) == 2  # STABLE's features and DRIFTED's, not seven comparisons
    distances = [features_distance(mine, features(fp)) for fp in history]
    assert result.details["mean_similarity"] == round(sum(1.0 - d for d in distances) / len(distances), 4)


def test_a_repair_reads_the_consensus_numbers_its_event_read(check, monkeypatch):
    from stream_guard.checks import drift as drift_module

    counted = drift_module._numbers
    calls = []
    monkeypatch.setattr(drift_module, "_numbers", lambda fps: calls.append(fps) or counted(fps))
    history = [fingerprint(STABLE) for _ in range(4)]
    event = inspect(DRIFTED)
    first = check.evaluate(event, history)
    repair = check.evaluate(event.with_answer(STABLE), history)  # a re-inspection: the event's memo, its history
    assert len(calls) == 1
    assert first.details["consensus_numbers"] == repair.details["consensus_numbers"] == ["49.99"]
    assert first.details["consensus_numbers"] is not repair.details["consensus_numbers"]  # each verdict its own
