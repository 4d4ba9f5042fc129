"""Work on a short text done once per process: the same answer, sentence or line is read again and again (by
several checks, by the claim reader, by each re-inspection of a repair, which keeps most of its text).

`cached_when_short(max_chars, max_texts)` keeps the results for texts up to `max_chars` characters while they are
among the `max_texts` most recent (so at most `max_chars * max_texts` characters of keys), and computes longer
texts every time. Results are shared by every caller: they must be immutable (tuples, frozensets)."""

from __future__ import annotations

from functools import lru_cache, wraps
from typing import Callable, TypeVar

_R = TypeVar("_R")


def cached_when_short(max_chars: int, max_texts: int) -> Callable[[Callable[[str], _R]], Callable[[str], _R]]:
    def wrap(compute: Callable[[str], _R]) -> Callable[[str], _R]:
        cached = lru_cache(maxsize=max_texts)(compute)

        @wraps(compute)
        def once(text: str) -> _R:
            return cached(text) if len(text) <= max_chars else compute(text)

        return once

    return wrap
