"""bench/seed_trust.py: the seed library's score and signals beside ours, within one generating model."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import seed_trust  # noqa: E402


def row(rid: str, model: str, label: int, task: str = "QA") -> dict:
    return {"id": rid, "label": label, "task_type": task, "meta": {"model": model}}


def seed_of(score: float = 0.1, contradiction: str = "", faithfulness: float = 1.0, confidence: float = 0.6) -> dict:
    return {"score": score, "contradiction": contradiction, "entities": [], "faithfulness": faithfulness,
            "confidence": confidence, "risk": "low"}


def test_the_seeds_score_is_one_minus_its_quality_and_its_reason_names_the_contradiction():
    view = seed_trust.seed_view({"contradiction_reason": "Numeric contradiction: answer uses '60' ...",
                                 "hallucinated_entities": ["Acme (org)"], "faithfulness_score": 0.5,
                                 "confidence_score": 0.8, "risk_level": "critical"}, quality=0.35)
    assert view["score"] == 0.65
    assert seed_trust.SIGNALS["numeric contradiction"](view) == 1.0
    assert seed_trust.SIGNALS["entity absent"](view) == 1.0
    assert seed_trust.SIGNALS["ungrounded claim"](view) == 1.0
    assert seed_trust.SIGNALS["negation flip"](view) == 0.0


def test_within_model_ranks_each_models_answers_among_themselves():
    # Model a's answers all score above model b's: pooled, b's hallucinated answer ranks below a's faithful ones,
    # but within each model every hallucinated answer ranks first.
    rows = [row("a0", "a", 0), row("a1", "a", 1), row("b0", "b", 0), row("b1", "b", 1)]
    scores = {"a0": 0.6, "a1": 0.9, "b0": 0.1, "b1": 0.3}
    within = seed_trust.within_model(rows, lambda r: scores[r["id"]])
    assert within == {"by_model": {"a": 1.0, "b": 1.0}, "macro": 1.0}
    assert seed_trust.auc(rows, lambda r: scores[r["id"]]) == 0.75


def test_a_signal_adds_to_ours_only_where_it_orders_what_ours_leaves_tied():
    rows = [row("f1", "m", 0), row("f2", "m", 0), row("h1", "m", 1), row("h2", "m", 1)]
    ours = {"f1": 0.3, "f2": 0.3, "h1": 0.3, "h2": 0.8}
    seed = {"f1": seed_of(), "f2": seed_of(), "h1": seed_of(contradiction="Numeric contradiction: x"), "h2": seed_of()}
    added = seed_trust.added_to_ours(rows, ours, seed, seed_trust.SIGNALS["numeric contradiction"], weights=(0.05,))
    assert added == {"0.0": 0.75, "0.05": 1.0}
    same = seed_trust.added_to_ours(rows, ours, seed, seed_trust.SIGNALS["negation flip"], weights=(0.05,))
    assert same == {"0.0": 0.75, "0.05": 0.75}


def test_signal_rates_count_hallucinated_and_faithful_answers_apart():
    rows = [row("f1", "m", 0), row("f2", "m", 0), row("h1", "m", 1)]
    seed = {"f1": seed_of(faithfulness=0.5), "f2": seed_of(), "h1": seed_of(faithfulness=0.0)}
    rates = seed_trust.signal_rates(rows, seed, seed_trust.SIGNALS["ungrounded claim"])
    assert rates == {"hallucinated": 1.0, "faithful": 0.5, "rows": [1, 2]}


def test_a_hallucinated_answer_the_seed_places_higher_among_its_models_faithful_answers_is_listed():
    rows = [row("f1", "m", 0), row("f2", "m", 0), row("h1", "m", 1), row("h2", "m", 1)]
    ours = {"f1": 0.5, "f2": 0.6, "h1": 0.2, "h2": 0.9}
    seed = {"f1": seed_of(0.1), "f2": seed_of(0.1), "h1": seed_of(0.4, "Numeric contradiction: y"), "h2": seed_of(0.4)}
    listed = seed_trust.seed_ranks_higher(rows, ours, seed, {"h1": []})["m"]
    assert [(item["id"], item["ours"], item["seed"]) for item in listed] == [("h1", 0.0, 1.0)]
    assert listed[0]["seed_signals"] == ["numeric contradiction"]
