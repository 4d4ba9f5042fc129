"""Text primitives shared by every check: sentences, tokens, stems, stop words, question keys.

Everything here is pure and cached where it pays; the checks call these thousands of times a second.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

import snowballstemmer

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

# Negators are not stop words for the checks that care about polarity; they are filtered
# from content words only, so "not" never counts as grounding evidence.
NEGATORS: frozenset[str] = frozenset(
    "not no never none nothing nobody neither nor cannot can't won't don't doesn't didn't isn't aren't "
    "wasn't weren't hasn't haven't hadn't shouldn't wouldn't couldn't mustn't without".split()
)

_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
# A sentence ends at . ! ? (optionally followed by a closing quote or bracket) and whitespace, but not
# after common abbreviations, initials or inside decimals like 3.5.
_ABBREVIATIONS = frozenset(
    "dr mr mrs ms prof sr jr st vs etc inc ltd co corp dept fig no al approx e.g i.e u.s u.k".split()
)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n{2,}|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
_ENUMERATOR_RE = re.compile(r"\d{1,2}[.)]")
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Snowball (Porter 2) stem of a lower-case word."""
    return _stemmer.stemWord(word)


def words(text: str) -> list[str]:
    """Lower-case word tokens, apostrophes folded to ASCII."""
    return [w.replace("’", "'") for w in _WORD_RE.findall(text.lower())]


def content_words(text: str) -> list[str]:
    """Words that carry meaning: not stop words, not negators, not bare one-letter tokens."""
    return [w for w in words(text) if w not in STOP_WORDS and w not in NEGATORS and (len(w) > 1 or w.isdigit())]


def content_stems(text: str) -> list[str]:
    return [stem(w) for w in content_words(text)]


def stem_set(text: str) -> frozenset[str]:
    return frozenset(content_stems(text))


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; keeps abbreviations ("Dr. Liu") and decimals ("$49.99") intact."""
    text = text.strip()
    if not text:
        return []
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END_RE.finditer(text):
        candidate = text[start : match.start()].rstrip()
        if not candidate:
            continue
        tokens = candidate.split()
        last = tokens[-1].rstrip(".!?\"')]").lower() if tokens else ""
        if candidate.endswith(".") and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        if _ENUMERATOR_RE.fullmatch(tokens[-1]) and (len(tokens) == 1 or tokens[-2].endswith(":")):
            # "1." opens a list item: it belongs to the sentence that follows, not to "Steps:" before it.
            if len(tokens) > 1:
                cut = candidate.rfind(tokens[-1])
                pieces.append(candidate[:cut].rstrip())
                start += cut
            continue
        pieces.append(candidate)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    return [p.strip() for p in pieces if p.strip()]


def normalize_question(question: str) -> str:
    """Case, whitespace and punctuation folded, so that re-phrasings differing only in those share history."""
    folded = unicodedata.normalize("NFKC", question).casefold()
    folded = re.sub(r"[^\w\s]", " ", folded)
    return " ".join(folded.split())


QUESTION_HASH_CHARS = 24
_QUESTION_HASH_RE = re.compile(rf"[0-9a-f]{{{QUESTION_HASH_CHARS}}}")


def question_hash(tenant: str, question: str) -> str:
    """Stable key of (tenant, normalized question): the drift table's key and the verdict topic's key."""
    digest = hashlib.blake2b(f"{tenant}\x1f{normalize_question(question)}".encode(),
                             digest_size=QUESTION_HASH_CHARS // 2)
    return digest.hexdigest()


def looks_like_question_hash(key: bytes | str) -> bool:
    """Shape only: whether `key` could be a question_hash. Whether it is the right one takes the event."""
    text = key.decode("ascii", "replace") if isinstance(key, bytes) else key
    return _QUESTION_HASH_RE.fullmatch(text) is not None


def overlap(needles: frozenset[str] | set[str], haystack: frozenset[str] | set[str]) -> float:
    """Fraction of `needles` found in `haystack`; 1.0 for no needles (nothing to ground)."""
    if not needles:
        return 1.0
    return len(needles & haystack) / len(needles)
