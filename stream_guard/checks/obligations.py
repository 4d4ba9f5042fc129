"""Obligation contradictions: the answer makes required what the source permits, permitted what it forbids, or
the other way round, for the same action ("may disclose" for "shall not disclose", "must give notice" for "may
give notice", "does not have to report" for "must report"). Only modals governing the same action are compared;
"can" and "may" are one permission, "must", "shall" and "is required to" one obligation. A modal said under a
condition ("if you are not a degree-seeking student, you must ...") is compared only with one said under the same
condition (mostly the same words): "if you are a new customer, you need not swap" says nothing against "existing
customers need to swap"."""

from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView, value_conflicts
from stream_guard.text.modality import Modality, modalities
from stream_guard.text.words import stem
from stream_guard.wire.report import Finding

_VALUE_STEMS = frozenset(stem(w) for w in "required obliged obligated permitted allowed entitled prohibited forbidden "
                         "barred free needs".split())
_READ = {"required": "requires it", "permitted": "permits it", "forbidden": "forbids it", "optional": "leaves it optional"}
# Forces that cannot both hold of one action. "optional" and "permitted" can; "optional" and "forbidden" can
# ("need not" and "must not" both leave it undone).
_CONFLICTS = {frozenset({"required", "permitted"}), frozenset({"required", "forbidden"}),
              frozenset({"permitted", "forbidden"}), frozenset({"required", "optional"})}


def analyze_obligations(view: ContradictionView) -> list[Finding]:
    return value_conflicts(view, "obligation", modalities, _agrees, lambda ours: _VALUE_STEMS | {ours.action}, _describe)


def _agrees(ours: Modality, theirs: Modality) -> bool | None:
    if theirs.action != ours.action or not _same_condition(ours, theirs):
        return None  # another action, or said under another condition: says nothing about this one
    return frozenset({theirs.force, ours.force}) not in _CONFLICTS


def _same_condition(ours: Modality, theirs: Modality) -> bool:
    """Both unconditional, or both under a condition naming mostly the same things."""
    if not ours.conditional or not theirs.conditional:
        return ours.conditional == theirs.conditional
    return len(ours.condition & theirs.condition) * 2 >= max(len(ours.condition), len(theirs.condition))


def _describe(ours: Modality, theirs: Modality) -> str:
    return f"answer says '{ours.text}' ({_READ[ours.force]}) but the source says '{theirs.text}' ({_READ[theirs.force]})"
