"""Obligation contradictions: the answer makes required what the source permits, permitted what it forbids, or
the other way round, for the same action ("may disclose" for "shall not disclose", "must give notice" for "may
give notice", "does not have to report" for "must report"). Only modals governing the same action are compared;
"can" and "may" are one permission, "must", "shall" and "is required to" one obligation. A modal said under a
condition ("if you are a new customer, you need not ...") is not compared: which condition the other side
states would take the sentence's grammar."""

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
    return value_conflicts(view, "obligation", _unconditional, _agrees, lambda ours: _VALUE_STEMS | {ours.action},
                           _describe)


def _unconditional(text: str) -> list[Modality]:
    return [m for m in modalities(text) if not m.conditional]


def _agrees(ours: Modality, theirs: Modality) -> bool | None:
    if theirs.action != ours.action:
        return None  # another action: says nothing about this one
    return frozenset({theirs.force, ours.force}) not in _CONFLICTS


def _describe(ours: Modality, theirs: Modality) -> str:
    return f"answer says '{ours.text}' ({_READ[ours.force]}) but the source says '{theirs.text}' ({_READ[theirs.force]})"
