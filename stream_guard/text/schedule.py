"""Schedules in prose: clock times ("4 pm" = "16:00" = "4:00 p.m.", "noon", "midnight"), days of the week named,
in ranges or as "weekdays" / "daily" ("Mon-Fri", "Monday through Friday", "weekends"), and time zones ("ET",
"Eastern Time", "UTC"), each with where it is written, so a check can compare an answer's opening hours or support
hours with the source's and a finding can quote both."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from stream_guard.text import regex_cache
from stream_guard.text.words import DIGIT_RE, may_match, mentions

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_TIME_RE = regex_cache.compile(
    # "11:30 in the morning", "9 at night": the part of the day is the time's am or pm (first: the 24-hour
    # alternative would take "11:30" alone; the other alternatives' groups are 5-12)
    r"\b(?P<h>\d{1,2})(?::(?P<m>[0-5]\d))?\s++(?:in\s++the\s++(?P<part>morning|afternoon|evening)|at\s++(?P<night>night))\b|"
    r"\b(\d{1,2})(?::(\d{2}))?(?:\s*+(?:or|to|-|–|until|till)\s*+(\d{1,2})(?::(\d{2}))?)?\s*+([ap])\.?\s?m\b\.?"
    r"|\b([01]?\d|2[0-4]):([0-5]\d)\b(?!:\d)(?!\s*+[ap]\.?\s?m\b)|\b(noon|midday|midnight)\b",
    re.IGNORECASE,
)

_DAY_NAME = r"(mon|tues|wednes|thurs|fri|satur|sun)days?"
_DAY_ABBR = r"(mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)\.?"
_DAY_RE = regex_cache.compile(
    rf"\b{_DAY_NAME}\b(?:\s*+(?:-|–|to|through|thru|until)\s*+\b{_DAY_NAME}\b)?"
    rf"|\b{_DAY_ABBR}\s*+[-–]\s*+{_DAY_ABBR}(?!\w)"
    r"|\b(every\s++day|daily|seven\s++days(?:\s++a\s++week)?|7\s++days(?:\s++a\s++week)?|weekdays|weekends?|24/7)",
    re.IGNORECASE,
)
_SPAN_DAYS = {"every day": DAYS, "daily": DAYS, "seven days": DAYS, "7 days": DAYS, "24/7": DAYS,
              "weekdays": DAYS[:5], "weekend": DAYS[5:], "weekends": DAYS[5:]}  # fmt: skip

# Time zones, named as people write them; daylight and standard time of one zone are the same zone here
# (an answer that says "ET" for a source's "EST" is not wrong).
_ZONES = {
    "et": "eastern", "est": "eastern", "edt": "eastern", "eastern": "eastern",
    "ct": "central", "cst": "central", "cdt": "central", "central": "central",
    "mt": "mountain", "mst": "mountain", "mdt": "mountain", "mountain": "mountain",
    "pt": "pacific", "pst": "pacific", "pdt": "pacific", "pacific": "pacific",
    "utc": "utc", "gmt": "utc", "zulu": "utc",
    "bst": "uk", "cet": "central european", "cest": "central european", "ist": "india", "jst": "japan",
    "aest": "australian eastern", "aedt": "australian eastern", "hst": "hawaii", "akst": "alaska",
}  # fmt: skip
_ZONE_RE = regex_cache.compile(
    r"\b(ET|EST|EDT|CT|CST|CDT|MT|MST|MDT|PT|PST|PDT|UTC|GMT|BST|CET|CEST|IST|JST|AEST|AEDT|HST|AKST)\b"
    r"|\b(Eastern|Central|Mountain|Pacific)(?:\s++(?:Standard|Daylight))?\s++Time\b"
)


@dataclass(frozen=True)
class Mention:
    """A value as written: `text` at [start, end)."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class ClockTime(Mention):
    minutes: int  # after midnight; midnight is 0


@dataclass(frozen=True)
class DaySpan(Mention):
    days: frozenset[str]


