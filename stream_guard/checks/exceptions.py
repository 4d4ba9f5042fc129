"""Exception contradictions: the answer takes into its scope what the source leaves out, or the other way round
("open every day including public holidays" for "open every day except public holidays", "prices excluding
VAT" for "prices including VAT"). Only exceptions naming the same thing are compared."""

from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView, value_conflicts
from stream_guard.text.exceptions import Scope, scopes
from stream_guard.wire.report import Finding


def analyze_exceptions(view: ContradictionView) -> list[Finding]:
    return value_conflicts(view, "exception", scopes, _agrees, lambda ours: ours.stems, minimum=1)


def _agrees(ours: Scope, theirs: Scope) -> bool | None:
    if not ours.stems & theirs.stems:
        return None  # another thing excepted: says nothing about this one
    return theirs.polarity == ours.polarity
