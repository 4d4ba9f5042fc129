"""Detection-quality metrics for labelled events: ROC AUC, precision/recall/F1, precision at recall.

Pure functions over (score, label) pairs; used by bench/detection_quality.py and by backtests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve by the rank-sum (Mann-Whitney U) formula; ties count one half."""
    if len(scores) != len(labels):
        raise ValueError("scores and labels differ in length")
    positives = sum(1 for y in labels if y)
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        average_rank = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = average_rank
        i = j + 1
    rank_sum = sum(r for r, y in zip(ranks, labels) if y)
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


@dataclass(frozen=True)
class BinaryMetrics:
    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def false_positive_rate(self) -> float:
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else 0.0

    def to_dict(self) -> dict[str, float]:
        return {
            "tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn,
            "precision": round(self.precision, 4), "recall": round(self.recall, 4), "f1": round(self.f1, 4),
            "false_positive_rate": round(self.false_positive_rate, 4),
        }


def confusion(predicted: Sequence[bool], labels: Sequence[int]) -> BinaryMetrics:
    tp = sum(1 for p, y in zip(predicted, labels) if p and y)
    fp = sum(1 for p, y in zip(predicted, labels) if p and not y)
    fn = sum(1 for p, y in zip(predicted, labels) if not p and y)
    tn = len(labels) - tp - fp - fn
    return BinaryMetrics(tp, fp, tn, fn)


def precision_at_recall(scores: Sequence[float], labels: Sequence[int], recall: float) -> float:
    """Best precision among thresholds whose recall reaches `recall` (seed 004's Prec@R)."""
    positives = sum(1 for y in labels if y)
    if positives == 0:
        return float("nan")
    pairs = sorted(zip(scores, labels), key=lambda p: -p[0])
    best, tp, seen = 0.0, 0, 0
    i = 0
    while i < len(pairs):
        threshold = pairs[i][0]
        while i < len(pairs) and pairs[i][0] == threshold:
            tp += pairs[i][1]
            seen += 1
            i += 1
        if tp / positives >= recall:
            best = max(best, tp / seen)
    return best
