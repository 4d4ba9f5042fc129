"""Is a text prose a person can read? The test every repair must pass before it is delivered.

A repair built from retrieved material can easily hand the user the material itself: a JSON record, an
HTML fragment, a `key: value` dump, a chunk id, or whole chunks pasted one after another. None of those
answers a question. `readability_problems` names what is wrong (empty when the text reads as prose).

A repair can be prose and still read wrong next to the answer it replaces. `reading_problems` compares the
repair with the original answer and names what the repair introduced (more of it than the original had, so a
model's own style is never blamed on the repair):

- first_person: a source sentence in the first person ("I loved the brisket", "we believe") spliced into an
  answer that did not speak so;
- quote_spliced: quotation marks the answer did not have: a quoted source sentence pasted in;
- stacked_notes: more than one "Note: ..." sentence;
- crawl_artefact: text that is not clean prose: a sentence run into the next with no space ("range.ost a"), a
  lone list number left from a web page ("down. 2  Place"), a sentence starting in lower case (a cut-off chunk or
  a broken word);
- dangling_connective: an introduction followed by a connective that answers nothing before it ("According to
  the provided information: But save ...");
- broken_numbering: a numbered list that no longer counts 1, 2, 3;
- dangling_intro: a line ending in ":" that nothing follows, or only a note.

`repair_problems` is both: the one test the healer applies to every repair and the trust benchmark counts
delivered repairs with. Rules follow from how prose is written; none is learnt from labelled rows.

Linear in the text (plus, for whole-chunk runs, the chunks' lengths): a handful of regex scans with no
nested quantifiers, and one normalised substring search per long chunk.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from stream_guard.text import regex_cache
from stream_guard.text.inspection import Inspection
from stream_guard.text.short_text_cache import cached_when_short

# A quoted key followed by a colon ("name": ...), or a JSON container opening on a quoted string or a
# nested container: the shapes that only a serialised record has.
_JSON_RE = regex_cache.compile(r"\"[^\"\n]{1,80}\"\s*:|[{\[]\s*[\"{\[]|:\s*(?:true|false|null)\s*[,}]|\{\s*\}|\[\s*\]")
# A markdown table row; the blanks ahead of it are read within its own line (see _KEY below for why).
_TABLE_ROW = r"^[^\S\n]*+\|[^\n]*\|\s*$"
_MARKUP_RE = regex_cache.compile(
    r"</?[A-Za-z][A-Za-z0-9:-]{0,30}(?:\s[^<>\n]{0,200})?/?>"  # HTML / XML tags
    r"|^\s{0,3}```"  # code fences
    rf"|{_TABLE_ROW}"  # markdown table rows
    r"|^\s{0,3}#{1,6}\s",  # markdown headings
    re.MULTILINE,
)
# Identifiers nobody writes in prose: snake_case, or CamelCase with three or more humps
# (RestaurantsTakeOut, BusinessAcceptsCreditCards). Two humps (PayPal, YouTube, McDonald) are names.
_IDENTIFIER_RE = regex_cache.compile(
    r"(?<![\w@/.])(?:[a-z]+(?:_[a-z0-9]+)+|[A-Z][a-z]+(?:[A-Z][a-z]+){2,})(?![\w@])"
)
# What every match of a pattern below holds, tested first: a pattern that opens on a look-behind, a word boundary or
# a line start is tried at every character, a substring test or a pattern that opens on a character class is not
# (tests/stream_guard/heal/test_readability.py compares each gated count with its pattern's own).
_MARKUP_MARKS = frozenset("<`|#")  # a tag, a code fence, a table row, a heading
_HUMP_RE = regex_cache.compile(r"[a-z][A-Z]")  # snake_case holds "_"; three humps hold a lower-case letter before a capital
_GLUE_RE = regex_cache.compile(r"[a-z][.!?][A-Za-z]")  # _GLUED_RE: two letters, a stop, two letters
_LIST_NUMBER_RE = regex_cache.compile(r"\d[.)]")  # _NUMBERED_RE: a number and its stop
# "key: value" or "key = value" at the start of a line or after a separator: two or more in one text are a
# dump, not a sentence ("Note: ..." alone is fine).
# A colon between digits is a time ("16:30"), not a key.
# Whitespace before a key is read once: possessively, and never across a newline, since every line start (and
# every newline) is a place a key may start anyway; a key found after blank lines is then found from its own line
# (counted the same). Reading every run of blank lines from each of its starts, and trying every
# split of it between two runs, cost cubic time: 2,000 newlines in a flagged answer took 70 s of CPU in the
# healer before the per-event budget stopped it.
_KEY = r"[A-Za-z_](?:[\w ]{0,30}?[A-Za-z_])?\s*+(?::(?!\d)|=)\s*+\S"
_KEY_VALUE_RE = regex_cache.compile(rf"(?:^|[\n;,|])[^\S\n]*+{_KEY}", re.MULTILINE)
_KEY_VALUE_LINE_RE = regex_cache.compile(rf"^[^\S\n]*+(?:[-*•]\s*+)?{_KEY}", re.MULTILINE)

# A chunk this long (characters) pasted whole is a dump of the source, not an answer drawn from it.
WHOLE_CHUNK_CHARS = 300
SHORT_CHUNK_RUN = 3
_MIN_ID_CHARS = 3


def _normalise(text: str) -> str:
    # "\s+" to one space and stripped, as str.split() reads whitespace (the same characters): a few times faster.
    return " ".join(text.split()).lower()


# Every repair of an event, and every event retrieving the same chunks, compares with the same chunk texts: a
# chunk is normalised once per process while it is among the 1,024 most recent (up to 8,192 characters each).
_normalised_chunk = cached_when_short(8192, 1024)(_normalise)


def _key_value_dump(text: str) -> bool:
    if ":" not in text and "=" not in text:
        return False  # every key is followed by one (the patterns, tried at every line start, cost more)
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
        norm = _normalised_chunk(chunk)
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
    if _MARKUP_MARKS.intersection(text) and _MARKUP_RE.search(text):
        problems.append("markup")
    if _key_value_dump(text) or (("_" in text or _HUMP_RE.search(text)) and _IDENTIFIER_RE.search(text)):
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


# --- reading next to the original --------------------------------------------------------------------------

# "I" only as a capital; the others in lower or title case ("US" is the country, "ME" a state). The pattern opens on
# the word's first letter and reads the word boundary before it after it ("(?<!\w[IMm...])"), so that the engine
# skips to the next such letter instead of trying a boundary at every character: about three times faster, the
# same matches as "\bI(...)?\b|\b(?:[Mm]e|...)\b" (tests/stream_guard/heal/test_readability.py).
_FIRST_PERSON_RE = regex_cache.compile(
    r"[IMmWwOoUu](?<!\w[IMmWwOoUu])(?:(?<=I)(?:'m|'ve|'d|'ll|’m|’ve|’d|’ll)?|(?<=[Mm])(?:e|y|ine|yself)"
    r"|(?<=[Ww])e(?:'re|'ve|'d|'ll|’re|’ve|’d|’ll)?|(?<=[Oo])(?:urs?|urselves)|(?<=[Uu])s)\b")
_QUOTES_RE = regex_cache.compile(r"[\"“”]")
_NOTE_RE = regex_cache.compile(r"(?:^|(?<=[.!?\s]))Note:", re.M)
# A sentence end glued to the next word: two lower-case letters, a stop, then a letter; not an abbreviation
# ("e.g.", "U.S."), a domain ("example.com", "www.x") or a decimal.
_GLUED_RE = regex_cache.compile(r"(?<![\w./@:-])(?!www\b)[A-Za-z]*[a-z]{2}[.!?](?!com\b|org\b|net\b|gov\b|edu\b|io\b|co\b)"
                       r"[A-Za-z]{2,}\b")
_STRAY_NUMBER_RE = regex_cache.compile(r"(?:^|[.!?:]\s+)\d{1,2}[ \t]{2,}[A-Z]", re.M)
# A word in lower case where a sentence starts, unless the stop before it ends an abbreviation ("5 p.m. on
# Monday", "e.g. tea", "approx. ten") or the word is one written in lower case (iPhone, eBay).
_LOWER_START_RE = regex_cache.compile(r"(?:^|(?<=[.!?])\s+)([a-z][a-z]+)\b", re.M)
_ABBREVIATION_RE = regex_cache.compile(r"(?:\b[A-Za-z]\.|\b(?:etc|vs|approx|incl|esp|cf|ca|no|nos|st|dr|mr|mrs|ms|prof|fig|vol|"
                              r"pp|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun)\.)$",
                              re.I)
_LOWER_OK = frozenset("iphone ipad ios ebay imac ipod".split())
_CONNECTIVE_AFTER_INTRO_RE = regex_cache.compile(
    r":\s+(?:But|And|Or|So|However|Additionally|Also|Moreover|Therefore|Furthermore|Nonetheless|Yet)\b")
# A list item: a number and a stop at a line start, or after a sentence when the list is written inline. Only
# horizontal space before it: "\s*" at every line start would rescan a run of blank lines once per line.
_NUMBERED_RE = regex_cache.compile(r"(?:^[ \t]*+|(?<=[.!?:])[ \t]++)(\d{1,2})[.)][ \t]++[A-Z*]", re.M)
_INTRO_LINE_RE = regex_cache.compile(r":\s*$")


def _lower_starts(text: str) -> int:
    count = 0
    for m in _LOWER_START_RE.finditer(text):
        if m.group(1).lower() in _LOWER_OK:
            continue
        if m.start(1) > 0 and _ABBREVIATION_RE.search(text[max(0, m.start(1) - 12):m.start(1)].rstrip()):
            continue
        count += 1
    return count


def _crawl(text: str) -> int:
    glued = len(_GLUED_RE.findall(text)) if _GLUE_RE.search(text) else 0
    stray = len(_STRAY_NUMBER_RE.findall(text)) if "  " in text or "\t" in text else 0  # two blanks or a tab
    return glued + stray + _lower_starts(text)


def numbering_breaks(text: str) -> int:
    """Places where a numbered list stops counting 1, 2, 3 (a list may restart at 1)."""
    numbers = [int(n) for n in _NUMBERED_RE.findall(text)] if _LIST_NUMBER_RE.search(text) else []
    if not numbers:
        return 0
    return int(numbers[0] != 1) + sum(1 for a, b in zip(numbers, numbers[1:]) if b != a + 1 and b != 1)


def _dangling_intros(text: str) -> int:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # One line may hold the intro and the answer ("... as follows: Keep records ..."): only a line that ends in
    # ":" and is followed by nothing, or by a note, dangles.
    out = 0
    for i, line in enumerate(lines):
        if _INTRO_LINE_RE.search(line):
            rest = lines[i + 1:]
            if not rest or all(r.startswith("Note:") for r in rest):
                out += 1
    return out


READING_CHECKS: dict[str, Callable[[str], int]] = {
    "first_person": lambda t: len(_FIRST_PERSON_RE.findall(t)),
    "quote_spliced": lambda t: len(_QUOTES_RE.findall(t)),
    "stacked_notes": lambda t: max(0, len(_NOTE_RE.findall(t)) - 1) if "Note:" in t else 0,
    "crawl_artefact": _crawl,
    "dangling_connective": lambda t: len(_CONNECTIVE_AFTER_INTRO_RE.findall(t)),
    "broken_numbering": numbering_breaks,
    "dangling_intro": _dangling_intros,
}


def reading_counts(text: str) -> tuple[int, ...]:
    """How often `text` fails each of READING_CHECKS, in order: what a repair of it is compared with (computed
    once per answer by a caller that compares many repairs or sentences with it)."""
    return tuple(count(text) for count in READING_CHECKS.values())


def answer_reading_counts(inspection: Inspection) -> tuple[int, ...]:
    """reading_counts of the inspection's answer, once per event (Inspection.once: its repairs share it)."""
    answer = inspection.answer
    return inspection.once(("reading counts", answer), lambda: reading_counts(answer))


