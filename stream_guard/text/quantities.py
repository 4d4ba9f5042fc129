"""Quantities in prose: numbers with units, money, percents, spelled-out numbers, durations, ranges.

`extract_quantities(text)` turns "returns within two weeks" into a `Quantity` whose value is 14.0 in unit
"day", keeping the literal span ("two weeks") so a healer can patch it in place and the content stems
around it ("return") so the contradiction checks can tell which subject a value belongs to.

Decisions worth knowing (each one trades recall for precision, on purpose):

- Durations normalise to days. Weeks, fortnights, hours, minutes and seconds convert exactly. A month is
  28-31 days and a year 365-366 days, so "a month" agrees with "30 days" and "31 days" but not with
  "14 days"; "12 months" agrees with "a year". Business/working days are their own unit: "5 business days"
  is never compared with "7 days".
- Labels are not values: letter-hyphen prefixes (SKU-441, COVID-19, GPT-4, W-2), digits glued to letters
  (A380, 1040EZ, 4G), numbers after a label word (Form 1040, Passage 2, Section 8, version 3) or after a
  capitalised name (Boeing 747, Fortune 500), list markers ("1. "), citations ("[2]"), versions (3.5.1),
  times (10:30, 5pm), ordinals (3rd) and scores (24-17).
- Bare four-digit numbers in 1900-2100 without a unit or currency are years; `stream_guard.checks.dates`
  owns them.
- "a"/"an" is the number one only before a duration and after a word that introduces one ("within a month",
  "for a year"), so "$10 a month" stays a billing cycle, not a duration.
- "one" is a number only before a unit ("one week"); as a pronoun ("one of the") it is not.
- Ranges ("5-7 days", "5 to 7 days", "between 5 and 7 days", "$10-$20") keep both bounds; a descending
  pair joined by a hyphen is a score or an identifier, not a range.
- Approximate answers ("about 30", "nearly 1.2 million") and rounded figures get a tolerance, handled in
  `values_agree`. "more than 100" / "up to 30 days" are bounds, but two bounds of the same kind compare
  exactly ("up to 30" vs "up to 14" differ). "within" is not a bound: "within 14 days" is the window.
- Ages ("a 26-year-old", "26 years old") are their own unit, never compared with durations.
- Only ASCII digits are numbers; other Unicode digits ("²", "٣") are ignored.
- Rates are their own units: "100 km/h", "62 mph" and "60 miles per hour" are metres per day, "0.5 mg/kg" is
  kilograms per kilogram, "5 mg per day" and "3 times a week" are per day. A rate compares only with rates
  of the same kind, never with a distance or a plain dose; `Quantity.numerator` keeps its amount so the
  numeric check can still accept "5 mg per day" where the context says "5 mg". A price per month stays a
  price: billing cycles belong to the billing check.
- "1.234,56" (dot thousands, decimal comma) is one number; "1.2M dollars" is 1.2 million dollars (a glued
  M, B or K is a scale only before a currency word or after a currency sign, so "3M" stays a name).
- Spelled numbers add up only as English composes them: "five six" is two numbers, and two pairs in a row
  ("nineteen ninety-nine") are a year, left to the dates check.
- "ton" is any of the short, metric and long ton; "tonne" is 1,000 kg.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from stream_guard.text.words import NEGATORS, STOP_WORDS, stem

# --------------------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------------------

_MONTH_DAYS = (28.0, 31.0)
_YEAR_DAYS = (365.0, 366.0)


@dataclass(frozen=True)
class _Unit:
    unit: str  # normalised unit every value is expressed in
    factor: float  # multiply the written number by this to get `unit`
    slack: tuple[float, float] | None = None  # calendar units: (low, high) factors instead of exact
    per_factor: float = 1.0  # a rate's denominator factor: factor * per_factor converts the numerator alone


def _units() -> dict[str, _Unit]:
    table: dict[str, _Unit] = {}

    def add(names: str, unit: _Unit) -> None:
        for name in names.split():
            table[name] = unit

    add("second seconds sec secs", _Unit("day", 1 / 86400))
    add("minute minutes min mins", _Unit("day", 1 / 1440))
    add("hour hours hr hrs", _Unit("day", 1 / 24))
    add("day days", _Unit("day", 1.0))
    add("night nights", _Unit("night", 1.0))
    add("week weeks wk wks", _Unit("day", 7.0))
    add("fortnight fortnights", _Unit("day", 14.0))
    add("month months mo mos", _Unit("day", 30.0, _MONTH_DAYS))
    add("year years yr yrs", _Unit("day", 365.0, _YEAR_DAYS))
    add("decade decades", _Unit("day", 3652.5, (3650.0, 3653.0)))
    add("century centuries", _Unit("day", 36525.0, (36500.0, 36525.0)))
    add("percent pct", _Unit("percent", 1.0))
    add("dollar dollars usd bucks", _Unit("usd", 1.0))
    add("cent cents", _Unit("usd", 0.01))
    add("euro euros eur", _Unit("eur", 1.0))
    add("gbp sterling", _Unit("gbp", 1.0))
    add("yen jpy", _Unit("jpy", 1.0))
    add("rupee rupees inr", _Unit("inr", 1.0))
    add("kb kilobyte kilobytes", _Unit("gb", 1e-6))
    add("mb megabyte megabytes", _Unit("gb", 1e-3))
    add("gb gigabyte gigabytes gig gigs", _Unit("gb", 1.0))
    add("tb terabyte terabytes", _Unit("gb", 1e3))
    add("pb petabyte petabytes", _Unit("gb", 1e6))
    add("kbps", _Unit("mbps", 1e-3))
    add("mbps", _Unit("mbps", 1.0))
    add("gbps", _Unit("mbps", 1e3))
    add("mcg µg ug microgram micrograms", _Unit("kg", 1e-9))
    add("mg milligram milligrams", _Unit("kg", 1e-6))
    add("gram grams", _Unit("kg", 1e-3))
    add("kg kgs kilogram kilograms kilo kilos", _Unit("kg", 1.0))
    add("lb lbs pound pounds", _Unit("kg", 0.45359237))
    add("oz ounce ounces", _Unit("kg", 0.028349523))
    add("tonne tonnes", _Unit("kg", 1000.0))
    # "ton" is 907 kg (short), 1000 kg (metric) or 1016 kg (long) depending on who writes it: any of them.
    add("ton tons", _Unit("kg", 1000.0, (907.18474, 1016.0469088)))
    add("mm millimeter millimeters millimetre millimetres", _Unit("m", 1e-3))
    add("cm centimeter centimeters centimetre centimetres", _Unit("m", 1e-2))
    add("meter meters metre metres", _Unit("m", 1.0))
    add("km kms kilometer kilometers kilometre kilometres", _Unit("m", 1e3))
    add("mile miles", _Unit("m", 1609.344))
    add("ft foot feet", _Unit("m", 0.3048))
    add("inch inches", _Unit("m", 0.0254))
    add("yard yards", _Unit("m", 0.9144))
    add("ml milliliter milliliters millilitre millilitres", _Unit("l", 1e-3))
    add("dl deciliter deciliters decilitre decilitres", _Unit("l", 0.1))
    add("liter liters litre litres", _Unit("l", 1.0))
    add("gallon gallons gal", _Unit("l", 3.785411784))
    add("cup cups", _Unit("cup", 1.0))
    add("teaspoon teaspoons tsp", _Unit("tsp", 1.0))
    add("tablespoon tablespoons tbsp", _Unit("tsp", 3.0))
    # Speeds are rates like any "km/h" or "miles per hour": metres per day, so every spelling compares.
    add("mph", _Unit("m/day", 1609.344 * 24))
    add("kph kmh", _Unit("m/day", 1000.0 * 24))
    add("calorie calories kcal", _Unit("kcal", 1.0))
    add("kw kilowatt kilowatts", _Unit("kw", 1.0))
    add("kwh", _Unit("kwh", 1.0))
    add("mw megawatt megawatts", _Unit("kw", 1e3))
    add("times", _Unit("times", 1.0))
    add("bp bps", _Unit("bp", 1.0))
    return table


UNITS: dict[str, _Unit] = _units()
DURATION_UNITS = frozenset(k for k, v in UNITS.items() if v.unit == "day")
# Glued to the digits ("10kg", "4GB", "30min"); single letters only where they cannot be a label.
_ATTACHED_UNITS: dict[str, _Unit] = {
    **{k: v for k, v in UNITS.items() if len(k) > 1},
    "h": UNITS["hour"],
    "g": UNITS["gram"],
    "m": UNITS["meter"],
    "l": UNITS["liter"],
    "x": UNITS["times"],
    "s": UNITS["second"],
    "d": UNITS["day"],
}
_DEGREE_UNITS = {"f": "degf", "fahrenheit": "degf", "c": "degc", "celsius": "degc", "centigrade": "degc"}

_MONEY_UNITS = frozenset("usd eur gbp jpy inr".split())
# Units that never take a denominator: "25% per year" is a percentage, "3 days per week" a schedule.
_NOT_RATED = frozenset("percent percentage_point bp degree degc degf age_years business_day night".split())
_RATE_PERIODS = frozenset("second minute hour day week fortnight month year".split())
_PER_ADVERBS = {"hourly": "hour", "daily": "day", "weekly": "week", "monthly": "month", "yearly": "year",
                "annually": "year"}  # fmt: skip

_CURRENCY_SYMBOLS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr"}
_CURRENCY_CODES = {"usd": "usd", "eur": "eur", "gbp": "gbp", "jpy": "jpy", "inr": "inr"}

_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "mn": 1e6, "bn": 1e9, "tn": 1e12}
_ATTACHED_SCALES = {"k": 1e3, "mn": 1e6, "bn": 1e9, "tn": 1e12, "m": 1e6, "b": 1e9}  # only after money

_ONES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
NUMBER_WORDS = frozenset(_ONES) | frozenset(_TENS) | {"hundred", "dozen"} | frozenset(k for k in _SCALES if len(k) > 2)

# Words that make the following number a name ("Form 1040", "Passage 2"), unless a unit follows.
_LABEL_WORDS = frozenset(
    """form forms model models version versions v ver section sections chapter chapters article articles
    number num route highway interstate flight room page pages pg step steps phase phases level levels grade
    title part parts figure fig table appendix exhibit item items rule rules line lines gate platform channel
    episode ep season volume vol issue series class type category tier size zone district unit suite apartment
    apt building floor lot passage passages paragraph para question questions verse psalm gen generation
    windows iphone galaxy pixel ios android python java cve rfc iso id code codes act bill proposition prop
    amendment clause schedule""".split()
)
_MONTH_NAMES = frozenset(
    "january february march april may june july august september october november december jan feb mar apr jun "
    "jul aug sep sept oct nov dec".split()
)
_CALENDAR_WORDS = _MONTH_NAMES | frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
# Between a number and its unit: "14 calendar days", "5 business days", "3 more weeks".
_UNIT_MODIFIERS = frozenset(
    "calendar full consecutive more additional extra straight whole solid long short entire".split()
)
_BUSINESS_MODIFIERS = frozenset("business working".split())
# Words after which "a"/"an" + duration means one unit of time.
_DURATION_LEADS = frozenset(
    """within for in after over under than about around nearly almost approximately roughly least most only just
    take takes took taking last lasts lasted lasting spend spends spent of to""".split()
)
_APPROX = (
    "approximately", "approx", "about", "around", "roughly", "nearly", "almost", "some", "circa", "ca", "~",
    "estimated", "close",
)  # fmt: skip
_LOWER_BOUND = ("over", "above", "exceeding", "least", "upwards", "excess", "more", "greater", "minimum")
# "within" is deliberately absent: "within 14 days" and "within 30 days" state different windows.
_UPPER_BOUND = ("under", "below", "up", "most", "less", "fewer", "maximum", "max")

_CLAUSE_WORDS = frozenset("and but or while whereas although though however nor".split())
_CLAUSE_PUNCT = frozenset(",;:()[]{}—–|\"“”")
# Never subject words: they describe the number itself, not what it counts.
_NOT_SUBJECT = (
    frozenset(UNITS)
    | NUMBER_WORDS
    | _UNIT_MODIFIERS
    | _BUSINESS_MODIFIERS
    | frozenset(_APPROX)
    | frozenset(_LOWER_BOUND)
    | frozenset(_UPPER_BOUND)
    | frozenset("per total percentage point points half roughly exactly only just approximately old aged".split())
)

# ASCII digits only (re.ASCII): other Unicode digits ("²", "٣") are not how figures are written, and float()
# rejects some of them.
# Grouped numbers are read only from the start of a group run (the look-behinds) and never re-read (possessive
# groups, a look-ahead of one separator): a run like "123,123,...,12" costs one pass, not one per group.
_TOKEN_RE = re.compile(
    r"(?<![\d.])\d{1,3}(?:\.\d{3})++,\d{1,2}(?!\d|[.,]\d)"  # 1.234,56: dot thousands, decimal comma
    r"|(?<!\d,)\d{1,3}(?:,\d{3})++(?:\.\d++)?(?!,*+\d)"  # 1,234,567.89
    r"|\d+(?:\.\d+)?|[A-Za-z]+(?:['’][A-Za-z]+)?|[^\sA-Za-z0-9]",
    re.ASCII,
)
# Cheap gate: sentences without a digit or a number word cannot hold a quantity.
_DIGIT_RE = re.compile(r"[0-9]")
_DURATION_WORDS = frozenset("second minute hour day week fortnight month year decade century".split())
_NUMBER_GATE_BYTES = frozenset(w.encode() for w in NUMBER_WORDS | _DURATION_WORDS | {"half"})
_PUNCT_TO_SPACE = bytes(32 if chr(c) in "-,.;:!?()[]{}\"'/" else c for c in range(256))
# Applied to lower-cased text (IGNORECASE alternations are several times slower).
_MAYBE_NUMBER_RE = re.compile(
    r"\b(?:" + "|".join(sorted(NUMBER_WORDS | {"half"}, key=len, reverse=True)) + r")\b"
    r"|\ban?\s+(?:second|minute|hour|day|week|fortnight|month|year|decade|century)\b"
)
# Tokens that can begin a quantity besides digits.
_STARTERS = frozenset(_ONES) | frozenset(_TENS) | {"dozen", "a", "an", "half"}
_SUBJECT_LEFT = 6
_SUBJECT_RIGHT = 4
# "1/2", "3/4", "5/8", "1/16": the denominators recipes and measurements use. Others ("24/7", "3/12") are
# ratios or dates.
_FRACTION_DENOMINATORS = (2, 3, 4, 8, 16)


# --------------------------------------------------------------------------------------------------
# The value type
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Quantity:
    """One quantity as written in a text.

    `text` is the literal span (`source[start:end] == text`). `value` is the number in `unit` (the first
    bound for a range); `low`/`high` bound what the text claims (a range, or a calendar unit's slack).
    `unit` is the normalised unit ("day", "usd", "percent", "gb", "kg", ...) or None for a bare count,
    in which case `counted` holds the stems of the noun being counted ("1,200 users" -> {"user"}).
    `subject` holds the content stems near the value within its clause. `qualifier` is "approx",
    "at_least", "at_most" or None. `precision` is half the last written digit, scaled ("1.2 million" ->
    50,000), so a rounded figure can still agree with a precise one.
    """

    text: str
    start: int
    end: int
    value: float
    low: float
    high: float
    unit: str | None
    subject: frozenset[str] = frozenset()
    counted: frozenset[str] = frozenset()
    qualifier: str | None = None
    precision: float = 0.0
    magnitude: float = 0.0  # the written number times its scale, before unit conversion ("two weeks" -> 2)
    # A rate's numerator alone, (unit, value): "5 mg per day" -> ("kg", 5e-6). Lets the numeric check accept
    # "5 mg per day" where the context says "5 mg" without ever comparing a rate with a plain amount.
    numerator: tuple[str, float] | None = None

    @property
    def is_range(self) -> bool:
        return self.high > self.low and self.text_has_range

    @property
    def text_has_range(self) -> bool:
        return any(sep in self.text for sep in ("-", "–", "—", " to ", " and "))

    @property
    def dimension(self) -> str:
        """Comparison key: the unit, or "count" for bare numbers."""
        return self.unit or "count"


# --------------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------------


class _Tok(NamedTuple):
    # A NamedTuple, not a dataclass: sentences have dozens of tokens and construction cost shows up.
    text: str
    low: str
    start: int
    end: int


def _tokens(text: str) -> list[_Tok]:
    return [_Tok(t := m.group(), t.lower(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _is_digits(tok: _Tok) -> bool:
    return "0" <= tok.text[0] <= "9"


def _glued(a: _Tok, b: _Tok) -> bool:
    return a.end == b.start


@dataclass
class _Parse:
    """Mutable scratch state while one quantity is read; frozen into a Quantity at the end."""

    first: int  # token index of the first token of the quantity
    last: int  # token index of the last token
    value: float
    decimals: int
    high: float | None = None
    scale: float = 1.0
    currency: str | None = None
    unit: _Unit | None = None
    counted_from: int | None = None  # token index where a counted noun may start


# --------------------------------------------------------------------------------------------------
# Reading one number
# --------------------------------------------------------------------------------------------------


def _read_digits(tok: _Tok) -> tuple[float, int]:
    raw = tok.text
    if "," in raw and "." in raw and raw.rfind(",") > raw.rfind("."):
        raw = raw.replace(".", "").replace(",", ".")  # 1.234,56
    else:
        raw = raw.replace(",", "")
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    return float(raw), decimals


class _Spelled(NamedTuple):
    value: float
    last: int  # index of its last token
    year: bool = False  # "nineteen ninety-nine": a year said in two pairs, not a sum


def _read_words(toks: list[_Tok], i: int, pairs: bool = True) -> _Spelled | None:
    """A spelled-out number starting at token i ("twenty-five", "two hundred and fifty"). Words add up only
    as English composes them (a unit word after a tens word, anything after "hundred" or "thousand"); "five
    six" stops after "five", and two pairs in a row ("nineteen ninety-nine", "twenty twenty-one") are a year."""
    total = 0.0
    current = 0.0
    last = -1
    j = i
    prev: str | None = None  # the kind of the previous word: ones, teens, tens, hundred, thousand, dozen
    while j < len(toks):
        word = toks[j].low
        kind = _word_kind(word)
        if kind is None or (kind == "hundred" or kind == "thousand") and prev is None:
            break
        if prev is not None and not _composes(prev, kind):
            year_pair = prev in ("teens", "tens") and kind in ("teens", "tens") and 11 <= current <= 20
            if pairs and year_pair and total == 0:
                pair = _read_words(toks, j, pairs=False)
                if pair is not None and 10 <= pair.value <= 99:
                    return _Spelled(current * 100 + pair.value, pair.last, year=True)
            break
        if kind in ("ones", "teens"):
            current += _ONES[word]
        elif kind == "tens":
            current += _TENS[word]
        elif kind == "hundred":
            current = max(current, 1.0) * 100
        elif kind == "thousand":
            total += max(current, 1.0) * 1000
            current = 0.0
        else:  # dozen
            current = max(current, 1.0) * 12
        prev = kind
        last = j
        # "twenty-five": a glued hyphen continues the number; "two hundred and fifty": so does "and".
        nxt, after = (toks[j + 1], toks[j + 2]) if j + 2 < len(toks) else (None, None)
        if nxt is not None and after is not None:
            if nxt.text == "-" and _glued(toks[j], nxt) and after.low in _ONES:
                j += 2
                continue
            if nxt.low == "and" and word == "hundred" and (after.low in _ONES or after.low in _TENS):
                j += 2
                continue
        j += 1
    if prev is None:
        return None
    return _Spelled(total + current, last)


def _word_kind(word: str) -> str | None:
    if word in _ONES:
        return "ones" if _ONES[word] < 10 else "teens"
    if word in _TENS:
        return "tens"
    if word in ("hundred", "thousand", "dozen"):
        return word
    return None


def _composes(prev: str, kind: str) -> bool:
    """Whether a word of `kind` continues a number whose previous word was of kind `prev`."""
    if kind in ("hundred", "thousand", "dozen"):
        return prev != "thousand" or kind != "thousand"
    if prev in ("hundred", "thousand"):
        return True
    return prev == "tens" and kind == "ones"


def _prev_word(toks: list[_Tok], i: int) -> str:
    return toks[i - 1].low if i > 0 else ""


def _is_label_context(text: str, toks: list[_Tok], i: int) -> bool:
    """Whether the digits at token i are part of a name rather than a value."""
    tok = toks[i]
    if i > 0:
        prev = toks[i - 1]
        if _glued(prev, tok):
            if prev.text[0].isalpha() and prev.low not in _CURRENCY_CODES:
                return True  # A380, v2
            if prev.text in "#№":
                return True
            if prev.text == "-" and i > 1 and _glued(toks[i - 2], prev) and toks[i - 2].text[0].isalpha():
                return True  # SKU-441, COVID-19
            if prev.text in ".:/" and i > 1 and _glued(toks[i - 2], prev) and _is_digits(toks[i - 2]):
                return True  # tail of 3.5.1, 10:30, 3/4/2021
        if prev.low in _MONTH_NAMES and prev.text[0].isupper():
            return True  # April 1, Jan 3: a day of the month belongs to the dates check
        if prev.text == "." and i > 1 and toks[i - 2].low in _MONTH_NAMES and _glued(toks[i - 2], prev):
            return True  # Jan. 3
        if prev.text == "[" and i + 1 < len(toks) and toks[i + 1].text == "]":
            return True  # citation marker [2]
        if prev.low in _LABEL_WORDS:
            return not _unit_follows(toks, i)
        if prev.text == "." and i > 1 and toks[i - 2].low == "no" and _glued(toks[i - 2], prev):
            return True  # No. 5
        if (
            prev.text[0].isupper()
            and prev.low not in STOP_WORDS
            and prev.low not in _CALENDAR_WORDS
            and prev.low not in _CURRENCY_CODES
            and prev.low not in NUMBER_WORDS
            and len(prev.text) > 1
            and not _sentence_initial(text, toks, i - 1)
        ):
            return not _unit_follows(toks, i)  # Boeing 747, Fortune 500
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    if nxt is not None and nxt.low in _MONTH_NAMES and nxt.text[0].isupper():
        return True  # 1 April
    # A list marker: "1." or "2)" at the start of a line.
    if i + 1 < len(toks) and toks[i + 1].text in ".)" and _glued(tok, toks[i + 1]):
        line_start = text.rfind("\n", 0, tok.start) + 1
        if not text[line_start : tok.start].strip():
            after = toks[i + 1].end
            if after >= len(text) or text[after].isspace():
                return True
    return False


def _sentence_initial(text: str, toks: list[_Tok], i: int) -> bool:
    if i == 0:
        return True
    return toks[i - 1].text in ".!?\n:"


def _unit_follows(toks: list[_Tok], i: int) -> bool:
    j = i + 1
    if j < len(toks) and toks[j].text in "%":
        return True
    if j < len(toks) and (toks[j].low in _UNIT_MODIFIERS or toks[j].low in _BUSINESS_MODIFIERS):
        j += 1
    return j < len(toks) and toks[j].low in UNITS and toks[j].low != "times"


# --------------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------------


def may_contain_quantity(text: str) -> bool:
    """Cheap gate: a digit, or a number word found by a C-level word-set test before the (slower) regex."""
    if _DIGIT_RE.search(text):
        return True
    low = text.lower()
    # bytes.translate with a 256-entry table is several times faster than str.translate or a regex here.
    if _NUMBER_GATE_BYTES.isdisjoint(low.encode("utf-8", "surrogatepass").translate(_PUNCT_TO_SPACE).split()):
        return False
    return _MAYBE_NUMBER_RE.search(low) is not None


def extract_quantities(text: str) -> list[Quantity]:
    """All quantities in `text`, in order. Pure; safe on any string."""
    if not text or not may_contain_quantity(text):
        return []
    return list(_extract_cached(text))


@lru_cache(maxsize=32768)
def _extract_cached(text: str) -> tuple[Quantity, ...]:
    toks = _tokens(text)
    parses: list[_Parse] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        if not ("0" <= tok.text[0] <= "9") and tok.low not in _STARTERS:
            i += 1
            continue
        parse = _parse_at(text, toks, i)
        if parse is None:
            i += 1
            continue
        if isinstance(parse, int):  # consumed tokens that are not a quantity (a label, a time, a date)
            i = max(parse, i + 1)
            continue
        parses.append(parse)
        i = parse.last + 1
    spans = [(p.first, p.last) for p in parses]
    return tuple(q for k, p in enumerate(parses) if (q := _finish(text, toks, p, spans, k)) is not None)


def _parse_at(text: str, toks: list[_Tok], i: int) -> _Parse | int | None:
    tok = toks[i]
    if _is_digits(tok):
        return _parse_digits(text, toks, i)
    if tok.low in _ONES or tok.low in _TENS or tok.low == "dozen":
        return _parse_spelled(toks, i)
    if tok.low in ("a", "an"):
        return _parse_article(toks, i)
    if tok.low == "half":
        return _parse_half(toks, i)
    return None


def _parse_digits(text: str, toks: list[_Tok], i: int) -> _Parse | int | None:
    tok = toks[i]
    if _is_label_context(text, toks, i):
        return _skip_glued(toks, i)
    value, decimals = _read_digits(tok)
    parse = _Parse(first=i, last=i, value=value, decimals=decimals)
    _read_currency_prefix(toks, i, parse)
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    if nxt is not None and _glued(tok, nxt):
        glued = _read_glued_suffix(toks, i, parse)
        if glued is not None:
            return glued
    _read_tail(toks, parse)
    if parse.unit is None and parse.scale == 1.0 and _is_year(tok, parse):
        return None  # "in 2019", "2019 to 2021": the dates check owns years; "2000 mg" stays a quantity
    return parse


def _is_year(tok: _Tok, parse: _Parse) -> bool:
    if parse.currency or "," in tok.text or "." in tok.text or len(tok.text) != 4:
        return False
    return 1900 <= parse.value <= 2100


def _skip_glued(toks: list[_Tok], i: int) -> int:
    """Index after a run of glued tokens (the rest of an identifier like SKU-441-B or 3.5.1)."""
    j = i + 1
    while j < len(toks) and _glued(toks[j - 1], toks[j]) and (toks[j].text[0].isalnum() or toks[j].text in "-./:"):
        j += 1
    return j


def _read_currency_prefix(toks: list[_Tok], i: int, parse: _Parse) -> None:
    if i == 0:
        return
    prev = toks[i - 1]
    if prev.text in _CURRENCY_SYMBOLS:
        parse.currency = _CURRENCY_SYMBOLS[prev.text]
        parse.first = i - 1
        # "US$10", "A$10": the letters before the symbol belong to the literal span.
        if i > 1 and _glued(toks[i - 2], prev) and toks[i - 2].text.isalpha() and toks[i - 2].text.isupper():
            parse.first = i - 2
    elif prev.low in _CURRENCY_CODES and prev.text.isupper():
        parse.currency = _CURRENCY_CODES[prev.low]
        parse.first = i - 1


def _read_glued_suffix(toks: list[_Tok], i: int, parse: _Parse) -> _Parse | int | None:
    """Handle what is glued right after the digits: %, units, scales, ordinals, hyphen compounds, ranges,
    fractions, times and versions. Returns an int to skip a non-quantity, or None to continue."""
    tok, nxt = toks[i], toks[i + 1]
    after = toks[i + 2] if i + 2 < len(toks) else None
    glued_after = after is not None and _glued(nxt, after)
    if nxt.text == "%":
        parse.unit, parse.last = UNITS["percent"], i + 1
        return None
    if nxt.text in ".:" and glued_after and _is_digits(after):  # 3.5.1, 10:30
        return _skip_glued(toks, i)
    if nxt.text == "/" and glued_after and _is_digits(after):
        return _read_fraction(toks, i, parse)
    if nxt.text[0].isalpha():
        return _read_glued_letters(toks, i, parse)
    if nxt.text in "-–" and glued_after:
        if _is_digits(after):
            return _read_hyphen_range(toks, i, parse)
        if after.text in _CURRENCY_SYMBOLS:
            return None  # "$10-$20": the tail reader handles the range
        if after.text[0].isalpha():
            return _read_compound(toks, i, parse)
    return None


def _read_glued_letters(toks: list[_Tok], i: int, parse: _Parse) -> _Parse | int | None:
    suffix = toks[i + 1].low
    if suffix in ("st", "nd", "rd", "th", "am", "pm", "s") and parse.unit is None:
        return i + 2  # ordinal, clock time, decade ("1990s")
    if suffix in _ATTACHED_SCALES and (parse.currency or _money_word_at(toks, i + 2)):
        # "$3bn", "1.2M dollars": a scale, not metres or a name like "3M"
        parse.scale, parse.last = _ATTACHED_SCALES[suffix], i + 1
        _read_tail(toks, parse)
        return parse
    if suffix == "k":
        parse.scale, parse.last = 1e3, i + 1
        _read_tail(toks, parse)
        return parse
    # Lower-case single letters are units ("10h", "5g"); upper-case ones are names ("4G", "3D"), except for
    # the multi-letter units people write in capitals ("4GB", "10KG").
    if suffix in _ATTACHED_UNITS and (not toks[i + 1].text.isupper() or len(suffix) > 1):
        parse.unit, parse.last = _ATTACHED_UNITS[suffix], i + 1
        _read_degree(toks, parse)
        _read_per(toks, parse)
        return None
    return _skip_glued(toks, i)  # 4G, 3D, 1040EZ: a name


def _read_compound(toks: list[_Tok], i: int, parse: _Parse) -> _Parse | int | None:
    """"30-day", "5-year-old", "12-member": a number glued by a hyphen to a word."""
    word = toks[i + 2]
    if word.low in UNITS:
        parse.unit, parse.last = UNITS[word.low], i + 2
        return None
    if word.low in _BUSINESS_MODIFIERS and i + 4 < len(toks) and toks[i + 4].low in ("day", "days"):
        parse.unit, parse.last = _Unit("business_day", 1.0), i + 4
        return None
    if len(word.text) == 1 or word.text.isupper():
        return _skip_glued(toks, i)  # 10-K, 3-D
    parse.counted_from = i + 2
    parse.last = i  # the counted noun is not part of the literal value
    return None


def _read_hyphen_range(toks: list[_Tok], i: int, parse: _Parse) -> _Parse | int | None:
    second = toks[i + 2]
    if _is_year(toks[i], parse):
        return None if not _glued_date_tail(toks, i) else _skip_glued(toks, i)  # years: dates owns them
    high, decimals = _read_digits(second)
    if high <= parse.value:
        return _skip_glued(toks, i)  # a score (24-17) or an identifier (555-1234 is kept as a range)
    if i + 3 < len(toks) and _glued(second, toks[i + 3]) and toks[i + 3].text in "-/:":
        return _skip_glued(toks, i)  # 3-4-2021
    parse.high, parse.last, parse.decimals = high, i + 2, max(parse.decimals, decimals)
    return None


def _glued_date_tail(toks: list[_Tok], i: int) -> bool:
    return i + 2 < len(toks) and len(toks[i + 2].text) <= 2


def _read_fraction(toks: list[_Tok], i: int, parse: _Parse) -> _Parse | int | None:
    denominator_tok = toks[i + 2]
    if i + 3 < len(toks) and _glued(denominator_tok, toks[i + 3]) and toks[i + 3].text in "/-":
        return _skip_glued(toks, i)  # 3/4/2021 is a date
    denominator, _ = _read_digits(denominator_tok)
    if denominator not in _FRACTION_DENOMINATORS or parse.value >= denominator:
        return _skip_glued(toks, i)  # 24/7, 3/12: ratios or dates, not fractions
    parse.value = parse.value / denominator
    parse.decimals = 2
    parse.last = i + 2
    # "6 1/2 months": a whole number right before makes it mixed.
    return None


def _read_degree(toks: list[_Tok], parse: _Parse) -> None:
    j = parse.last + 1
    if j < len(toks) and toks[j].low in _DEGREE_UNITS:
        parse.unit = _Unit(_DEGREE_UNITS[toks[j].low], 1.0)
        parse.last = j


def _parse_spelled(toks: list[_Tok], i: int) -> _Parse | int | None:
    read = _read_words(toks, i)
    if read is None:
        return None
    if read.year:
        return read.last + 1  # "in nineteen ninety-nine": a year, which the dates check owns
    value, last = read.value, read.last
    parse = _Parse(first=i, last=last, value=value, decimals=0)
    _read_tail(toks, parse)
    # "one" and bare spelled numbers are too often pronouns or idioms ("one of the", "the two of them");
    # keep them only with a unit, money, a scale, or (from "two" up) a counted noun.
    if parse.unit is None and parse.currency is None and parse.scale == 1.0:
        if value <= 1 or parse.counted_from is None:
            return None
    if toks[i].low == "one" and parse.unit is None:
        return None
    return parse


def _parse_article(toks: list[_Tok], i: int) -> _Parse | None:
    """"a month", "an hour", "a dozen", "a half" -- only where the article is clearly a count of one."""
    if i + 1 >= len(toks):
        return None
    nxt = toks[i + 1].low
    if nxt == "dozen":
        parse = _Parse(first=i, last=i + 1, value=12, decimals=0)
        _read_tail(toks, parse)
        return parse if parse.unit or parse.counted_from is not None else None
    if nxt not in DURATION_UNITS or (nxt.endswith("s") and nxt not in ("hrs", "mos", "wks", "yrs", "secs", "mins")):
        return None  # "a days" is not English; "a mins" style abbreviations are
    if _prev_word(toks, i) not in _DURATION_LEADS:
        return None  # "$10 a month" is a billing cycle; "a day of rest" is not a measured duration
    parse = _Parse(first=i, last=i + 1, value=1.0, decimals=0, unit=UNITS[nxt])
    _read_and_a_half(toks, parse)
    return parse


def _parse_half(toks: list[_Tok], i: int) -> _Parse | None:
    """"half an hour", "half a day"."""
    if i + 2 < len(toks) and toks[i + 1].low in ("a", "an") and toks[i + 2].low in DURATION_UNITS:
        name = toks[i + 2].low
        return _Parse(first=i, last=i + 2, value=0.5, decimals=1, unit=UNITS[name])
    return None


def _read_and_a_half(toks: list[_Tok], parse: _Parse) -> None:
    j = parse.last + 1
    if j + 2 < len(toks) and toks[j].low == "and" and toks[j + 1].low == "a" and toks[j + 2].low == "half":
        parse.value += 0.5
        parse.decimals = max(parse.decimals, 1)
        parse.last = j + 2


def _read_tail(toks: list[_Tok], parse: _Parse) -> None:
    """After the number: scale words, a range, "and a half", a unit, a currency word or a counted noun."""
    if parse.unit is not None:
        _read_and_a_half(toks, parse)
        return
    _read_mixed_fraction(toks, parse)
    _read_scale(toks, parse)
    _read_range(toks, parse)
    _read_and_a_half(toks, parse)
    _read_unit(toks, parse)
    if parse.unit is None and parse.currency is None and parse.counted_from is None:
        parse.counted_from = parse.last + 1


def _read_mixed_fraction(toks: list[_Tok], parse: _Parse) -> None:
    """"6 1/2 months" is six and a half."""
    j = parse.last + 1
    if j + 2 >= len(toks) or parse.decimals or not _is_digits(toks[j]) or toks[j + 1].text != "/":
        return
    if toks[j].start - toks[parse.last].end != 1:
        return  # "6  1/2 large pepper" after a list number is not six and a half
    if not (_glued(toks[j], toks[j + 1]) and _glued(toks[j + 1], toks[j + 2]) and _is_digits(toks[j + 2])):
        return
    if j + 3 < len(toks) and _glued(toks[j + 2], toks[j + 3]) and toks[j + 3].text in "/-":
        return
    numerator, _ = _read_digits(toks[j])
    denominator, _ = _read_digits(toks[j + 2])
    if denominator in _FRACTION_DENOMINATORS and 0 < numerator < denominator:
        parse.value += numerator / denominator
        parse.decimals = 2
        parse.last = j + 2


def _read_scale(toks: list[_Tok], parse: _Parse) -> None:
    j = parse.last + 1
    if j < len(toks) and toks[j].low in _SCALES and (len(toks[j].low) > 2 or parse.currency):
        parse.scale *= _SCALES[toks[j].low]
        parse.last = j


def _read_range(toks: list[_Tok], parse: _Parse) -> None:
    """"5 to 7", "5-7", "$10 - $20", "between 5 and 7", "two to three"."""
    j = parse.last + 1
    if j >= len(toks) or parse.high is not None:
        return
    joiner = toks[j].low
    between = parse.first > 0 and toks[parse.first - 1].low == "between"
    if joiner not in ("-", "–", "—", "to") and not (joiner == "and" and between):
        return
    k = j + 1
    if k < len(toks) and toks[k].text in _CURRENCY_SYMBOLS and parse.currency:
        k += 1
    if k >= len(toks):
        return
    if _is_digits(toks[k]):
        glued_tail = k + 1 < len(toks) and _glued(toks[k], toks[k + 1]) and toks[k + 1].text in ".:/-"
        sentence_end = glued_tail and toks[k + 1].text == "." and not (k + 2 < len(toks) and _is_digits(toks[k + 2]))
        if glued_tail and not sentence_end:
            return  # "5 to 7:30", "5 to 7/8": a time or a fraction, not a range bound
        high, decimals = _read_digits(toks[k])
        last = k
    else:
        read = _read_words(toks, k) if toks[k].low in _ONES or toks[k].low in _TENS else None
        if read is None or read.year:
            return
        high, last = read.value, read.last
        decimals = 0
    scale_word = toks[last + 1].low if last + 1 < len(toks) else ""
    if scale_word in _SCALES and (len(scale_word) > 2 or parse.currency):
        if parse.scale == 1.0:
            parse.scale = _SCALES[scale_word]  # "1 to 2 million": the scale applies to both bounds
        else:
            high *= _SCALES[scale_word] / parse.scale  # "$500 thousand to $2 million"
        last += 1
    if high <= parse.value:
        return
    parse.high, parse.last, parse.decimals = high, last, max(parse.decimals, decimals)


def _read_unit(toks: list[_Tok], parse: _Parse) -> None:
    j = parse.last + 1
    if j >= len(toks):
        return
    business = False
    if toks[j].low in _BUSINESS_MODIFIERS or toks[j].low in _UNIT_MODIFIERS:
        business = toks[j].low in _BUSINESS_MODIFIERS
        if j + 1 < len(toks) and toks[j + 1].low in UNITS:
            j += 1
        else:
            return
    word = toks[j]
    if word.text == "%":
        parse.unit, parse.last = UNITS["percent"], j
        return
    if word.text == "°":
        parse.last = j
        nxt = toks[j + 1] if j + 1 < len(toks) else None
        if nxt is not None and _glued(word, nxt) and nxt.low in _DEGREE_UNITS:
            parse.unit, parse.last = _Unit(_DEGREE_UNITS[nxt.low], 1.0), j + 1
        else:
            parse.unit = _Unit("degree", 1.0)
        return
    low = word.low
    if low in ("per", "percentage", "basis") and j + 1 < len(toks):
        nxt = toks[j + 1].low
        if low == "per" and nxt == "cent":
            parse.unit, parse.last = UNITS["percent"], j + 1
        elif low == "percentage" and nxt in ("point", "points"):
            parse.unit, parse.last = _Unit("percentage_point", 1.0), j + 1
        elif low == "basis" and nxt in ("point", "points"):
            parse.unit, parse.last = UNITS["bps"], j + 1
        return
    if low in ("degree", "degrees"):
        parse.unit, parse.last = _Unit("degree", 1.0), j
        _read_degree(toks, parse)
        return
    metres_per = low == "m" and _per_slash_at(toks, j + 1)  # "10 m/s"; a lone "m" may be "million"
    if low in _CURRENCY_CODES and word.text.isupper() or low in UNITS and low not in ("m", "in") or metres_per:
        unit = UNITS["meter"] if metres_per else UNITS.get(low) or _Unit(_CURRENCY_CODES[low], 1.0)
        if unit.unit == "day" and business:
            unit = _Unit("business_day", 1.0)
        if low == "times" and parse.currency:
            return
        # "$5 dollars" is money either way; "pounds" after a currency symbol is the currency, not weight.
        if parse.currency and unit.unit not in ("usd", "eur", "gbp", "jpy", "inr"):
            if low in ("pound", "pounds"):
                parse.last = j
            return
        parse.unit, parse.last = unit, j
        _read_and_a_half(toks, parse)
        _read_per(toks, parse)


def _money_word_at(toks: list[_Tok], j: int) -> bool:
    return j < len(toks) and (
        (toks[j].low in UNITS and UNITS[toks[j].low].unit in _MONEY_UNITS)
        or (toks[j].low in _CURRENCY_CODES and toks[j].text.isupper())
    )


def _per_slash_at(toks: list[_Tok], j: int) -> bool:
    """A glued "/unit" at token j ("/h" of "km/h", "/kg" of "mg/kg")."""
    return (
        j + 1 < len(toks)
        and toks[j].text == "/"
        and _glued(toks[j - 1], toks[j])
        and _glued(toks[j], toks[j + 1])
        and toks[j + 1].low in _ATTACHED_UNITS
    )


def _read_per(toks: list[_Tok], parse: _Parse) -> None:
    """A rate after a unit: "km/h", "mg/kg", "5 mg per day", "3 times a week", "2 g daily". The value becomes
    a compound unit (metres per day, kilograms per kilogram, times per day), so a rate only ever meets rates
    of the same kind: "100 km/h" is never a distance, "0.5 mg/kg" never a dose in mg. Money is left alone:
    a price per month is a billing cycle, which the billing check owns."""
    unit = parse.unit
    if unit is None or parse.currency or unit.unit in _MONEY_UNITS or unit.unit in _NOT_RATED:
        return
    j = parse.last + 1
    if j >= len(toks):
        return
    word = toks[j].low
    per: _Unit | None = None
    last = j + 1
    if _per_slash_at(toks, j):
        per = _ATTACHED_UNITS[toks[j + 1].low]
    elif word == "per" and j + 1 < len(toks):
        per = UNITS.get(toks[j + 1].low)
    elif word in ("a", "an") and j + 1 < len(toks) and toks[j + 1].low in _RATE_PERIODS:
        per = UNITS[toks[j + 1].low]
    elif word in _PER_ADVERBS:
        per, last = UNITS[_PER_ADVERBS[word]], j
    if per is None or per.unit in _MONEY_UNITS or per.unit in _NOT_RATED:
        return
    parse.unit, parse.last = _rate(unit, per), last


def _rate(num: _Unit, den: _Unit) -> _Unit:
    """`num` per `den`; calendar slack on either side widens the rate's bounds accordingly."""
    slack = None
    if num.slack is not None or den.slack is not None:
        n_low, n_high = num.slack or (num.factor, num.factor)
        d_low, d_high = den.slack or (den.factor, den.factor)
        slack = (n_low / d_high, n_high / d_low)
    return _Unit(f"{num.unit}/{den.unit}", num.factor / den.factor, slack, den.factor)


def _finish(text: str, toks: list[_Tok], parse: _Parse, spans: list[tuple[int, int]], k: int) -> Quantity | None:
    unit = parse.unit
    if unit is None and parse.currency:
        unit = _Unit(parse.currency, 1.0)
    factor = unit.factor if unit else 1.0
    magnitude = parse.value * parse.scale
    value = magnitude * factor
    top = (parse.high * parse.scale if parse.high is not None else magnitude)
    if unit is not None and unit.slack is not None:
        low, high = parse.value * parse.scale * unit.slack[0], top * unit.slack[1]
    else:
        low, high = value, top * factor
    precision = 0.5 * (10.0 ** -parse.decimals) * parse.scale * factor
    if unit is not None and unit.slack is not None:
        precision = 0.0  # the slack already covers what rounding would
    if unit is not None and unit.slack == _YEAR_DAYS and _followed_by_old(toks, parse.last):
        # "a 26-year-old man", "he is 26 years old": an age, never the length of anything.
        unit, factor, magnitude = _Unit("age_years", 1.0), 1.0, parse.value * parse.scale
        value, low, high, precision = magnitude, magnitude, (parse.high or parse.value) * parse.scale, 0.5
    start, end = toks[parse.first].start, toks[parse.last].end
    counted = _counted(toks, parse) if unit is None else frozenset()
    return Quantity(
        text=text[start:end],
        start=start,
        end=end,
        value=value,
        low=low,
        high=high,
        unit=unit.unit if unit else None,
        subject=_subject(toks, parse, spans, k),
        counted=counted,
        qualifier=_qualifier(toks, parse.first),
        precision=precision,
        magnitude=magnitude,
        numerator=_numerator(unit, magnitude),
    )


def _numerator(unit: _Unit | None, magnitude: float) -> tuple[str, float] | None:
    if unit is None or "/" not in unit.unit:
        return None
    return unit.unit.split("/", 1)[0], magnitude * unit.factor * unit.per_factor


def _followed_by_old(toks: list[_Tok], last: int) -> bool:
    j = last + 1
    if j < len(toks) and toks[j].text == "-":
        j += 1
    return j < len(toks) and toks[j].low == "old"


def _counted(toks: list[_Tok], parse: _Parse) -> frozenset[str]:
    """Stems of up to two content words right after a bare number: "81 vaccinated individuals"."""
    if parse.counted_from is None:
        return frozenset()
    out: list[str] = []
    j = parse.counted_from
    while j < len(toks) and len(out) < 2:
        tok = toks[j]
        if not tok.text[0].isalpha() or tok.low in STOP_WORDS or tok.low in NEGATORS:
            break
        if tok.low not in _NOT_SUBJECT:
            out.append(stem(tok.low))
        j += 1
        if j < len(toks) and toks[j].text == "-" and _glued(tok, toks[j]):
            j += 1
    return frozenset(out)


def _qualifier(toks: list[_Tok], first: int) -> str | None:
    before = [t.low for t in toks[max(0, first - 3) : first]]
    if not before:
        return None
    last = before[-1]
    if last in _APPROX or last == "~" or before[-2:] == ["close", "to"]:
        return "approx"
    if last in ("than", "of", "to") and len(before) >= 2:
        head = before[-2]
        if head in ("more", "greater", "upwards", "excess"):
            return "at_least"
        if head in ("less", "fewer", "up"):
            return "at_most"
    if last in ("over", "above", "exceeding", "least", "minimum"):
        return "at_least"
    if last in ("under", "below", "most", "maximum", "max"):
        return "at_most"
    return None


def _is_boundary(tok: _Tok) -> bool:
    return tok.text in _CLAUSE_PUNCT or tok.low in _CLAUSE_WORDS or tok.text in ".!?"


def _subject_stem(tok: _Tok) -> str | None:
    low = tok.low.replace("’", "'")
    if not tok.text[0].isalpha() or low in STOP_WORDS or low in NEGATORS or low in _NOT_SUBJECT or len(low) < 2:
        return None
    if low in _CALENDAR_WORDS:
        return None
    return stem(low)


def _subject(toks: list[_Tok], parse: _Parse, spans: list[tuple[int, int]], k: int) -> frozenset[str]:
    """Content stems near the value, inside its clause and not past a neighbouring quantity."""
    left_stop = spans[k - 1][1] if k > 0 else -1
    right_stop = spans[k + 1][0] if k + 1 < len(spans) else len(toks)
    out: set[str] = set()
    _take_subject(toks, range(parse.first - 1, left_stop, -1), _SUBJECT_LEFT, out)
    _take_subject(toks, range(parse.last + 1, right_stop), _SUBJECT_RIGHT, out)
    return frozenset(out)


def _take_subject(toks: list[_Tok], indices: range, limit: int, out: set[str]) -> None:
    """Add to `out` the stems of up to `limit` content words at `indices`, stopping at a clause boundary.
    `indices` run outwards from the value, so the limit keeps the words nearest to it."""
    taken = 0
    for j in indices:
        if taken >= limit or _is_boundary(toks[j]):
            break
        s = _subject_stem(toks[j])
        if s:
            out.add(s)
            taken += 1


# --------------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------------

_APPROX_TOLERANCE = 0.10
_CONVERSION_TOLERANCE = 0.02  # 10 lb vs 4.5 kg: conversions are rounded when written


def comparable(a: Quantity, b: Quantity) -> bool:
    """Same dimension, and for bare counts the same counted noun (both empty counts as the same)."""
    if a.dimension != b.dimension:
        return False
    if a.unit is None:
        return (not a.counted and not b.counted) or bool(a.counted & b.counted)
    return True


def _bounds(q: Quantity, widen: bool, bound_qualifier: bool = True) -> tuple[float, float]:
    low, high = q.low, q.high
    if not widen:
        return low, high
    pad = max(q.precision, abs(high) * 1e-9)
    if q.unit in ("kg", "m", "l") or (q.unit is not None and "/" in q.unit):
        pad = max(pad, abs(high) * _CONVERSION_TOLERANCE)
    low, high = low - pad, high + pad
    if q.qualifier == "approx":
        low, high = low * (1 - _APPROX_TOLERANCE), high * (1 + _APPROX_TOLERANCE)
    elif q.qualifier == "at_least" and bound_qualifier:
        high = float("inf")
    elif q.qualifier == "at_most" and bound_qualifier:
        low = float("-inf") if q.unit is None or q.unit == "percent" else min(low, 0.0)
    return low, high


def values_agree(a: Quantity, b: Quantity) -> bool:
    """Whether two comparable quantities can both be true: one's stated bounds fit inside the other's
    bounds widened by rounding and qualifiers ("about", "more than", "up to")."""
    # Two bounds of the same kind ("up to 30 days" vs "up to 14 days") state different limits.
    bounded = not (a.qualifier == b.qualifier and a.qualifier in ("at_least", "at_most"))
    a_low, a_high = _bounds(a, widen=False)
    b_low, b_high = _bounds(b, widen=False)
    wa_low, wa_high = _bounds(a, widen=True, bound_qualifier=bounded)
    wb_low, wb_high = _bounds(b, widen=True, bound_qualifier=bounded)
    return (wa_low <= b_low and b_high <= wa_high) or (wb_low <= a_low and a_high <= wb_high)


def written_in(text: str, value: float) -> bool:
    """Whether `value` occurs in `text` in digits, with or without thousands separators. A plain substring
    test (so "131" is also found inside "1310"): it only ever makes the checks more conservative."""
    if value != value or value in (float("inf"), float("-inf")):
        return False
    if value == int(value) and abs(value) < 1e15:
        whole = int(value)
        return str(whole) in text or (abs(whole) >= 1000 and f"{whole:,}" in text)
    return f"{value:g}" in text
