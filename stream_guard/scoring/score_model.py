"""The hallucination-score model: its features, its weights as data, and how to fit it.

`hallucination_score` is a noisy-OR of two kinds of evidence:

- hard signals (a contradiction with a quoted source, a fabricated entity or citation, confident but
  unfaithful, context irrelevant to the question): each contributes a fixed probability, its measured
  precision, so one alone is enough to flag;
- soft evidence: a logistic model over `FEATURES`, all read from the checks' details (how much of the
  answer the context supports, claims that contradict a structured record, the kind of task). Its weights
  and intercept are fitted on labelled data.

The model is plain data (`ScoreModel`: feature names, weights, intercept, signal probabilities, the flag
threshold it is meant to be used with), serialisable with `to_dict` / `from_dict`, so `stream-guard
calibrate` (calibration.py) can refit it on a platform's own labelled traffic and a config can point at the
result (`DetectorConfig.score_model_path`). The shipped model, models/score_model.json, is written by
`stream-guard calibrate --write-default`; its `threshold` is the default `flag_threshold`.

Fitting (`fit`, `cross_validate`) needs numpy and is never on the judging path. `fit` places an offset per
kind of task (summary, question, record) so that the fitted operating point, where `keep_rate` of that
kind's faithful training answers score below it, falls exactly on `threshold` (calibrate fits at 0.40,
then moves the threshold only as far as the full guard needs to deliver its keep share, and records the
result in `threshold`).

Inputs come either from live check results or from a verdict's JSON (`observation_from_verdict`), so a
benchmark can refit and cross-validate from what `stream-guard check` wrote.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from stream_guard.config.score_model import (FEATURES, MONOTONE, RETIRED_FEATURES, ScoreModel)

_CAP = 4.0


# ── observations: what the model reads from one judged answer ───────────────────────────────────────


@dataclass(frozen=True)
class Observation:
    """One judged answer as the model sees it: soft feature values and the active hard signals."""

    values: Mapping[str, float]
    signals: frozenset[str] = frozenset()

    def vector(self, features: Sequence[str] = FEATURES) -> list[float]:
        return [self.values.get(name, 0.0) for name in features]


def _part(check: Any, key: str, default: Any = None) -> Any:
    if check is None:
        return default
    if isinstance(check, Mapping):
        return check.get(key, default)
    return getattr(check, key, default)


def _detail(check: Any, key: str, default: float = 0.0) -> float:
    details = _part(check, "details", {}) or {}
    value = details.get(key, default)
    if isinstance(value, (list, tuple)):
        return float(len(value))
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _kinds(check: Any) -> set[str]:
    findings = _part(check, "findings", ()) or ()
    return {str(_part(f, "kind", "")) for f in findings}


def feature_values(checks: Mapping[str, Any]) -> dict[str, float]:
    """The soft features of one answer from its checks (CheckResult objects or their JSON dicts)."""
    faith = checks.get("faithfulness")
    claims = _detail(faith, "claims")
    structured = 1.0 if _detail(faith, "structured") else 0.0
    question = 1.0 if _detail(faith, "has_question") else 0.0
    confidence = float(_part(checks.get("confidence"), "score", 0.5) or 0.5)
    values = {name: 0.0 for name in FEATURES + RETIRED_FEATURES}
    values.update(structured=structured, has_question=question, confidence=confidence)
    if claims <= 0:
        return values
    ungrounded = 1.0 - float(_part(faith, "score", 1.0))
    novel = _detail(faith, "novel_fraction")
    log_claims = math.log1p(claims)
    novel_count = math.log1p(_detail(faith, "novel_stems"))
    summary = (1.0 - question) * (1.0 - structured)
    values.update(
        ungrounded_fraction=ungrounded,
        novel_fraction=novel,
        weakest_claim=1.0 - _detail(faith, "min_best_sentence_overlap", 1.0),
        novel_count=novel_count,
        novel_count_answers=(1.0 - summary) * novel_count,
        unsupported_figures=min(_detail(faith, "missing_numbers"), _CAP),
        field_conflicts=min(_detail(faith, "field_conflicts"), _CAP),
        schedule_conflicts=min(_detail(faith, "wrong_times") + _detail(faith, "wrong_days"), _CAP),
        empty_fields=min(_detail(faith, "empty_fields") + _detail(faith, "unstated_fields"), _CAP),
        mean_weakness=1.0 - _detail(faith, "mean_best_sentence_overlap", 1.0),
        claims=log_claims,
        structured_novel=structured * novel,
        summary_novel=summary * novel,
        structured_claims=structured * log_claims,
        structured_ungrounded=structured * ungrounded,
    )
    return values


def active_signals(checks: Mapping[str, Any], confident_but_unfaithful: bool) -> frozenset[str]:
    """The hard signals that fired. Irrelevant context counts only for an answer that asserts something
    (seed 002: a refusal over off-topic chunks is the right behaviour)."""
    out: set[str] = set()
    if _part(checks.get("contradiction"), "flagged", False):
        out.add("contradiction")
    faith = checks.get("faithfulness")
    if _detail(faith, "field_conflicts") + _detail(faith, "wrong_times") + _detail(faith, "wrong_days") > 0:
        out.add("record_conflict")
    if _part(checks.get("entities"), "flagged", False):
        out.add("fabricated_entity")
    citations = checks.get("citations")
    if _part(citations, "flagged", False):
        out.add("fabricated_citation" if "fabricated_citation" in _kinds(citations) else "wrong_chunk_citation")
    if confident_but_unfaithful:
        out.add("confident_but_unfaithful")
    if _part(checks.get("relevance"), "flagged", False) and _detail(checks.get("faithfulness"), "claims") > 0:
        out.add("irrelevant_context")
    if _part(checks.get("drift"), "flagged", False):
        out.add("drift")
    return frozenset(out)


def observation(checks: Mapping[str, Any], confident_but_unfaithful: bool) -> Observation:
    return Observation(feature_values(checks), active_signals(checks, confident_but_unfaithful))


def observation_from_verdict(verdict: Mapping[str, Any]) -> Observation:
    """The observation a verdict line (`Verdict.to_dict()`, as `stream-guard check` writes it) records."""
    triggered = set(verdict.get("triggered") or ())
    return observation(verdict.get("checks") or {}, "confident_but_unfaithful" in triggered)


def signal_probabilities(
    obs: Observation, model: "ScoreModel", *, drift_counts: bool = False, contradiction_strength: float = 1.0
) -> dict[str, float]:
    """Each active signal with its probability, plus `weak_grounding` (the soft evidence) when above 0."""
    out: dict[str, float] = {}
    for name in obs.signals:
        if name == "drift" and not drift_counts:
            continue  # drift reports that an answer changed, not that it is unfaithful
        p = model.signals.get(name, 0.0)
        if name == "contradiction":
            p *= contradiction_strength
        if p > 0:
            out[name] = p
    grounding = model.grounding_probability(obs.values)
    if grounding > 0 and any(obs.values.get(f, 0.0) for f in ("ungrounded_fraction", "novel_fraction", "claims")):
        out["weak_grounding"] = grounding
    return out


def noisy_or(probabilities: Mapping[str, float]) -> float:
    survive = 1.0
    for p in probabilities.values():
        survive *= 1.0 - min(max(p, 0.0), 1.0)
    return min(max(1.0 - survive, 0.0), 1.0)


def score(obs: Observation, model: "ScoreModel", *, drift_counts: bool = False) -> float:
    return noisy_or(signal_probabilities(obs, model, drift_counts=drift_counts))


# ── fitting ──────────────────────────────────────────────────────────────────────────────────────────

DEFAULT_SIGNALS: Mapping[str, float] = {
    "contradiction": 0.92,
    # A claim saying the opposite of a record's yes-no field, or hours the record does not have: on RAGTruth
    # data-to-text it fires on 55 of 114 hallucinated answers and 1 of 66 faithful ones.
    "record_conflict": 0.90,
    "fabricated_entity": 0.80,
    "fabricated_citation": 0.85,
    "wrong_chunk_citation": 0.60,
    "confident_but_unfaithful": 0.70,
    "irrelevant_context": 0.35,
    "drift": 0.30,
}


def task_kind(obs: Observation) -> str:
    """What kind of task an answer is, from its own features: a record (data-to-text), a question (QA) or
    neither (a summary). Fitting balances the classes within each kind, so one threshold treats them alike."""
    if obs.values.get("structured"):
        return "record"
    return "question" if obs.values.get("has_question") else "summary"


def _balanced_weights(observations: Sequence[Observation], labels: Sequence[int]) -> list[float]:
    """Row weights giving each class half the weight of its task kind: the model then learns what
    separates faithful from hallucinated answers, not how often each kind of task is hallucinated."""
    counts: dict[tuple[str, bool], int] = {}
    for o, label in zip(observations, labels):
        key = (task_kind(o), bool(label))
        counts[key] = counts.get(key, 0) + 1
    kinds: dict[str, int] = {}
    for (kind, _), n in counts.items():
        kinds[kind] = kinds.get(kind, 0) + n
    return [
        kinds[task_kind(o)] / (2.0 * counts[(task_kind(o), bool(label))]) for o, label in zip(observations, labels)
    ]


def _logistic(x: Any, y: Any, l2: float, sample_weight: Any = None, steps: int = 60) -> Any:
    """L2-regularised, weighted logistic regression by Newton's method; the bias (column 0) is not shrunk."""
    import numpy as np

    x1 = np.hstack([np.ones((len(x), 1)), x])
    sw = np.ones(len(x)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    w = np.zeros(x1.shape[1])
    reg = l2 * np.eye(x1.shape[1])
    reg[0, 0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(x1 @ w, -60, 60)))
        gradient = x1.T @ (sw * (p - y)) + reg @ w
        hessian = x1.T @ (x1 * (sw * p * (1 - p))[:, None]) + reg
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def fit(
    observations: Sequence[Observation],
    labels: Sequence[int],
    *,
    features: Sequence[str] = FEATURES,
    l2: float = 1.0,
    keep_rate: float = 0.90,
    threshold: float = 0.40,
    signals: Mapping[str, float] = DEFAULT_SIGNALS,
    balance: bool = True,
    fitted_on: str = "",
) -> ScoreModel:
    """Fit the soft-evidence weights on labelled observations (1 = hallucinated) and place each task kind's
    offset so that `keep_rate` of its faithful answers the hard signals leave alone score below `threshold`
    (`_place_cuts`)."""
    import numpy as np

    if len(observations) != len(labels) or not observations:
        raise ValueError("fit: need as many labels as observations, and at least one")
    x = np.array([o.vector(features) for o in observations], dtype=float)
    y = np.array([1.0 if label else 0.0 for label in labels])
    # Fit, then hold at zero every weakness feature that came out negative, and refit without it.
    weights = _balanced_weights(observations, labels) if balance else None
    kept = list(range(len(features)))
    while True:
        w_kept = _logistic(x[:, kept], y, l2, weights)
        negative = [k for k, j in enumerate(kept) if features[j] in MONOTONE and w_kept[k + 1] < 0]
        if not negative:
            break
        kept = [j for k, j in enumerate(kept) if k not in negative]
    w = np.zeros(len(features) + 1)
    w[0] = w_kept[0]
    for k, j in enumerate(kept):
        w[j + 1] = w_kept[k + 1]
    w = _place_cuts(w, list(features), x, observations, labels, keep_rate, threshold)
    return ScoreModel(
        features=tuple(features),
        weights=tuple(float(v) for v in w[1:]),
        intercept=float(w[0]),
        signals=dict(signals),
        threshold=threshold,
        keep_rate=keep_rate,
        l2=l2,
        balanced=balance,
        fitted_on=fitted_on,
    )


