"""Editing an answer by sentence, its structure kept: drop some sentences or replace spans, and get the answer back
as written, with its markdown, its citation markers and its lists still counting.

A repair keeps the answer's own words for what it keeps, and its layout: a list item, a bold label or the markers
of a sentence it keeps stay; a dropped sentence takes its markers (and its list item or table row, when nothing
else is left in it) with it; a numbered list from which an item was dropped counts on (1, 2, 3, not 1, 2, 4),
written as markdown items or inline ("... oven: 1. Preheat ... 2. Place ..."); a list introduction whose items
all went ("The steps are:") must not end the answer mid-thought. The answer is read once by the markup reader
(text/markup.py); every span here is a span of its plain text, where the checks found what they found.
"""

from __future__ import annotations

import re
from typing import Sequence

from stream_guard.text import regex_cache
from stream_guard.text.markup import Edit, Markup, read_markup

_TRAILING_COLON_RE = regex_cache.compile(r"[:：]\s*$")
# A numbered item: at a line start ("2. Place the steak"), or inline after a sentence ("... oven. 3. Roast").
_ITEM_RE = regex_cache.compile(r"(?:^[ \t]*|(?<=[.!?:])[ \t]+)(\d{1,3})([.)])(?=[ \t]+\S)", re.M)
# Where a dropped inline sentence leaves two spaces between the sentences around it.
_DOUBLE_SPACE_RE = regex_cache.compile(r"(?<=[.!?\]]) {2,}(?=\S)")


def read(answer: str | Markup) -> Markup:
    """The answer read by the markup reader (an already read one as it is)."""
    return answer if isinstance(answer, Markup) else read_markup(answer)


def spans(markup: Markup) -> list[tuple[int, int, str]]:
    """(start, end, sentence) of each sentence of the answer's plain text, in order."""
    return [(s.start, s.end, s.text) for s in markup.sentences]


def drop(markup: Markup, dropped: Sequence[tuple[int, int]]) -> str:
    """The answer without the sentences at `dropped` (plain spans from `spans`), structure kept, lists renumbered."""
    text = markup.rewrite([Edit(start, end, "") for start, end in dropped])
    text = _TRAILING_COLON_RE.sub(".", _DOUBLE_SPACE_RE.sub(" ", text).strip())
    return renumber(text, from_one=_lists_start_at_one(markup.original)) if dropped else text


def replace(markup: Markup, edits: Sequence[tuple[int, int, str]]) -> str:
    """The answer with plain spans replaced (an empty text drops whole sentences, as `drop` does)."""
    dropping = any(not text for _, _, text in edits)
    text = markup.rewrite([Edit(start, end, value) for start, end, value in edits])
    if dropping:
        text = renumber(_DOUBLE_SPACE_RE.sub(" ", text).strip(), from_one=_lists_start_at_one(markup.original))
    return text


def _lists_start_at_one(text: str) -> bool:
    numbers = [int(m.group(1)) for m in _ITEM_RE.finditer(text)]
    return bool(numbers) and numbers[0] == 1


def renumber(text: str, from_one: bool = True) -> str:
    """Numbered items count on, 1, 2, 3: an item dropped leaves no gap. A list begins at its first item, or where
    the numbers restart at 1 or go back; with `from_one` (the answer's lists began at 1) each list begins at 1
    even when its first item was the one dropped."""
    items = list(_ITEM_RE.finditer(text))
    if not items:
        return text
    edits: list[tuple[int, int, str]] = []
    expected: int | None = None
    last = 0
    for m in items:
        number = int(m.group(1))
        if expected is None or number == 1 or number <= last:
            expected = 1 if from_one else number  # a new list (or one that restarts)
        if number != expected:
            edits.append((m.start(1), m.end(1), str(expected)))
        last = number
        expected += 1
    for start, end, value in reversed(edits):
        text = text[:start] + value + text[end:]
    return text
