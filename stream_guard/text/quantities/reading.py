"""Reading every quantity of a text: where one may start, which number is a label rather than a value, and what
it counts and is about (its subject)."""

from __future__ import annotations

import re
from functools import lru_cache

from stream_guard.text.quantities.numbers import (
    _ATTACHED_SCALES,
    _ONES,
    _STARTERS,
    _TENS,
    NUMBER_WORDS,
    _is_year,
    _read_and_a_half,
    _read_digits,
    _read_fraction,
    _read_mixed_fraction,
    _read_scale,
    _read_words,
)
from stream_guard.text.quantities.frequency import frequencies
from stream_guard.text.quantities.quantity import Quantity
from stream_guard.text.quantities.bounds import BOUND_WORDS, qualifier
from stream_guard.text.quantities.ranges import (
    _DURATION_LEADS,
    _parse_half,
    _read_hyphen_range,
    _read_range,
)
from stream_guard.text.quantities.scan import (
    _glued,
    _is_digits,
    _Parse,
    _prev_word,
    _sentence_initial,
    _skip_glued,
    _Tok,
    _tokens,
    _Unit,
)
from stream_guard.text.quantities.units import (
    _ATTACHED_UNITS,
    _BUSINESS_MODIFIERS,
    _CURRENCY_CODES,
    _CURRENCY_SYMBOLS,
    _UNIT_MODIFIERS,
    _YEAR_DAYS,
    DURATION_UNITS,
    UNITS,
    _money_word_at,
    _numerator,
    _read_compound,
    _read_currency_prefix,
    _read_degree,
    _read_per,
    _read_unit,
    _unit_follows,
)
from stream_guard.text.words import NEGATORS, STOP_WORDS, stem

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


_CLAUSE_WORDS = frozenset("and but or while whereas although though however nor".split())


_CLAUSE_PUNCT = frozenset(",;:()[]{}—–|\"“”")


# Never subject words: they describe the number itself, not what it counts.
_NOT_SUBJECT = (
    frozenset(UNITS)
    | NUMBER_WORDS
    | _UNIT_MODIFIERS
    | _BUSINESS_MODIFIERS
    | BOUND_WORDS
    | frozenset("per total percentage point points half roughly exactly only just approximately old aged".split())
)


# Cheap gate: sentences without a digit or a number word cannot hold a quantity.
_DIGIT_RE = re.compile(r"[0-9]")


_DURATION_WORDS = frozenset("second minute hour day week fortnight month year decade century".split())


_NUMBER_GATE_BYTES = frozenset(w.encode() for w in NUMBER_WORDS | _DURATION_WORDS | {"half"})


_PUNCT_TO_SPACE = bytes(32 if chr(c) in "-,.;:!?()[]{}\"'/" else c for c in range(256))


# Applied to lower-cased text (IGNORECASE alternations are several times slower). Longest first; words of one
# length (which cannot match at the same place) in a fixed order, so that the pattern's text is the same in every
# process whatever the string hashing (the regex cache keeps one copy of it, not one per hash seed).
_MAYBE_NUMBER_RE = re.compile(
    r"\b(?:" + "|".join(sorted(NUMBER_WORDS | {"half"}, key=lambda word: (-len(word), word))) + r")\b"
    r"|\ban?\s+(?:second|minute|hour|day|week|fortnight|month|year|decade|century)\b"
)


_SUBJECT_LEFT = 6


_SUBJECT_RIGHT = 4


def _is_label_context(text: str, toks: list[_Tok], i: int) -> bool:
    """Whether the digits at token i are part of a name rather than a value."""
    tok = toks[i]
    if i > 0:
        prev = toks[i - 1]
        if _glued(prev, tok):
            if prev.low == "x" and i > 1 and _glued(toks[i - 2], prev) and _is_digits(toks[i - 2]):
                return False  # the 13 of a size "9x13"
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
    if nxt is not None and (nxt.low in ("am", "pm") or nxt.low in ("a", "p") and i + 3 < len(toks)
                            and toks[i + 2].text == "." and toks[i + 3].low == "m"):
        return True  # "4 pm", "9 a.m.": a clock time (text/schedule.py reads those)
    # A list marker: "1." or "2)" at the start of a line.
    if i + 1 < len(toks) and toks[i + 1].text in ".)" and _glued(tok, toks[i + 1]):
        line_start = text.rfind("\n", 0, tok.start) + 1
        if not text[line_start : tok.start].strip():
            after = toks[i + 1].end
            if after >= len(text) or text[after].isspace():
                return True
    return False


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
    found = [q for k, p in enumerate(parses) if (q := _finish(text, toks, p, spans, k)) is not None]
    return tuple(_without_frequencies(text, found))


def _without_frequencies(text: str, found: list[Quantity]) -> list[Quantity]:
    """`found` less the counts of times per period that the frequency reader reads ("two times a day", "3x
    weekly"): how often is one value with one reader, which compares it in every form ("twice daily", "every 12
    hours", "annually"). Read here as well, a rate of 2 times/day met no such form in a source that writes "twice
    daily" and was a figure no source states. "60 times a minute" or "100 times a day" (no frequency) stay rates."""
    if not any(q.unit is not None and q.unit.startswith("times/") for q in found):
        return found
    often = frequencies(text)
    return [q for q in found
            if not (q.unit is not None and q.unit.startswith("times/") and any(f.start < q.end and q.start < f.end for f in often))]


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
    _read_legal_numeral(toks, parse)
    _read_tail(toks, parse)
    if parse.unit is None and parse.scale == 1.0 and _is_year(tok, parse):
        return None  # "in 2019", "2019 to 2021": the dates check owns years; "2000 mg" stays a quantity
    return parse


