"""The hallucination-score model: what it reads from one judged answer, how it scores it, and how it is fitted.

`hallucination_score` is a noisy-OR of two kinds of evidence, both findings the verdict names:

- hard signals (a contradiction with a quoted source, a claim against a record's field or hours, a fabricated
  entity or citation, confident but unfaithful, context irrelevant to the question): each contributes a fixed
  probability, its measured precision, so one alone can flag;
- soft evidence (`weak_grounding`): how much of the answer the context does not support (claims it does not
  ground, words no source mentions, figures it does not state, claims no single source sentence states). It
  counts only for an answer with at least one such finding (`Observation.finding`): with no finding, no soft
  evidence and no flag. Its probability is a logistic curve over

      offset[kind] + w . evidence,   w >= 0

  Nothing that tells one model's style from another's (how many claims, how long, how assertive) is a feature,
  so none can raise a score on its own; each kind of task (a summary, an answer to a question, a short
  extractive answer, a record described) has its own offset.

The model is plain data (config/score_model.py: ScoreModel), so `stream-guard calibrate` (ops/calibration.py) can
refit it on a platform's own labelled traffic and a config can point at the result
(`DetectorConfig.score_model_path`). The shipped model, models/score_model.json, is written by
`stream-guard calibrate --write-default`; its `threshold` is the default `flag_threshold`.

Fitting (`fit`, `cross_validate`) needs numpy and is never on the judging path. The weights are fitted on the
answers of every kind but short ones (short extractive answers would teach long answers' weights what a one-line
answer looks like); then each kind's offset is placed so that `keep_rate` of its faithful answers that no hard
signal flags score below `threshold` (calibrate fits at 0.40, then moves the threshold only as far as the full
guard needs to deliver its keep share, and records the result in `threshold`).

Inputs come either from live check results or from a verdict's JSON (`observation_from_verdict`), so a
benchmark can refit and cross-validate from what `stream-guard check` wrote.
"""

from __future__ import annotations

import math
import random
from collections import abc
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from stream_guard.config.score_model import EVIDENCE, KINDS, ScoreModel
from stream_guard.text.claims import is_bare_reply
from stream_guard.text.markup import read_markup

_CAP = 4.0
# A short extractive answer: a question answered in one claim of at most this many words ("Violanta", "The
# Wild", "About 300 people died on the flight."). Its evidence reads differently from a long answer's: one
# recombined name is the whole answer, so it has an offset of its own.
SHORT_ANSWER_WORDS = 30
SHORT, QUESTION, SUMMARY, RECORD = "short", "question", "summary", "record"


# ── observations: what the model reads from one judged answer ───────────────────────────────────────


@dataclass(frozen=True)
class Observation:
    """One judged answer as the model sees it: feature values, the active hard signals, the kind of task, and
    whether any claim has a finding (without one the soft evidence counts for nothing)."""

    values: Mapping[str, float]
    signals: frozenset[str] = frozenset()
    kind: str = QUESTION
    finding: bool = True


def _part(check: Any, key: str, default: Any = None) -> Any:
    if check is None:
        return default
    if isinstance(check, abc.Mapping):  # typing.Mapping's isinstance goes through typing's own checks: slower
        return check.get(key, default)
    return getattr(check, key, default)


def _details(check: Any) -> Mapping[str, Any]:
    """A check's details (a CheckResult's or its JSON's), {} when it has none."""
    return _part(check, "details", {}) or {}


