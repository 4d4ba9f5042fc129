from __future__ import annotations

import random

import msgspec
import pytest

from stream_guard.config.detector import DetectorConfig
from stream_guard.config.score_model import DEFAULT_MODEL, EVIDENCE, ScoreModel, load_model, save_model
from stream_guard.engine.detector import HallucinationDetector
from stream_guard.engine.history import MemoryHistory
from stream_guard.ops.evaluation import roc_auc
from stream_guard.scoring import score_model
from stream_guard.scoring.score_model import Observation
from stream_guard.text.inspection import Inspection


def observe(kind: str, ungrounded: float, claims: float = 1.5, confidence: float = 0.5, signals: frozenset[str] = frozenset()
            ) -> Observation:
    values = {"ungrounded_fraction": ungrounded, "novel_fraction": ungrounded * 0.5, "claims": claims,
              "confidence": confidence, "structured": float(kind == "record"), "has_question": float(kind != "summary")}
    return Observation(values, signals, kind, score_model.has_finding(values))


def synthetic(n: int = 300, seed: int = 3) -> tuple[list[Observation], list[int], list[str]]:
    rng = random.Random(seed)
    obs, labels, groups = [], [], []
    for i in range(n):
        label = int(rng.random() < 0.4)
        ungrounded = min(1.0, max(0.01, rng.gauss(0.6 if label else 0.2, 0.2)))
        obs.append(observe(rng.choice(["record", "question", "summary"]), ungrounded))
        labels.append(label)
        groups.append(f"doc{i // 6}")
    return obs, labels, groups


def test_the_shipped_model_is_data_that_round_trips():
    assert ScoreModel.from_dict(DEFAULT_MODEL.to_dict()) == DEFAULT_MODEL
    assert set(DEFAULT_MODEL.evidence) <= set(EVIDENCE)
    assert all(w >= 0 for w in DEFAULT_MODEL.weights)


def test_a_model_file_is_read_back_and_bad_models_are_refused(tmp_path):
    path = tmp_path / "model.json"
    save_model(DEFAULT_MODEL, str(path))
    assert load_model(str(path)) == DEFAULT_MODEL
    good = DEFAULT_MODEL.to_dict()
    with pytest.raises(ValueError, match="evidence features but"):
        ScoreModel.from_dict({**good, "evidence": ["novel_fraction"]})
    with pytest.raises(ValueError, match="unknown evidence feature"):
        ScoreModel.from_dict({**good, "evidence": ["shoe_size"], "weights": [1.0]})
    with pytest.raises(ValueError, match="must be >= 0"):
        ScoreModel.from_dict({**good, "evidence": ["novel_fraction"], "weights": [-1.0]})
    with pytest.raises(ValueError, match="unknown task kind"):
        ScoreModel.from_dict({**good, "offsets": {"poem": 0.0}})


def test_a_model_file_from_before_version_2_is_refused_with_what_to_do():
    old = {"features": ["novel_fraction"], "weights": [1.0], "intercept": -2.0, "signals": {}}
    with pytest.raises(ValueError, match="refit it with `stream-guard calibrate`"):
        ScoreModel.from_dict(old)


def test_style_never_moves_the_score():
    # How many claims, how assertive: the same evidence scores the same, and no evidence is the offset alone...
    calm = {"claims": 0.7, "confidence": 0.1, "novel_fraction": 0.3}
    loud = {"claims": 4.0, "confidence": 1.0, "novel_fraction": 0.3}
    for kind in ("summary", "question", "short", "record"):
        assert DEFAULT_MODEL.logit(loud, kind) == DEFAULT_MODEL.logit(calm, kind)
        assert DEFAULT_MODEL.logit({"claims": 4.0, "confidence": 1.0}, kind) == DEFAULT_MODEL.offset(kind)
    # ... and an answer with no finding gets no soft evidence at all, so nothing can flag it.
    obs = Observation({**loud, "has_question": 1.0}, frozenset(), "question", finding=False)
    assert score_model.score(obs, DEFAULT_MODEL) == 0.0
    assert score_model.signal_probabilities(obs, DEFAULT_MODEL) == {}


def test_more_evidence_never_lowers_the_score():
    base = {"ungrounded_fraction": 0.2, "novel_fraction": 0.1, "claims": 1.5, "confidence": 0.5}
    for name in DEFAULT_MODEL.evidence:
        more = {**base, name: base.get(name, 0.0) + 0.5}
        for kind in ("summary", "question", "short", "record"):
            assert DEFAULT_MODEL.grounding_probability(more, kind) >= DEFAULT_MODEL.grounding_probability(base, kind)


def test_the_task_kind_is_read_from_the_event():
    kind = score_model.task_kind
    assert kind({"structured": 1.0, "has_question": 1.0, "claim_count": 1}, 3) == "record"
    assert kind({"has_question": 0.0, "claim_count": 1}, 5) == "summary"
    assert kind({"has_question": 1.0, "claim_count": 1}, 4) == "short"
    assert kind({"has_question": 1.0, "claim_count": 1}, score_model.SHORT_ANSWER_WORDS + 1) == "question"
    assert kind({"has_question": 1.0, "claim_count": 3}, 20) == "question"


