from __future__ import annotations

import random

import pytest

from stream_guard.scoring import score_model
from stream_guard.config.score_model import FEATURES, MONOTONE, ScoreModel, load_model, save_model
from stream_guard.scoring.score_model import Observation
from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.detector import HallucinationDetector
from stream_guard.engine.history import MemoryHistory
from stream_guard.text.inspection import Inspection
from stream_guard.config.score_model import DEFAULT_MODEL


def synthetic(n: int = 300, seed: int = 3) -> tuple[list[Observation], list[int], list[str]]:
    rng = random.Random(seed)
    obs, labels, groups = [], [], []
    for i in range(n):
        label = int(rng.random() < 0.4)
        ungrounded = min(1.0, max(0.0, rng.gauss(0.6 if label else 0.2, 0.2)))
        kind = rng.choice(["record", "question", "summary"])
        values = {"ungrounded_fraction": ungrounded, "novel_fraction": ungrounded * 0.5, "claims": 1.5,
                  "structured": float(kind == "record"), "has_question": float(kind == "question")}
        obs.append(Observation(values))
        labels.append(label)
        groups.append(f"doc{i // 6}")
    return obs, labels, groups


def test_the_shipped_model_is_data_that_round_trips():
    assert ScoreModel.from_dict(DEFAULT_MODEL.to_dict()) == DEFAULT_MODEL
    assert set(DEFAULT_MODEL.features) <= set(FEATURES)
    assert all(w >= 0 for f, w in zip(DEFAULT_MODEL.features, DEFAULT_MODEL.weights) if f in MONOTONE)


def test_a_model_file_is_read_back_and_bad_models_are_refused(tmp_path):
    path = tmp_path / "model.json"
    save_model(DEFAULT_MODEL, str(path))
    assert load_model(str(path)) == DEFAULT_MODEL
    with pytest.raises(ValueError, match="features but"):
        ScoreModel(("novel_fraction",), (1.0, 2.0), 0.0, {})
    with pytest.raises(ValueError, match="unknown feature"):
        ScoreModel(("shoe_size",), (1.0,), 0.0, {})


def test_fit_learns_the_separating_feature_and_places_the_operating_point():
    obs, labels, _ = synthetic()
    model = score_model.fit(obs, labels, keep_rate=0.9)
    weights = dict(zip(model.features, model.weights))
    assert weights["ungrounded_fraction"] > 0
    for kind in ("record", "question", "summary"):
        faithful = [o for o, y in zip(obs, labels) if not y and score_model.task_kind(o) == kind]
        kept = sum(score_model.score(o, model) < model.threshold for o in faithful) / len(faithful)
        assert kept >= 0.88  # every kind keeps at least keep_rate of its faithful answers (in sample)


def test_cross_validation_never_puts_a_group_on_both_sides():
    obs, labels, groups = synthetic()
    cv = score_model.cross_validate(obs, labels, groups, folds=5)
    for group in set(groups):
        assert len({f for f, g in zip(cv.fold, groups) if g == group}) == 1
    assert len(cv.models) == 5 and len(cv.scores) == len(obs)


def test_a_verdict_line_gives_the_same_observation_as_the_report():
    from stream_guard.engine.pipeline import Guard
    from stream_guard.wire.events import AnswerEvent

    guard = Guard(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=False))
    event = AnswerEvent("e", "Returns take 30 days, said Dr. Jane Roe.", "How long?", ("Returns take 14 days.",))
    verdict, _ = guard.evaluate(event)
    detector = HallucinationDetector(guard.config, history=MemoryHistory())
    report = detector.analyze(Inspection.build(event.question, event.context, event.answer), ())
    from_report = score_model.observation(report.checks, "confident_but_unfaithful" in report.triggered)
    from_verdict = score_model.observation_from_verdict(verdict.to_dict())
    assert from_verdict.signals == from_report.signals
    assert from_verdict.values == pytest.approx(from_report.values, abs=1e-3)
    assert score_model.score(from_verdict, DEFAULT_MODEL) == pytest.approx(verdict.hallucination_score, abs=1e-3)


def test_drift_counts_only_where_configured():
    obs = Observation({}, frozenset({"drift"}))
    assert score_model.score(obs, DEFAULT_MODEL) == 0.0
    assert score_model.score(obs, DEFAULT_MODEL, drift_counts=True) == pytest.approx(DEFAULT_MODEL.signals["drift"])


def test_every_kind_of_task_keeps_its_share_at_the_threshold():
    # Faithful summaries look far less grounded than faithful answers to questions (a different score
    # scale): one intercept would keep nearly all of one kind and flag many of the other.
    rng = random.Random(5)
    obs, labels = [], []
    for i in range(600):
        kind = ("question", "summary", "record")[i % 3]
        label = int(rng.random() < 0.4)
        shift = {"question": 0.0, "summary": 0.3, "record": 0.15}[kind]
        ungrounded = min(1.0, max(0.0, rng.gauss((0.6 if label else 0.2) + shift, 0.15)))
        obs.append(Observation({"ungrounded_fraction": ungrounded, "claims": 1.5, "structured": float(kind == "record"),
                                "has_question": float(kind == "question")}))
        labels.append(label)
    model = score_model.fit(obs, labels, keep_rate=0.85, threshold=0.4)
    for kind in ("question", "summary", "record"):
        faithful = [score_model.score(o, model) for o, y in zip(obs, labels) if not y and score_model.task_kind(o) == kind]
        kept = sum(s < 0.4 for s in faithful) / len(faithful)
        assert 0.83 <= kept <= 0.87, (kind, kept)


def test_a_claim_contradicting_a_record_is_a_hard_signal():
    checks = {"faithfulness": {"score": 0.8, "details": {"claims": 5, "structured": True, "field_conflicts": 1}}}
    obs = score_model.observation(checks, False)
    assert "record_conflict" in obs.signals
    assert score_model.score(obs, DEFAULT_MODEL) >= DEFAULT_MODEL.signals["record_conflict"]
    quiet = score_model.observation({"faithfulness": {"score": 0.8, "details": {"claims": 5, "structured": True}}}, False)
    assert "record_conflict" not in quiet.signals


def test_a_model_naming_a_retired_feature_still_loads():
    data = {**DEFAULT_MODEL.to_dict(), "features": ["novel_count"], "weights": [0.5]}
    model = ScoreModel.from_dict(data)
    assert model.grounding_probability({"novel_count": 2.0}) > model.grounding_probability({"novel_count": 0.0})
