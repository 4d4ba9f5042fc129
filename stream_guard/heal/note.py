"""The one short note a repair that removed something ends with, listing what was removed.

A user must know when the guard took something out of an answer, and what; two stacked notes, or a note that says
only "statements were removed", tell them less than one line listing it. The list names what kind of thing each
removed sentence got wrong (a name, a figure, a date, a statement no source supports), never the removed words
themselves: a note repeating a made-up name or a wrong price would deliver it after all. The note is the guard's
own words: it is never inspected as part of the answer.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from stream_guard.wire.report import Finding, FindingType

PREFIX = "Note:"
STATEMENT = "statement"
# Finding kinds -> what the note calls them (anything else a contradiction names is a value, anything
# else unsupported a statement).
_ENTITY_KINDS = {"person": "name", "org": "organisation", "place": "place", "citation": "citation"}
_VALUE_KINDS = {"date": "date", "billing": "billing term", "numeric": "figure", "money": "price",
                "currency": "price", "negation": "statement", "swapped_value": "figure", "bound": "limit",
                "frequency": "frequency", "obligation": "obligation", "exception": "exception", "hours": "time",
                "weekday": "day", "time_zone": "time zone"}


def what(finding: Finding | None) -> str:
    """What one removed sentence got wrong, in a word or two ("name", "figure", "statement")."""
    if finding is None:
        return STATEMENT
    if finding.type is FindingType.FABRICATED_ENTITY:
        return _ENTITY_KINDS.get(finding.kind or "", "name")
    if finding.type is FindingType.CONTRADICTION:
        return _VALUE_KINDS.get(finding.kind or "", "value")
    if finding.type is FindingType.CITATION_MISMATCH:
        return "citation"
    return STATEMENT


def removal_note(things: Sequence[str]) -> str | None:
    """'Note: removed what the sources do not support: 2 statements and a name.', or None when nothing was."""
    if not things:
        return None
    counts = Counter(things)
    parts = [f"{n} {_plural(thing)}" if n > 1 else f"{_article(thing)} {thing}" for thing, n in counts.items()]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{PREFIX} removed what the sources do not support: {listed}."


def with_note(text: str, note: str | None) -> str:
    """`text` ending with `note` (on its own line when the answer is laid out in lines)."""
    if not note:
        return text
    return f"{text}\n\n{note}" if "\n" in text else f"{text} {note}"


def _plural(thing: str) -> str:
    return thing[:-1] + "ies" if thing.endswith("y") else thing + "s"


def _article(thing: str) -> str:
    return "an" if thing[:1] in "aeiou" else "a"
