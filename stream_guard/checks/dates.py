"""Date contradictions: the answer dates an event differently from the context.

Dates are read as (year, month, day) with missing parts left open: "in 2019", "March 2019", "March 3",
"March 3, 2021", "3 March 2021", "2021-03-03", "03/03/2021" (both month/day orders are kept, since the
text does not say which one it uses), and quarters ("Q3 2025", "third quarter of 2025", "3Q25": the same quarter
in any form agrees, another quarter or another year conflicts). Two dates agree when every part both give is equal; they conflict
when a part both give differs. Bare four-digit numbers 1900-2100 without a unit or currency are years
(the quantity extractor leaves them here). A conflict is reported only when the answer's date occurs nowhere
in the context and a context date for the same subject (shared stems near the dates and/or an aligned
sentence) says otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from stream_guard.checks.alignment import (
    MAX_ANSWER_VALUES,
    MAX_CONTEXT_VALUES,
    ContradictionView,
    capped_per_sentence,
    clause_stems,
    contradiction_finding,
    strongest_rival,
    surface_words,
    neighbours,
    tied_to_subject,
)
from stream_guard.text import regex_cache
from stream_guard.text.analysis import ContextAnalysis, shared_counts
from stream_guard.text.quantities import UNITS
from stream_guard.text.words import DIGIT_RE, stem
from stream_guard.wire.report import Finding

_MONTH_NUMBER = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10,
    "nov": 11, "dec": 12,
}  # fmt: skip
# Capitalised month names only: "may" the modal verb and "march" the verb must never become dates.
_MONTH = (
    r"(?P<{g}>January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
)
_DAY = r"(?P<{g}>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<{g}>1[89]\d\d|20\d\d|2100)"
_RANGE_END = r"(?:\s?+[-–]\s?+(?P<{g}>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?)?"
# Every alternative starts at a digit or a capital month initial; the lookahead lets the engine skip all
# other positions at once (8x faster on long contexts).
_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_DATE_RE = regex_cache.compile(
    r"(?=[0-9JFMASONDQT]|q[1-4]|first|second|third|fourth)(?:"
    + "|".join(
        [
            # Quarters: "Q3 2025", "Q4", "3Q25", "third quarter of 2025", "Third-quarter 2025", "2025 Q3"
            r"\b[Qq](?P<q1>[1-4])(?:[\s-]++(?:FY)?(?P<qy1>(?:19|20)\d\d))?\b",
            r"\b(?P<q2>[1-4])Q(?P<qy2>\d\d)?\b",
            r"\b(?P<qw>(?i:first|second|third|fourth)|1st|2nd|3rd|4th)[\s-]++(?i:quarter)(?:\s++of)?"
            r"(?:,?\s++(?:(?i:fiscal)\s++)?(?P<qy3>(?:19|20)\d\d))?\b",
            r"\b(?P<qy4>(?:19|20)\d\d)\s++[Qq](?P<q4>[1-4])\b",
            r"(?<![\d-])" + _YEAR.format(g="iy") + r"-(?P<im>0?[1-9]|1[0-2])-(?P<id>[12]\d|3[01]|0?[1-9])(?![\d-])",
            # A day range in one month ("May 12-14, 2026", "12-14 May 2026") is two dates: its first and last day.
            r"\b" + _MONTH.format(g="m1") + r"\s+" + _DAY.format(g="d1") + _RANGE_END.format(g="e1")
            + r"(?![\d:])(?:,?\s+" + _YEAR.format(g="y1") + r")?\b",
            r"\b(?:" + _DAY.format(g="s2") + r"\s?+[-–]\s?+)?" + _DAY.format(g="d2") + r"\s+(?:of\s+)?" + _MONTH.format(g="m2")
            + r"(?:,?\s+" + _YEAR.format(g="y2") + r")?\b",
            r"\b" + _MONTH.format(g="m3") + r",?\s+(?:of\s+)?" + _YEAR.format(g="y3") + r"\b",
            r"(?<![\d/])(?P<sa>[01]?\d)/(?P<sb>[0-3]?\d)/(?P<sy>(?:19|20)\d\d|\d\d)(?![\d/])",
            # 03.03.2021 (day first where it is written so, but both orders are kept, as for slashes)
            r"(?<![\w.])(?P<da>[0-3]?\d)\.(?P<db>[0-3]?\d)\.(?P<dy>(?:19|20)\d\d)(?!\d|\.\d)",
            # 2021/03/03 and 2021.03.03: year first, then month and day
            r"(?<![\d/.])" + _YEAR.format(g="jy") + r"(?P<js>[/.])(?P<jm>0?[1-9]|1[0-2])(?P=js)(?P<jd>[12]\d|3[01]|0?[1-9])(?![\d/]|\.\d)",
            r"(?<![\w$€£¥.,/#])(?:(?<=mid-)|(?<=pre-)|(?<=post-)|(?<![A-Za-z]-))" + _YEAR.format(g="y4")
            + r"(?![\w%]|[.,/]\d|\s*+(?:-|–)\s*+\d\d\b(?!\d))",
        ]
    )
    + ")",
    re.ASCII,
)
_UNIT_AFTER_RE = regex_cache.compile(r"\s*+([A-Za-z]++)")


@dataclass(frozen=True)
class DateMention:
    """A date as written. `readings` holds every (year, month, day) the text can mean (None = not given)."""

    text: str
    start: int
    end: int
    readings: tuple[tuple[int | None, int | None, int | None], ...]  # (year, month, day); None = not given
    subject: frozenset[str] = frozenset()
    role: str | None = None  # "start" or "end" of a period, from the words just before the date
    quarter: int | None = None  # 1-4 for "Q3 2025", "third quarter"; the readings then give the year alone
    # The whole mention as written: for either end of a day range, the range ("May 12-15, 2026"), which is the
    # value a reader compares and a patch replaces; empty when it is `text`.
    written: str = ""

    @property
    def year(self) -> int | None:
        return self.readings[0][0]

    @property
    def as_written(self) -> str:
        return self.written or self.text

    @property
    def names_month(self) -> bool:
        """Whether the date names a month, a day or a quarter rather than a year alone."""
        return self.quarter is not None or any(month is not None or day is not None for _, month, day in self.readings)


def extract_dates(text: str) -> list[DateMention]:
    """Every date or year in `text`, in order."""
    if not text:
        return []
    return list(_extract_cached(text))


# Every alternative of _DATE_RE holds an ASCII digit except "third quarter" (with no year), which holds the word
# "quarter" in some case (re.ASCII: \d and case-folding are ASCII only): a text holding neither has no date, and
# most answer sentences hold neither. Tested against the pattern itself.
_DIGITS = "0123456789"


def may_hold_date(text: str) -> bool:
    """False only when `_DATE_RE` finds nothing in `text`: no ASCII digit and no "quarter" in any case."""
    for digit in _DIGITS:  # ten substring scans (memchr) cost less than the pattern tried at every character
        if digit in text:
            return True
    return "quarter" in text.lower()


@lru_cache(maxsize=16384)
def _extract_cached(text: str) -> tuple[DateMention, ...]:
    if not may_hold_date(text):
        return ()
    raw: list[tuple[int, int, tuple[tuple[int | None, int | None, int | None], ...], int | None, str | None, str]] = []
    for m in _DATE_RE.finditer(text):
        quarter = _quarter(m)
        readings = _readings(m, text) if quarter is None else ((_quarter_year(m), None, None),)
        if readings:
            parts = _day_range(m, readings)
            raw += parts or [(m.start(), m.end(), readings, quarter, _role(text, m.start()), "")]
    return tuple(
        DateMention(
            text[start:end], start, end, readings, clause_stems(text, start, end, skip=_NOT_SUBJECT), role, quarter,
            written,
        )
        for start, end, readings, quarter, role, written in raw
    )


def _day_range(
    m: re.Match[str], readings: tuple[tuple[int | None, int | None, int | None], ...]
) -> list[tuple[int, int, tuple[tuple[int | None, int | None, int | None], ...], int | None, str | None, str]]:
    """A day range in one month as its first and last day, each with the range's month and year and its role:
    "May 12-14, 2026" is "May 12" (start) and "14, 2026" (end); "12-14 May 2026" is "12" and "14 May 2026".
    Empty when `m` is one date. A second day not after the first ("May 14-12", "24-17 May": a score) is no
    range: the date is read as before, without the other number."""
    if not (m.group("e1") or m.group("s2")):
        return []
    (year, month, day), = readings  # a month and a day: one reading
    if m.group("e1"):
        first, last, first_end, last_start = day, int(m.group("e1")), m.end("d1"), m.start("e1")
        single = (m.start(), first_end)
    else:  # "12-14 May": the match's day is the last
        first, last, first_end, last_start = int(m.group("s2")), day, m.end("s2"), m.start("d2")
        single = (last_start, m.end())
    if first is None or last is None or last <= first:
        start, end = single
        return [(start, end, readings, None, _role(m.string, start), "")]
    return [(m.start(), first_end, ((year, month, first),), None, "start", m.group(0)),
            (last_start, m.end(), ((year, month, last),), None, "end", m.group(0))]


def _quarter(m: re.Match[str]) -> int | None:
    g = m.groupdict()
    for key in ("q1", "q2", "q4"):
        if g[key]:
            return int(g[key])
    return _QUARTER_WORDS[g["qw"].lower()] if g["qw"] else None


def _quarter_year(m: re.Match[str]) -> int | None:
    g = m.groupdict()
    if g["qy2"]:
        return 2000 + int(g["qy2"])
    year = g["qy1"] or g["qy3"] or g["qy4"]
    return int(year) if year else None


_END_CUES = frozenset("end ends ended ending until till through thru to by expire expires expired close closes "
                      "closed deadline last".split())
_START_CUES = frozenset("from start starts started starting begin begins began beginning since open opens "
                        "opened".split())
_CUE_WORD_RE = regex_cache.compile(r"[A-Za-z]+")


def _role(text: str, start: int) -> str | None:
    """Whether the date opens or closes a period ("runs from June 1 to June 30", "ends on July 15"), from
    the nearest cue among the three words before it. A sale's end date must be compared with the source's
    end date, not with its start."""
    for word in reversed(_CUE_WORD_RE.findall(text[max(0, start - 40) : start].lower())[-3:]):
        if word in _END_CUES:
            return "end"
        if word in _START_CUES:
            return "start"
    return None


_NOT_SUBJECT = frozenset(
    "january february march april may june july august september october november december year years "
    "month months day days date dated early late mid end beginning".split()
)


def _readings(m: re.Match[str], text: str) -> tuple[tuple[int | None, int | None, int | None], ...]:
    g = m.groupdict()
    if g["iy"]:
        return ((int(g["iy"]), int(g["im"]), int(g["id"])),)
    for month_key, day_key, year_key in (("m1", "d1", "y1"), ("m2", "d2", "y2")):
        if g[month_key]:
            year = int(g[year_key]) if g[year_key] else None
            return ((year, _month(g[month_key]), int(g[day_key])),)
    if g["m3"]:
        return ((int(g["y3"]), _month(g["m3"]), None),)
    if g["sa"]:
        return _slash_readings(int(g["sa"]), int(g["sb"]), g["sy"])
    if g["da"]:
        return _slash_readings(int(g["da"]), int(g["db"]), g["dy"])
    if g["jy"]:
        return ((int(g["jy"]), int(g["jm"]), int(g["jd"])),)
    if g["y4"]:
        after = _UNIT_AFTER_RE.match(text, m.end())
        if after and after.group(1).lower() in UNITS and after.group(1).lower() not in ("s",):
            return ()  # "2000 mg", "1950 calories": a quantity, not a year
        return ((int(g["y4"]), None, None),)
    return ()


def _month(name: str) -> int:
    return _MONTH_NUMBER[name[:3].lower()]


def _slash_readings(a: int, b: int, year_text: str) -> tuple[tuple[int | None, int | None, int | None], ...]:
    year = int(year_text)
    if len(year_text) == 2:
        year += 2000 if year < 50 else 1900
    readings = []
    if 1 <= a <= 12 and 1 <= b <= 31:
        readings.append((year, a, b))
    if 1 <= b <= 12 and 1 <= a <= 31 and a != b:
        readings.append((year, b, a))
    return tuple(readings)


def _parts_agree(a: tuple[int | None, ...], b: tuple[int | None, ...]) -> bool | None:
    """True when every part both give is equal, False when one differs, None when they share no part."""
    shared = False
    for x, y in zip(a, b):
        if x is None or y is None:
            continue
        shared = True
        if x != y:
            return False
    return True if shared else None


def _quarter_of(d: DateMention) -> int | None:
    if d.quarter is not None:
        return d.quarter
    months = {r[1] for r in d.readings}
    return (months.pop() - 1) // 3 + 1 if len(months) == 1 and None not in months else None


def dates_agree(a: DateMention, b: DateMention) -> bool | None:
    if a.quarter is not None or b.quarter is not None:
        qa, qb = _quarter_of(a), _quarter_of(b)
        if qa is not None and qb is not None and qa != qb:
            return False  # "Q3" against "fourth quarter", or against a date in another quarter
        if (a.year is None or b.year is None) and qa is not None and qb is not None:
            return True  # "Q4" and "fourth quarter of 2025": the same quarter, one year left open
    results = [_parts_agree(ra, rb) for ra in a.readings for rb in b.readings]
    if any(r is True for r in results):
        return True
    if all(r is None for r in results):
        return None
    return False


def stated_by(d: DateMention, source: DateMention) -> bool:
    """Whether `source` states every part `d` gives, with the same value ("January 31, 2026" by "2026-01-31",
    "2026" by "March 2026"; not "March 2026" by "2026", which leaves the month open)."""
    if d.quarter is not None and _quarter_of(source) != d.quarter:
        return False
    return any(all(x is None or x == y for x, y in zip(ra, rb)) for ra in d.readings for rb in source.readings)


@dataclass(frozen=True)
class _Placed:
    date: DateMention
    sentence: int


_POOL = "dates.pool"  # the ContextAnalysis.derive key of the context's dates


def _context_pool(context: ContextAnalysis) -> tuple[_Placed, ...]:
    """The context's dates, the first MAX_CONTEXT_VALUES, each with the sentence it is in."""
    texts = (s.text for s in context.sentences)
    found = capped_per_sentence(texts, stated_dates, MAX_CONTEXT_VALUES)
    return tuple(_Placed(d, i) for i, dates in enumerate(found) for d in dates)


