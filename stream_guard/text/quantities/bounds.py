"""Bounds and approximations: the words before (or after) a figure that make it a limit ("up to 30 days", "no
more than 4 g", "shall not exceed $50,000", "capped at 10", "at least 10", "10 or more") or approximate
("about 30"). A bound states a limit, not a value: "up to 30 days" and "at least 30 days" say opposite things
about the same 30 days, and "no more than" is a ceiling although it says "more"."""

from __future__ import annotations

import re

from stream_guard.text.quantities.scan import _Tok

APPROX = "approx"
AT_LEAST = "at_least"
AT_MOST = "at_most"
BOUNDS = frozenset({AT_LEAST, AT_MOST})

_APPROX = (
    "approximately", "approx", "about", "around", "roughly", "nearly", "almost", "some", "circa", "ca", "~",
    "estimated", "close",
)  # fmt: skip


# Phrases before a figure, as lower-case token tuples, longest first when read. "within" is deliberately
# absent: "within 14 days" and "within 30 days" state different windows, not limits of one.
_PHRASES: dict[tuple[str, ...], str] = {}


def _add(kind: str, phrases: str) -> None:
    for phrase in phrases.split(","):
        _PHRASES[tuple(phrase.split())] = kind


_add(AT_MOST, "up to,no more than,not more than,no greater than,not greater than,no higher than,not to exceed,"
     "not exceeding,shall not exceed,must not exceed,may not exceed,will not exceed,does not exceed,do not exceed,"
     "cannot exceed,never exceeds,never exceed,less than,fewer than,lower than,under,below,at most,maximum of,"
     "a maximum of,max,max of,maximum,capped at,limited to,as much as,as many as,no later than,not later than,"
     "no longer than,not longer than,or less than,at the most")
_add(AT_LEAST, "more than,greater than,higher than,over,above,exceeding,in excess of,excess of,upwards of,at least,"
     "minimum of,a minimum of,minimum,min of,no less than,not less than,no fewer than,not fewer than,at minimum,"
     "no earlier than,not earlier than,no shorter than,not shorter than,longer than,at the least")
_LONGEST = max(len(p) for p in _PHRASES)

# After a figure: "10 or more", "5 or fewer", "18 and over".
_AFTER: dict[tuple[str, str], str] = {
    ("or", "more"): AT_LEAST, ("or", "greater"): AT_LEAST, ("or", "above"): AT_LEAST, ("or", "over"): AT_LEAST,
    ("and", "above"): AT_LEAST, ("and", "over"): AT_LEAST, ("and", "up"): AT_LEAST, ("or", "longer"): AT_LEAST,
    ("or", "less"): AT_MOST, ("or", "fewer"): AT_MOST, ("or", "below"): AT_MOST, ("or", "under"): AT_MOST,
    ("and", "below"): AT_MOST, ("and", "under"): AT_MOST, ("or", "shorter"): AT_MOST,
}  # fmt: skip

# Words of bound phrases: never what a figure is about.
BOUND_WORDS = frozenset(w for phrase in _PHRASES for w in phrase) | frozenset(_APPROX) | {"exceed", "exceeds"}


def qualifier(toks: list[_Tok], first: int, last: int) -> tuple[str | None, int]:
    """("approx" | "at_least" | "at_most" | None, index of the first token of the phrase before the figure, or
    `first` when the phrase follows it or there is none) for the figure at tokens first..last."""
    before = [t.low for t in toks[max(0, first - _LONGEST) : first]]
    if before:
        if before[-1] in _APPROX or before[-2:] == ["close", "to"]:
            return APPROX, first - (2 if before[-2:] == ["close", "to"] else 1)
        for n in range(min(_LONGEST, len(before)), 0, -1):
            kind = _PHRASES.get(tuple(before[-n:]))
            if kind is not None:
                return (_flip(kind) if _negated(toks, first - n) else kind), first - n
    for j in range(last + 1, min(last + 3, len(toks) - 1)):  # "10 or more", "10 users or more"
        kind = _AFTER.get((toks[j].low, toks[j + 1].low))
        if kind is not None:
            return kind, first
        if not toks[j].text[0].isalpha():
            break
    return None, first


_WORDS_BEFORE_RE = re.compile(r"[A-Za-z~]+")


_NEGATORS = frozenset("not never don't doesn't didn't cannot can't won't mustn't shouldn't".split())


def _negated(toks: list[_Tok], phrase_start: int) -> bool:
    """A negator within the three words before a bound phrase turns it round: "do not give more than 4 doses" is
    at most 4."""
    return any(t.low in _NEGATORS or t.low == "t" and k > 0 and toks[k - 1].text in "'’"
               for k, t in enumerate(toks[max(0, phrase_start - 3) : phrase_start], start=max(0, phrase_start - 3)))


def _flip(kind: str) -> str:
    return AT_MOST if kind == AT_LEAST else AT_LEAST if kind == AT_MOST else kind


def bound_before(text: str, start: int) -> tuple[str | None, int]:
    """The bound phrase written right before text[start:] ("up to once a week", "at least twice daily"): (AT_LEAST
    | AT_MOST | None, where the phrase starts, or `start`). For values read from text rather than tokens."""
    window = text[max(0, start - 40) : start]
    if window[-1:] not in (" ", "\t") :
        return None, start
    words = list(_WORDS_BEFORE_RE.finditer(window))
    for n in range(min(_LONGEST, len(words)), 0, -1):
        tail = words[-n:]
        if window[tail[-1].end() :].strip():
            break  # something other than a word between the phrase and the value
        kind = _PHRASES.get(tuple(w.group().lower() for w in tail))
        if kind in BOUNDS:
            return kind, start - len(window) + tail[0].start()
    return None, start