def _number(details: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    """One detail as a number: a list or tuple counts its items; anything that is no number is `default`."""
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
    """The evidence values of one answer from its checks (CheckResult objects or their JSON), with what the task
    kind is read from (record, question, claim count, values the source states) and the style quantities kept for
    analysis (`claims`, `confidence`: no model reads them)."""
    # Each check's details read once: this runs for every answer and every re-inspected repair, and finding a
    # check's details (a CheckResult or its JSON) for each of the 20 values read was a third of its cost.
    faith = checks.get("faithfulness")
    found = _details(faith)
    claims = _number(found, "claims")
    structured = 1.0 if _number(found, "structured") else 0.0
    question = 1.0 if _number(found, "has_question") else 0.0
    confidence = float(_part(checks.get("confidence"), "score", 0.5) or 0.5)
    values = {name: 0.0 for name in EVIDENCE}
    # Values the source states that the answer states too: the numeric check's figures, or any value the
    # faithfulness check found stated in another form (a clock time, a frequency, a weekday span).
    numeric = _details(checks.get("contradiction"))
    stated = max(_number(numeric, "numbers_checked") - _number(numeric, "numbers_unsupported"),
                 _number(found, "stated_values"))
    values.update(structured=structured, has_question=question, confidence=confidence, claim_count=claims,
                  stated_values=max(stated, 0.0), novel_words=_number(found, "novel_stems"))
    if claims <= 0:
        return values
    ungrounded = 1.0 - float(_part(faith, "score", 1.0))
    novel = _number(found, "novel_fraction")
    log_claims = math.log1p(claims)
    summary = (1.0 - question) * (1.0 - structured)
    values.update(
        ungrounded_fraction=ungrounded,
        novel_fraction=novel,
        weakest_claim=1.0 - _number(found, "min_best_sentence_overlap", 1.0),
        novel_count_answers=(1.0 - summary) * math.log1p(_number(found, "novel_stems")),
        unsupported_figures=min(_number(found, "missing_numbers"), _CAP),
        field_conflicts=min(_number(found, "field_conflicts"), _CAP),
        schedule_conflicts=min(_number(found, "wrong_times") + _number(found, "wrong_days"), _CAP),
        empty_fields=min(_number(found, "empty_fields") + _number(found, "unstated_fields"), _CAP),
        mean_weakness=1.0 - _number(found, "mean_best_sentence_overlap", 1.0),
        claims=log_claims,
        structured_novel=structured * novel,
        summary_novel=summary * novel,
        structured_ungrounded=structured * ungrounded,
        unstated_quantifiers=min(_number(found, "unstated_quantifiers"), _CAP),
    )
    return values


def has_finding(values: Mapping[str, float]) -> bool:
    """Whether some claim has a finding: a claim the context does not ground, a word or figure no source
    states, a claim against a record, or a claim no single source sentence states whole. Exactly when some
    evidence value is above 0."""
    return any(values.get(name, 0.0) > 0.0 for name in EVIDENCE)


def task_kind(values: Mapping[str, float], answer_words: int) -> str:
    """The shape of the task, from the event: a record described (data-to-text), a short extractive answer (a
    question answered in one claim of at most SHORT_ANSWER_WORDS words), a longer answer to a question, or
    neither (a summary of a document)."""
    if values.get("structured"):
        return RECORD
    if not values.get("has_question"):
        return SUMMARY
    if values.get("claim_count", 0.0) <= 1 and answer_words <= SHORT_ANSWER_WORDS:
        return SHORT
    return QUESTION


def active_signals(checks: Mapping[str, Any], confident_but_unfaithful: bool) -> frozenset[str]:
    """The hard signals that fired. Irrelevant context counts only for an answer that asserts something
    (seed 002: a refusal over off-topic chunks is the right behaviour)."""
    out: set[str] = set()
    if _part(checks.get("contradiction"), "flagged", False):
        out.add("contradiction")
    found = _details(checks.get("faithfulness"))
    if _number(found, "field_conflicts") + _number(found, "wrong_times") + _number(found, "wrong_days") > 0:
        out.add("record_conflict")
    if _part(checks.get("entities"), "flagged", False):
        out.add("fabricated_entity")
    citations = checks.get("citations")
    if _part(citations, "flagged", False):
        out.add("fabricated_citation" if "fabricated_citation" in _kinds(citations) else "wrong_chunk_citation")
    if confident_but_unfaithful:
        out.add("confident_but_unfaithful")
    if _part(checks.get("relevance"), "flagged", False) and _number(found, "claims") > 0:
        out.add("irrelevant_context")
    if _part(checks.get("drift"), "flagged", False):
        out.add("drift")
    return frozenset(out)


# A bare reply's evidence that is only about how its claim (the question's proposition) is spread over the source
# sentences: an answer to a two-hop question ("Were both Roth and Corman authors?" "Yes") joins two of them.
_COVERAGE_ONLY = ("weakest_claim", "mean_weakness")


def short_finding(values: Mapping[str, float], answer: str) -> bool:
    """Whether a short extractive answer has a finding. One that states a figure its source states and none it
    does not, with at most one word of its own around it ("Returns are accepted within 14 days"), answers with
    that figure: the figure checks judge it, and the word is its wording (more is a claim of its own: "exactly 14
    days to return a damaged item for a full refund"). A clock time, frequency or weekday span the source states
    in any form counts as such a figure ("On Saturday the pharmacy opens at 9 am"); a date does not (it names an
    event, and which event is the claim: HaluEval's "Anne Meara died on May 23, 2015"). A bare yes or no has a finding
    only when its proposition has a word or figure no source states, or is not grounded."""
    if values.get("stated_values") and not values.get("unsupported_figures") and values.get("novel_words", 0) <= 1:
        return False
    if is_bare_reply(answer):
        return any(values.get(name, 0.0) > 0.0 for name in EVIDENCE if name not in _COVERAGE_ONLY)
    return has_finding(values)


def observation(checks: Mapping[str, Any], confident_but_unfaithful: bool, answer: str = "") -> Observation:
    """`answer` is what the answer says (Markup.claim_text): its citation markers, links and headings are
    layout, so "no [1]" and "## Answer\n\nno" are the bare reply "no" and are as long as it is."""
    values = feature_values(checks)
    kind = task_kind(values, len(answer.split()))
    finding = short_finding(values, answer) if kind == SHORT else has_finding(values)
    return Observation(values, active_signals(checks, confident_but_unfaithful), kind, finding)


def observation_from_verdict(verdict: Mapping[str, Any]) -> Observation:
    """The observation a verdict line (`Verdict.to_dict()`, as `stream-guard check` writes it) records."""
    triggered = set(verdict.get("triggered") or ())
    return observation(verdict.get("checks") or {}, "confident_but_unfaithful" in triggered,
                       read_markup(str(verdict.get("original_answer") or "")).claim_text)


def signal_probabilities(
    obs: Observation, model: ScoreModel, *, drift_counts: bool = False, contradiction_strength: float = 1.0
) -> dict[str, float]:
    """Each active signal with its probability, plus `weak_grounding` (the soft evidence) for an answer with a
    finding."""
    out: dict[str, float] = {}
    for name in obs.signals:
        if name == "drift" and not drift_counts:
            continue  # drift reports that an answer changed, not that it is unfaithful
        p = model.signals.get(name, 0.0)
        if name == "contradiction":
            p *= contradiction_strength
        if p > 0:
            out[name] = p
    if obs.finding:
        grounding = model.grounding_probability(obs.values, obs.kind)
        if grounding > 0:
            out["weak_grounding"] = grounding
    return out


def noisy_or(probabilities: Mapping[str, float]) -> float:
    survive = 1.0
    for p in probabilities.values():
        survive *= 1.0 - min(max(p, 0.0), 1.0)
    return min(max(1.0 - survive, 0.0), 1.0)


def score(obs: Observation, model: ScoreModel, *, drift_counts: bool = False) -> float:
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
# Kinds whose answers fit the weights (every kind but short answers, see the module docstring).
WEIGHTED_KINDS = (SUMMARY, QUESTION, RECORD)
# The L2 penalty of a fit (rows are class-balanced per kind, so their weights sum to the number of rows). The twelve
# evidence features overlap (shares and counts of the same findings); a light penalty lets a few of them take
# large weights that rank the training rows and not new ones. Chosen by grouped cross-validation on the
# development rows (`bench/trust.py --penalties 1 3 10 30`, 5 folds, fold seeds 7 11 13, and 17 19 23 29): against
# 1.0, 10 raised RAGTruth caught at 90% kept from 0.691 to 0.708 (0.693 to 0.719), 30 about as much, 3 hardly.
DEFAULT_L2 = 10.0


def _balanced_weights(kinds: Sequence[str], labels: Sequence[int]) -> list[float]:
    """Row weights giving each class half the weight of its task kind: the model then learns what separates
    faithful from hallucinated answers, not how often each kind of task is hallucinated."""
    counts: dict[tuple[str, bool], int] = {}
    for kind, label in zip(kinds, labels):
        counts[(kind, bool(label))] = counts.get((kind, bool(label)), 0) + 1
    totals: dict[str, int] = {}
    for (kind, _), n in counts.items():
        totals[kind] = totals.get(kind, 0) + n
    return [totals[k] / (2.0 * counts[(k, bool(y))]) for k, y in zip(kinds, labels)]


def _logistic(x: Any, y: Any, l2: float, sample_weight: Any, free: int) -> Any:
    """L2-regularised, weighted logistic regression by Newton's method. The first `free` columns (the task kinds'
    offsets) are not shrunk."""
    import numpy as np

    sw = np.asarray(sample_weight, dtype=float)
    w = np.zeros(x.shape[1])
    reg = l2 * np.eye(x.shape[1])
    reg[:free, :free] = 0.0
    for _ in range(60):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -60, 60)))
        gradient = x.T @ (sw * (p - y)) + reg @ w
        hessian = x.T @ (x * (sw * p * (1 - p))[:, None]) + reg + 1e-9 * np.eye(x.shape[1])
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
    evidence: Sequence[str] = EVIDENCE,
    l2: float = DEFAULT_L2,
    keep_rate: float = 0.90,
    threshold: float = 0.40,
    signals: Mapping[str, float] = DEFAULT_SIGNALS,
    balance: bool = True,
    fitted_on: str = "",
) -> ScoreModel:
    """Fit the evidence weights on labelled observations (1 = hallucinated) of the weighted kinds that have a
    finding, then place each kind's offset (`_place_offsets`). An evidence weight that comes out negative is held
    at zero and the rest refitted: more evidence never lowers the score."""
    import numpy as np

    if len(observations) != len(labels) or not observations:
        raise ValueError("fit: need as many labels as observations, and at least one")
    rows = [i for i, o in enumerate(observations) if o.finding and o.kind in WEIGHTED_KINDS]
    if not rows:  # e.g. only short answers: fit what there is
        rows = [i for i, o in enumerate(observations) if o.finding]
    evidence = list(evidence)
    kinds = sorted({observations[i].kind for i in rows}, key=KINDS.index)
    one_hot = np.array([[float(observations[i].kind == k) for k in kinds] for i in rows]).reshape(len(rows), len(kinds))
    x = np.array([[observations[i].values.get(f, 0.0) for f in evidence] for i in rows], dtype=float)
    x = x.reshape(len(rows), len(evidence))
    y = np.array([1.0 if labels[i] else 0.0 for i in rows])
    sw = (np.array(_balanced_weights([observations[i].kind for i in rows], [labels[i] for i in rows]))
          if balance else np.ones(len(rows)))
    kept = list(range(len(evidence)))
    while True:
        coef = _logistic(np.hstack([one_hot, x[:, kept]]), y, l2, sw, len(kinds))
        negative = [j for j, wj in zip(kept, coef[len(kinds):]) if wj < 0]
        if not negative:
            break
        kept = [j for j in kept if j not in negative]
    w = np.zeros(len(evidence))
    w[kept] = coef[len(kinds):]
    model = ScoreModel(
        evidence=tuple(evidence),
        weights=tuple(float(max(v, 0.0)) for v in w),
        offsets={k: float(coef[i]) for i, k in enumerate(kinds)} or {QUESTION: 0.0},
        signals=dict(signals),
        threshold=threshold,
        keep_rate=keep_rate,
        l2=l2,
        balanced=balance,
        fitted_on=fitted_on,
    )
    return _place_offsets(model, observations, labels, keep_rate, threshold)