def test_a_short_paraphrase_around_a_stated_value_is_not_flagged_for_its_wording():
    context = ["Our return policy allows returns within 14 days of purchase."]
    detector = HallucinationDetector(DetectorConfig(db_path=":memory:", ner="regex"), history=MemoryHistory())
    assert not detector.inspect("How long is the return window?", context,
                                "Returns are accepted within 14 days of purchase.").flagged
    assert detector.inspect("Which sport did they play?", ["Jack Sock is a professional tennis player."],
                            "Jack Sock played squash.").flagged
    # A two-hop yes joins two source sentences: no single one states it whole, and nothing in it is unsupported.
    assert not detector.inspect("Were both Joseph Roth and Cid Corman authors?",
                                ["Joseph Roth was an Austrian journalist and novelist, the author of many books.",
                                 "Cid Corman was an American poet, translator and editor, and an author."], "yes").flagged


def test_a_short_paraphrase_around_a_time_or_frequency_the_source_states_is_not_flagged_for_its_wording():
    detector = HallucinationDetector(DetectorConfig(db_path=":memory:", ner="regex"), history=MemoryHistory())
    term = ["Term. This Agreement commences on March 1, 2026 and, unless terminated earlier, ends on February 28, 2027."]
    billing = ["The Business plan is billed annually in advance."]
    assert not detector.inspect("How is the Business plan billed?", billing,
                                "The Business plan is billed once a year, in advance.").flagged
    hours = ["Pharmacy hours: weekdays 8:00 am to 9:00 pm; Saturday 9:00 am to 6:00 pm; Sunday 10:00 am to 4:00 pm."]
    assert not detector.inspect("When does the pharmacy open on weekends?", hours,
                                "On Saturday the pharmacy opens at 9 am and on Sunday at 10 am.").flagged
    # a value the source does not state is still a finding, and a date with another year is flagged
    assert detector.inspect("When does the pharmacy open on weekends?", hours,
                            "On Saturday the pharmacy opens at 7 am and on Sunday at 10 am.").flagged
    assert detector.inspect("When does the agreement end?", term,
                            "The agreement runs from 1 March 2026 to 28 February 2028.").flagged
    # a date names an event, and which event is the claim: one word of its own around it is still a finding
    assert detector.inspect("When did the agreement end?", term, "The agreement was signed on March 1, 2026.").flagged


def test_fit_learns_the_separating_feature_and_places_the_operating_point():
    obs, labels, _ = synthetic()
    model = score_model.fit(obs, labels, keep_rate=0.9)
    weights = dict(zip(model.evidence, model.weights))
    assert weights["ungrounded_fraction"] > 0 or weights["novel_fraction"] > 0
    for kind in ("record", "question", "summary"):
        faithful = [o for o, y in zip(obs, labels) if not y and o.kind == kind]
        kept = sum(score_model.score(o, model) < model.threshold for o in faithful) / len(faithful)
        assert kept >= 0.88  # every kind keeps at least keep_rate of its faithful answers (in sample)


def test_short_answers_get_their_own_offset_and_do_not_fit_the_weights():
    obs, labels, _ = synthetic()
    rng = random.Random(9)
    # Short answers whose scale is nothing like the long ones': were they fitted, the weights would follow them.
    short = [observe("short", min(1.0, rng.gauss(0.9, 0.05)) if i % 2 else 0.02) for i in range(200)]
    short_labels = [i % 2 for i in range(200)]
    with_short = score_model.fit(obs + short, labels + short_labels, keep_rate=0.9)
    without = score_model.fit(obs, labels, keep_rate=0.9)
    assert with_short.weights == pytest.approx(without.weights) and "short" in with_short.offsets
    faithful = [o for o, y in zip(short, short_labels) if not y]
    assert sum(score_model.score(o, with_short) < with_short.threshold for o in faithful) / len(faithful) >= 0.88


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
    from_report = score_model.observation(report.checks, "confident_but_unfaithful" in report.triggered, event.answer)
    from_verdict = score_model.observation_from_verdict(verdict.to_dict())
    assert from_verdict.signals == from_report.signals
    assert (from_verdict.kind, from_verdict.finding) == (from_report.kind, from_report.finding)
    assert from_verdict.values == pytest.approx(from_report.values, abs=1e-3)
    assert score_model.score(from_verdict, DEFAULT_MODEL) == pytest.approx(verdict.hallucination_score, abs=1e-3)


def test_drift_counts_only_where_configured():
    obs = Observation({}, frozenset({"drift"}), finding=False)
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
        obs.append(observe(kind, min(1.0, max(0.01, rng.gauss((0.6 if label else 0.2) + shift, 0.15)))))
        labels.append(label)
    model = score_model.fit(obs, labels, keep_rate=0.85, threshold=0.4)
    for kind in ("question", "summary", "record"):
        faithful = [score_model.score(o, model) for o, y in zip(obs, labels) if not y and o.kind == kind]
        kept = sum(s < 0.4 for s in faithful) / len(faithful)
        assert 0.83 <= kept <= 0.87, (kind, kept)


