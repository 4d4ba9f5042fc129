"""What a healing attempt produces: the changes it made and the outcome of re-inspecting the result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stream_guard.wire.report import HallucinationReport, Risk

NO_HEALING_NEEDED = "no_healing_needed"
CONTRADICTION_PATCH = "contradiction_patch"
ENTITY_SCRUB = "entity_scrub"
CLAIM_PRUNE = "claim_prune"
GROUNDING_REWRITE = "grounding_rewrite"
SAFE_DECLINE = "safe_decline"
STRATEGIES = (NO_HEALING_NEEDED, CONTRADICTION_PATCH, ENTITY_SCRUB, CLAIM_PRUNE, GROUNDING_REWRITE, SAFE_DECLINE)


@dataclass(frozen=True)
class Change:
    """One edit, logged so an operator can see exactly what the guard changed and why.

    kind: replace (a contradicted value), billing (a normalised billing-cycle phrase), drop_sentence,
    note (the transparency note), rewrite, fallback (a strategy abandoned for another), decline,
    refused (a repair not delivered: unreadable, unsafe or still flagged), confidence (the recalibration).
    """

    kind: str
    before: str
    after: str
    description: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "before": self.before, "after": self.after, "description": self.description}


@dataclass(frozen=True)
class Attempt:
    """A strategy's proposal. `text` is None when the strategy has nothing usable to offer."""

    strategy: str
    text: str | None
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True)
class HealingResult:
    original_answer: str
    healed_answer: str
    strategy: str
    changes: tuple[Change, ...]
    applied: bool
    passed: bool
    declined: bool
    initial_risk: Risk
    final_risk: Risk
    final_report: HallucinationReport | None
    confidence_before: float
    confidence_after: float
    # The strategy that was tried when the result is a safe decline; otherwise equal to `strategy`.
    attempted: str | None = None

    @property
    def changed(self) -> bool:
        return self.healed_answer != self.original_answer

    @property
    def failed(self) -> bool:
        """A repair was needed and none passed: the answer must go to fallback, not to the user."""
        return not self.applied and self.strategy != NO_HEALING_NEEDED

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "attempted": self.attempted or self.strategy,
            "applied": self.applied,
            "passed": self.passed,
            "declined": self.declined,
            "initial_risk": self.initial_risk.value,
            "final_risk": self.final_risk.value,
            "healed_answer": self.healed_answer,
            "changes": [c.to_dict() for c in self.changes],
            "confidence_before": round(self.confidence_before, 4),
            "confidence_after": round(self.confidence_after, 4),
        }
        if self.final_report is not None:
            out["final_hallucination_score"] = round(self.final_report.hallucination_score, 4)
            out["final_triggered"] = list(self.final_report.triggered)
        return out
