"""What a contradiction sub-check finds between a context and an answer, as a test reads it."""

from __future__ import annotations

from typing import Callable, Iterable

from stream_guard.checks.alignment import ContradictionView
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import Finding

Values = list[tuple[str | None, str | None, str | None]]


def values(findings: Iterable[Finding]) -> Values:
    """Each finding as (kind, answer value, source value)."""
    return [(f.kind, f.answer_value, f.source_value) for f in findings]


def found_by(analyze: Callable[[ContradictionView], Iterable[Finding]]) -> Callable[[str | list[str], str], Values]:
    """`found(context, answer)`: the values of what `analyze` finds in the answer against the context."""
    def found(context: str | list[str], answer: str) -> Values:
        return values(analyze(ContradictionView(Inspection.build("", context, answer))))
    return found