def _place_offsets(model: ScoreModel, observations: Sequence[Observation], labels: Sequence[int],
                   keep_rate: float, threshold: float) -> ScoreModel:
    """Offsets so that, in every kind of task, `keep_rate` of the faithful answers that no hard signal flags
    score below `threshold`: no kind pays for another's base rate or score scale, and one threshold keeps the same
    share in each. An answer with no finding scores nothing and is kept whatever the offset. Long answers count
    only those with a finding (nearly all of them have one; counting the rest would move the threshold for
    nothing). A short extractive answer is one claim: a faithful one copies its source and mostly has no finding
    at all, and what it adds that no source mentions is the answer itself. Its kind counts all its faithful
    answers, so its offset flags the least supported ones among those with a finding until `keep_rate` of all
    remain, or every one with a finding when those without one are share enough (over the few with a finding
    alone, 0.995 of HaluEval's faithful answers were kept and 0.43 of its hallucinated ones caught). A kind with
    no such answers keeps the offset fitted, or borrows its nearest kind's."""
    import numpy as np

    target = _logit(threshold)
    offsets = dict(model.offsets)
    for kind in KINDS:
        free = [o for o, y in zip(observations, labels)
                if not y and o.kind == kind and not (o.signals - {"drift"}) and (o.finding or kind == SHORT)]
        if not any(o.finding for o in free):
            continue
        base = model.offset(kind)
        found = [model.logit(o.values, kind) - base for o in free if o.finding]
        unfound = len(free) - len(found)
        if unfound >= keep_rate * len(free):
            # Answers with no finding alone keep the share: every answer with one reaches the threshold (its
            # evidence adds at least 0 to the offset).
            offsets[kind] = target + 1e-6
            continue
        # A short answer with no finding is kept whatever the offset: it counts as the least supported one.
        z = np.array(found + [min(found)] * unfound)
        # Just under: the answer at the quantile (and any tied with it) scores below the threshold, so is kept.
        offsets[kind] = target - float(np.quantile(z, min(max(keep_rate, 0.0), 1.0))) - 1e-6
    return ScoreModel(**{**{f: getattr(model, f) for f in model.__struct_fields__}, "offsets": offsets})


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
