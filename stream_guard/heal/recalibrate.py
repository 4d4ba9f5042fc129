"""Confidence after healing, set by what was done rather than re-measured blindly.

    contradiction_patch  min(original + 0.15, 0.80)  the wrong value now comes from a verified source,
                                                     but the rest of the answer was not re-verified
    entity_scrub         original x 0.85             what is left is still the model's own wording
    claim_prune          original x 0.85             likewise: the grounded part of the model's answer
    grounding_rewrite    confidence_score(healed)    the attributed lead-in lowers it by itself
    safe_decline         confidence_score(healed)
"""

from __future__ import annotations

from stream_guard.heal.result import CLAIM_PRUNE, CONTRADICTION_PATCH, ENTITY_SCRUB, GROUNDING_REWRITE, SAFE_DECLINE

PATCH_BOOST = 0.15
PATCH_CAP = 0.80
SCRUB_FACTOR = 0.85


def recalibrate_confidence(strategy: str, original: float, healed_answer: str, measured: float | None = None) -> float:
    """`measured`: the confidence check's score of `healed_answer` when its re-inspection has read it already
    (the same function of the same text), so that it is not read again."""
    if strategy == CONTRADICTION_PATCH:
        return min(original + PATCH_BOOST, PATCH_CAP)
    if strategy in (ENTITY_SCRUB, CLAIM_PRUNE):
        return original * SCRUB_FACTOR
    if strategy in (GROUNDING_REWRITE, SAFE_DECLINE):
        if measured is not None:
            return measured
        # Imported here so the strategies and results stay importable without the check modules.
        from stream_guard.checks.confidence import confidence_score

        return confidence_score(healed_answer)
    return original
