"""How often: dosage and schedule frequencies as events per day. "twice daily" = "two times a day" = "every 12
hours" = 2; "three times a week" = 3/7; "every other day" = 1/2; "once a month" = 1/30 (a month is 28 to 31
days, so "once a month" and "every 4 weeks" agree). Each with where it is written, so a finding can quote both."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from stream_guard.text.quantities.bounds import bound_before
from stream_guard.text.words import mentions, stem

_COUNT = {"once": 1, "twice": 2, "thrice": 3, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
          "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12}  # fmt: skip
_PERIOD_DAYS = {"hour": (1 / 24, 1 / 24), "day": (1.0, 1.0), "night": (1.0, 1.0), "morning": (1.0, 1.0),
                "evening": (1.0, 1.0), "week": (7.0, 7.0), "fortnight": (14.0, 14.0), "month": (28.0, 31.0),
                "quarter": (89.0, 92.0), "year": (365.0, 366.0)}  # fmt: skip
_ADVERB = {"hourly": "hour", "daily": "day", "nightly": "night", "weekly": "week", "fortnightly": "fortnight",
           "monthly": "month", "quarterly": "quarter", "yearly": "year", "annually": "year"}  # fmt: skip

_N = r"(?:once|twice|thrice|\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|twelve)"
_PERIOD = r"(hour|day|night|week|fortnight|month|quarter|year)"
# A number after a currency sign or inside a figure is an amount, never a count of times: "$10 per month" is a
# price's billing period (the billing check's), "$9.99 a month" is not 99 times a month.
_NOT_A_COUNT = r"(?<![$€£¥.,])"
_FREQUENCY_RE = re.compile(
    rf"\b{_NOT_A_COUNT}(?P<n>{_N})(?:\s++times?|\s*+x)?\s++(?:a|an|per|each|every)\s++{_PERIOD.replace('(', '(?P<p>', 1)}\b"
    rf"|\b{_NOT_A_COUNT}(?P<n2>{_N})(?:\s++times?|\s*+x)?\s++(?P<adv>hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually)\b"
    rf"|\bevery\s++(?:(?P<k>\d{{1,3}}|other|second|two|three|four|five|six|seven|eight|nine|ten|twelve)\s++)?"
    rf"(?P<ep>hours?|days?|nights?|weeks?|fortnights?|months?|years?|morning|evening)\b"
    rf"|\b(?P<q>q(?P<qh>\d{{1,2}})h)\b",
    re.IGNORECASE,
)
_WORD_NUMBERS = {"other": 2, "second": 2, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "twelve": 12}  # fmt: skip
# Substrings every frequency contains one of: a C-level test that skips most sentences.
_NEEDLES = ("once", "twice", "thrice", "times", "every", "daily", "weekly", "monthly", "hourly", "nightly", "yearly",
            "annually", "quarterly", "fortnightly", "q1", "q2", "q3", "q4", "q6", "q8", "x a", "x per", "x each")


@dataclass(frozen=True)
class Frequency:
    """How often something happens, as written at [start, end): between `low` and `high` times a day."""

    text: str
    start: int
    end: int
    low: float
    high: float
    bound: str | None = None  # "at_least" / "at_most" when a bound phrase comes first ("up to once a week")

    def agrees(self, other: "Frequency") -> bool:
        if self.bound and other.bound and self.bound != other.bound:
            return False  # "up to once a week" against "at least once a week"
        return self.low <= other.high * 1.0001 and other.low <= self.high * 1.0001


def frequencies(text: str) -> list[Frequency]:
    """Every frequency stated in `text`, in order."""
    return list(_frequencies(text)) if text and mentions(text, _NEEDLES) else []


# A bare adverb of period states once per period ("billed annually" is "once a year"). Not read by
# `frequencies`: in an answer, "open daily" names a schedule's days and "$10 monthly" a price's period, which
# the schedule and billing checks compare; as a source's wording it can only bear out a frequency.
_BARE_ADVERB_RE = re.compile(r"\b(hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually)\b",
                             re.IGNORECASE)


def stated_frequencies(text: str) -> list[Frequency]:
    """What a source's `text` says of how often: its frequencies, and each bare adverb of period as once per
    period ("annually" bears out "once a year", "daily" bears out "once a day")."""
    if not text or not mentions(text, _NEEDLES):  # every bare adverb is among the needles too
        return []
    found = list(_frequencies(text))
    for m in _BARE_ADVERB_RE.finditer(text):
        if not any(f.start <= m.start() < f.end for f in found):
            low, high = _PERIOD_DAYS[_ADVERB[m.group(1).lower()]]
            found.append(Frequency(m.group(), m.start(), m.end(), 1 / high, 1 / low))
    return found


@lru_cache(maxsize=16384)
def _frequencies(text: str) -> tuple[Frequency, ...]:
    out: list[Frequency] = []
    for m in _FREQUENCY_RE.finditer(text):
        bound, start = bound_before(text, m.start())
        found = _read(m)
        if found is not None:
            low, high = found
            out.append(Frequency(text[start : m.end()], start, m.end(), low, high, bound))
    return tuple(out)


def _read(m: re.Match[str]) -> tuple[float, float] | None:
    """(low, high) times a day of one match."""
    if m.group("q"):
        hours = int(m.group("qh"))
        return (24 / hours, 24 / hours) if hours else None
    if m.group("ep"):
        period = m.group("ep").lower().rstrip("s")
        every = m.group("k")
        k = int(every) if every and every.isdigit() else _WORD_NUMBERS.get((every or "").lower(), 1)
        if k == 0:
            return None
        low, high = _PERIOD_DAYS[period]
        return 1 / (k * high), 1 / (k * low)
    n_text = m.group("n") or m.group("n2")
    n = int(n_text) if n_text.isdigit() else _COUNT[n_text.lower()]
    period = m.group("p") or _ADVERB[m.group("adv").lower()]
    low, high = _PERIOD_DAYS[period.lower()]
    return n / high, n / low


@dataclass(frozen=True)
class PeriodAdjective:
    """An adverb of period used as an adjective on a noun ("a daily serving", "the weekly meeting"), as written at
    [start, end). It names the period the noun recurs in, not a count: "a daily dose" is the dose of one day, which
    may be taken twice daily, so it is compared only with another period adjective on the same noun."""

    text: str
    start: int
    end: int
    period: str  # "day", "week", ... (_PERIOD_DAYS keys)
    noun: str  # the stem of the noun it qualifies

    def agrees(self, other: "PeriodAdjective") -> bool | None:
        """None for another noun (says nothing of ours); else whether the periods are the same."""
        if self.noun != other.noun:
            return None
        return self.period == other.period


# A determiner, the adjective written in lower case (a capital is a name: "The Daily Telegraph", "Weekly World
# News") and the noun it qualifies ("a daily serving", "your weekly diet", "the monthly fee").
_PERIOD_ADJECTIVE_RE = re.compile(
    r"\b(?i:a|an|one|the|this|that|each|every|your|their|his|her|its|our|my)\s++"
    r"(?P<adj>hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annual)\s++(?P<noun>[a-z][a-z-]+)\b"
)
_ADJECTIVE_PERIOD = {**_ADVERB, "annual": "year"}
_ADJECTIVE_NEEDLES = tuple(_ADJECTIVE_PERIOD)  # "annual" is no needle of a frequency


def period_adjectives(text: str) -> list[PeriodAdjective]:
    """The period adjectives of `text` on their nouns, in order ("a weekly serving": week, serv)."""
    if not text or not mentions(text, _ADJECTIVE_NEEDLES):
        return []
    return [
        PeriodAdjective(m.group(), m.start(), m.end(), _ADJECTIVE_PERIOD[m.group("adj")], stem(m.group("noun")))
        for m in _PERIOD_ADJECTIVE_RE.finditer(text)
    ]
