"""From check results to one hallucination score, a risk level and a hallucination type.

The score is a noisy-OR of independent signals: each signal contributes the probability that it alone
means "hallucinated" (its measured precision on labelled data), so the combination is monotone in every
signal and can be read as a probability. Hard evidence (a contradiction with a quoted source) dominates;
soft evidence (weak grounding) accumulates. See bench/detection_quality.py for how the weights were
measured and what they achieve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from stream_guard.config import DetectorConfig
from stream_guard.report import CheckResult, FindingType, Risk


# Soft grounding features, in the order the logistic weights below apply to them.
GROUNDING_FEATURES = (
    "ungrounded_fraction",  # 1 - faithfulness score
    "novel_fraction",  # share of the answer's content stems absent from the context
    "weakest_claim",  # 1 - coverage of the worst claim by its best single context sentence
    "novel_count",  # log(1 + novel content stems): long fabrications add up
    "unsupported_numbers",  # figures absent from the context, capped at 4
)


@dataclass(frozen=True)
class SignalWeights:
    """Probability that each hard signal alone indicates a hallucination, and the logistic weights of
    the soft grounding evidence (fitted by bench/calibrate_scoring.py; see the README for figures)."""

    contradiction: float = 0.92
    fabricated_entity: float = 0.80
    fabricated_citation: float = 0.85
    wrong_chunk_citation: float = 0.60
    confident_but_unfaithful: float = 0.70
    # Below the flag threshold on purpose: drift alone is an operator's signal (medium risk, an alert),
    # not proof that this answer is wrong; with weak grounding or a contradiction it tips the score.
    drift: float = 0.30
    irrelevant_context: float = 0.35
    grounding_bias: float = -3.76
    grounding_ungrounded_fraction: float = 1.63
    grounding_novel_fraction: float = 0.78
    grounding_weakest_claim: float = 1.55
    grounding_novel_count: float = 0.87
    grounding_unsupported_numbers: float = 0.38


DEFAULT_WEIGHTS = SignalWeights()


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _detail(result: CheckResult | None, key: str, default: float = 0.0) -> float:
    if result is None:
        return default
    value = result.details.get(key, default)
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def grounding_features(checks: Mapping[str, CheckResult]) -> list[float]:
    """The GROUNDING_FEATURES of one report; all zero when the answer makes no claims."""
    faith = checks.get("faithfulness")
    if faith is None or _detail(faith, "claims") <= 0:
        return [0.0] * len(GROUNDING_FEATURES)
    contradiction = checks.get("contradiction")
    unsupported = contradiction.details.get("unsupported_numbers", ()) if contradiction is not None else ()
    unsupported_count = len(unsupported) if isinstance(unsupported, (list, tuple)) else float(unsupported or 0)
    return [
        1.0 - faith.score,
        _detail(faith, "novel_fraction"),
        1.0 - _detail(faith, "min_best_sentence_overlap", _detail(faith, "min_overlap", 1.0)),
        math.log1p(_detail(faith, "novel_stems")),
        min(float(unsupported_count), 4.0),
    ]


def grounding_probability(checks: Mapping[str, CheckResult], weights: SignalWeights = DEFAULT_WEIGHTS) -> float:
    """Soft evidence from how much of the answer the context supports, in (0, 1)."""
    features = grounding_features(checks)
    if not any(features):
        return 0.0
    x = weights.grounding_bias + sum(
        getattr(weights, f"grounding_{name}") * value for name, value in zip(GROUNDING_FEATURES, features)
    )
    return _sigmoid(x)


def signal_probabilities(
    checks: Mapping[str, CheckResult],
    confident_but_unfaithful: bool,
    weights: SignalWeights = DEFAULT_WEIGHTS,
) -> dict[str, float]:
    """Each active signal with its probability; absent signals are left out."""
    signals: dict[str, float] = {}
    contradiction = checks.get("contradiction")
    if contradiction is not None and contradiction.flagged:
        signals["contradiction"] = weights.contradiction * max(contradiction.score, 0.5)
    entities = checks.get("entities")
    if entities is not None and entities.flagged:
        signals["fabricated_entity"] = weights.fabricated_entity
    citations = checks.get("citations")
    if citations is not None and citations.flagged:
        kinds = {f.kind for f in citations.findings}
        signals["citation_mismatch"] = (
            weights.fabricated_citation if "fabricated_citation" in kinds else weights.wrong_chunk_citation
        )
    if confident_but_unfaithful:
        signals["confident_but_unfaithful"] = weights.confident_but_unfaithful
    drift = checks.get("drift")
    if drift is not None and drift.flagged:
        signals["drift"] = weights.drift
    relevance = checks.get("relevance")
    makes_claims = _detail(checks.get("faithfulness"), "claims") > 0
    # Irrelevant context only matters for an answer that asserts something (seed 002): a refusal over
    # off-topic chunks is the right behaviour, not a hallucination.
    if relevance is not None and relevance.flagged and makes_claims:
        signals["irrelevant_context"] = weights.irrelevant_context
    grounding = grounding_probability(checks, weights)
    if grounding > 0:
        signals["weak_grounding"] = grounding
    return signals


def hallucination_score(signals: Mapping[str, float]) -> float:
    """Noisy-OR: 1 - prod(1 - p). Monotone in every signal, in [0, 1]."""
    survive = 1.0
    for p in signals.values():
        survive *= 1.0 - min(max(p, 0.0), 1.0)
    return min(max(1.0 - survive, 0.0), 1.0)


def assess_risk(
    checks: Mapping[str, CheckResult], confident_but_unfaithful: bool, score: float, config: DetectorConfig
) -> Risk:
    contradiction = checks.get("contradiction")
    if contradiction is not None and contradiction.flagged:
        return Risk.CRITICAL
    entities = checks.get("entities")
    citations = checks.get("citations")
    fabricated_citation = citations is not None and any(
        f.kind == "fabricated_citation" for f in citations.findings
    )
    if (entities is not None and entities.flagged) or fabricated_citation or confident_but_unfaithful:
        return Risk.HIGH
    if any(
        result.flagged
        for name, result in checks.items()
        if name in ("faithfulness", "drift", "citations", "relevance")
    ) or score >= config.flag_threshold:
        return Risk.MEDIUM
    return Risk.LOW


def hallucination_type(checks: Mapping[str, CheckResult], flagged: bool) -> str:
    """Seed 004's vocabulary: factual_error (contradicted), unsupported_claim, or none."""
    if not flagged:
        return "none"
    factual = (
        FindingType.CONTRADICTION,
        FindingType.FABRICATED_ENTITY,
    )
    for result in checks.values():
        if any(f.type in factual for f in result.findings):
            return "factual_error"
    return "unsupported_claim"
