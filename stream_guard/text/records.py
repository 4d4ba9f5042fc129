"""Structured context: a chunk that is a JSON object or array, or a `key: value` table, read as fields.

Data-to-text answers are written from records ("name", "hours", "attributes": {"OutdoorSeating": false},
"review_info": [...]). Read as prose, such a chunk is one long "sentence" of punctuation and glued keys:
`RestaurantsTakeOut` never matches "takeout", `16:0-21:0` never matches "4 pm to 9 pm", and a `false`
grounds "offers outdoor seating" as well as a `true` would. So a structured chunk is read once into:

- `fields`: every leaf value with its key path (booleans, numbers, strings, nulls), for the checks that
  compare a claim with a value (faithfulness reads booleans and opening hours from them);
- `sentences`: a prose view, one sentence per field (keys split into words, `16:0-21:0` written as
  "16:00 to 21:00, 4 pm to 9 pm"), long text values (reviews) split into their own sentences. This is
  what every check reads as the chunk's text, so field values count as source text for the entity and
  citation checks and JSON punctuation never counts as a missing word.

Bounded: at most `MAX_DEPTH` levels and `MAX_FIELDS` leaves are read (the rest is ignored, never an
error), and parsing is linear in the chunk (orjson, then one walk).

What a claim says against these fields is the checks' to judge: checks/record_claims.py.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

import orjson

from stream_guard.text import regex_cache
from stream_guard.text.sentences import split_sentences

MAX_DEPTH = 6


MAX_FIELDS = 1000


# Text values longer than this are prose (a review, a description): split into sentences of their own.
LONG_TEXT_CHARS = 120


_RECORD_CACHE = 2048


# A `key: value` table: at least this many lines, most of them shaped like "Key: value".
_TABLE_MIN_LINES = 3


# Possessive leading whitespace: a key starts with a letter, so a line of spaces fails at once instead of trying
# every split of them between the two runs (quadratic: a 20,000-space line took seconds).
_TABLE_LINE_RE = regex_cache.compile(r"\s*+(?:[-*•]\s*+)?([A-Za-z][\w ./()&'-]{0,40}?)\s*[:=]\s+(\S.*)")


_CAMEL_RE = regex_cache.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


_HOURS_RE = regex_cache.compile(r"^\s*(\d{1,2}):(\d{1,2})\s*-\s*(\d{1,2}):(\d{1,2})\s*$")


# Python-literal strings as some exports write them: u'free', 'none'.
_PY_STRING_RE = regex_cache.compile(r"^u?'(.*)'$")


FALSE_STRINGS = frozenset({"no", "none", "false", "n", "0"})


# Values that say a thing is offered by saying how: WiFi "free" or "paid", Alcohol "full_bar" or "beer_and_wine".
# "Does not offer WiFi" says the opposite of each, as it does of "yes".
TRUE_STRINGS = frozenset({"yes", "true", "y", "free", "paid", "full_bar", "beer_and_wine"})


# A dict some exports write as a Python literal string ("Ambience": "{'romantic': False, 'casual': True}"): read as
# the dict it spells, when short; a longer one stays a string.
_LITERAL_DICT_CHARS = 1000


@dataclass(frozen=True)
class Field:
    """One leaf of a record. `path` holds the keys from the root (list positions left out)."""

    path: tuple[str, ...]
    value: bool | float | str | None

    @property
    def key(self) -> str:
        return self.path[-1] if self.path else ""

    @property
    def truth(self) -> bool | None:
        """True / False for a yes-no attribute (true, false, "yes", "no", "none"), else None."""
        if isinstance(self.value, bool):
            return self.value
        if isinstance(self.value, str):
            folded = self.value.strip().lower()
            if folded in FALSE_STRINGS:
                return False
            if folded in TRUE_STRINGS:
                return True
        return None


@dataclass(frozen=True)
class Record:
    """A structured chunk read as fields, with its prose view."""

    fields: tuple[Field, ...]
    sentences: tuple[str, ...]
    # Minutes after midnight of every opening and closing time the record states (hours fields).
    times: frozenset[int]
    truncated: bool = False
    # Content stems of each sentence that comes from a long text value (a review), not from a field.
    prose_stems: tuple[frozenset[str], ...] = ()
    # The fields a claim can contradict or invent: yes-no values and nulls.
    yes_no: tuple[Field, ...] = ()
    # Days of the week with opening hours, lower case.
    open_days: frozenset[str] = frozenset()
    # (day, minutes of its opening and closing times) for each day with hours, lower case.
    day_times: tuple[tuple[str, frozenset[int]], ...] = ()
    # Stems of every key the record has, at any depth (what the record can say anything about).
    key_stems: frozenset[str] = frozenset()
    # Positions in `sentences` of the sentences that render a field (not a review's text): yes-no facts
    # that checks reading prose polarity must leave to field_conflicts.
    field_lines: frozenset[int] = frozenset()
    # Stems of every short string value (names, categories; not review texts, read as prose_stems).
    value_stems: frozenset[str] = frozenset()
    # The name of the format the chunk was written in ("JSON"), "" for a `key: value` table: answers name the
    # source's format ("based on the provided JSON data"), which is a word about the source, not a claim.
    form: str = ""

    @property
    def text(self) -> str:
        return "\n".join(self.sentences)

    def mentioned_in_prose(self, stems: frozenset[str]) -> bool:
        return any(stems <= sentence for sentence in self.prose_stems)


def key_words(key: str) -> list[str]:
    """Words of a key as written in prose: "RestaurantsTakeOut" -> restaurants take out, "business_stars"
    -> business stars, "WiFi" -> wifi (parts of one or two letters are glued back together)."""
    parts: list[str] = []
    for piece in re.split(r"[^A-Za-z0-9]+", key):
        for part in _CAMEL_RE.findall(piece):
            if parts and len(part) <= 2 and len(parts[-1]) <= 2 and part.isalpha() and parts[-1].isalpha():
                parts[-1] += part
            else:
                parts.append(part)
    return [p.lower() for p in parts if p]


def phrase(words: list[str]) -> str:
    return " ".join(words)


def _clean_string(value: str) -> str:
    m = _PY_STRING_RE.match(value.strip())
    return (m.group(1) if m else value).strip()


def clock24(minutes: int) -> str:
    """Minutes after midnight as a 24-hour clock time: 960 -> "16:00"."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _clock(hour: int, minute: int) -> str:
    """24-hour clock time in words people write: 16:00 -> 4 pm, 12:30 -> 12:30 pm, 0:00 -> midnight."""
    if hour in (0, 24) and minute == 0:
        return "midnight"
    if hour == 12 and minute == 0:
        return "noon"
    suffix = "am" if hour < 12 or hour == 24 else "pm"
    h = hour % 12 or 12
    return f"{h} {suffix}" if minute == 0 else f"{h}:{minute:02d} {suffix}"


