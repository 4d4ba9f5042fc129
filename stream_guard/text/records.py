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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

import orjson

from stream_guard.text.words import split_sentences

MAX_DEPTH = 6
MAX_FIELDS = 1000
# Text values longer than this are prose (a review, a description): split into sentences of their own.
LONG_TEXT_CHARS = 120
_RECORD_CACHE = 2048

# A `key: value` table: at least this many lines, most of them shaped like "Key: value".
_TABLE_MIN_LINES = 3
_TABLE_LINE_RE = re.compile(r"\s*[-*•]?\s*([A-Za-z][\w ./()&'-]{0,40}?)\s*[:=]\s+(\S.*)")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_HOURS_RE = re.compile(r"^\s*(\d{1,2}):(\d{1,2})\s*-\s*(\d{1,2}):(\d{1,2})\s*$")
# Python-literal strings as some exports write them: u'free', 'none'.
_PY_STRING_RE = re.compile(r"^u?'(.*)'$")

FALSE_STRINGS = frozenset({"no", "none", "false", "n", "0"})
TRUE_STRINGS = frozenset({"yes", "true", "y"})

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
            f"{a // 60:02d}:{a % 60:02d} to {b // 60:02d}:{b % 60:02d}, "
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


def _build(data: Any) -> Record:
    from stream_guard.text.words import stem, stem_set

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
            prose += [stem_set(sentence) for sentence in rendered]
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
    if data is None:
        data = _parse_table(text)
    if not data:
        return None
    record = _build(data)
    return record if record.fields else None


# ── claims against fields ─────────────────────────────────────────────────────────────────────────────

