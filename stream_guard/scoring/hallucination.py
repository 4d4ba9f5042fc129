"""From check results to one hallucination score, a risk level and a hallucination type.

The score is a noisy-OR of independent signals: each hard signal contributes the probability that it
alone means "hallucinated" (its measured precision on labelled data), and the soft evidence (how much of
the answer the context does not support) contributes the probability of a fitted model, for an answer with
at least one such finding. The model, its features and how to refit it live in `score_model.py`; the fitted
default is `models/score_model.json`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.report import CheckResult, FindingType, Risk
from stream_guard.config.score_model import DEFAULT_MODEL, ScoreModel, load_model
from stream_guard.scoring.score_model import noisy_or, observation
from stream_guard.scoring.score_model import signal_probabilities as _signal_probabilities


def default_model() -> ScoreModel:
    return DEFAULT_MODEL


@lru_cache(maxsize=8)
def model_for(path: str) -> ScoreModel:
    """The score model a config names: its file, or the shipped default for an empty path."""
    return load_model(path) if path else DEFAULT_MODEL


def signal_probabilities(
    checks: Mapping[str, CheckResult],
    confident_but_unfaithful: bool,
    model: ScoreModel | None = None,
    *,
    answer: str = "",
    drift_counts: bool = False,
) -> dict[str, float]:
    """Each active signal with its probability, and `weak_grounding` (the fitted soft evidence); absent
    signals are left out. Drift counts only when `drift_counts` (stream_guard.compat, the seed's rule):
    otherwise it is reported and alerted, never evidence that this answer is unfaithful. `answer` gives the
    task its shape (a short extractive answer has its own offset)."""
    obs = observation(checks, confident_but_unfaithful, answer)
    return _signal_probabilities(obs, model or default_model(), drift_counts=drift_counts)


def hallucination_score(signals: Mapping[str, float]) -> float:
    """Noisy-OR: 1 - prod(1 - p). Monotone in every signal, in [0, 1]."""
    return noisy_or(signals)


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
