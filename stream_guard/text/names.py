"""Well-known equivalent names: one thing written two ways ("U.S." / "United States", "MA" / "Massachusetts",
"Rd" / "Road", "Q4" / "fourth quarter", "ET" / "Eastern Time", "USD" / "dollars"). A small fixed table of
how the language writes them, not learned from any data; names are folded first (lower case, accents and
dots dropped, as checks/entities.fold does), so "U.S." is "us"."""

from __future__ import annotations

import re
from functools import lru_cache

_STATES = {
    "al": "alabama", "ak": "alaska", "az": "arizona", "ar": "arkansas", "ca": "california", "co": "colorado",
    "ct": "connecticut", "de": "delaware", "fl": "florida", "ga": "georgia", "hi": "hawaii", "id": "idaho",
    "il": "illinois", "in": "indiana", "ia": "iowa", "ks": "kansas", "ky": "kentucky", "la": "louisiana",
    "me": "maine", "md": "maryland", "ma": "massachusetts", "mi": "michigan", "mn": "minnesota",
    "ms": "mississippi", "mo": "missouri", "mt": "montana", "ne": "nebraska", "nv": "nevada",
    "nh": "new hampshire", "nj": "new jersey", "nm": "new mexico", "ny": "new york", "nc": "north carolina",
    "nd": "north dakota", "oh": "ohio", "ok": "oklahoma", "or": "oregon", "pa": "pennsylvania",
    "ri": "rhode island", "sc": "south carolina", "sd": "south dakota", "tn": "tennessee", "tx": "texas",
    "ut": "utah", "vt": "vermont", "va": "virginia", "wa": "washington", "wv": "west virginia",
    "wi": "wisconsin", "wy": "wyoming", "dc": "district of columbia",
}  # fmt: skip

# Each group: forms of one name. The first is only a label; every form stands for every other.
_GROUPS: tuple[tuple[str, ...], ...] = (
    ("us", "usa", "united states", "united states of america", "america", "u s"),
    ("uk", "united kingdom", "britain", "great britain"),
    ("eu", "european union"),
    ("un", "united nations"),
    ("uae", "united arab emirates"),
    ("usd", "us dollar", "us dollars", "dollar", "dollars"),
    ("eur", "euro", "euros"),
    ("gbp", "pound sterling", "pounds sterling", "sterling"),
    ("jpy", "yen", "japanese yen"),
    ("q1", "first quarter", "1q"), ("q2", "second quarter", "2q"), ("q3", "third quarter", "3q"),
    ("q4", "fourth quarter", "4q"),
    ("et", "est", "edt", "eastern time", "eastern standard time", "eastern daylight time"),
    ("ct", "cst", "cdt", "central time", "central standard time"),
    ("mt", "mst", "mdt", "mountain time", "mountain standard time"),
    ("pt", "pst", "pdt", "pacific time", "pacific standard time", "pacific daylight time"),
    ("utc", "gmt", "coordinated universal time", "greenwich mean time"),
    *((abbr, name) for abbr, name in _STATES.items()),
)

# Words of street names and places, abbreviated either way ("1150 Coast Village Rd" / "Road").
_WORDS: tuple[tuple[str, ...], ...] = (
    ("rd", "road"), ("st", "street", "saint"), ("ave", "avenue", "av"), ("blvd", "boulevard"), ("dr", "drive"),
    ("ln", "lane"), ("hwy", "highway"), ("pl", "place"), ("ct", "court"), ("pkwy", "parkway"), ("sq", "square"),
    ("mt", "mount", "mountain"), ("ft", "fort"), ("ste", "suite"), ("apt", "apartment"), ("bldg", "building"),
    ("n", "north"), ("s", "south"), ("e", "east"), ("w", "west"), ("ne", "northeast"), ("nw", "northwest"),
    ("se", "southeast"), ("sw", "southwest"), ("univ", "university"), ("intl", "international"),
    ("corp", "corporation"), ("inc", "incorporated"), ("co", "company"), ("ltd", "limited"),
    ("dept", "department"), ("natl", "national"), ("assn", "association"), ("jr", "junior"), ("sr", "senior"),
)  # fmt: skip