def reading_problems(repair: str, original: str | tuple[int, ...]) -> tuple[str, ...]:
    """What `repair` introduced that reads wrong next to `original` (the text, or its `reading_counts`): each
    check it fails more often than the original did."""
    baseline = reading_counts(original) if isinstance(original, str) else original
    return tuple(name for (name, count), was in zip(READING_CHECKS.items(), baseline) if count(repair) > was)


def original_problems(original: str, chunk_texts: Sequence[str] = (), chunk_ids: Sequence[str] = ()) -> frozenset[str]:
    """The readability_problems an answer already has, which its repairs may keep (prose_problems)."""
    return frozenset(readability_problems(original, chunk_texts, chunk_ids)) if original.strip() else frozenset()


def prose_problems(repair: str, original: str, chunk_texts: Sequence[str] = (),
                   chunk_ids: Sequence[str] = (), *, had: frozenset[str] | None = None) -> tuple[str, ...]:
    """readability_problems of `repair` that `original` did not have (`had`, its original_problems, when the
    caller has them already): an answer written in markdown, or citing a chunk by its id in a marker
    ("[policy-7]"), keeps its heading and its markers in a repair."""
    if had is None:
        had = original_problems(original, chunk_texts, chunk_ids)
    return tuple(p for p in readability_problems(repair, chunk_texts, chunk_ids) if p not in had)


def repair_problems(repair: str, original: str, chunk_texts: Sequence[str] = (),
                    chunk_ids: Sequence[str] = ()) -> tuple[str, ...]:
    """The one test a repair must pass to be delivered: prose (prose_problems) that reads like the answer it
    replaces (reading_problems). Empty when it passes."""
    return prose_problems(repair, original, chunk_texts, chunk_ids) + reading_problems(repair, original)
