"""Schedule contradictions: the answer gives other opening or support hours, other days of the week or another
time zone than the source sentence it restates ("Mon-Fri 9am-6pm ET" for "Monday to Friday, 9 am to 5 pm
Eastern"). "4 pm" and "16:00" are one time; an answer naming fewer days than the source ("weekdays" where the
source lists Monday to Saturday) is not a conflict, one naming a day the source does not is. A structured
record's hours belong to record_claims."""

from __future__ import annotations

import re

from stream_guard.checks.alignment import (
    AnswerSentence,
    ContradictionView,
    contradiction_finding,
    first_disagreeing,
    literal_span,
    restating,
)
from stream_guard.text.schedule import DAYS, ClockTime, DaySpan, clock_times, day_spans, time_zones
from stream_guard.text.words import stem
from stream_guard.wire.report import Finding

# The value words themselves: what differs between the two sentences, never what aligns them.
_VALUE_STEMS = frozenset(
    stem(w)
    for w in (*DAYS, *"mon tue tues wed thu thur thurs fri sat sun weekday weekdays weekend weekends daily am pm "
              "noon midday midnight eastern central mountain pacific time et est edt ct cst cdt mt mst pt pst pdt "
              "utc gmt".split())
)
# Days named after these words are the days it is closed, not the days it is open.
_CLOSED_BEFORE_RE = re.compile(r"\b(?:closed|except|excluding|not\s+on|not\s+open|other\s+than)\b[^.;]{0,24}$", re.I)


def _open_days(text: str) -> list[DaySpan]:
    return [span for span in day_spans(text) if not _CLOSED_BEFORE_RE.search(text, max(0, span.start - 40), span.start)]


def _same_minute(a: int, b: int) -> bool:
    return a == b or {a, b} <= {0, 1440}


def analyze_schedules(view: ContradictionView) -> list[Finding]:
    findings: list[Finding] = []
    for sentence in view.answer:
        times, days, zones = clock_times(sentence.text), _open_days(sentence.text), time_zones(sentence.text)
        if not (times or days or zones):
            continue
        candidates = restating(view, sentence, _VALUE_STEMS)
        if not candidates:
            continue
        if times:
            findings.extend(_times(view, sentence, times, candidates))
        if days:
            findings.extend(_days(view, sentence, days, candidates))
        if zones:
            findings.extend(_zones(view, sentence, zones, candidates))
    return findings


def _times(view: ContradictionView, sentence: AnswerSentence, times: list[ClockTime],
           candidates: list[tuple[int, int]]) -> list[Finding]:
    def read(i: int) -> list[tuple[ClockTime, ...]]:
        found = clock_times(view.sentence(i).text)
        return [tuple(found)] if found else []

    def agrees(theirs: tuple[ClockTime, ...]) -> bool:
        return all(any(_same_minute(t.minutes, s.minutes) for s in theirs) for t in times)

    hit = first_disagreeing(candidates, read, agrees)
    if hit is None:
        return []
    i, (theirs,) = hit
    ours_text = literal_span(sentence.text, [(t.start, t.end) for t in times])
    theirs_text = literal_span(view.sentence(i).text, [(t.start, t.end) for t in theirs])
    return [_finding(view, i, "hours", sentence.text, ours_text, theirs_text, "gives the hours")]


def _days(view: ContradictionView, sentence: AnswerSentence, days: list[DaySpan],
          candidates: list[tuple[int, int]]) -> list[Finding]:
    named = frozenset().union(*(d.days for d in days))

    def read(i: int) -> list[tuple[DaySpan, ...]]:
        found = _open_days(view.sentence(i).text)
        return [tuple(found)] if found else []

    def agrees(theirs: tuple[DaySpan, ...]) -> bool:
        return named <= frozenset().union(*(d.days for d in theirs))

    hit = first_disagreeing(candidates, read, agrees)
    if hit is None:
        return []
    i, (theirs,) = hit
    ours_text = literal_span(sentence.text, [(d.start, d.end) for d in days])
    theirs_text = literal_span(view.sentence(i).text, [(d.start, d.end) for d in theirs])
    return [_finding(view, i, "weekday", sentence.text, ours_text, theirs_text, "names the days")]


def _zones(view: ContradictionView, sentence: AnswerSentence, zones: list, candidates: list[tuple[int, int]]) -> list[Finding]:
    ours = {z.zone for z in zones}
    hit = first_disagreeing(candidates, lambda i: time_zones(view.sentence(i).text), lambda z: z.zone in ours)
    if hit is None:
        return []
    i, theirs = hit
    return [_finding(view, i, "time_zone", sentence.text, zones[0].text, theirs[0].text, "gives the time zone")]


def _finding(view: ContradictionView, i: int, kind: str, statement: str, ours: str, theirs: str, what: str) -> Finding:
    return contradiction_finding(
        view, i, kind=kind, statement=statement,
        evidence=f"answer {what} as '{ours}' but the source says '{theirs}'",
        answer_value=ours, source_value=theirs,
    )
