import math

import pytest

from stream_guard.evaluation import confusion, precision_at_recall, roc_auc


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
