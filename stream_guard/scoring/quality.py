"""QualityScore: one number for how deliverable an answer is, and the route that follows from it.

    score = 0.40 x faithfulness
          + 0.30 x consistency         (0 when the answer contradicts its source)
          + 0.20 x calibrated confidence = min(confidence, faithfulness)
          + 0.10 x latency             (see `latency_component`)
          - 0.20 drift penalty         (applied last, result floored at 0)

Confidence is capped by faithfulness because sounding sure is only worth something when the answer is
grounded: an assertive, ungrounded answer must not earn confidence points.

The score is computed on what would actually be delivered: when healing was applied and its re-inspection
passed, that is the healed answer's report and its recalibrated confidence; the latency is then both
inspections together, since the caller waited for both.

Routing, in order:
    fallback       the answer is empty (nothing to deliver)
    discard        a safe decline was served
    healed_accept  healing was applied and the healed answer passed re-inspection
    fallback       healing was attempted and no repair passed (never deliver what needed one)
    accept         score >= accept_threshold
    fallback       score < fallback_threshold
    in between     accept if the report is not flagged, else fallback

Drift lowers the score (the seed's formula) but, unless `DetectorConfig.drift_decides` is set (as
stream_guard.compat does, for the seed's behaviour), an answer that is not flagged is routed on its score
before the drift penalty: drift says the answer changed, not that it is unfaithful, so it is reported and
alerted on without changing what a grounded answer's user gets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.report import HallucinationReport


class HealingResult(Protocol):
    """What routing reads of a repair (heal.HealingResult has these): scoring sits below healing (a repaired
    answer is scored again), so it names the fields it needs rather than importing the healer's type."""

    @property
    def applied(self) -> bool: ...
    @property
    def passed(self) -> bool: ...
    @property
    def declined(self) -> bool: ...
    @property
    def failed(self) -> bool: ...
    @property
    def confidence_after(self) -> float: ...
    @property
    def final_report(self) -> HallucinationReport | None: ...

ACCEPT = "accept"
HEALED_ACCEPT = "healed_accept"
FALLBACK = "fallback"
DISCARD = "discard"
ROUTES = (ACCEPT, HEALED_ACCEPT, FALLBACK, DISCARD)

WEIGHT_FAITHFULNESS = 0.40
WEIGHT_CONSISTENCY = 0.30
WEIGHT_CONFIDENCE = 0.20
WEIGHT_LATENCY = 0.10
DRIFT_PENALTY = 0.20

# Latency budget: under 20 ms is the regex-NER path and earns full marks; 20-50 ms (spaCy NER in a
# typical request budget) costs up to half the component; past 50 ms the rest falls away quickly.
FULL_MARKS_MS = 20.0
BUDGET_MS = 50.0
ZERO_MS = 200.0


def latency_component(latency_ms: float) -> float:
    """0.10 up to 20 ms, linear to 0.05 at 50 ms, then a quadratic fall to 0 at 200 ms."""
    ms = max(latency_ms, 0.0)
    half = WEIGHT_LATENCY / 2
    if ms <= FULL_MARKS_MS:
        return WEIGHT_LATENCY
    if ms <= BUDGET_MS:
        return WEIGHT_LATENCY - (ms - FULL_MARKS_MS) / (BUDGET_MS - FULL_MARKS_MS) * half
    if ms >= ZERO_MS:
        return 0.0
    # Quadratic rather than linear: the first milliseconds over budget cost the most.
    remaining = (ZERO_MS - ms) / (ZERO_MS - BUDGET_MS)
    return half * remaining * remaining


def components(
    *, faithfulness: float, confidence: float, contradiction: bool, latency_ms: float
) -> dict[str, float]:
    """The four weighted parts of the score, each already multiplied by its weight."""
    faithfulness = min(max(faithfulness, 0.0), 1.0)
    confidence = min(max(confidence, 0.0), 1.0)
    return {
        "faithfulness": WEIGHT_FAITHFULNESS * faithfulness,
        "consistency": 0.0 if contradiction else WEIGHT_CONSISTENCY,
        "confidence": WEIGHT_CONFIDENCE * min(confidence, faithfulness),
        "latency": latency_component(latency_ms),
    }


def combine(parts: Mapping[str, float], drift: bool) -> tuple[float, float]:
    """(score, drift_penalty): the parts summed, the drift penalty subtracted last, clamped to [0, 1]."""
    penalty = DRIFT_PENALTY if drift else 0.0
    return min(max(sum(parts.values()) - penalty, 0.0), 1.0), penalty


def route(
    score: float,
    *,
    flagged: bool,
    healing_applied: bool = False,
    healing_passed: bool = False,
    declined: bool = False,
    config: DetectorConfig | None = None,
    healing_failed: bool = False,
    empty: bool = False,
) -> str:
    cfg = config or DetectorConfig()
    if empty:
        return FALLBACK
    if declined:
        return DISCARD
    if healing_applied and healing_passed:
        return HEALED_ACCEPT
    if healing_failed:
        return FALLBACK
    if score >= cfg.accept_threshold:
        return ACCEPT
    if score < cfg.fallback_threshold:
        return FALLBACK
    return FALLBACK if flagged else ACCEPT


def _delivered(
    report: HallucinationReport, healing: "HealingResult | None"
) -> tuple[HallucinationReport, float, float, bool]:
    """(report, confidence, latency, healed) describing the answer that would actually be delivered."""
    if healing is None or not healing.applied or not healing.passed or healing.declined:
        return report, report.confidence_score, report.latency_ms, False
    final = healing.final_report
    if final is None:
        return report, healing.confidence_after, report.latency_ms, False
    return final, healing.confidence_after, report.latency_ms + final.latency_ms, True


@dataclass(frozen=True)
class QualityScore:
    score: float
    routing: str
    components: Mapping[str, float] = field(default_factory=dict)
    drift_penalty: float = 0.0
    # "original" or "healed": which answer the score describes.
    basis: str = "original"

    @classmethod
    def compute(
        cls,
        report: HallucinationReport,
        healing_result: "HealingResult | None" = None,
        config: DetectorConfig | None = None,
        latency_ms: float | None = None,
    ) -> "QualityScore":
        """`latency_ms`, when given, replaces the measured time of the inspections (replays fix it)."""
        basis, confidence, latency, healed = _delivered(report, healing_result)
        if latency_ms is not None:
            latency = latency_ms
        parts = components(
            faithfulness=basis.faithfulness_score,
            confidence=confidence,
            contradiction=basis.has_contradiction,
            latency_ms=latency,
        )
        cfg = config or DetectorConfig()
        score, penalty = combine(parts, basis.drift_detected)
        routed_on = score if cfg.drift_decides or basis.flagged else combine(parts, False)[0]
        routing = route(
            routed_on,
            flagged=basis.flagged,
            healing_applied=healing_result is not None and healing_result.applied,
            healing_passed=healing_result is not None and healing_result.passed,
            declined=healing_result is not None and healing_result.declined,
            config=config,
            healing_failed=healing_result is not None and healing_result.failed,
            empty=not report.answer.strip(),
        )
        return cls(score, routing, parts, penalty, "healed" if healed else "original")

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 4),
            "routing": self.routing,
            "components": {name: round(value, 4) for name, value in self.components.items()},
            "drift_penalty": round(self.drift_penalty, 4),
            "basis": self.basis,
        }
