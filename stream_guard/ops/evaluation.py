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


def _descending_counts(scores: Sequence[float], labels: Sequence[int]) -> list[tuple[float, int, int]]:
    """(threshold, true positives, false positives) at each distinct score, from the highest down: what
    flagging `score >= threshold` catches."""
    if len(scores) != len(labels):
        raise ValueError("scores and labels differ in length")
    pairs = sorted(zip(scores, labels), key=lambda p: -p[0])
    out: list[tuple[float, int, int]] = []
    tp = fp = 0
    i = 0
    while i < len(pairs):
        threshold = pairs[i][0]
        while i < len(pairs) and pairs[i][0] == threshold:
            tp += 1 if pairs[i][1] else 0
            fp += 0 if pairs[i][1] else 1
            i += 1
        out.append((threshold, tp, fp))
    return out


def roc_curve(scores: Sequence[float], labels: Sequence[int]) -> list[tuple[float, float, float]]:
    """(false positive rate, true positive rate, threshold) from (0, 0) to (1, 1); empty with one class."""
    positives = sum(1 for y in labels if y)
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        return []
    points = [(0.0, 0.0, float("inf"))]
    points += [(fp / negatives, tp / positives, t) for t, tp, fp in _descending_counts(scores, labels)]
    return points


def pr_curve(scores: Sequence[float], labels: Sequence[int]) -> list[tuple[float, float, float]]:
    """(recall, precision, threshold) for each distinct threshold, highest first; empty without positives."""
    positives = sum(1 for y in labels if y)
    if positives == 0:
        return []
    return [(tp / positives, tp / (tp + fp), t) for t, tp, fp in _descending_counts(scores, labels)]


RECALL_TARGETS = (0.80, 0.90, 0.95)


@dataclass(frozen=True)
class LabelledDecision:
    """What the guard did with one labelled answer (label 1 = hallucinated)."""

    score: float
    flagged: bool
    label: int
    # Routed accept with the original answer delivered: a faithful answer "kept".
    accepted_unchanged: bool
    # The original answer reached the user (accept or healed_accept without a change): not "caught".
    delivered_unchanged: bool


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def _finite(value: float) -> float | None:
    return None if value != value else round(value, 4)  # NaN (one class only) is "undefined": null


def decision_metrics(decisions: Sequence[LabelledDecision]) -> dict[str, object]:
    """The label metrics of a backtest report for one group of decisions. A metric that needs a class the
    group lacks (ROC AUC with one class, recall without hallucinated answers, ...) is None, never invented."""
    scores = [d.score for d in decisions]
    labels = [d.label for d in decisions]
    positives = sum(labels)
    negatives = len(labels) - positives
    m = confusion([d.flagged for d in decisions], labels)
    return {
        "n": len(decisions),
        "hallucinated": positives,
        "faithful": negatives,
        "roc_auc": _finite(roc_auc(scores, labels)) if decisions else None,
        "precision": round(m.precision, 4) if m.tp + m.fp else None,
        "recall": round(m.recall, 4) if positives else None,
        "f1": round(m.f1, 4) if positives else None,
        "tp": m.tp, "fp": m.fp, "tn": m.tn, "fn": m.fn,
        "precision_at_recall": {
            f"{target:.2f}": _finite(precision_at_recall(scores, labels, target)) for target in RECALL_TARGETS
        },
        "faithful_kept": _share(sum(1 for d in decisions if not d.label and d.accepted_unchanged), negatives),
        "hallucinated_caught": _share(sum(1 for d in decisions if d.label and not d.delivered_unchanged),
                                      positives),
    }