# Key words that name a record's shape rather than a property ("RestaurantsGoodForGroups" is about groups).
_GENERIC_KEY_WORDS = frozenset(
    "attributes attribute business restaurants restaurant good for has is accepts allowed by only the of "
    "info information details data".split()
)
# Container keys whose children are properties in their own right ("Ambience": {"intimate": true}); a
# claim names the child with one of these words nearby, or with the container's own key words.
_PARENT_SYNONYMS: dict[str, frozenset[str]] = {
    "ambienc": frozenset({"ambianc", "ambienc", "atmospher", "vibe", "decor", "environ", "feel"}),
}
_NEGATION_WORDS = frozenset(
    "not no never without lack lacks lacking unavailable neither nor cannot can't won't doesn't don't isn't "
    "aren't wasn't weren't didn't".split()
)
_PREDICATE_NEGATIONS = frozenset("not never unavailable".split())
_CLAUSE_BREAKS = frozenset("but however while whereas although though yet except instead".split())
_CLAUSE_STARTS = frozenset("there it its they we you he she this these which who so and".split())
_NEGATION_BEFORE = 10
_NEGATION_AFTER = 3
# Words and commas: a comma ends what a following negation can reach.
_CLAIM_TOKEN_RE = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?|,")
_TIME_RE = re.compile(
    r"\b(\d{1,2})(?::(\d{2}))?(?:\s*(?:or|to|-|–|until|till)\s*(\d{1,2})(?::(\d{2}))?)?\s*([ap])\.?\s?m\b\.?"
    r"|\b([01]?\d|2[0-4]):([0-5]\d)\b|\b(noon|midday|midnight)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class FieldConflict:
    """A claim that says the opposite of a yes-no field ("offers outdoor seating" vs OutdoorSeating false)."""

    field: Field
    claim_says: bool

    @property
    def empty(self) -> bool:
        """The field is null: the record says nothing about it, so the claim is baseless, not opposite."""
        return self.field.value is None

    def describe(self) -> str:
        name = ".".join(self.field.path)
        if self.empty:
            return f"the record leaves {name} empty, but the claim states it"
        said = "says it does" if self.claim_says else "says it does not"
        return f"the record has {name} = {self.field.value!r}, but the claim {said}"


# Spellings of one word that the token pattern would cut in two ("Wi-Fi" is the record's "WiFi").
_GLUED_SPELLINGS = re.compile(r"\b(wi)[\s-](fi)\b|\b(take)[\s-](out)\b")


def _tokens(text: str) -> list[str]:
    glued = _GLUED_SPELLINGS.sub(lambda m: "".join(g for g in m.groups() if g), text.lower())
    return [w.replace("’", "'") for w in _CLAIM_TOKEN_RE.findall(glued)]


@lru_cache(maxsize=4096)
def _field_terms(path: tuple[str, ...]) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    """(the ways a claim can name the leaf key, the stems naming its container), both stemmed."""
    from stream_guard.text.words import stem

    leaf = [w for w in key_words(path[-1]) if w not in _GENERIC_KEY_WORDS]
    if not leaf:
        return (), frozenset()
    ways = [frozenset(stem(w) for w in leaf)]
    if len(leaf) > 1:
        ways.append(frozenset({stem("".join(leaf))}))
    parent: set[str] = set()
    for key in path[:-1]:
        for w in key_words(key):
            if w not in _GENERIC_KEY_WORDS:
                s = stem(w)
                parent.add(s)
                parent |= _PARENT_SYNONYMS.get(s, frozenset())
    return tuple(ways), frozenset(parent)


_MENTION_SPREAD = 3  # the words of a multi-word key ("outdoor seating") stand within this many tokens


def _mention(stems: list[str], way: frozenset[str]) -> tuple[int, int] | None:
    """The first place where every stem of `way` occurs close together, as (first, last) token index."""
    positions = [i for i, s in enumerate(stems) if s in way]
    for start in positions:
        window = [i for i in positions if start <= i <= start + _MENTION_SPREAD * (len(way) - 1)]
        if {stems[i] for i in window} == way:
            return start, max(window)
    return None


def _negated(tokens: list[str], span: tuple[int, int]) -> bool:
    """A negator before the mention in the same clause ("does not offer WiFi, outdoor seating, or
    reservations": list commas do not end it), or a predicate negation right after it, before any comma
    ("takeout is not available"; but "lot parking with no valet" negates the valet, not the lot)."""
    words = 0
    before = tokens[: span[0]]
    for k in range(len(before) - 1, -1, -1):
        tok = before[k]
        if tok in _CLAUSE_BREAKS:
            break
        if tok == ",":
            # A comma before a new clause ends the negation's reach; one between list items does not.
            if k + 1 < len(before) and before[k + 1] in _CLAUSE_STARTS:
                break
            continue
        if tok in _NEGATION_WORDS or tok.endswith("n't"):
            return True
        words += 1
        if words >= _NEGATION_BEFORE:
            break
    for tok in tokens[span[1] + 1 : span[1] + 1 + _NEGATION_AFTER]:
        if tok == "," or tok in _CLAUSE_BREAKS:
            break
        if tok in _PREDICATE_NEGATIONS or tok.endswith("n't"):
            return True
    return False


def field_conflicts(claim: str, records: tuple[Record | None, ...]) -> list[FieldConflict]:
    """Yes-no fields the claim names with the opposite polarity. Nested fields ("Ambience": {"casual": ...},
    "BusinessParking": {"street": ...}) count only when the claim also names their container, so "a lot of"
    never reads as the parking lot."""
    from stream_guard.text.words import stem  # the stemmer every check shares

    tokens = _tokens(claim)
    stems = [stem(t) if t != "," else t for t in tokens]
    present = frozenset(stems)
    out: list[FieldConflict] = []
    for record in records:
        if record is None:
            continue
        for field in record.yes_no:
            truth = field.truth
            ways, parent = _field_terms(field.path)
            if not ways or not any(way <= present for way in ways):
                continue
            if parent and len(field.path) > 1 and _nested(field.path) and not parent & present:
                continue
            for way in ways:
                span = _mention(stems, way) if way <= present else None
                if span is None:
                    continue
                if record.mentioned_in_prose(way | (parent & present)):
                    break  # a review saying "we parked in the lot" grounds the claim whatever the field says
                says = not _negated(tokens, span)
                if (truth is None and says) or (truth is not None and says != truth):
                    out.append(FieldConflict(field, says))
                break
    return out


def _nested(path: tuple[str, ...]) -> bool:
    """Whether the leaf sits in a container that is itself a property (not just "attributes")."""
    return any(w not in _GENERIC_KEY_WORDS for key in path[:-1] for w in key_words(key))


# Words that name what a field of a business-style record is about rather than its value: "customers
# praised ..." describes the reviews, "located" the address, "operates" the hours. A claim may use them
# freely; they neither ground nor unground it. Keyed by a stem of the record's own key words.
_SCHEMA_VOCABULARY: dict[str, str] = {
    "review": "review reviewer reviewers customer customers patron patrons visitor visitors diner diners guest "
    "guests feedback mention mentioned mentions mentioning note noted noting praise praised praising express "
    "expressed expressing highlight highlighted highlighting describe described comment commented complain "
    "complained complaint complaints report reported share shared appreciate appreciated appreciation enjoy "
    "enjoyed recommend recommended experience experiences positive negative mixed found left others another "
    "one some many several indicate indicates indicating suggest suggests reflect reflected divided vary varies "
    "cite cites citing",
    "star": "rating ratings rated rate star stars average overall score receive receives received hold holds "
    "maintain maintains earn earned",
    "address": "located location situated local area based address",
    "city": "located location situated local area based city",
    "hour": "open opens operate operates operating close closes closed hours hour schedule daily weekday weekdays "
    "weekend weekends week time times",
    "categori": "offer offers offering serve serves serving specialize specializes cuisine dishes dish food menu listed "
    "option options variety range type known",
    "attribut": "offer offers offering provide provides providing feature features available availability amenity "
    "amenities option options service services accommodate accommodates cater caters",
    "name": "establishment business place",
}


@lru_cache(maxsize=_RECORD_CACHE)
def _schema_stems(keys: frozenset[str]) -> frozenset[str]:
    from stream_guard.text.words import stem

    out: set[str] = set()
    for key, words in _SCHEMA_VOCABULARY.items():
        if key in keys:
            out.update(stem(w) for w in words.split())
    return frozenset(out)


def schema_stems(records: tuple[Record | None, ...]) -> frozenset[str]:
    """Stems a claim about these records may use without them counting as grounded or missing."""
    from stream_guard.text.words import stem

    keys = frozenset(stem(w) for r in records if r is not None for f in r.fields for k in f.path for w in key_words(k))
    return _schema_stems(keys)


def claim_times(claim: str) -> list[int]:
    """Clock times a claim states, in minutes after midnight: "4 PM" -> 960, "9 or 10 pm" -> 1260, 1320."""
    out: list[int] = []
    for m in _TIME_RE.finditer(claim):
        if m.group(8):
            word = m.group(8).lower()
            out.append(0 if word == "midnight" else 720)
            continue
        if m.group(6) is not None:
            out.append(int(m.group(6)) * 60 + int(m.group(7)))
            continue
        pm = m.group(5).lower() == "p"
        for hour, minute in ((m.group(1), m.group(2)), (m.group(3), m.group(4))):
            if hour is None:
                continue
            h = int(hour) % 12 + (12 if pm else 0)
            if h > 24:
                continue
            out.append(h * 60 + int(minute or 0))
    return out


_DAY_NAME = r"(mon|tues|wednes|thurs|fri|satur|sun)days?"
_DAY_ABBR = r"(mon|tue|wed|thu|fri|sat|sun)\.?"
_DAY_RE = re.compile(
    rf"\b{_DAY_NAME}\b(?:\s*(?:-|–|to|through|thru|until)\s*\b{_DAY_NAME}\b)?"
    rf"|\b{_DAY_ABBR}\s*[-–]\s*{_DAY_ABBR}(?!\w)"
    r"|\b(every\s+day|daily|seven\s+days|7\s+days|weekdays|weekends?)\b",
    re.IGNORECASE,
)
_CLOSED_RE = re.compile(r"\bclosed?\b|\bnot\s+open\b|\bexcept\b", re.IGNORECASE)
_SPAN_DAYS = {"every day": _DAYS, "daily": _DAYS, "seven days": _DAYS, "7 days": _DAYS,
              "weekdays": _DAYS[:5], "weekend": _DAYS[5:], "weekends": _DAYS[5:]}


def _day(prefix: str) -> str:
    return next(d for d in _DAYS if d.startswith(prefix.lower()[:3]))


def claim_days(claim: str) -> set[str]:
    """Days of the week a claim says something happens on: named, in a range ("Monday to Friday",
    wrapping past Sunday), or as "daily", "seven days", "weekdays", "weekends"."""
    out: set[str] = set()
    for m in _DAY_RE.finditer(claim):
        if m.group(5):
            out.update(_SPAN_DAYS[" ".join(m.group(5).lower().split())])
            continue
        start, end = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        first = _DAYS.index(_day(start))
        if end is None:
            out.add(_DAYS[first])
            continue
        last = _DAYS.index(_day(end))
        k = first
        while True:
            out.add(_DAYS[k])
            if k == last:
                break
            k = (k + 1) % 7
    return out


# Amenities a business record lists as attributes, and the words a claim names them with. A claim naming
# one that the record has no field for, and that no review text mentions, states what the record does not
# say: RAGTruth's annotators mark "offers free Wi-Fi" and "does not take reservations" alike as baseless
# then. Each entry: the stems that name it in a claim (any one of the word groups), and the stems of record
# keys that would hold it. Tuned on Yelp-style records (RAGTruth data-to-text), like _SCHEMA_VOCABULARY.
_AMENITIES: tuple[tuple[str, str], ...] = (
    ("wifi|internet", "wifi internet"),
    ("outdoor|patio", "outdoor"),
    ("reservation|reservations", "reservations"),
    ("delivery|deliveries|delivers", "delivery"),
    ("takeout|to-go", "takeout take out"),
    ("catering", "caters catering"),
    ("credit card|cash only|accepts cash", "credit"),
    ("parking|valet|garage", "parking"),
    ("tv|tvs|television", "tv"),
    ("happy hour", "happy"),
    ("live music|dj", "music"),
    ("kids|children|family-friendly", "kids"),
    ("wheelchair", "wheelchair"),
    ("dogs|pets", "dogs"),
    ("vegetarian|vegan|gluten", "vegetarian vegan gluten dietary"),
    ("drive-thru|drive-through|drive thru", "drive"),
    ("full bar|alcohol|cocktails", "alcohol"),
    ("noise level|noisy|quiet", "noise"),
)


@lru_cache(maxsize=1)
def _amenity_terms() -> tuple[tuple[tuple[tuple[str, ...], ...], frozenset[str]], ...]:
    from stream_guard.text.words import stem

    out = []
    for names, keys in _AMENITIES:
        ways = tuple(tuple(_tokens(name)) for name in names.split("|"))
        out.append((ways, frozenset(stem(k) for k in keys.split())))
    return tuple(out)


def unstated_fields(claim: str, records: tuple[Record | None, ...]) -> list[str]:
    """Amenities the claim names (offered or not) that a record listing yes-no attributes has no field for
    and no review text mentions. [] unless some record has yes-no fields (the kind that lists amenities)."""
    listing = [r for r in records if r is not None and r.yes_no]
    if not listing:
        return []
    from stream_guard.text.words import stem

    tokens = [t for t in _tokens(claim) if t != ","]
    present = frozenset(tokens)
    keys = frozenset().union(*(r.key_stems for r in listing))
    out: list[str] = []
    for ways, key_stems in _amenity_terms():
        named = next((way for way in ways if set(way) <= present and _in_order(tokens, way)), None)
        if named is None or key_stems & keys:
            continue
        # Named anywhere in the record (a category "Gluten-Free", "Caterers") or in a review: stated.
        named_stems = frozenset(stem(w) for w in named)
        if any(r.mentioned_in_prose(named_stems) or named_stems <= r.value_stems for r in listing):
            continue
        out.append(" ".join(named))
    return out


def _in_order(stems: list[str], way: tuple[str, ...]) -> bool:
    """Whether the words of `way` occur one right after another ("happy hour", not "happy ... hour")."""
    if len(way) == 1:
        return True
    n = len(way)
    return any(tuple(stems[i : i + n]) == way for i in range(len(stems) - n + 1))


def day_conflicts(claim: str, records: tuple[Record | None, ...]) -> list[str]:
    """Days the claim has the business open on that have no opening hours in the records. A claim about
    closing ("closed on Mondays", "except Sunday") is left alone."""
    known = frozenset().union(*(r.open_days for r in records if r is not None)) if records else frozenset()
    if not known or _CLOSED_RE.search(claim):
        return []
    return sorted(claim_days(claim) - known, key=_DAYS.index)


def time_conflicts(claim: str, records: tuple[Record | None, ...]) -> list[int]:
    """Times the claim states that the records' hours do not have (open or close); [] without hours.

    A time is compared with the hours of the days it is said of, where the claim names them in the same
    part ("open Tuesday to Thursday from 11 am to 9 pm": wrong when none of those days opens or closes at
    either time), else with every opening and closing time of the week. Wrong for one of the days named is
    not enough: "4 pm to 9 pm every day" is how a faithful answer sums up a week that closes at 10 pm on
    Fridays, and RAGTruth's annotators accept it."""
    known = frozenset().union(*(r.times for r in records if r is not None)) if records else frozenset()
    if not known:
        return []
    per_day = _day_times(records)
    out: list[int] = []
    for times, days in _scheduled_parts(claim):
        for t in times:
            if not _time_known(t, known):
                out.append(t)
            elif days and not any(_time_known(t, per_day[d]) for d in days if d in per_day) and days & per_day.keys():
                out.append(t)
    return list(dict.fromkeys(out))


def _time_known(t: int, known: frozenset[int]) -> bool:
    # Midnight is written 0:00 and 24:00.
    return t in known or (t in (0, 1440) and bool(known & {0, 1440}))


def _day_times(records: tuple[Record | None, ...]) -> dict[str, frozenset[int]]:
    out: dict[str, frozenset[int]] = {}
    for record in records:
        if record is not None:
            for day, times in record.day_times:
                out[day] = out.get(day, frozenset()) | times
    return out


# Where one statement of hours ends and the next begins: "4 pm to 10 pm Monday to Saturday, and 11 am to
# 10 pm on Sunday".
_SCHEDULE_BREAK_RE = re.compile(r"[;,]|\band\b|\bwhile\b|\bbut\b|\bwith\b", re.IGNORECASE)


def _scheduled_parts(claim: str) -> list[tuple[list[int], set[str]]]:
    """(times, days they are said of) for each part of the claim that states times. A part naming days but
    no times takes the times of the part before ("11 am to 9 pm from Tuesday to Thursday and Friday to
    Sunday"), and one naming times but no days the days of the part before; a part about closing or an
    exception ("closed on Monday", "except Friday") is left out, and its days taken from the others."""
    parts: list[tuple[list[int], set[str]]] = []
    excepted: set[str] = set()
    last_times: list[int] = []
    last_days: set[str] = set()
    for piece in _SCHEDULE_BREAK_RE.split(claim):
        if _CLOSED_RE.search(piece):
            excepted |= claim_days(piece)
            last_times, last_days = [], set()
            continue
        times, days = claim_times(piece), claim_days(piece)
        if not times and not days:
            continue
        if times and days:
            parts.append((times, days))
        elif times:
            parts.append((times, set(last_days)))
        elif last_times:
            parts.append((list(last_times), days))
        last_times, last_days = times or last_times, days or last_days
    return [(times, days - excepted) for times, days in parts]


# ── a record in sentences (for repairs) ───────────────────────────────────────────────────────────────

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