def read_hours(value: str) -> tuple[int, int] | None:
    """ "16:0-21:0" -> (960, 1260) in minutes after midnight; None when not an opening-hours range."""
    m = _HOURS_RE.match(value)
    if not m:
        return None
    h1, m1, h2, m2 = (int(g) for g in m.groups())
    if h1 > 24 or h2 > 24 or m1 > 59 or m2 > 59:
        return None
    return h1 * 60 + m1, h2 * 60 + m2


def no_hours(hours: tuple[int, int]) -> bool:
    """"0:0-0:0": Yelp-style exports write it for a day without a range (closed, or not known); RAGTruth's
    annotators read "open Monday through Saturday" against it as a contradiction. It opens no day."""
    return hours[0] == hours[1] == 0


_US_STATES = dict(
    pair.split("=")
    for pair in (
        "AL=Alabama AK=Alaska AZ=Arizona AR=Arkansas CA=California CO=Colorado CT=Connecticut DE=Delaware "
        "FL=Florida GA=Georgia HI=Hawaii ID=Idaho IL=Illinois IN=Indiana IA=Iowa KS=Kansas KY=Kentucky "
        "LA=Louisiana ME=Maine MD=Maryland MA=Massachusetts MI=Michigan MN=Minnesota MS=Mississippi "
        "MO=Missouri MT=Montana NE=Nebraska NV=Nevada NH=New_Hampshire NJ=New_Jersey NM=New_Mexico "
        "NY=New_York NC=North_Carolina ND=North_Dakota OH=Ohio OK=Oklahoma OR=Oregon PA=Pennsylvania "
        "RI=Rhode_Island SC=South_Carolina SD=South_Dakota TN=Tennessee TX=Texas UT=Utah VT=Vermont "
        "VA=Virginia WA=Washington WV=West_Virginia WI=Wisconsin WY=Wyoming DC=District_of_Columbia"
    ).split()
)


