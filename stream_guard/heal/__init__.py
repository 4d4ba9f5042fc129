"""Repairing flagged answers: one module per strategy, `healer.HallucinationHealer` chooses and re-checks."""

from stream_guard.heal.result import (
    CLAIM_PRUNE,
    CONTRADICTION_PATCH,
    ENTITY_SCRUB,
    GROUNDING_REWRITE,
    NO_HEALING_NEEDED,
    SAFE_DECLINE,
    STRATEGIES,
    Attempt,
    Change,
    HealingResult,
)
from stream_guard.heal.healer import HallucinationHealer, choose_strategy, failure_reason

__all__ = [
    "CLAIM_PRUNE",
    "CONTRADICTION_PATCH",
    "ENTITY_SCRUB",
    "GROUNDING_REWRITE",
    "NO_HEALING_NEEDED",
    "SAFE_DECLINE",
    "STRATEGIES",
    "Attempt",
    "Change",
    "HallucinationHealer",
    "HealingResult",
    "choose_strategy",
    "failure_reason",
]
