"""How a repaired answer reads: stricter checks than the project's readability test, for the trust benchmark.

The project's test (readability_problems, via _data.py) refuses JSON, markup, key-value dumps, chunk ids and
runs of whole chunks. A repair can pass it and still read wrong to a user. Each check here names one way, and
counts it only where the repair introduced it (the original answer did not already read that way), so a model's
own style is not blamed on the repair:

- first_person: more first-person words (I, we, our, ...) than the original: a source sentence spliced into a
  third-person answer ("I loved the brisket").
- quote_spliced: more double quotation marks than the original: a quoted source sentence pasted in.
- stacked_notes: two or more "Note: ..." sentences.
- crawl_artefact: new text that is not clean prose: a sentence run into the next with no space ("range.ost a"),
  a lone list number left from a web page ("down. 2  Place"), a sentence starting in lower case (a broken word
  or a cut-off chunk).
- dangling_connective: an introduction followed by a connective that answers nothing before it
  ("According to the provided information: But save ...").
- broken_numbering: a numbered list that no longer counts 1, 2, 3 (an item was dropped, the rest kept).
- dangling_intro: a line ending in ":" that nothing follows, or only a note.

Rules follow from how prose is written; none is learnt from labelled rows. The canned fallback message is the
configured text, not a repair, so these checks look at repaired answers only.
"""

from __future__ import annotations

import re
from typing import Callable

# "I" only as a capital; the others in lower or title case ("US" is the country, "ME" a state).
_FIRST_PERSON = re.compile(r"\bI(?:'m|'ve|'d|'ll)?\b|\b(?:[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e(?:'re|'ve|'d|'ll)?"
                           r"|[Oo]urs?|[Uu]s)\b")
_QUOTES = re.compile(r"[\"“”]")
_NOTE = re.compile(r"(?:^|(?<=[.!?\s]))Note:", re.M)
# A sentence end glued to the next word: two lower-case letters, a stop, then a letter; not an abbreviation
# ("e.g.", "U.S."), a domain ("example.com", "www.x") or a decimal.
_GLUED = re.compile(r"(?<![\w./@:-])(?!www\b)[A-Za-z]*[a-z]{2}[.!?](?!com\b|org\b|net\b|gov\b|edu\b|io\b|co\b)"
                    r"[A-Za-z]{2,}\b")
_STRAY_NUMBER = re.compile(r"[.!?:]\s+\d{1,2}\s{2,}[A-Z]")
_LOWER_START = re.compile(r"(?:^|[.!?]\s+)([a-z][a-z]+)\b", re.M)
_LOWER_OK = frozenset("e.g i.e etc vs iphone ipad ios ebay".split())
_CONNECTIVE_AFTER_INTRO = re.compile(
    r":\s+(?:But|And|Or|So|However|Additionally|Also|Moreover|Therefore|Furthermore|Nonetheless|Yet)\b")
# A list item: a number and a stop at a line start, or after a sentence when the list is written inline.
_NUMBERED = re.compile(r"(?:^\s*|(?<=[.!?:])\s+)(\d{1,2})[.)]\s+[A-Z*]", re.M)
_INTRO_LINE = re.compile(r":\s*$")


def _count(pattern: re.Pattern[str], text: str) -> int:
    return len(pattern.findall(text))


def _lower_starts(text: str) -> int:
    return sum(1 for m in _LOWER_START.finditer(text) if m.group(1).lower() not in _LOWER_OK)


def _crawl(text: str) -> int:
    return _count(_GLUED, text) + _count(_STRAY_NUMBER, text) + _lower_starts(text)


def _numbering_breaks(text: str) -> int:
    numbers = [int(n) for n in _NUMBERED.findall(text)]
    if not numbers:
        return 0
    # A list may restart at 1; within a run, each item is the one before plus one.
    breaks = int(numbers[0] != 1)
    breaks += sum(1 for a, b in zip(numbers, numbers[1:]) if b != a + 1 and b != 1)
    return breaks


def _dangling_intros(text: str) -> int:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # One line may hold the intro and the answer ("... as follows: Keep records ..."): only a line that ends in
    # ":" and is followed by nothing, or by a note, dangles.
    out = 0
    for i, line in enumerate(lines):
        if _INTRO_LINE.search(line):
            rest = lines[i + 1:]
            if not rest or all(r.startswith("Note:") for r in rest):
                out += 1
    return out


CHECKS: dict[str, Callable[[str], int]] = {
    "first_person": lambda t: _count(_FIRST_PERSON, t),
    "quote_spliced": lambda t: _count(_QUOTES, t),
    "stacked_notes": lambda t: max(0, _count(_NOTE, t) - 1),
    "crawl_artefact": _crawl,
    "dangling_connective": lambda t: _count(_CONNECTIVE_AFTER_INTRO, t),
    "broken_numbering": _numbering_breaks,
    "dangling_intro": _dangling_intros,
}


def reading_problems(delivered: str, original: str) -> tuple[str, ...]:
    """The checks a repaired answer fails that its original did not (more occurrences than the original)."""
    return tuple(name for name, count in CHECKS.items() if count(delivered) > count(original))
