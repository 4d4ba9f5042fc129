"""Words shared by every check: tokens, Snowball stems, stop words and negators, overlap of stem sets.

Everything here is pure and cached where it pays; the checks call these thousands of times a second.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import snowballstemmer

from stream_guard.text import regex_cache
from stream_guard.text.short_text_cache import cached_when_short

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being below
    between both but by could did do does doing down during each either else ever few for from further had
    has have having he her here hers herself him himself his how however i if in into is it its itself just
    let me more most much must my myself neither nor of off on once only or other our ours ourselves out
    over own per same she should since so some such than that the their theirs them themselves then there
    these they this those though through thus to too under until up upon us very was we were what when where
    whether which while who whom whose why will with within without would yet you your yours yourself
    yourselves can may might shall one ones also etc via s t d ll m re ve
    """.split()
)


# A stop word contracted with its verb ("it's", "that's", "you're", "there'll") is still no content: "it is" is
# two stop words, so "it's" is none either (the tokenizer keeps the apostrophe, so the split halves "s", "re" above
# never meet these). Negated contractions ("don't") are negators, below.
STOP_WORDS = STOP_WORDS | frozenset(
    f"{word}'{ending}"
    for word, endings in {
        "it": "s ll d", "that": "s ll d", "there": "s re ll d", "here": "s", "what": "s re ll d", "who": "s re ll d ve",
        "where": "s", "when": "s", "how": "s", "let": "s", "i": "m ve ll d", "you": "re ve ll d",
        "we": "re ve ll d", "they": "re ve ll d", "he": "s ll d", "she": "s ll d",
    }.items()
    for ending in endings.split()
)


# Negators are not stop words for the checks that care about polarity; they are filtered
# from content words only, so "not" never counts as grounding evidence.
NEGATORS: frozenset[str] = frozenset(
    "not no never none nothing nobody neither nor cannot can't won't don't doesn't didn't isn't aren't "
    "wasn't weren't hasn't haven't hadn't shouldn't wouldn't couldn't mustn't without".split()
)


# A word is a run of Unicode letters and digits ("Zürich", "A380"), joined across apostrophes ("don't") and,
# between two digits, across a decimal point or a thousands separator, so a number stays one word ("3.5",
# "1,200"). Every alternative after the first run starts with a separator, so nothing is ever rescanned.
_WORD_RE = regex_cache.compile(r"[^\W_]+(?:['’][^\W_]+|(?<=\d)[.,](?=\d)[^\W_]+)*")
# The same words in lower-case ASCII text, where a letter or digit is [a-z0-9]: an ASCII class is tested
# without a Unicode category lookup per character (findall about 28% faster on the RAGTruth answers).
_ASCII_WORD_RE = regex_cache.compile(r"[a-z0-9]+(?:'[a-z0-9]+|(?<=\d)[.,](?=\d)[a-z0-9]+)*")


_THOUSANDS_RE = regex_cache.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")


_NUMBER_WORD_RE = regex_cache.compile(r"[\d.,]+")


_stemmer = snowballstemmer.stemmer("english")

