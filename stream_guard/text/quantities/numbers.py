"""Reading a number: digits (grouped, decimal, with a scale), spelled-out numbers as English composes them,
fractions and "and a half"; and the bare four-digit years left to the dates check."""

from __future__ import annotations

from typing import NamedTuple

from stream_guard.text.quantities.scan import _glued, _is_digits, _Parse, _skip_glued, _Tok

_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "mn": 1e6, "bn": 1e9, "tn": 1e12}


_ATTACHED_SCALES = {"k": 1e3, "mn": 1e6, "bn": 1e9, "tn": 1e12, "m": 1e6, "b": 1e9}  # only after money


_ONES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip


_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}


NUMBER_WORDS = frozenset(_ONES) | frozenset(_TENS) | {"hundred", "dozen"} | frozenset(k for k in _SCALES if len(k) > 2)


# Tokens that can begin a quantity besides digits.
_STARTERS = frozenset(_ONES) | frozenset(_TENS) | {"dozen", "a", "an", "half"}


# "1/2", "3/4", "5/8", "1/16": the denominators recipes and measurements use. Others ("24/7", "3/12") are
# ratios or dates.
_FRACTION_DENOMINATORS = (2, 3, 4, 8, 16)


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


def _is_year(tok: _Tok, parse: _Parse) -> bool:
    if parse.currency or "," in tok.text or "." in tok.text or len(tok.text) != 4:
        return False
    return 1900 <= parse.value <= 2100


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


def _read_and_a_half(toks: list[_Tok], parse: _Parse) -> None:
    j = parse.last + 1
    if j + 2 < len(toks) and toks[j].low == "and" and toks[j + 1].low == "a" and toks[j + 2].low == "half":
        parse.value += 0.5
        parse.decimals = max(parse.decimals, 1)
        parse.last = j + 2


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
