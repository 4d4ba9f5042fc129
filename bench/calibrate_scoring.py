"""Fit the soft-grounding weights of stream_guard/scoring.py on labelled data, with cross-validation.

The hard signals (contradiction, fabricated entity, ...) keep their fixed probabilities; this fits only the
logistic curve over the grounding features, by L2-regularised logistic regression (Newton's method),
and reports 5-fold cross-validated ROC AUC of the *whole* score next to the in-sample figure, so the
README can quote the out-of-sample number. Prints the weights to paste into `SignalWeights`.

    .venv/bin/python bench/calibrate_scoring.py [--dataset ragtruth_dev] [--ner regex]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import load_events  # noqa: E402

from stream_guard.config import DetectorConfig  # noqa: E402
from stream_guard.detector import HallucinationDetector  # noqa: E402
from stream_guard.evaluation import confusion, roc_auc  # noqa: E402
from stream_guard.history import MemoryHistory  # noqa: E402
from stream_guard.inspection import Inspection  # noqa: E402
from stream_guard.scoring import (  # noqa: E402
    DEFAULT_WEIGHTS,
    GROUNDING_FEATURES,
    SignalWeights,
    grounding_features,
    hallucination_score,
    signal_probabilities,
)


def collect(name: str, ner: str) -> tuple[list, list[int], list[bool]]:
    detector = HallucinationDetector(DetectorConfig(db_path=":memory:", ner=ner, log_flagged=False),
                                     history=MemoryHistory())
    events = [e for e in load_events(name) if e.label is not None]
    inspections = detector.with_entities([Inspection.build(e.question, e.context, e.answer) for e in events])
    reports = [detector.analyze(i, ()) for i in inspections]
    cbu = ["confident_but_unfaithful" in r.triggered for r in reports]
    return [r.checks for r in reports], [int(e.label or 0) for e in events], cbu


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> np.ndarray:
    x1 = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x1.shape[1])
    reg = l2 * np.eye(x1.shape[1])
    reg[0, 0] = 0.0  # never shrink the bias
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-x1 @ w))
        gradient = x1.T @ (p - y) + reg @ w
        hessian = x1.T @ (x1 * (p * (1 - p))[:, None]) + reg
        w -= np.linalg.solve(hessian, gradient)
    return w


def weights_from(w: np.ndarray) -> SignalWeights:
    values = {"grounding_bias": float(w[0])}
    values.update({f"grounding_{n}": float(v) for n, v in zip(GROUNDING_FEATURES, w[1:])})
    return dataclasses.replace(DEFAULT_WEIGHTS, **values)


def scores(checks: list, cbu: list[bool], weights: SignalWeights) -> list[float]:
    return [hallucination_score(signal_probabilities(c, b, weights)) for c, b in zip(checks, cbu)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ragtruth_dev")
    parser.add_argument("--ner", default="regex", choices=("regex", "spacy"))
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    checks, labels, cbu = collect(args.dataset, args.ner)
    x = np.array([grounding_features(c) for c in checks])
    y = np.array(labels, dtype=float)
    print(f"current weights: AUC {roc_auc(scores(checks, cbu, DEFAULT_WEIGHTS), labels):.4f} (in-sample)")
    order = list(range(len(labels)))
    random.Random(7).shuffle(order)
    folds = [order[k :: args.folds] for k in range(args.folds)]
    cv_scores = [0.0] * len(labels)
    for held in folds:
        held_set = set(held)
        train = [i for i in order if i not in held_set]
        w = fit_logistic(x[train], y[train])
        fold_scores = scores([checks[i] for i in held], [cbu[i] for i in held], weights_from(w))
        for i, s in zip(held, fold_scores):
            cv_scores[i] = s
    w = fit_logistic(x, y)
    fitted = weights_from(w)
    print(f"fitted weights: AUC {roc_auc(scores(checks, cbu, fitted), labels):.4f} in-sample, "
          f"{roc_auc(cv_scores, labels):.4f} {args.folds}-fold cross-validated")
    print("F1 of flagged by threshold, on the cross-validated scores:")
    for threshold in (0.3, 0.35, 0.4, 0.45, 0.5):
        m = confusion([v >= threshold for v in cv_scores], labels)
        print(f"  {threshold:.2f}: P {m.precision:.3f} R {m.recall:.3f} F1 {m.f1:.3f}")
    print("SignalWeights(")
    print(f"    grounding_bias={w[0]:.2f},")
    for name, value in zip(GROUNDING_FEATURES, w[1:]):
        print(f"    grounding_{name}={value:.2f},")
    print(")")


if __name__ == "__main__":
    main()