# Plurals English forms by changing the vowel, which no suffix stemmer folds ("the two men" are "a 32-year-old
# man" and "a 26-year-old man"): each is stemmed as its singular.
_IRREGULAR_PLURALS = {
    "men": "man", "women": "woman", "children": "child", "feet": "foot", "teeth": "tooth", "mice": "mouse",
    "geese": "goose", "gentlemen": "gentleman", "businessmen": "businessman", "fishermen": "fisherman",
    "firemen": "fireman", "policemen": "policeman", "spokesmen": "spokesman", "congressmen": "congressman",
}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Snowball (Porter 2) stem of a lower-case word. A number is its own stem (Snowball leaves a word with
    no letters unchanged), returned without running the stemmer: a table of figures has thousands."""
    if word[:1].isdigit() and _NUMBER_WORD_RE.fullmatch(word):
        return word
    return _stemmer.stemWord(_IRREGULAR_PLURALS.get(word, word))


def words(text: str) -> list[str]:
    """Lower-case word tokens: Unicode letters and digits, apostrophes kept (folded to ASCII), numbers whole
    with thousands separators dropped ("1,200" -> "1200", "3.5" stays "3.5")."""
    if text.isascii():
        out = _ASCII_WORD_RE.findall(text.lower())
    else:
        text = unicodedata.normalize("NFC", text)  # "Zu\u0308rich" written with a combining mark is "Zürich"
        out = _WORD_RE.findall(text.lower())
    if "’" not in text and "," not in text:
        return out  # most texts: no word to fold or to join
    for i, word in enumerate(out):
        if "’" in word:
            out[i] = word = word.replace("’", "'")
        if "," in word and _THOUSANDS_RE.fullmatch(word):
            out[i] = word.replace(",", "")
    return out


# An answer's sentences and clauses are tokenised by several checks, by the claim reader and again when a repair
# is re-inspected (which keeps most of them): texts up to this length are tokenised and stemmed once per process
# (16,384 of them at most: a few MB), longer ones every time.
_MAX_CACHED_TEXT = 1024


def content_words(text: str) -> list[str]:
    """Words that carry meaning: not stop words, not negators, not bare one-letter tokens."""
    return list(_content_words(text))


# One set lookup per word, and a list built in C: 40% faster than a generator testing both sets.
_NOT_CONTENT = STOP_WORDS | NEGATORS


@cached_when_short(_MAX_CACHED_TEXT, 16384)
def _content_words(text: str) -> tuple[str, ...]:
    return tuple(content_of(words(text)))


def content_of(tokens: list[str]) -> list[str]:
    """The content words among `words(text)`: `content_words(text)` for a caller that has the words already."""
    return [w for w in tokens if w not in _NOT_CONTENT and (len(w) > 1 or w.isdigit())]


def content_stems(text: str) -> list[str]:
    return [stem(w) for w in content_words(text)]


# Words written closed, hyphenated or open ("takeout", "take-out", "take out"; "wifi", "wi-fi"; "checkout",
# "check out"). `words` reads the open and hyphenated forms as two words; `compound_stems` gives a source's closed
# forms, so a source that writes one spelling grounds an answer that writes another.
OPEN_COMPOUND_RE = regex_cache.compile(
    r"\b(take|carry|wi|check|drive|log|sign)[\s-]++(out|fi|thru|through|in|up)\b", re.IGNORECASE)
# The two parts of each compound. The pattern also matches pairs that are no compound ("sign in"), which both
# functions below leave as they are, so only a text holding both parts of some compound can change: the pattern
# (tried at every character, as it opens on a word boundary) runs only on those (words.may_match's reasoning for
# a text that is not ASCII).
_COMPOUND_PARTS = (("take", "out"), ("carry", "out"), ("wi", "fi"), ("check", "out"), ("check", "in"),
                   ("drive", "thru"), ("drive", "through"), ("log", "in"), ("sign", "up"))
_COMPOUNDS = frozenset(first + second for first, second in _COMPOUND_PARTS)


def may_hold_compound(text: str) -> bool:
    """False only when no match of OPEN_COMPOUND_RE in `text` is one of the compounds."""
    if not text.isascii():
        return True
    low = text.lower()
    for first, second in _COMPOUND_PARTS:  # a plain loop, as in mentions: this runs for every sentence
        if first in low and second in low:
            return True
    return False


def _closed(m: re.Match[str]) -> str:
    word = m.group(1).lower() + m.group(2).lower()
    return word if word in _COMPOUNDS else m.group()


def close_compounds(text: str) -> str:
    """`text` with the well-known compounds written closed ("take-out" -> "takeout")."""
    return OPEN_COMPOUND_RE.sub(_closed, text) if may_hold_compound(text) else text


def compound_stems(text: str) -> frozenset[str]:
    """Stems of the closed forms of the well-known compounds `text` writes open or hyphenated."""
    if not may_hold_compound(text):
        return frozenset()
    found = {m.group(1).lower() + m.group(2).lower() for m in OPEN_COMPOUND_RE.finditer(text)}
    return frozenset(stem(w) for w in found if w in _COMPOUNDS)


@cached_when_short(_MAX_CACHED_TEXT, 16384)
def stem_set(text: str) -> frozenset[str]:
    return frozenset(content_stems(text))


def overlap(needles: frozenset[str] | set[str], haystack: frozenset[str] | set[str]) -> float:
    """Fraction of `needles` found in `haystack`; 1.0 for no needles (nothing to ground)."""
    if not needles:
        return 1.0
    return len(needles & haystack) / len(needles)


# A digit anywhere (any script's, as `\d`): the gate many readers open with. It opens on a character set, so the
# regex engine skips straight to a digit rather than trying the pattern at every character.
DIGIT_RE = regex_cache.compile(r"\d")


def may_match(text: str, needles: tuple[str, ...]) -> bool:
    """False only when `text` is ASCII and holds none of the lower-case `needles` in any case: the gate in front
    of a pattern every match of which holds one of them. Text that is not ASCII always passes: under
    IGNORECASE a pattern's "s" or "k" also matches "ſ" or the Kelvin sign, which lower() keeps."""
    return not text.isascii() or mentions(text, needles)


def mentions(text: str, needles: tuple[str, ...]) -> bool:
    """Whether lower-cased `text` contains any of `needles`: the cheap test that gates a value reader, so the
    readers' patterns run only on the few sentences that can hold their value."""
    low = text.lower()
    for needle in needles:  # a plain loop: this runs for every sentence and reader, and a generator costs more
        if needle in low:
            return True
    return False
