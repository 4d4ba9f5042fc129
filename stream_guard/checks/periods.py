"""The period a figure is stated for: the date written nearest to it in its sentence.

"In Q3 2025, revenue was $4.2 million, up from $3.6 million in Q2 2025" gives $4.2 million to Q3 2025 and
$3.6 million to Q2 2025: a reader attaches a figure to the period named closest to it ("$3.6 million in Q2
2025"), not to another period further along the sentence. An answer that gives $3.6 million to Q3 2025 has
taken a figure the source states, but for another period: the numeric check reports it as a swapped value.
"""

from __future__ import annotations

import re

from stream_guard.checks.dates import DateMention, accounts_for, dates_agree, stated_dates
from stream_guard.text import regex_cache
from stream_guard.text.quantities import Quantity


# Where one clause of a sentence ends and the next begins: a figure's period is written in its own clause
# ("1,200 units in 2023 and 1,500 units in 2024"), or in a phrase that opens the sentence ("In Q3 2025, ...").
_CLAUSE_BREAK_RE = regex_cache.compile(
    r"[,;:]\s|\s[(\u2013\u2014-]\s?|\)|\s(?:and|but|while|whereas|versus|vs\.?|compared (?:with|to)|against)\s"
)


def period_of(text: str, q: Quantity) -> DateMention | None:
    """The period `q` (read from sentence `text`) is stated for: the date in its own clause, else the date
    of a phrase opening the sentence ("In Q3 2025, revenue was $4.2 million"); None when there is none or
    when the clause names two different periods (it does not say which one is the figure's)."""
    dates = [d for d in stated_dates(text) if not (d.start < q.end and d.end > q.start)]  # "2025 units"
    if not dates:
        return None
    breaks = [0, *(m.end() for m in _CLAUSE_BREAK_RE.finditer(text)), len(text) + 1]
    low = max(b for b in breaks if b <= q.start)
    high = min((b for b in breaks if b > q.end), default=len(text) + 1)
    own = [d for d in dates if d.start >= low and d.end <= high]
    if not own and len(breaks) > 2 and breaks[1] <= q.start:
        own = [d for d in dates if d.end <= breaks[1] and _opening_phrase(text[: breaks[1]], d)]
    if not own or any(dates_agree(own[0], d) is False for d in own[1:]):
        return None
    return own[0]


_OPENING_RE = regex_cache.compile(r"(?:(?:in|during|for|as of|by|at the end of|through)\s+)?(?:the\s+)?", re.I)


def _opening_phrase(head: str, d: DateMention) -> bool:
    """Whether `head`, the sentence up to its first comma, is a phrase naming period `d` and nothing else
    ("In Q3 2025,", "For fiscal 2024,"): such a phrase sets the period of the whole sentence."""
    if not head.rstrip().endswith((",", ":")):
        return False
    lead = _OPENING_RE.match(head)
    rest = head[: d.start][lead.end() if lead else 0 :] + head[d.end :]
    return not rest.strip(" ,:") or rest.strip(" ,:").lower() in ("fiscal", "fy")


def other_period(answer: DateMention, source: DateMention | None) -> bool:
    """Whether `source`, the period a context figure is stated for, is a different period from the answer's."""
    return source is not None and dates_agree(answer, source) is False


def same_period(answer: DateMention, source: DateMention | None) -> bool:
    """Whether a context figure is stated for the answer's period ("Q3 2025" for "Q3 2025", not for "2025")."""
    return source is not None and accounts_for(source, answer)
