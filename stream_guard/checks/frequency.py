"""Frequency contradictions: the answer says something happens more or less often than the source sentence it
restates says ("three times daily" for "twice daily", "every 4 hours" for "every 6 hours", "up to once a week"
for "at least once a week"). Equivalent forms agree: "twice daily" = "every 12 hours" = "2 times a day"; a source's
bare adverb of period states once per period ("billed annually" against "billed twice a year"). A period adjective
on a noun is compared with the source's on the same noun: "a weekly serving" for "a daily serving"."""

from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView, value_conflicts
from stream_guard.text.quantities.frequency import (
    Frequency,
    PeriodAdjective,
    frequencies,
    period_adjectives,
    stated_frequencies,
)
from stream_guard.text.words import stem
from stream_guard.wire.report import Finding

_VALUE_STEMS = frozenset(
    stem(w) for w in """once twice thrice times time daily weekly monthly hourly nightly yearly annually quarterly
    fortnightly every hour hours day days week weeks month months year years other""".split()
)


def analyze_frequency(view: ContradictionView) -> list[Finding]:
    found = value_conflicts(view, "frequency", frequencies, Frequency.agrees, lambda _: _VALUE_STEMS,
                            read_source=stated_frequencies)
    # Its own reader: a period adjective names no count ("a daily dose" may be taken "twice daily"), so it is never
    # compared with a frequency, only with the period the source gives the same noun.
    return found + value_conflicts(view, "frequency", period_adjectives, PeriodAdjective.agrees,
                                   lambda _: _VALUE_STEMS, reader=":period adjective")