def context_dates(context: ContextAnalysis) -> tuple[_Placed, ...]:
    """The context's dates (the first MAX_CONTEXT_VALUES), each with its sentence; computed once per context."""
    return context.derive(_POOL, _context_pool)


def analyze_dates(view: ContradictionView) -> list[Finding]:
    answer_dates = capped_per_sentence((a.text for a in view.answer), extract_dates, MAX_ANSWER_VALUES)
    if not any(answer_dates):
        return []
    pool = context_dates(view.inspection.context)
    findings: list[Finding] = []
    for sentence, dates in zip(view.answer, answer_dates):
        overlaps = view.answer_overlaps[sentence.index]
        answer_stems = len(sentence.stems)
        bare = _bare_value(sentence.stems, dates)
        if bare:
            # "15 March 1984" as the whole answer: what it dates is what the question asks about.
            asked = view.inspection.question_stems - _NOT_SUBJECT_STEMS
            overlaps = view.inspection.once(("question overlaps", asked), lambda: shared_counts(
                view.inspection.context.sentence_index, asked))
            answer_stems = len(asked)
        reported: set[str] = set()  # a day range is one value: one finding for both of its ends
        for k, d in enumerate(dates):
            if d.as_written in reported or any(accounts_for(p.date, d) for p in pool):
                continue
            others = neighbours(dates, k)
            # A context date another date of this sentence restates is accounted for, not a rival.
            rivals = [
                p for p in pool if dates_agree(d, p.date) is False and not any(accounts_for(o, p.date) for o in others)
            ]
            if bare:
                # The source value a bare date answers is written to the same detail (a birth date for a birth
                # date, not the year of a film the question also names).
                d = replace(d, subject=asked)
                rivals = [p for p in rivals if p.date.names_month or not d.names_month]
            rival = _best_rival(d, rivals, overlaps, answer_stems, bare)
            if rival is not None:
                findings.append(_finding(view, sentence.text, d, rival))
                reported.add(d.as_written)
    return findings


