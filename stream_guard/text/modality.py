"""Obligations and permissions: what a sentence says someone must, may or must not do, and to which action.

"shall not disclose" / "must not" / "may not" / "cannot" / "is prohibited from" forbid; "must" / "shall" / "is
required to" / "has to" / "needs to" / "is obliged to" require; "may" / "can" / "is permitted to" / "is allowed
to" / "is entitled to" permit; "does not have to" / "need not" / "is not required to" leave it optional (which
contradicts only a requirement). "will not" is a statement about the future, not a prohibition. Each reading keeps the action it governs (the stem of the first content word
after the modal: "may *terminate*", "shall not *exceed*"), so two sentences are compared only about one action.
"may" before "be" with no action of its own ("may be subject to") is a possibility, not a permission. A bracketed
"(optional)" or "(required)" after an item is its force, the item its action ("sili (optional)")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from stream_guard.text import regex_cache
from stream_guard.text.words import STOP_WORDS, mentions, stem

REQUIRED, PERMITTED, FORBIDDEN, OPTIONAL = "required", "permitted", "forbidden", "optional"

_MODAL_RE = regex_cache.compile(
    r"\b(?:(?P<optional>(?:do|does|did|will|would)\s++not\s++(?:have|need)\s++to|(?:don't|doesn't|didn't|won't)\s++(?:have|need)\s++to"
    r"|need\s++not|needn't|(?:is|are)\s++not\s++(?:required|obliged|obligated)\s++to|(?:is|are)\s++optional\s++to)"
    r"|(?P<forbid>(?:shall|must|may|can)\s++not|mustn't|shan't|cannot|can't|is\s++not\s++(?:allowed|permitted)\s++to"
    r"|are\s++not\s++(?:allowed|permitted)\s++to|(?:is|are)\s++(?:prohibited|forbidden|barred)\s++from)"
    r"|(?P<require>must|shall|(?:is|are)\s++(?:required|obliged|obligated)\s++to|ha(?:s|ve)\s++to|needs?\s++to)"
    r"|(?P<permit>may|can|(?:is|are)\s++(?:permitted|allowed|entitled)\s++to|(?:is|are)\s++free\s++to))\b",
    re.IGNORECASE,
)
_WORD_RE = regex_cache.compile(r"[A-Za-z][A-Za-z'’-]*")
# Between a modal and its action: adverbs and auxiliaries that do not change what is done.
_SKIP = STOP_WORDS | frozenset("also only still always never ever immediately promptly either".split())
_HEDGE_RE = regex_cache.compile(r"\b(?:may|might|could|would)\s++$", re.IGNORECASE)
_CONDITION_RE = regex_cache.compile(r"\b(?:if|unless|provided|in\s+case|whenever|once)\b", re.IGNORECASE)
_LOOKAHEAD = 60  # characters after a modal in which its action is looked for


@dataclass(frozen=True)
class Modality:
    """A modal as written at [start, end) and the action it governs (a stem; "" when none is found)."""

    text: str
    start: int
    end: int
    force: str  # REQUIRED, PERMITTED, FORBIDDEN or OPTIONAL
    action: str
    # Content stems of the condition stated before the modal ("if you are not a degree-seeking student, you must
    # ..." -> {degre, seek, student}); empty when there is none.
    condition: frozenset[str] = frozenset()

    @property
    def conditional(self) -> bool:
        return bool(self.condition)


_NEEDLES = ("may", "must", "shall", "can", "need", "have to", "has to", "required", "allowed", "permitted",
            "prohibited", "forbidden", "barred", "obliged", "obligated", "entitled", "free to", "optional", "shan't", "mandatory")


def modalities(text: str) -> list[Modality]:
    """Every obligation, permission or prohibition stated in `text`, in order."""
    return list(_modalities(text)) if text and mentions(text, _NEEDLES) else []


@lru_cache(maxsize=16384)
def _modalities(text: str) -> tuple[Modality, ...]:
    out: list[Modality] = []
    found = _CONDITION_RE.search(text)
    condition = _condition_stems(text, found) if found else frozenset()
    for m in _MODAL_RE.finditer(text):
        if _HEDGE_RE.search(text, max(0, m.start() - 12), m.start()):
            continue  # "may need to", "might have to": a possibility, not an obligation
        force = (OPTIONAL if m.group("optional") else FORBIDDEN if m.group("forbid") else REQUIRED if m.group("require")
                 else PERMITTED)
        action, end = _action(text, m.end())
        if not action:
            continue
        if force == PERMITTED and m.group().lower() in ("may", "can") and action in ("be", "need", "have"):
            continue  # "may be subject to", "may need to", "may have to": a possibility
        said_under = condition if found is not None and found.start() < m.start() else frozenset()
        out.append(Modality(text[m.start() : end], m.start(), end, force, action, said_under))
    if "(" in text:
        out = sorted(out + _markers(text), key=lambda found: found.start)
    return out


# A bracketed label after an item marks it required or optional, as a form or a recipe writes it: "kangkong and sili
# (optional)", "sili (for spice - optional)", "phone number (required)". The item is the word before the bracket.
_MARKER_RE = regex_cache.compile(
    r"(?P<item>[A-Za-z][A-Za-z'’-]*)\s*+\((?:[^()]{0,40}?[\s-])?(?P<force>optional|required|mandatory)\s*+\)",
    re.IGNORECASE,
)


def _markers(text: str) -> list[Modality]:
    return [
        Modality(text[m.start() : m.end()], m.start(), m.end(),
                 OPTIONAL if m.group("force").lower() == "optional" else REQUIRED, stem(m.group("item").lower()))
        for m in _MARKER_RE.finditer(text) if m.group("item").lower() not in STOP_WORDS
    ]


def _condition_stems(text: str, found: re.Match[str]) -> frozenset[str]:
    """Content stems of a condition: from its word to the next comma or clause break (at most 120 characters)."""
    stop = len(text)
    for mark in (",", ";", " then "):
        at = text.find(mark, found.end(), found.end() + 120)
        if at >= 0:
            stop = min(stop, at)
    words = _WORD_RE.findall(text, found.end(), min(stop, found.end() + 120))
    stems = frozenset(stem(w.lower()) for w in words if w.lower() not in STOP_WORDS)
    return stems or frozenset({"_"})  # a condition with no content words is still a condition


def _action(text: str, at: int) -> tuple[str, int]:
    """Stem of the first content word after `at` (within a few words), and where that word ends."""
    for n, word in enumerate(_WORD_RE.finditer(text, at, min(len(text), at + _LOOKAHEAD))):
        low = word.group().lower()
        if low in ("be", "been") and n == 0:
            nxt = _WORD_RE.search(text, word.end(), min(len(text), word.end() + 30))
            if nxt is not None and nxt.group().lower().endswith(("ed", "en")):
                return stem(nxt.group().lower()), nxt.end()  # "must be returned", "may be cancelled"
            return "be", word.end()
        if low in _SKIP:
            continue
        return stem(low), word.end()
    return "", at
