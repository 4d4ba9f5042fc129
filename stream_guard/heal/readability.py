"""Is a text prose a person can read? The test every repair must pass before it is delivered.

A repair built from retrieved material can easily hand the user the material itself: a JSON record, an
HTML fragment, a `key: value` dump, a chunk id, or whole chunks pasted one after another. None of those
answers a question. `readability_problems` names what is wrong (empty when the text reads as prose);
the healer refuses a repair that has any, and the user-outcome benchmark counts delivered answers with it.

Linear in the text (plus, for whole-chunk runs, the chunks' lengths): a handful of regex scans with no
nested quantifiers, and one normalised substring search per long chunk.
"""

from __future__ import annotations

import re
from typing import Sequence

# A quoted key followed by a colon ("name": ...), or a JSON container opening on a quoted string or a
# nested container: the shapes that only a serialised record has.
_JSON_RE = re.compile(r"\"[^\"\n]{1,80}\"\s*:|[{\[]\s*[\"{\[]|:\s*(?:true|false|null)\s*[,}]|\{\s*\}|\[\s*\]")
_MARKUP_RE = re.compile(
    r"</?[A-Za-z][A-Za-z0-9:-]{0,30}(?:\s[^<>\n]{0,200})?/?>"  # HTML / XML tags
    r"|^\s{0,3}```"  # code fences
    r"|^\s*\|[^\n]*\|\s*$"  # markdown table rows
    r"|^\s{0,3}#{1,6}\s",  # markdown headings
    re.MULTILINE,
)
# Identifiers nobody writes in prose: snake_case, or CamelCase with three or more humps
# (RestaurantsTakeOut, BusinessAcceptsCreditCards). Two humps (PayPal, YouTube, McDonald) are names.
_IDENTIFIER_RE = re.compile(
    r"(?<![\w@/.])(?:[a-z]+(?:_[a-z0-9]+)+|[A-Z][a-z]+(?:[A-Z][a-z]+){2,})(?![\w@])"
)
# "key: value" or "key = value" at the start of a line or after a separator: two or more in one text are a
# dump, not a sentence ("Note: ..." alone is fine).
# A colon between digits is a time ("16:30"), not a key.
_KEY = r"[A-Za-z_](?:[\w ]{0,30}?[A-Za-z_])?\s*(?::(?!\d)|=)\s*\S"
_KEY_VALUE_RE = re.compile(rf"(?:^|[\n;,|])\s*{_KEY}", re.MULTILINE)
_KEY_VALUE_LINE_RE = re.compile(rf"^\s*[-*•]?\s*{_KEY}", re.MULTILINE)
_WS_RE = re.compile(r"\s+")

# A chunk this long (characters) pasted whole is a dump of the source, not an answer drawn from it.
WHOLE_CHUNK_CHARS = 300
SHORT_CHUNK_RUN = 3
_MIN_ID_CHARS = 3


def _normalise(text: str) -> str:
    return _WS_RE.sub(" ", text).strip().lower()


def _key_value_dump(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    kv_lines = len(_KEY_VALUE_LINE_RE.findall(text))
    if len(lines) >= 2 and kv_lines >= 2 and kv_lines * 2 >= len(lines):
        return True
    # One line holding "Monday: 16:0-21:0, Tuesday: 16:0-21:0, ..." or "WiFi=free; Parking=lot".
    return len(_KEY_VALUE_RE.findall(text)) >= 3


def _chunk_ids_in(text: str, chunk_ids: Sequence[str]) -> list[str]:
    found = []
    for chunk_id in chunk_ids:
        ident = chunk_id.strip()
        # Positional ids ("1", "2") are ordinary numbers in prose; only real ids can be told apart.
        if len(ident) < _MIN_ID_CHARS or ident.isdigit():
            continue
        if re.search(rf"(?<![\w-]){re.escape(ident)}(?![\w-])", text):
            found.append(ident)
    return found


def _whole_chunks(text: str, chunk_texts: Sequence[str]) -> int:
    """How many chunks the text quotes in full, when that makes it a dump: any long chunk, or a run of
    `SHORT_CHUNK_RUN` or more short ones that together are long (one-sentence chunks quoted as an answer
    are fine)."""
    body = _normalise(text)
    whole_long = whole_short = short_chars = 0
    for chunk in chunk_texts:
        norm = _normalise(chunk)
        if not norm or norm not in body:
            continue
        if len(norm) >= WHOLE_CHUNK_CHARS:
            whole_long += 1
        else:
            whole_short += 1
            short_chars += len(norm)
    if whole_long:
        return whole_long + whole_short
    return whole_short if whole_short >= SHORT_CHUNK_RUN and short_chars >= WHOLE_CHUNK_CHARS else 0


def readability_problems(
    text: str, chunk_texts: Sequence[str] = (), chunk_ids: Sequence[str] = ()
) -> tuple[str, ...]:
    """What keeps `text` from being readable prose; empty when nothing does.

    `chunk_texts` and `chunk_ids` are the event's retrieved chunks: the text must not quote long chunks
    (or several short ones) whole, nor name a chunk by its id.
    """
    problems: list[str] = []
    if not text.strip():
        return ("empty",)
    if _JSON_RE.search(text):
        problems.append("json")
    if _MARKUP_RE.search(text):
        problems.append("markup")
    if _key_value_dump(text) or _IDENTIFIER_RE.search(text):
        problems.append("key_value_dump")
    ids = _chunk_ids_in(text, chunk_ids)
    if ids:
        problems.append("chunk_id")
    if _whole_chunks(text, chunk_texts):
        problems.append("whole_chunks")
    return tuple(problems)


def is_readable(text: str, chunk_texts: Sequence[str] = (), chunk_ids: Sequence[str] = ()) -> bool:
    """True when `text` is prose a person can read: no JSON, markup, key-value dump, chunk id or chunk run."""
    return not readability_problems(text, chunk_texts, chunk_ids)
