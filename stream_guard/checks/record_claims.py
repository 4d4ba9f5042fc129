"""Claims against a structured record's fields (text/records.py reads the record): a yes-no field a claim says the
opposite of, times and days its opening hours do not have, amenities it names that the record has no field for,
and the words that name a record's shape rather than a property. The faithfulness check counts these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from stream_guard.text.records import _DAYS, _RECORD_CACHE, Field, Record, clock24, key_words
from stream_guard.text.schedule import CLOSED_RE, days_named, schedule_parts
from stream_guard.text.words import close_compounds, stem

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


# Other names of a key word, as claims write them: "kid-friendly" / "good for children" is GoodForKids, "a patio" is
# OutdoorSeating, "a full bar" or "beer and wine" is Alcohol. Keyed by a word of the key (text/records.key_words),
# each name a phrase whose words stand close together in the claim. A name stands for the key whatever the field's
# container, so it is read under the same rules as the key's own words (a nested field still needs its container).
_KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "kids": ("child", "children", "family friendly"),
    "tv": ("tvs", "television", "televisions"),
    "dogs": ("pet", "pets"),
    "outdoor": ("patio", "outside seating", "al fresco"),
    "take": ("takeaway",),
    "delivery": ("deliver", "delivers"),
    "alcohol": ("full bar", "beer", "wine", "cocktails", "alcoholic"),
    "wifi": ("internet",),
    "bike": ("bicycle", "bicycles"),
    "ambience": ("ambiance",),
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


# A claim is tokenised by field_conflicts and again by unstated_fields: once while recent.
@lru_cache(maxsize=1024)
def _tokens(text: str) -> tuple[str, ...]:
    # Spellings of one word that the token pattern would cut in two ("Wi-Fi" is the record's "WiFi").
    glued = close_compounds(text.lower())
    return tuple(w.replace("’", "'") for w in _CLAIM_TOKEN_RE.findall(glued))


@lru_cache(maxsize=4096)
def _field_terms(path: tuple[str, ...]) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    """(the ways a claim can name the leaf key, the stems naming its container), both stemmed."""

    leaf = [w for w in key_words(path[-1]) if w not in _GENERIC_KEY_WORDS]
    if not leaf:
        return (), frozenset()
    ways = [frozenset(stem(w) for w in leaf)]
    if len(leaf) > 1:
        ways.append(frozenset({stem("".join(leaf))}))
    for word in leaf:
        ways += [frozenset(stem(w) for w in alias.split()) for alias in _KEY_ALIASES.get(word, ())]
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


def _negated(tokens: tuple[str, ...], span: tuple[int, int]) -> bool:
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

    tokens = _tokens(claim)
    stems = [stem(t) if t != "," else t for t in tokens]
    present = frozenset(stems)
    out: list[FieldConflict] = []
    for record in records:
        if record is None:
            continue
        index = _yes_no_index(record)
        # Only the fields some stem of the claim can name, in the record's order (the order of the findings).
        named = sorted({i for s in present & index.by_stem.keys() for i in index.by_stem[s]})
        for i in named:
            field, truth, ways, parent, nested = index.fields[i]
            if not any(way <= present for way in ways):
                continue
            if nested and not parent & present:
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


@dataclass(frozen=True)
class _YesNoIndex:
    """A record's yes-no fields read once: (field, truth, ways a claim names it, its container's stems, whether
    the container must be named too) for each field a claim can name, and which of them each stem can name."""

    fields: tuple[tuple[Field, bool | None, tuple[frozenset[str], ...], frozenset[str], bool], ...]
    by_stem: dict[str, tuple[int, ...]]


# Every claim of a data-to-text answer is compared with the same record (read_record keeps one Record per
# chunk text): its index is built once, keyed by the record's identity (the entry holds the record, so the id
# cannot be reused while the entry lives), bounded like the record cache.
_INDEXES: dict[int, tuple[Record, _YesNoIndex]] = {}


def _yes_no_index(record: Record) -> _YesNoIndex:
    hit = _INDEXES.get(id(record))
    if hit is not None and hit[0] is record:
        return hit[1]
    fields = []
    by_stem: dict[str, list[int]] = {}
    for field in record.yes_no:
        ways, parent = _field_terms(field.path)
        if not ways:
            continue
        for s in frozenset().union(*ways):
            by_stem.setdefault(s, []).append(len(fields))
        nested = bool(parent) and len(field.path) > 1 and _nested(field.path)
        fields.append((field, field.truth, ways, parent, nested))
    index = _YesNoIndex(tuple(fields), {s: tuple(i) for s, i in by_stem.items()})
    if len(_INDEXES) >= _RECORD_CACHE:
        _INDEXES.pop(next(iter(_INDEXES)))
    _INDEXES[id(record)] = (record, index)
    return index


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

    out: set[str] = set()
    for key, words in _SCHEMA_VOCABULARY.items():
        if key in keys:
            out.update(stem(w) for w in words.split())
    return frozenset(out)


def schema_stems(records: tuple[Record | None, ...]) -> frozenset[str]:
    """Stems a claim about these records may use without them counting as grounded or missing."""

    keys = frozenset(stem(w) for r in records if r is not None for f in r.fields for k in f.path for w in key_words(k))
    return _schema_stems(keys)




# Amenities a business record lists as attributes, and the words a claim names them with. A claim naming
# one that the record has no field for, and that no review text mentions, states what the record does not
# say: RAGTruth's annotators mark "offers free Wi-Fi" and "does not take reservations" alike as baseless
# then. Each entry: the names a claim gives it ("|" between names, "/" between forms of one name: a review using
# another form states what the claim names, "she had to deliver the cakes" its delivery), and the stems of record
# keys that would hold it. Tuned on Yelp-style records (RAGTruth data-to-text), like _SCHEMA_VOCABULARY.
_AMENITIES: tuple[tuple[str, str], ...] = (
    ("wifi|internet", "wifi internet"),
    ("outdoor|patio", "outdoor"),
    ("reservation|reservations", "reservations"),
    ("delivery/deliveries/delivers", "delivery"),
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


@dataclass(frozen=True)
class _Name:
    """One name of an amenity, in each of its forms ("delivery", "delivers"): token sequences and their stems."""

    forms: tuple[tuple[str, ...], ...]
    stems: tuple[frozenset[str], ...]


@lru_cache(maxsize=1)
def _amenity_terms() -> tuple[tuple[tuple[_Name, ...], frozenset[str]], ...]:
    out = []
    for names, keys in _AMENITIES:
        named = []
        for name in names.split("|"):
            forms = tuple(tuple(_tokens(form)) for form in name.split("/"))
            named.append(_Name(forms, tuple(frozenset(stem(w) for w in form) for form in forms)))
        out.append((tuple(named), frozenset(stem(k) for k in keys.split())))
    return tuple(out)


# A name followed by this word is a verb with its object, not the amenity: "catering to families" serves them (the
# verb "cater to"); the catering service is the noun.
_VERB_READINGS: dict[tuple[str, ...], str] = {("catering",): "to"}


def _first_named(
    names: tuple[_Name, ...], forms: list[frozenset[str]], present: frozenset[str]
) -> tuple[_Name, int, int] | None:
    """(the name, where it starts, how many tokens it takes) for the first of `names` the claim uses (its tokens read
    in any of their `forms`, `present` their union), or None."""
    for name in names:
        for form in name.forms:
            if not set(form) <= present:
                continue
            verb_object = _VERB_READINGS.get(form)
            for at in _occurrences(forms, form):
                after = at + len(form)
                if verb_object is None or after >= len(forms) or verb_object not in forms[after]:
                    return name, at, len(form)
    return None


def unstated_fields(claim: str, records: tuple[Record | None, ...]) -> list[str]:
    """Amenities the claim names (offered or not) that a record listing yes-no attributes has no field for
    and no review text mentions. [] unless some record has yes-no fields (the kind that lists amenities)."""
    listing = [r for r in records if r is not None and r.yes_no]
    if not listing:
        return []

    tokens = [t for t in _tokens(claim) if t != ","]
    forms = [_singulars(t) for t in tokens]
    present = frozenset().union(*forms)
    keys = frozenset().union(*(r.key_stems for r in listing))
    out: list[str] = []
    for names, key_stems in _amenity_terms():
        if key_stems & keys:
            continue
        found = _first_named(names, forms, present)
        if found is None:
            continue
        name, at, length = found
        # Named anywhere in the record (a category "Gluten-Free", "Caterers") or in a review, in any form: stated.
        if any(r.mentioned_in_prose(stems) or stems <= r.value_stems for r in listing for stems in name.stems):
            continue
        out.append(" ".join(tokens[at : at + length]))  # as the claim writes it ("credit cards")
    return out


def _singulars(token: str) -> frozenset[str]:
    """The token and the singulars its plural ending can stand for: an amenity is named by its plural too ("accepts
    credit cards" names "credit card", "options for vegetarians" names "vegetarian")."""
    forms = {token}
    if len(token) > 3 and token.endswith("s"):
        forms.add(token[:-1])
        if len(token) > 4 and token.endswith("es"):
            forms.add(token[:-2])
    return frozenset(forms)


def _occurrences(forms: list[frozenset[str]], way: tuple[str, ...]) -> list[int]:
    """Where the words of `way` occur one right after another ("happy hour", not "happy ... hour"), each token read
    in any of its `forms`."""
    n = len(way)
    return [i for i in range(len(forms) - n + 1) if all(word in forms[i + j] for j, word in enumerate(way))]


def day_conflicts(claim: str, records: tuple[Record | None, ...]) -> list[str]:
    """Days the claim has the business open on that have no opening hours in the records. A claim about
    closing ("closed on Mondays", "except Sunday") is left alone."""
    known = frozenset().union(*(r.open_days for r in records if r is not None)) if records else frozenset()
    if not known or CLOSED_RE.search(claim):
        return []
    return sorted(days_named(claim) - known, key=_DAYS.index)


@dataclass(frozen=True)
class TimeConflict:
    """A time a claim states, as written, that the records' hours do not have, and the records' opening or
    closing time nearest to it: the value the claim most likely meant to restate."""

    written: str
    minutes: int
    nearest: int

    def describe(self) -> str:
        return (f"'{self.written}' ({clock24(self.minutes)}) matches no opening or closing time in the record, which "
                f"gives {clock24(self.nearest)} ('{written_like(self.written, self.nearest)}')")


def time_conflicts(claim: str, records: tuple[Record | None, ...]) -> list[TimeConflict]:
    """Times the claim states that the records' hours do not have (open or close), each as the claim writes it
    with the nearest time the records give (on the days the claim names, when it is wrong for those days); []
    without hours.

    A time is compared with the hours of the days it is said of, where the claim names them in the same
    part ("open Tuesday to Thursday from 11 am to 9 pm": wrong when none of those days opens or closes at
    either time), else with every opening and closing time of the week. Wrong for one of the days named is
    not enough: "4 pm to 9 pm every day" is how a faithful answer sums up a week that closes at 10 pm on
    Fridays, and RAGTruth's annotators accept it."""
    known = frozenset().union(*(r.times for r in records if r is not None)) if records else frozenset()
    if not known:
        return []
    per_day = _day_times(records)
    out: dict[int, TimeConflict] = {}
    for part in schedule_parts(claim):
        days = set(part.days)
        for t in part.times:
            if t.minutes in out:
                continue
            if not _time_known(t.minutes, known):
                out[t.minutes] = _conflict(t.text, t.minutes, known)
            elif days and days & per_day.keys() and not any(_time_known(t.minutes, per_day[d]) for d in days if d in per_day):
                on_those_days = frozenset().union(*(per_day[d] for d in days if d in per_day))
                out[t.minutes] = _conflict(t.text, t.minutes, on_those_days or known)
    return list(out.values())


def _conflict(written: str, minutes: int, known: frozenset[int]) -> TimeConflict:
    return TimeConflict(written, minutes, min(known, key=lambda k: (abs(k - minutes), k)) if known else minutes)


_MERIDIEM_RE = re.compile(r"\s?([ap])(\.?)([mM])\.?", re.IGNORECASE)


def written_like(example: str, minutes: int) -> str:
    """`minutes` as a clock time in the style of `example` ("7 PM" -> "5 PM", "9:00am" -> "11:00am", "16:00" ->
    "18:00"), so a finding names the record's value the way the answer writes its own."""
    m = _MERIDIEM_RE.search(example)
    if m is None:
        return clock24(minutes)
    hour, minute = divmod(minutes % 1440, 60)
    letter = ("p" if hour >= 12 else "a")
    letter = letter.upper() if m.group(1).isupper() else letter
    suffix = example[m.start():].replace(m.group(1), letter, 1)
    shown = f"{hour % 12 or 12}:{minute:02d}" if ":" in example or minute else f"{hour % 12 or 12}"
    return shown + suffix


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



