import math

import pytest

from stream_guard.ops.evaluation import confusion, precision_at_recall, roc_auc


def test_auc_is_one_for_perfect_ranking_and_half_for_constant_scores():
    assert roc_auc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert roc_auc([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1]) == 0.0
    assert roc_auc([0.5] * 4, [0, 1, 0, 1]) == 0.5


def test_auc_matches_pairwise_definition_with_ties():
    scores = [0.1, 0.4, 0.4, 0.35, 0.8, 0.2]
    labels = [0, 1, 0, 1, 1, 0]
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    pairwise = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
    assert roc_auc(scores, labels) == pytest.approx(pairwise)


def test_auc_undefined_without_both_classes():
    assert math.isnan(roc_auc([0.2, 0.3], [1, 1]))


def test_confusion_precision_recall_f1():
    m = confusion([True, True, False, False, True], [1, 0, 1, 0, 1])
    assert (m.tp, m.fp, m.tn, m.fn) == (2, 1, 1, 1)
    assert m.precision == pytest.approx(2 / 3)
    assert m.recall == pytest.approx(2 / 3)
    assert m.f1 == pytest.approx(2 / 3)
    assert m.false_positive_rate == pytest.approx(0.5)


def test_precision_at_recall_picks_best_threshold_reaching_recall():
    scores = [0.9, 0.8, 0.7, 0.6, 0.5]
    labels = [1, 0, 1, 0, 1]
    assert precision_at_recall(scores, labels, 1.0) == pytest.approx(3 / 5)
    assert precision_at_recall(scores, labels, 0.3) == pytest.approx(1.0)


# --- backtest metrics, against a hand-computed example ----------------------------------------------------

from stream_guard.ops.evaluation import LabelledDecision, decision_metrics, pr_curve, roc_curve  # noqa: E402

# score, flagged, label, accepted unchanged, delivered unchanged
HAND = [LabelledDecision(*row) for row in [
    (0.9, True, 1, False, False),   # caught
    (0.8, True, 0, False, False),   # a faithful answer rewritten: a false positive
    (0.6, True, 1, False, False),   # caught
    (0.3, False, 1, True, True),    # missed: delivered as it was
    (0.2, False, 0, True, True),
    (0.1, False, 0, True, True),
]]


def test_decision_metrics_match_the_hand_computed_example():
    m = decision_metrics(HAND)
    assert (m["n"], m["hallucinated"], m["faithful"]) == (6, 3, 3)
    assert (m["tp"], m["fp"], m["tn"], m["fn"]) == (2, 1, 2, 1)
    assert m["precision"] == m["recall"] == m["f1"] == 0.6667          # 2/3 each
    assert m["roc_auc"] == 0.7778                                        # 7 of 9 (hallucinated, faithful) pairs in order
    # Every recall target needs all three hallucinated answers: threshold 0.3 flags 4, 3 of them right.
    assert m["precision_at_recall"] == {"0.80": 0.75, "0.90": 0.75, "0.95": 0.75}
    assert m["faithful_kept"] == 0.6667                                  # 2 of 3 faithful accepted unchanged
    assert m["hallucinated_caught"] == 0.6667                            # 2 of 3 hallucinated not delivered as is


def test_a_group_with_one_class_leaves_the_metrics_it_cannot_have_empty():
    m = decision_metrics([d for d in HAND if d.label == 0])
    assert m["roc_auc"] is None and m["recall"] is None and m["hallucinated_caught"] is None
    assert all(v is None for v in m["precision_at_recall"].values())
    assert m["faithful_kept"] == 0.6667 and m["precision"] == 0.0


def test_roc_and_pr_curves_step_through_every_threshold():
    scores, labels = [d.score for d in HAND], [d.label for d in HAND]
    roc = roc_curve(scores, labels)
    assert [(round(f, 4), round(t, 4)) for f, t, _ in roc] == [
        (0, 0), (0, 0.3333), (0.3333, 0.3333), (0.3333, 0.6667), (0.3333, 1), (0.6667, 1), (1, 1)]
    pr = pr_curve(scores, labels)
    assert [(round(r, 4), round(p, 4)) for r, p, _ in pr][:4] == [(0.3333, 1), (0.3333, 0.5), (0.6667, 0.6667),
                                                                  (1, 0.75)]
    assert roc_curve(scores, [0] * 6) == [] and pr_curve(scores, [0] * 6) == []
