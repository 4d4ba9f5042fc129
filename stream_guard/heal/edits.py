"""Editing an answer by sentence: drop some sentences and keep the rest as written, lists still counting.

A repair keeps the answer's own words for what it keeps, and its layout: a line break stays a line break, and a
numbered list from which an item was dropped counts on (1, 2, 3, not 1, 2, 4). A list introduction whose items
all went ("The steps are:") must not end the answer mid-thought.

Plain answers only: an answer written in markdown (lists, bold labels, citation markers) is edited through the
markup reader's span editor once it is in (text/markup.py), which keeps its structure and the markers of the
sentences it keeps; until then `drop` reads the answer as plain text.
"""

from __future__ import annotations

import re
from typing import Sequence

from stream_guard.text.spans import sentence_spans

_TRAILING_COLON_RE = re.compile(r"[:：]\s*$")
# A numbered item: at a line start ("2. Place the steak"), or inline after a sentence ("... oven. 3. Roast").
_ITEM_RE = re.compile(r"(?:^[ \t]*|(?<=[.!?:])[ \t]+)(\d{1,3})([.)])(?=[ \t]+\S)", re.M)


def spans(answer: str) -> list[tuple[int, int, str]]:
    """(start, end, sentence) of each sentence of the answer, in order."""
    return sentence_spans(answer)


def drop(answer: str, dropped: Sequence[tuple[int, int]]) -> str:
    """The answer without the sentences at `dropped` (spans from `spans`), separators kept, lists renumbered."""
    gone = set(dropped)
    kept = [(start, end) for start, end, _ in spans(answer) if (start, end) not in gone]
    out: list[str] = []
    for k, (start, end) in enumerate(kept):
        if k:
            gap = answer[kept[k - 1][1]:start]
            out.append("\n" if "\n" in gap else " ")
        out.append(answer[start:end])
    text = _TRAILING_COLON_RE.sub(".", "".join(out).strip())
    return renumber(text, from_one=_lists_start_at_one(answer)) if len(kept) < len(spans(answer)) else text


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