_NOT_SUBJECT_STEMS = frozenset(stem(w) for w in _NOT_SUBJECT)


def _bare_value(stems: frozenset[str], dates: list[DateMention]) -> bool:
    """Whether an answer sentence is its dates and nothing else ("15 March 1983", "In 1983."): no content stem
    but date words."""
    return bool(dates) and not (stems - _NOT_SUBJECT_STEMS)


def accounts_for(source: DateMention, d: DateMention) -> bool:
    """Whether a context date accounts for answer date `d`: they agree, and the context date is not a bare year
    standing against a day, month or quarter. "The 2026 edition" says nothing about which days in 2026, so it
    does not make "May 12-15, 2026" agree with a source that holds the conference on 12-14 May 2026."""
    return bool(dates_agree(d, source)) and (source.names_month or not d.names_month)


# The cheap test of stated_dates as two searches, each opening on a character set the engine skips to (one
# alternation of a digit and the month names is tried at every character): a digit, or a month's name.
_MONTH_NAME_RE = regex_cache.compile(r"January|February|March|April|May|June|July|August|September|October|November|December")


def stated_dates(text: str) -> list[DateMention]:
    """The dates of `text`, after a cheap test that it names a month or holds a digit."""
    return extract_dates(text) if DIGIT_RE.search(text) or _MONTH_NAME_RE.search(text) else []


