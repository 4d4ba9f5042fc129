"""Exceptions and inclusions: what a sentence leaves out of its scope ("except public holidays", "excluding
taxes", "other than", "with the exception of", "not including") or takes into it ("including public holidays",
"inclusive of taxes"), with the words of what is meant, so "open every day including public holidays" can be
compared with "open every day except public holidays"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from stream_guard.text.words import NEGATORS, STOP_WORDS, mentions, stem

EXCLUDED, INCLUDED = "excluded", "included"

_SCOPE_RE = re.compile(
    r"\b(?:(?P<ex>except(?:\s++for)?|excepting|excluding|exclusive\s++of|other\s++than|apart\s++from|"
    r"with\s++the\s++exception\s++of|not\s++including|but\s++not|save\s++for|barring)"
    r"|(?P<in>including|inclusive\s++of|includes|include|included|plus|as\s++well\s++as))\b",
    re.IGNORECASE,
)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'’-]*|[,;:.()!?]")
_MAX_WORDS = 4  # content words of what is excepted or included


@dataclass(frozen=True)
class Scope:
    """An exception or inclusion as written at [start, end), and the stems of what it names."""

    text: str
    start: int
    end: int
    polarity: str  # EXCLUDED or INCLUDED
    stems: frozenset[str]


_NEEDLES = ("except", "exclu", "other than", "apart from", "includ", "but not", "save for", "barring", "plus",
            "as well as")


def scopes(text: str) -> list[Scope]:
    """Every exception or inclusion stated in `text`, in order."""
    return list(_scopes(text)) if text and mentions(text, _NEEDLES) else []


@lru_cache(maxsize=16384)
def _scopes(text: str) -> tuple[Scope, ...]:
    out: list[Scope] = []
    for m in _SCOPE_RE.finditer(text):
        polarity = EXCLUDED if m.group("ex") else INCLUDED
        stems: list[str] = []
        end = m.end()
        for word in _WORD_RE.finditer(text, m.end(), min(len(text), m.end() + 80)):
            low = word.group().lower()
            if not low[0].isalpha():
                break
            if low in STOP_WORDS or low in NEGATORS:
                if stems:
                    break
                continue
            stems.append(stem(low))
            end = word.end()
            if len(stems) >= _MAX_WORDS:
                break
        if stems:
            out.append(Scope(text[m.start() : end], m.start(), end, polarity, frozenset(stems)))
    return out
