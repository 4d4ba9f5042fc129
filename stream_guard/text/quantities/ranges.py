"""Durations and ranges: "5-7 days", "between 5 and 7", "half a year" (the words that make a figure a bound or
approximate are read in bounds.py)."""

from __future__ import annotations

from stream_guard.text.quantities.numbers import _ONES, _SCALES, _TENS, _is_year, _read_digits, _read_words
from stream_guard.text.quantities.scan import _glued, _is_digits, _Parse, _skip_glued, _Tok
from stream_guard.text.quantities.units import _CURRENCY_SYMBOLS, DURATION_UNITS, UNITS

# Words after which "a"/"an" + duration means one unit of time.
_DURATION_LEADS = frozenset(
    """within for in after over under than about around nearly almost approximately roughly least most only just
    take takes took taking last lasts lasted lasting spend spends spent of to""".split()
)


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


def _parse_half(toks: list[_Tok], i: int) -> _Parse | None:
    """"half an hour", "half a day"."""
    if i + 2 < len(toks) and toks[i + 1].low in ("a", "an") and toks[i + 2].low in DURATION_UNITS:
        name = toks[i + 2].low
        return _Parse(first=i, last=i + 2, value=0.5, decimals=1, unit=UNITS[name])
    return None


def _read_range(toks: list[_Tok], parse: _Parse) -> None:
    """"5 to 7", "5-7", "$10 - $20", "between 5 and 7", "two to three"."""
    j = parse.last + 1
    if j >= len(toks) or parse.high is not None:
        return
    joiner = toks[j].low
    # "between 5 and 7", "(between) the range of 5 and 7": "and" joins two bounds only after words that ask for two.
    between = (parse.first > 0 and toks[parse.first - 1].low == "between") or (
        parse.first > 1 and (toks[parse.first - 2].low, toks[parse.first - 1].low) == ("range", "of"))
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