@dataclass(frozen=True)
class Zone(Mention):
    zone: str


# Substrings a clock time, a day or a closing contains one of: a C-level test that skips most sentences.
_CLOCK_NEEDLES = ("am", "pm", "a.m", "p.m", ":", "noon", "midday", "midnight", "morning", "afternoon", "evening",
                  "night")
_DAY_NEEDLES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun", "daily", "every day", "weekday", "weekend",
                "seven days", "7 days", "24/7")
_CLOSED_NEEDLES = ("clos", "except", "not open")
# Every clock time _TIME_RE reads holds a digit but "noon", "midday" and "midnight": a sentence that passes the
# needles on a word such as "same" or "team" and holds neither is skipped with a digit search (opening on a
# set, which the engine skips to) where the pattern, which ignores case, was tried at every character.
_NAMED_TIMES = ("noon", "midday", "midnight")


def may_hold_clock_time(text: str) -> bool:
    """False only when _TIME_RE finds nothing in `text`."""
    return mentions(text, _CLOCK_NEEDLES) and (
        DIGIT_RE.search(text) is not None or may_match(text, _NAMED_TIMES))


def clock_times(text: str) -> list[ClockTime]:
    """Clock times, in order: "4 PM" -> 960, "9 or 10 pm" -> 1260 and 1320 (one mention each), "16:00" -> 960."""
    return list(_clock_times(text)) if text and may_hold_clock_time(text) else []


@lru_cache(maxsize=16384)
def _clock_times(text: str) -> tuple[ClockTime, ...]:
    out: list[ClockTime] = []
    for m in _TIME_RE.finditer(text):
        if m.group("h") is not None:
            hour = int(m.group("h"))
            later = m.group("night") is not None or (m.group("part") or "").lower() != "morning"
            if hour <= 24:
                # 21:00 at night is already past noon; 12 at night is midnight, 12 in the afternoon noon
                hour = hour % 12 + 12 if later and 1 <= hour < 12 else (0 if hour == 12 and m.group("night") else hour)
                out.append(ClockTime(m.group(), m.start(), m.end(), hour * 60 + int(m.group("m") or 0)))
            continue
        literal = m.group().rstrip(" .") if m.group(9) else m.group()
        mention = (literal, m.start(), m.start() + len(literal))
        if m.group(12):
            word = m.group(12).lower()
            out.append(ClockTime(*mention, 0 if word == "midnight" else 720))
            continue
        if m.group(10) is not None:
            out.append(ClockTime(*mention, int(m.group(10)) * 60 + int(m.group(11))))
            continue
        pm = m.group(9).lower() == "p"
        for hour, minute in ((m.group(5), m.group(6)), (m.group(7), m.group(8))):
            if hour is None:
                continue
            h = int(hour) % 12 + (12 if pm else 0)
            if h <= 24:
                out.append(ClockTime(*mention, h * 60 + int(minute or 0)))
    return tuple(out)


def clock_minutes(text: str) -> list[int]:
    """Just the minutes of `clock_times`."""
    return [t.minutes for t in clock_times(text)]


def day_spans(text: str) -> list[DaySpan]:
    """Days of the week named, in ranges ("Monday to Friday", wrapping past Sunday) or as "daily", "weekdays",
    "weekends", "24/7", in order."""
    return list(_day_spans(text)) if text and mentions(text, _DAY_NEEDLES) else []


@lru_cache(maxsize=16384)
def _day_spans(text: str) -> tuple[DaySpan, ...]:
    out: list[DaySpan] = []
    for m in _DAY_RE.finditer(text):
        if m.group(5):
            key = " ".join(m.group(5).lower().split()).replace(" a week", "")
            out.append(DaySpan(m.group(), m.start(), m.end(), frozenset(_SPAN_DAYS[key])))
            continue
        start, end = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        first = DAYS.index(_day(start))
        if end is None:
            out.append(DaySpan(m.group(), m.start(), m.end(), frozenset({DAYS[first]})))
            continue
        last = DAYS.index(_day(end))
        days, k = [], first
        while True:
            days.append(DAYS[k])
            if k == last:
                break
            k = (k + 1) % 7
        out.append(DaySpan(m.group(), m.start(), m.end(), frozenset(days)))
    return tuple(out)


