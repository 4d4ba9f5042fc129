"""Answer fingerprints for drift detection: what an answer asserts, without keeping what it says.

A fingerprint holds only the features that move when an answer's substance changes: the numbers it states
(normalised, so "$1,200" and "1200" agree), up to 20 key content stems, its overall polarity and a coarse
length bucket. The full text is never stored, which keeps the history table small and free of user data.

`distance` compares two fingerprints in [0, 1]. The weights say what a change is worth:

=============  ======  ==============================================================================
component      weight  why
=============  ======  ==============================================================================
numbers        0.40    a changed price, limit or duration is the drift that costs money: when an answer
                       states one figure, swapping it crosses the 0.35 default threshold on its own
key stems      0.30    what the answer talks about; paraphrase moves it a little, a new topic a lot
polarity       0.20    "is supported" becoming "is not supported" is a real change with few words
length bucket  0.10    a much shorter or longer answer is a weak hint, never enough on its own
=============  ======  ==============================================================================

When neither answer states a number, the number component carries no evidence and is left out; the other
weights are rescaled so that two number-free answers can still be identical (distance 0) or opposite.
"""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from stream_guard.text.analysis import BoundedLRU
from stream_guard.text.short_text_cache import cached_when_short
from stream_guard.text.words import DIGIT_RE, NEGATORS, content_of, content_words, stem, words

if TYPE_CHECKING:
    from stream_guard.text.inspection import Inspection

# One answer's fingerprint as drift history keeps it: a JSON-ready mapping (the history stores never look inside).
Fingerprint = Mapping[str, Any]

FINGERPRINT_VERSION = 1
MAX_KEY_STEMS = 20

WEIGHT_NUMBERS = 0.40
WEIGHT_STEMS = 0.30
WEIGHT_POLARITY = 0.20
WEIGHT_LENGTH = 0.10

POSITIVE, NEGATIVE, NEUTRAL = "positive", "negative", "neutral"

# A number not glued to letters on its left (SKU-441, A100, v2 are labels, not values), with optional
# thousands separators, decimals, a percent sign or a k/m/bn multiplier. "5-7" yields 5 and 7.
_NUMBER_RE = re.compile(
    r"(?<![A-Za-z0-9.,])(?<![A-Za-z][-_/:])"
    r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
    r"(?:\s?(%|percent\b)|(k|m|bn|b)\b)?",
    re.IGNORECASE,
)
_MULTIPLIERS = {"k": Decimal(1_000), "m": Decimal(1_000_000), "b": Decimal(1_000_000_000), "bn": Decimal(1_000_000_000)}

# "one" is left out on purpose: it is far more often a pronoun ("the one you bought") than a quantity.
_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
}

_POSITIVE_WORDS = frozenset(
    "yes can available supported supports support allowed allows permitted included includes free enabled "
    "eligible valid approved active accepted accepts guaranteed refundable possible".split()
)
_NEGATIVE_WORDS = NEGATORS | frozenset(
    "unavailable unsupported prohibited forbidden disabled ineligible invalid denied rejected excluded "
    "impossible nonrefundable non-refundable unable".split()
)




def _canonical(value: Decimal) -> str:
    """Shortest plain decimal form: 14.0 -> "14", 49.990 -> "49.99", 1E+3 -> "1000"."""
    if value == value.to_integral_value():
        return str(value.to_integral_value())
    return format(value.normalize(), "f")


def extract_numbers(text: str) -> list[str]:
    """Normalised numbers stated in `text`, in order of first appearance, without duplicates."""
    return list(dict.fromkeys(_numbers(text, words(text))))


def _numbers(text: str, tokens: list[str]) -> list[str]:
    """The numbers of `text` whose `words` are `tokens`, with repeats: figures first, then number words."""
    found: list[str] = []
    for match in _NUMBER_RE.finditer(text):
        digits, decimals, percent, multiplier = match.groups()
        try:
            value = Decimal(digits.replace(",", "") + (decimals or ""))
        except InvalidOperation:  # pragma: no cover - the regex only admits digits
            continue
        if multiplier:
            value *= _MULTIPLIERS[multiplier.lower()]
        found.append(_canonical(value) + ("%" if percent else ""))
    found += [str(_NUMBER_WORDS[word]) for word in tokens if word in _NUMBER_WORDS]
    return found


def key_stems(text: str, limit: int = MAX_KEY_STEMS) -> list[str]:
    """The `limit` most frequent content stems (ties: first seen first); numbers are tracked separately."""
    return _key_stems(content_words(text), limit)


def _key_stems(content: list[str], limit: int) -> list[str]:
    counts = Counter(
        stem(w) for w in content if len(w) > 2 and not DIGIT_RE.search(w) and w not in _NUMBER_WORDS
    )
    # A Counter keeps first-insertion order and most_common's sort is stable: ties stay first seen first.
    return [s for s, _ in counts.most_common(limit)]


def polarity(text: str) -> str:
    return _polarity(words(text))


def _polarity(tokens: list[str]) -> str:
    positive = sum(map(_POSITIVE_WORDS.__contains__, tokens))
    negative = sum(map(_NEGATIVE_WORDS.__contains__, tokens))
    if positive > negative:
        return POSITIVE
    if negative > positive:
        return NEGATIVE
    return NEUTRAL