def _read_glued_suffix(toks: list[_Tok], i: int, parse: _Parse) -> _Parse | int | None:
    """Handle what is glued right after the digits: %, units, scales, ordinals, hyphen compounds, ranges,
    fractions, times and versions. Returns an int to skip a non-quantity, or None to continue."""
    nxt = toks[i + 1]
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
    if suffix == "x" and i + 2 < len(toks) and _glued(toks[i + 1], toks[i + 2]) and _is_digits(toks[i + 2]):
        return parse  # "9x13": a size, 9 by 13 (the 13 is read next), not 9 times
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


def _parse_spelled(toks: list[_Tok], i: int) -> _Parse | int | None:
    read = _read_words(toks, i)
    if read is None:
        return None
    if read.year:
        return read.last + 1  # "in nineteen ninety-nine": a year, which the dates check owns
    value, last = read.value, read.last
    parse = _Parse(first=i, last=last, value=value, decimals=0)
    if _hyphen_compound_after(toks, last):
        # "a two-year warranty" is "a 2-year warranty" written out: the same compound reader.
        compound = _read_compound(toks, last, parse)
        if compound is not None:
            return compound
        if parse.unit is not None:
            return parse
    _read_legal_numeral(toks, parse)
    _read_tail(toks, parse)
    # "one" and bare spelled numbers are too often pronouns or idioms ("one of the", "the two of them");
    # keep them only with a unit, money, a scale, or (from "two" up) a counted noun.
    if parse.unit is None and parse.currency is None and parse.scale == 1.0:
        if value <= 1 or parse.counted_from is None:
            return None
    if toks[i].low == "one" and parse.unit is None:
        return None
    return parse


def _hyphen_compound_after(toks: list[_Tok], last: int) -> bool:
    """Whether the number ending at token `last` is glued by a hyphen to a word ("two-year", "five-star")."""
    if last + 2 >= len(toks):
        return False
    hyphen, word = toks[last + 1], toks[last + 2]
    return hyphen.text in "-–" and _glued(toks[last], hyphen) and _glued(hyphen, word) and word.text[0].isalpha()


def _read_legal_numeral(toks: list[_Tok], parse: _Parse) -> None:
    """"thirty (30) days", "30 (thirty) days": the number written twice, as contracts write it, is one value
    (the digits decide if the two differ)."""
    j = parse.last + 1
    if j + 2 >= len(toks) or toks[j].text != "(":
        return
    inner = toks[j + 1]
    if _is_digits(inner) and toks[j + 2].text == ")":
        if parse.first == parse.last and _is_digits(toks[parse.first]):
            return  # "30 (30)" is not a legal numeral
        parse.value, parse.decimals = _read_digits(inner)
        parse.last = j + 2
        return
    if inner.low in _ONES or inner.low in _TENS:
        read = _read_words(toks, j + 1)
        if read is not None and not read.year and read.last + 1 < len(toks) and toks[read.last + 1].text == ")":
            parse.last = read.last + 1


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
    if unit is None and not parse.currency and _appositive_age(toks, parse):
        # "Jonathan Camilien, 26, was ...": a bare whole number set off by commas after a name is the person's
        # age (news style), the same value as "a 26-year-old man".
        unit, magnitude = _Unit("age_years", 1.0), parse.value
        value, low, high, precision = magnitude, magnitude, magnitude, 0.5
    if unit is not None and unit.unit == "day" and _prev_word(toks, parse.first) == "every":
        return None  # "every 6 hours" says how often, not how long: quantities/frequency.py reads it
    start, end = toks[parse.first].start, toks[parse.last].end
    counted = _counted(toks, parse) if unit is None else frozenset()
    kind, lead = qualifier(toks, parse.first, parse.last)
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
        qualifier=kind,
        lead=text[toks[lead].start : start] if lead < parse.first else "",
        ranged=parse.high is not None,
        precision=precision,
        magnitude=magnitude,
        numerator=_numerator(unit, magnitude),
    )


_AGE_CLOSERS = frozenset(",.;)")


def _appositive_age(toks: list[_Tok], parse: _Parse) -> bool:
    """A whole number of one or two digits between a comma after a capitalised word and a comma or full stop:
    "Carlos Colina, 32, will be arraigned"."""
    first, last = parse.first, parse.last
    if first != last or parse.high is not None or parse.scale != 1 or not toks[first].text.isdigit():
        return False
    if len(toks[first].text) > 2 or first < 2 or toks[first - 1].text != ",":
        return False
    name = toks[first - 2].text
    return (name[:1].isupper() and name.isalpha() and name.lower() not in _CALENDAR_WORDS
            and (last + 1 >= len(toks) or toks[last + 1].text in _AGE_CLOSERS))


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