_STATE_KEYS = frozenset({"state", "state_code", "province", "region"})


def _expansion(field: Field) -> str:
    """A fuller spelling of a coded value that answers write out: "CA" in a state field is California."""
    if field.key.lower() in _STATE_KEYS and isinstance(field.value, str):
        name = _US_STATES.get(field.value.strip().upper())
        if name:
            return f" ({name.replace('_', ' ')})"
    return ""


def _render_value(value: bool | float | str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    hours = read_hours(value)
    if hours is not None and no_hours(hours):
        return "no opening hours given"
    if hours is not None:
        (a, b) = hours
        return (
            f"{clock24(a)} to {clock24(b)}, "
            f"{_clock(a // 60, a % 60)} to {_clock(b // 60, b % 60)}"
        )
    return value


def _leaves(node: Any, path: tuple[str, ...], depth: int, budget: list[int]) -> Iterator[Field]:
    if budget[0] <= 0:
        return
    if isinstance(node, dict):
        if depth >= MAX_DEPTH:
            return
        for key, value in node.items():
            yield from _leaves(value, path + (str(key),), depth + 1, budget)
    elif isinstance(node, list):
        if depth >= MAX_DEPTH:
            return
        for item in node:
            yield from _leaves(item, path, depth + 1, budget)
    elif isinstance(node, str) and (spelled := _literal_dict(node)) is not None:
        yield from _leaves(spelled, path, depth, budget)
    else:
        budget[0] -= 1
        if isinstance(node, str):
            yield Field(path, _clean_string(node))
        elif isinstance(node, bool) or node is None:
            yield Field(path, node)
        elif isinstance(node, (int, float)):
            yield Field(path, float(node))
        else:
            yield Field(path, str(node))


def _literal_dict(value: str) -> dict[str, Any] | None:
    """The dict a string spells as a Python literal ("{'garage': False, 'lot': True}"), or None. literal_eval
    evaluates literals only (no names, no calls); the length bound keeps its parse small."""
    text = value.strip()
    if not (text.startswith("{") and text.endswith("}")) or len(text) > _LITERAL_DICT_CHARS:
        return None
    try:
        data = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _field_sentences(field: Field) -> list[str]:
    value = field.value
    if value is None or value == "":
        return []  # a null says nothing: a claim about it is not grounded by the key's words
    if isinstance(value, str) and len(value) > LONG_TEXT_CHARS:
        return split_sentences(value)
    words: list[str] = []
    glued: list[str] = []
    for key in field.path:
        parts = key_words(key)
        # Glued spellings of multi-word keys ("take out" -> "takeout") ground answers that write them so.
        glued += [a + b for a, b in zip(parts, parts[1:]) if len(a) > 1 and len(b) > 1]
        # ...and the split spelling of a key glued from short parts ("WiFi" is also written "Wi-Fi").
        pieces = [piece.lower() for piece in _CAMEL_RE.findall(key)]
        if len(pieces) > len(parts):
            glued.append(" ".join(pieces))
        words += parts
    label = phrase(words)
    if any(c.isupper() for c in field.key[1:]):
        glued.append(field.key)  # the key as written ("WiFi"): answers use it, and NER reads it as a name
    extra = f" ({', '.join(glued)})" if glued else ""
    rendered = _render_value(value) + _expansion(field)
    return [f"{label[:1].upper()}{label[1:]}{extra}: {rendered}."] if label else [f"{rendered}."]


def _parse_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or stripped[-1] not in "}]":
        return None
    try:
        data = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, list) and not any(isinstance(item, (dict, list)) for item in data):
        return None  # a bare list of strings or numbers is closer to prose than to a record
    return data if isinstance(data, (dict, list)) else None


def _parse_table(text: str) -> dict[str, str] | None:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < _TABLE_MIN_LINES:
        return None
    pairs: dict[str, str] = {}
    for line in lines:
        m = _TABLE_LINE_RE.match(line)
        if m:
            pairs.setdefault(m.group(1).strip(), m.group(2).strip())
    # Most lines must be pairs: a paragraph with a "Note: ..." line is still prose.
    return pairs if len(pairs) >= _TABLE_MIN_LINES and len(pairs) * 4 >= len(lines) * 3 else None