def test_a_claim_contradicting_a_record_is_a_hard_signal():
    checks = {"faithfulness": {"score": 0.8, "details": {"claims": 5, "structured": True, "field_conflicts": 1}}}
    obs = score_model.observation(checks, False)
    assert "record_conflict" in obs.signals and obs.kind == "record"
    assert score_model.score(obs, DEFAULT_MODEL) >= DEFAULT_MODEL.signals["record_conflict"]
    quiet = score_model.observation({"faithfulness": {"score": 0.8, "details": {"claims": 5, "structured": True}}}, False)
    assert "record_conflict" not in quiet.signals


def test_a_kind_the_model_was_not_fitted_for_borrows_the_nearest_offset():
    model = msgspec.structs.replace(DEFAULT_MODEL, offsets={"question": -1.5, "summary": -2.0})
    assert model.offset("short") == -1.5 and model.offset("record") == -1.5


def test_short_answers_keep_their_share_of_all_faithful_answers_not_only_of_those_with_a_finding():
    # Faithful short extractive answers mostly copy their source (no finding at all); a hallucinated one names
    # something no source mentions. Counted over every faithful short answer, the offset flags the least
    # supported answers with a finding while keep_rate of all the faithful ones remain.
    obs, labels, _ = synthetic()
    rng = random.Random(11)
    faithful = [observe("short", 0.0) for _ in range(180)] + [observe("short", rng.uniform(0.3, 0.9)) for _ in range(20)]
    hallucinated = [observe("short", rng.uniform(0.3, 1.0)) for _ in range(200)]
    model = score_model.fit(obs + faithful + hallucinated, labels + [0] * 200 + [1] * 200, keep_rate=0.9)
    kept = sum(score_model.score(o, model) < model.threshold for o in faithful) / len(faithful)
    caught = sum(score_model.score(o, model) >= model.threshold for o in hallucinated) / len(hallucinated)
    assert 0.9 <= kept < 0.92 and caught >= 0.9
    # Long answers are unchanged by it: their offsets count their answers with a finding only.
    without = score_model.fit(obs, labels, keep_rate=0.9)
    assert {k: v for k, v in model.offsets.items() if k != "short"} == pytest.approx(without.offsets)


def test_the_default_penalty_ranks_unseen_answers_better_when_the_evidence_overlaps():
    # The twelve evidence features the penalty was chosen on are shares and counts of the same findings: each
    # measures a little of what the others do. On a few hundred answers a light penalty lets some take weights that
    # rank the training rows and not new ones; the default penalty (score_model.DEFAULT_L2, chosen by grouped CV)
    # ranks held-out answers better. (The draw is over those twelve: a feature added later stays 0 here.)
    rng = random.Random(1)
    obs, labels, groups = [], [], []
    for i in range(120):
        label = int(rng.random() < 0.45)
        shared = rng.gauss(0.45 if label else 0.3, 0.2)
        values = {name: max(0.0, shared + rng.gauss(0, 0.3)) for name in EVIDENCE[:12]}
        obs.append(Observation({**values, "has_question": 1.0}, frozenset(), "question", True))
        labels.append(label)
        groups.append(f"doc{i // 3}")
    light = score_model.cross_validate(obs, labels, groups, l2=1.0)
    default = score_model.cross_validate(obs, labels, groups)
    assert roc_auc(default.scores, labels) > roc_auc(light.scores, labels) + 0.01


@pytest.mark.parametrize("answer", ["no [1]", "## Answer\n\nno", "**Answer:** no", "no (Source: passage 1)",
                                    "no [Read more](https://kb.example.com/articles/1)"])
def test_a_bare_reply_in_markup_is_judged_as_the_bare_reply(answer):
    # Evidence about how the question's proposition spreads over the sources is no finding for a bare reply
    # (short_finding); markers, a heading, a label or a link around the reply must not make it a longer answer.
    from stream_guard.engine.pipeline import Guard
    from stream_guard.wire.events import AnswerEvent

    guard = Guard(DetectorConfig(db_path=":memory:", ner="regex", log_flagged=False))
    question = "Are Clarence Brown and Peter Glenville of the same nationality?"
    context = ("Clarence Brown was an American film director.", "Peter Glenville was an English theatre and film director.")
    plain, _ = guard.evaluate(AnswerEvent("plain", "no", question, context))
    marked, _ = guard.evaluate(AnswerEvent("marked", answer, question, context))
    assert score_model.observation_from_verdict(marked.to_dict()).kind == score_model.SHORT
    assert marked.hallucination_score == pytest.approx(plain.hallucination_score, abs=1e-6)
    assert (marked.flagged, marked.routing) == (plain.flagged, plain.routing)
