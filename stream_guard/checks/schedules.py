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
from stream_guard.text.schedule import (
    DAYS,
    ClockTime,
    DaySpan,
    SchedulePart,
    clock_times,
    closed_days,
    day_spans,
    schedule_parts,
    time_zones,
)
from stream_guard.text.words import stem
from stream_guard.wire.report import Finding

# The value words themselves, and the words every schedule uses: what differs between the two sentences or says
# nothing about whose schedule it is. What is left ("store", "support", "pharmacy") aligns them.
_VALUE_STEMS = frozenset(
    stem(w)
    for w in (*DAYS, *"mon tue tues wed thu thur thurs fri sat sun weekday weekdays weekend weekends daily am pm "
              "noon midday midnight eastern central mountain pacific time et est edt ct cst cdt mt mst pt pst pdt "
              "utc gmt open opens opened close closes closed hours hour available availability from until".split())
)


# Words that make times a schedule when no day is named ("closes at 16:00", "available from 9 am"), not a moment
# ("we arrived at 6:55pm").
_SCHEDULE_CUE_RE = re.compile(r"\b(?:open|opens|close|closes|closed|hours|available|availability|operat\w*|serv(?:es|ed|ing)"
                              r"|staffed|business\s+hours|office\s+hours)\b", re.IGNORECASE)


def _open_days(text: str) -> list[DaySpan]:
    """Days named as open (not after "closed", "except" and the like)."""
    closed = closed_days(text)
    return [span for span in day_spans(text) if not span.days <= closed]


def _same_minute(a: int, b: int) -> bool:
    return a == b or {a, b} <= {0, 1440}


def analyze_schedules(view: ContradictionView) -> list[Finding]:
    if view.inspection.structured:
        return []  # a record's hours are its fields: record_claims compares them
    findings: list[Finding] = []
    for sentence in view.answer:
        findings += view.per_sentence("schedule", (sentence.text,), lambda sentence=sentence: _conflicts(view, sentence))
    return findings


def _conflicts(view: ContradictionView, sentence: AnswerSentence) -> list[Finding]:
    """The hours, weekdays and time zones of one answer sentence that the source sentences restating it contradict."""
    times, days, zones = clock_times(sentence.text), _open_days(sentence.text), time_zones(sentence.text)
    if not (times or days or zones):
        return []
    candidates = restating(view, sentence, _VALUE_STEMS, minimum=1)
    if not candidates:
        return []
    findings: list[Finding] = []
    if times:
        findings.extend(_times(view, sentence, times, candidates))
    if days:
        findings.extend(_days(view, sentence, days, candidates))
    if zones:
        findings.extend(_zones(view, sentence, zones, candidates))
    return findings


def _times(view: ContradictionView, sentence: AnswerSentence, times: list[ClockTime],
           candidates: list[tuple[int, int]]) -> list[Finding]:
    """Each time the answer gives for some days must be one the source gives for those days ("opens at 9:00 am on
    Sunday" against "Sunday 10:00 am to 4:00 pm"); a time given for no day, one the source gives at all."""
    ours = schedule_parts(sentence.text) or [SchedulePart(tuple(times), frozenset())]

    def read(i: int) -> list[list[SchedulePart]]:
        text = view.sentence(i).text
        parts = schedule_parts(text)
        if not parts and clock_times(text) and _SCHEDULE_CUE_RE.search(text):
            parts = [SchedulePart(tuple(clock_times(text)), frozenset())]
        return [parts] if parts else []  # times with no day and no word of opening hours are not a schedule

    wrong: list[ClockTime] = []

    def agrees(theirs: list[SchedulePart]) -> bool:
        wrong.clear()
        every = [t for part in theirs for t in part.times]
        for part in ours:
            said = [t for p in theirs if part.days and p.days & part.days for t in p.times] or every
            wrong.extend(t for t in part.times if not any(_same_minute(t.minutes, s.minutes) for s in said))
        return not wrong

    hit = first_disagreeing(candidates, read, agrees)
    if hit is None:
        return []
    i, (theirs,) = hit
    agrees(theirs)
    # The answer's hours as written where one of them is wrong ("9am-6pm", not just "6pm").
    flagged = [t for part in ours if any(w in part.times for w in wrong) for t in part.times] or times
    ours_text = literal_span(sentence.text, [(t.start, t.end) for t in flagged])
    ours_days = frozenset().union(*(part.days for part in ours))
    relevant = [p for p in theirs if p.days & ours_days] or theirs  # the source's hours for the answer's days
    theirs_text = literal_span(view.sentence(i).text, [(t.start, t.end) for p in relevant for t in p.times])
    return [_finding(view, i, "hours", sentence.text, ours_text, theirs_text, "gives the hours")]


def _days(view: ContradictionView, sentence: AnswerSentence, days: list[DaySpan],
          candidates: list[tuple[int, int]]) -> list[Finding]:
    """The days the answer has open must be days the source has open, and none it has closed."""
    named = frozenset().union(*(d.days for d in days))

    def read(i: int) -> list[tuple[tuple[DaySpan, ...], frozenset[str]]]:
        text = view.sentence(i).text
        found, closed = tuple(_open_days(text)), frozenset(closed_days(text))
        return [(found, closed)] if found or closed else []

    def agrees(theirs: tuple[tuple[DaySpan, ...], frozenset[str]]) -> bool | None:
        open_, closed = theirs
        if named & closed:
            return False
        if not open_:
            return None  # only closed days, none of them the answer's: says nothing about these
        return named <= frozenset().union(*(d.days for d in open_))

    hit = first_disagreeing(candidates, read, agrees)
    if hit is None:
        return []
    i, ((open_, closed), *_) = hit
    source = view.sentence(i).text
    ours_text = literal_span(sentence.text, [(d.start, d.end) for d in days])
    if named & closed:
        theirs_text = literal_span(source, [(d.start, d.end) for d in day_spans(source) if d.days & named])
        return [_finding(view, i, "weekday", sentence.text, ours_text, f"closed {theirs_text}".strip(),
                         "has it open on")]
    theirs_days = frozenset().union(*(d.days for d in open_))
    outside = [d for d in days if not d.days <= theirs_days]  # "Friday", not "Friday ... Sunday"
    ours_text = literal_span(sentence.text, [(d.start, d.end) for d in outside or days])
    theirs_text = literal_span(source, [(d.start, d.end) for d in open_])
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