# Where each kind of task gets its own offset: summaries through the intercept, answers to a question
# through `has_question`, records through `structured` (in that order, each placed after the ones before).
_KIND_OFFSETS: tuple[tuple[str, str | None], ...] = (("summary", None), ("question", "has_question"),
                                                     ("record", "structured"))


def _place_cuts(w: Any, features: list[str], x: Any, observations: Sequence[Observation], labels: Sequence[int],
                keep_rate: float, threshold: float) -> Any:
    """Offsets so that, in every kind of task, `keep_rate` of the faithful answers that no hard signal flags
    score below `threshold`: no kind pays for another's base rate or score scale, and one threshold means
    the same share kept in each. A kind without such answers, or whose offset feature the model lacks,
    shares the offset placed before it."""
    import numpy as np

    w = w.copy()
    target = _logit(threshold)
    q = min(max(keep_rate, 0.0), 1.0)
    for kind, knob in _KIND_OFFSETS:
        free = [i for i, o in enumerate(observations)
                if not labels[i] and not (o.signals - {"drift"}) and task_kind(o) == kind]
        if not free:
            continue
        shift = target - float(np.quantile(w[0] + x[free] @ w[1:], q))
        if knob is None:
            w[0] += shift
        elif knob in features:
            w[features.index(knob) + 1] += shift
    return w