def _index(groups: tuple[tuple[str, ...], ...]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for group in groups:
        for form in group:
            out.setdefault(form, [])
            out[form].extend(f for f in group if f != form and f not in out[form])
    return {k: tuple(v) for k, v in out.items()}


_NAME_FORMS = _index(_GROUPS)
_WORD_FORMS = _index(_WORDS)
# Variants tried per name: a name of many abbreviable words stays cheap.
MAX_VARIANTS = 16


@lru_cache(maxsize=8192)
def variants(folded: str) -> tuple[str, ...]:
    """Other ways of writing the folded name `folded` (words separated by single spaces): the whole name from
    the name table, then word by word from the word table ("coast village rd" -> "coast village road"). The
    name itself is not included."""
    out: list[str] = list(_NAME_FORMS.get(folded, ()))
    words = folded.split()
    for k, word in enumerate(words):
        for alternative in _WORD_FORMS.get(word, ()) + _NAME_FORMS.get(word, ()):
            variant = " ".join([*words[:k], alternative, *words[k + 1 :]])
            if variant not in out and variant != folded:
                out.append(variant)
            if len(out) >= MAX_VARIANTS:
                return tuple(out)
    return tuple(out)


def _is_abbreviation(form: str) -> bool:
    return " " not in form and len(form) <= 3


@lru_cache(maxsize=256)
def _phrase_re(form: str) -> re.Pattern[str]:
    # A name of several words, as whole words of lower-cased text.
    return re.compile(rf"\b{re.escape(form)}\b")


@lru_cache(maxsize=256)
def _capitals_re(form: str) -> re.Pattern[str]:
    # An abbreviation counts only in capitals, dotted or not ("US", "U.S."): "us" is a pronoun, "et" Latin.
    return re.compile(r"(?<![\w.])" + r"\.?".join(re.escape(c) for c in form.upper()) + r"\.?(?!\w)")


# Per group, per form: its words, whether it is an abbreviation, and how it is written in capitals ("US", "U.S").
_FORMS: tuple[tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...], bool, str, str], ...]], ...] = tuple(
    (group, tuple((form, tuple(form.split()), _is_abbreviation(form), form.upper(), ".".join(form.upper()))
                  for form in group))
    for group in _GROUPS
)


def stated_name_groups(text: str, words: frozenset[str]) -> tuple[tuple[str, ...], ...]:
    """The name groups (`_GROUPS`) that `text` writes in some form: an abbreviation in capitals, a one-word name
    among `words` (the text's lower-case words), a longer name as a phrase. A form is searched for only when
    its words are all among `words` and, for an abbreviation, its capitals occur in the text (C-level tests):
    a long text is scanned only for the few forms it may hold."""
    lower: str | None = None
    out = []
    for group, forms in _FORMS:
        for form, parts, abbreviation, upper, dotted in forms:
            if abbreviation:
                # "U.S." leaves the words "u" and "s"; "IN" the word "in" (a preposition, so the capitals decide)
                if (form not in words and form[0] not in words) or (upper not in text and dotted not in text):
                    continue
                found = _capitals_re(form).search(text) is not None
            elif not all(part in words for part in parts):
                continue
            elif len(parts) > 1:
                lower = text.lower() if lower is None else lower
                found = _phrase_re(form).search(lower) is not None
            else:
                found = True
            if found:
                out.append(group)
                break
    return tuple(out)


def equivalent_words(claim_lower: str, groups: tuple[tuple[str, ...], ...]) -> frozenset[str]:
    """Words of `claim_lower` that only write a name of `groups` another way: a one-word form ("uk", "britain"),
    or every word of a longer form the claim writes whole ("united kingdom")."""
    out: set[str] = set()
    for group in groups:
        for form in group:
            if " " not in form:
                out.add(form)
            elif _phrase_re(form).search(claim_lower):
                out.update(form.split())
    return frozenset(out)