def fingerprint(answer: str) -> dict[str, Any]:
    """JSON-ready features of `answer`; never contains the answer text itself. A fresh dict each call."""
    numbers, stems, tone, length = _read(answer or "")
    return {"v": FINGERPRINT_VERSION, "numbers": list(numbers), "key_words": list(stems), "polarity": tone,
            "length_bucket": length}


# A help desk delivers the same answer again and again (and a repair built from the same chunks), so what a short
# answer asserts is read once per process while recent: at most 4,096 answers of up to 1,024 characters.
@cached_when_short(1024, 4096)
def _read(answer: str) -> tuple[tuple[str, ...], tuple[str, ...], str, int]:
    tokens = words(answer)  # tokenised once for the three readers (each tokenising on its own was half of this)
    numbers = tuple(sorted(set(_numbers(answer, tokens))))
    return numbers, tuple(_key_stems(content_of(tokens), MAX_KEY_STEMS)), _polarity(tokens), len(answer) // 100


def event_fingerprint(inspection: Inspection, answer: str) -> dict[str, Any]:
    """`fingerprint(answer)` once per event: drift reads the answer's fingerprint and the history record of the
    delivered answer is the same one (kept by `inspection.once`, shared by the event's re-inspections).
    Read-only: callers copy before adding to it."""
    return inspection.once(("fingerprint", answer), lambda: fingerprint(answer))


def _jaccard_distance(a: frozenset[str], b: frozenset[str]) -> float:
    """1 - |a & b| / |a | b|, 0 for two empty sets; the union's size is the two sizes less the shared ones (the
    same integers, so the same float), without building the union."""
    if not a or not b:
        return 1.0 if a or b else 0.0
    shared = len(a & b)
    return 1.0 - shared / (len(a) + len(b) - shared)


def _as_set(fp: Mapping[str, Any], key: str) -> frozenset[str]:
    return frozenset(map(str, fp.get(key) or ()))


class Features(NamedTuple):
    """A fingerprint as `distance` compares it. A stored fingerprint is a JSON object; drift compares each
    one with a dozen others, so it is converted once (`features`) rather than on every comparison."""

    numbers: frozenset[str]
    key_words: frozenset[str]
    polarity: str
    length_bucket: int


def features(fp: Mapping[str, Any]) -> Features:
    return Features(_as_set(fp, "numbers"), _as_set(fp, "key_words"), str(fp.get("polarity", NEUTRAL)),
                    int(fp.get("length_bucket", 0)))


# A question's history is the same fingerprint objects from one event to the next (a store hands back what it
# holds; `check` and a judge keep the lists a batch returned), and drift compared each of them again on every
# event (about ten conversions per event). Kept by identity, each with its fingerprint, so that an id is never
# read for another object; history fingerprints are read-only (stores copy what they append).
_RECORDED: BoundedLRU[int, tuple[Fingerprint, Features]] = BoundedLRU(4096, 4096)


def recorded_features(fp: Fingerprint) -> Features:
    """`features(fp)` of a history fingerprint, converted once while it stays in recent histories."""
    kept = _RECORDED.get(id(fp))
    if kept is not None and kept[0] is fp:
        return kept[1]
    found = features(fp)
    _RECORDED.put(id(fp), (fp, found), 1)
    return found


# The weights summed as `features_distance` sums the weighted parts (with sum(), in the same order), so that the
# distance is the same float whatever the Python version's float summation.
_WEIGHT_WITHOUT_NUMBERS = sum((WEIGHT_STEMS, WEIGHT_POLARITY, WEIGHT_LENGTH))
_WEIGHT_WITH_NUMBERS = sum((WEIGHT_STEMS, WEIGHT_POLARITY, WEIGHT_LENGTH, WEIGHT_NUMBERS))


def features_distance(a: Features, b: Features) -> float:
    """`distance`, on converted fingerprints. Drift calls it a dozen times per event: no per-call lists, and
    the polarity and length parts computed in line."""
    stems = WEIGHT_STEMS * _jaccard_distance(a.key_words, b.key_words)
    # A full flip (positive <-> negative) is the real change; gaining or losing a polar word is half of one.
    tone, other = a.polarity, b.polarity
    polar = WEIGHT_POLARITY * (0.0 if tone == other else 0.5 if NEUTRAL in (tone, other) else 1.0)
    # One bucket (100 characters) of difference is ordinary variation; three or more is a different answer.
    length = WEIGHT_LENGTH * min(abs(a.length_bucket - b.length_bucket) / 3.0, 1.0)
    if a.numbers or b.numbers:
        value = sum((stems, polar, length, WEIGHT_NUMBERS * _jaccard_distance(a.numbers, b.numbers)))
        value /= _WEIGHT_WITH_NUMBERS
    else:
        value = sum((stems, polar, length)) / _WEIGHT_WITHOUT_NUMBERS
    return min(max(value, 0.0), 1.0)


def distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Weighted distance between two fingerprints in [0, 1]; 0 means "asserts the same thing"."""
    return features_distance(features(a), features(b))


def similarity(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    return 1.0 - distance(a, b)