def group_folds(groups: Sequence[str], folds: int = 5, seed: int = 7) -> list[int]:
    """A fold number per row such that every row of a group (a document, a question) is in one fold."""
    distinct = sorted(set(groups))
    random.Random(seed).shuffle(distinct)
    fold_of = {g: i % folds for i, g in enumerate(distinct)}
    return [fold_of[g] for g in groups]


@dataclass(frozen=True)
class CrossValidation:
    """Out-of-fold scores: each row scored by a model fitted without its group."""

    scores: list[float]
    flagged: list[bool]
    fold: list[int]
    models: list[ScoreModel] = field(default_factory=list)


def cross_validate(
    observations: Sequence[Observation],
    labels: Sequence[int],
    groups: Sequence[str],
    *,
    folds: int = 5,
    seed: int = 7,
    **fit_options: Any,
) -> CrossValidation:
    """Refit per fold, never with a held-out group on the training side, and score the held-out rows."""
    fold = group_folds(groups, folds, seed)
    scores = [0.0] * len(observations)
    flagged = [False] * len(observations)
    models: list[ScoreModel] = []
    for k in range(folds):
        train = [i for i, f in enumerate(fold) if f != k]
        held = [i for i, f in enumerate(fold) if f == k]
        if not train or not held:
            continue
        model = fit([observations[i] for i in train], [labels[i] for i in train], **fit_options)
        models.append(model)
        for i in held:
            scores[i] = score(observations[i], model)
            flagged[i] = scores[i] >= model.threshold
    return CrossValidation(scores, flagged, fold, models)