def _build(data: Any, form: str) -> Record:
    from stream_guard.text.words import compound_stems, stem, stem_set

    budget = [MAX_FIELDS]
    fields = tuple(_leaves(data, (), 0, budget))
    sentences: list[str] = []
    prose: list[frozenset[str]] = []
    times: set[int] = set()
    open_days: list[str] = []
    day_times: dict[str, frozenset[int]] = {}
    field_lines: list[int] = []
    for field in fields:
        rendered = _field_sentences(field)
        if isinstance(field.value, str) and len(field.value) > LONG_TEXT_CHARS:
            prose += [stem_set(sentence) | compound_stems(sentence) for sentence in rendered]
        else:
            field_lines += range(len(sentences), len(sentences) + len(rendered))
        sentences += rendered
        if isinstance(field.value, str):
            hours = read_hours(field.value)
            if hours is not None and not no_hours(hours):
                times.update(hours)
                if field.key.lower() in _DAYS:
                    open_days.append(field.key)
                    day_times[field.key.lower()] = frozenset(hours)
    field_lines += range(len(sentences), len(sentences) + len(_week_summary(open_days)))
    sentences += _week_summary(open_days)
    kept = [i for i, sentence in enumerate(sentences) if sentence.strip()]
    position = {old: new for new, old in enumerate(kept)}
    return Record(
        fields,
        tuple(sentences[i] for i in kept),
        frozenset(times),
        truncated=budget[0] <= 0,
        prose_stems=tuple(prose),
        yes_no=tuple(f for f in fields if f.path and (f.value is None or f.truth is not None)),
        open_days=frozenset(d.lower() for d in open_days),
        day_times=tuple(sorted(day_times.items())),
        field_lines=frozenset(position[i] for i in field_lines if i in position),
        key_stems=frozenset(stem(w) for f in fields for k in f.path for w in key_words(k)),
        value_stems=frozenset().union(
            *(stem_set(f.value) for f in fields if isinstance(f.value, str) and len(f.value) <= LONG_TEXT_CHARS)
        ),
        form=form,
    )


_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _week_summary(days: list[str]) -> list[str]:
    """How many days a week the hours cover, as answers say it ("open seven days a week", "daily")."""
    distinct = {d.lower() for d in days}
    if not distinct:
        return []
    if len(distinct) == 7:
        return ["Open 7 days a week, every day, daily."]
    return [f"Open {len(distinct)} days a week."]


@lru_cache(maxsize=_RECORD_CACHE)
def read_record(text: str) -> Record | None:
    """The chunk as a record, or None when it is prose. Cached by chunk text, like the chunk analysis."""
    data = _parse_json(text)
    form = "JSON"
    if data is None:
        data, form = _parse_table(text), ""
    if not data:
        return None
    record = _build(data, form)
    return record if record.fields else None


_NAME_KEYS = ("name", "title", "business_name", "product", "product_name")


_PLACE_KEYS = ("address", "street", "city", "state", "postal_code", "zip", "country")


_CATEGORY_KEYS = ("categories", "category", "type", "cuisine")


_RATING_KEYS = ("business_stars", "stars", "rating", "average_rating")


def _top_level(record: Record, keys: tuple[str, ...]) -> list[Field]:
    wanted = {k.lower() for k in keys}
    return [f for f in record.fields if len(f.path) == 1 and f.key.lower() in wanted and f.value not in (None, "")]


def _plain(value: bool | float | str | None) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).strip().rstrip(".")


def describe_record(record: Record) -> list[str]:
    """The record's main facts as plain sentences: what it is, where, what kind, how it is rated. Only
    top-level fields whose role is clear from a common key name are used, and only readable short values,
    so every sentence is grounded in the record and reads as prose. [] when the record has no name."""
    names = _top_level(record, _NAME_KEYS)
    if not names or not isinstance(names[0].value, str) or len(names[0].value) > 80:
        return []
    name = _plain(names[0].value)
    out: list[str] = []
    places = [_plain(f.value) for f in _top_level(record, _PLACE_KEYS) if isinstance(f.value, str)]
    places = [p for p in places if p and len(p) <= 60]
    if places:
        out.append(f"{name} is located at {', '.join(places)}.")
    categories = [f for f in _top_level(record, _CATEGORY_KEYS) if isinstance(f.value, str) and len(f.value) <= 160]
    if categories:
        out.append(f"{name if not out else 'It'} is listed under {_plain(categories[0].value)}.")
    ratings = [f for f in _top_level(record, _RATING_KEYS) if isinstance(f.value, float)]
    if ratings:
        out.append(f"{name if not out else 'It'} has a rating of {_plain(ratings[0].value)} stars.")
    return out