def days_named(text: str) -> set[str]:
    """Every day `day_spans` names."""
    return set().union(*(span.days for span in day_spans(text))) if text else set()


def _day(prefix: str) -> str:
    return next(d for d in DAYS if d.startswith(prefix.lower()[:3]))


def time_zones(text: str) -> list[Zone]:
    """Time zones named, in order, with the zone each names ("EST" and "Eastern Time" are "eastern")."""
    out: list[Zone] = []
    if "T" not in text:  # every zone is written with a capital T or ends in one ("ET", "UTC", "Eastern Time")
        return out
    for m in _ZONE_RE.finditer(text):
        key = (m.group(1) or m.group(2)).lower()
        out.append(Zone(m.group(), m.start(), m.end(), _ZONES[key]))
    return out


# Where one statement of hours ends and the next begins: "4 pm to 10 pm Monday to Saturday, and 11 am to 10 pm
# on Sunday"; and what makes a statement one about closing ("closed on Mondays", "except Friday").
_SCHEDULE_BREAK_RE = regex_cache.compile(r"[;,]|\band\b|\bwhile\b|\bbut\b|\bwith\b", re.IGNORECASE)
CLOSED_RE = regex_cache.compile(r"\bclosed?\b|\bnot\s+open\b|\bexcept\b", re.IGNORECASE)


@dataclass(frozen=True)
class SchedulePart:
    """Times and the days they are said of, in one part of a text (text offsets)."""

    times: tuple[ClockTime, ...]
    days: frozenset[str]


def schedule_parts(text: str) -> list[SchedulePart]:
    """(times, days they are said of) for each part of `text` that states times. A part naming days but no times
    takes the times of the part before ("11 am to 9 pm from Tuesday to Thursday and Friday to Sunday"), and one
    naming times but no days the days of the part before; a part about closing or an exception ("closed on
    Monday", "except Friday") is left out, and its days taken from the others."""
    parts: list[tuple[tuple[ClockTime, ...], set[str]]] = []
    if not mentions(text, _CLOCK_NEEDLES):
        return []
    excepted: set[str] = set()
    last_times: tuple[ClockTime, ...] = ()
    last_days: set[str] = set()
    start = 0
    pieces = [(m.start(), m.end()) for m in _SCHEDULE_BREAK_RE.finditer(text)] + [(len(text), len(text))]
    for cut_start, cut_end in pieces:
        piece = text[start:cut_start]
        offset, start = start, cut_end
        if CLOSED_RE.search(piece):
            excepted |= days_named(piece)
            last_times, last_days = (), set()
            continue
        times = tuple(ClockTime(t.text, t.start + offset, t.end + offset, t.minutes) for t in clock_times(piece))
        days = days_named(piece)
        if not times and not days:
            continue
        if times and days:
            parts.append((times, days))
        elif times:
            parts.append((times, set(last_days)))
        elif last_times:
            parts.append((last_times, days))
        last_times, last_days = times or last_times, days or last_days
    return [SchedulePart(times, frozenset(days - excepted)) for times, days in parts]


def closed_days(text: str) -> set[str]:
    """Days `text` says something is closed on ("closed on Sundays and public holidays")."""
    out: set[str] = set()
    if not mentions(text, _CLOSED_NEEDLES) or not mentions(text, _DAY_NEEDLES):
        return out
    start = 0
    for m in [*_SCHEDULE_BREAK_RE.finditer(text), None]:
        piece = text[start : m.start() if m else len(text)]
        if CLOSED_RE.search(piece):
            out |= days_named(piece)
        if m:
            start = m.end()
    return out
