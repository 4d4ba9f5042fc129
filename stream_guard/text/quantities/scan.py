"""The scanner the quantity readers share: tokens, a unit as they know it, and the state of reading one quantity."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class _Unit:
    unit: str  # normalised unit every value is expressed in
    factor: float  # multiply the written number by this to get `unit`
    slack: tuple[float, float] | None = None  # calendar units: (low, high) factors instead of exact
    per_factor: float = 1.0  # a rate's denominator factor: factor * per_factor converts the numerator alone


# ASCII digits only (re.ASCII): other Unicode digits ("²", "٣") are not how figures are written, and float()
# rejects some of them.
# Grouped numbers are read only from the start of a group run (the look-behinds) and never re-read (possessive
# groups, a look-ahead of one separator): a run like "123,123,...,12" costs one pass, not one per group.
# The three kinds of token start with a letter, a digit and anything else: which one matches is decided by the
# first character, so a word (most tokens) is tried first and the three number forms only after a digit (the
# pattern 22% faster than number forms first, the same tokens: tests/stream_guard/text/test_quantities.py).
_TOKEN_RE = re.compile(
    r"[A-Za-z]+(?:['’][A-Za-z]+)?"
    r"|(?=\d)(?:(?<![\d.])\d{1,3}(?:\.\d{3})++,\d{1,2}(?!\d|[.,]\d)"  # 1.234,56: dot thousands, decimal comma
    r"|(?<!\d,)\d{1,3}(?:,\d{3})++(?:\.\d++)?(?!,*+\d)"  # 1,234,567.89
    r"|\d+(?:\.\d+)?)"
    r"|[^\sA-Za-z0-9]",
    re.ASCII,
)


class _Tok(NamedTuple):
    # A NamedTuple, not a dataclass: sentences have dozens of tokens and construction cost shows up.
    text: str
    low: str
    start: int
    end: int


# tuple.__new__ builds the NamedTuple without the Python frame of its generated __new__, and span() is one call
# where start() and end() were two: the scanner 30% faster on the labelled answers' lines.
_new_tuple = tuple.__new__


def _tokens(text: str) -> list[_Tok]:
    return [_new_tuple(_Tok, (t := m.group(), t.lower(), *m.span())) for m in _TOKEN_RE.finditer(text)]


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


def _prev_word(toks: list[_Tok], i: int) -> str:
    return toks[i - 1].low if i > 0 else ""


def _sentence_initial(text: str, toks: list[_Tok], i: int) -> bool:
    """Whether token i opens a sentence, a line or a list item ("2  Add 1 to 3 teaspoons": crawled lists run
    their items on after a number and two spaces)."""
    if i == 0:
        return True
    if toks[i - 1].text in ".!?\n:":
        return True
    gap = text[toks[i - 1].end : toks[i].start]
    return "\n" in gap or ("  " in gap and "0" <= toks[i - 1].text[0] <= "9")


def _skip_glued(toks: list[_Tok], i: int) -> int:
    """Index after a run of glued tokens (the rest of an identifier like SKU-441-B or 3.5.1)."""
    j = i + 1
    while j < len(toks) and _glued(toks[j - 1], toks[j]) and (toks[j].text[0].isalnum() or toks[j].text in "-./:"):
        j += 1
    return j