# Question stems a context sentence must share for its date to answer a bare date (two: a name and a relation,
# "Bertotti ... born"; one is any sentence that names the film).
MIN_ASKED_SHARED = 2


def _best_rival(
    d: DateMention, rivals: list[_Placed], overlaps: dict[int, int], answer_stems: int, bare: bool = False
) -> _Placed | None:
    if d.quarter is not None:
        # "Q3 2024" against "Q3 2025 ... Q2 2025": the same quarter in another year is the one it restates.
        same_quarter = [p for p in rivals if _quarter_of(p.date) == d.quarter]
        rivals = same_quarter or rivals
    scored: list[tuple[int, int, _Placed]] = []
    for p in rivals:
        local = len(d.subject & p.date.subject)
        shared = overlaps.get(p.sentence, 0)
        if tied_to_subject(local, shared, answer_stems) or (bare and shared >= MIN_ASKED_SHARED):
            scored.append((local, shared, p))
    # `dates_agree` is None for dates that share no part: two such context dates count as disagreeing.
    best = strongest_rival(scored, lambda a, b: dates_agree(a.date, b.date))
    if best is not None and d.role is not None and best.date.role != d.role:
        # A period's other end in the same source sentence ("from June 1 to June 30") carries the subject
        # too: an end date is contradicted by the source's end date, a start date by its start date.
        partner = next((p for p in rivals if p.sentence == best.sentence and p.date.role == d.role), None)
        return partner or best
    return best


def _source_literal(answer: DateMention, source: DateMention) -> str:
    """The part of the source date that replaces the answer's: a year for a year, the full date otherwise."""
    given = [part is not None for part in answer.readings[0]]
    if given == [True, False, False] and answer.quarter is None and source.year is not None:
        year = str(source.year)
        if year in source.text:
            return year
    return source.as_written


def _finding(view: ContradictionView, statement: str, d: DateMention, rival: _Placed) -> Finding:
    subject = surface_words(statement, d.subject & rival.date.subject) or "the same event"
    source_value = _source_literal(d, rival.date)
    return contradiction_finding(
        view,
        rival.sentence,
        kind="date",
        statement=statement,
        evidence=f"answer dates '{subject}' to '{d.as_written}' but the source says '{source_value}'",
        answer_value=d.as_written,
        source_value=source_value,
    )
