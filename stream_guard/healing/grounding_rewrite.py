"""Strategy: grounding rewrite. Rebuild the answer from the context sentences that answer the question.

Sentences are ranked by how much of the question's content they cover, with their overlap with the
original answer as the tiebreak (the model was usually looking at the right passage even when it went
wrong). The chosen sentences keep their document order so the result reads like the source.

The lead-in says where the answer comes from, chosen by what the chosen sentences hold: figures and
durations, policy-like text, or anything else. A generic "based on available information" tells the
reader nothing; these do, and they read as attributed (hedged) statements, which the confidence check
scores accordingly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stream_guard.healing.result import GROUNDING_REWRITE, Attempt, Change
from stream_guard.inspection import ContextSentence, Inspection
from stream_guard.text import stem_set, words

PREFIX_FIGURES = "According to the provided information:"
PREFIX_POLICY = "As stated in the source documentation:"
PREFIX_GENERAL = "The retrieved sources suggest that:"

MAX_SENTENCES = 3
MIN_WORDS = 4

_FIGURES_RE = re.compile(
    r"[$€£¥]\s?\d|\d\s?%|\b\d+(?:\.\d+)?\s*(?:percent\b|(?:business\s+|working\s+|calendar\s+)?"
    r"(?:minute|hour|day|week|month|quarter|year)s?\b)",
    re.IGNORECASE,
)
_POLICY_WORDS = frozenset(
    "policy policies guideline guidelines procedure procedures rule rules regulation regulations terms "
    "requirement requirements".split()
)


@dataclass(frozen=True)
class _Ranked:
    question_overlap: float
    answer_overlap: float
    position: int
    sentence: ContextSentence


def choose_prefix(text: str) -> str:
    if _FIGURES_RE.search(text):
        return PREFIX_FIGURES
    if _POLICY_WORDS & set(words(text)):
        return PREFIX_POLICY
    return PREFIX_GENERAL


def _rank(inspection: Inspection) -> list[_Ranked]:
    question = inspection.question_stems
    answer = stem_set(inspection.answer)
    ranked: list[_Ranked] = []
    seen: set[str] = set()
    for position, sentence in enumerate(inspection.context_sentences):
        text = sentence.text.strip()
        if not text or text.endswith("?") or text.lower() in seen:
            continue
        seen.add(text.lower())
        stems = stem_set(text)
        q = len(question & stems) / len(question) if question else 0.0
        a = len(answer & stems) / len(answer) if answer else 0.0
        if q > 0 or a > 0:
            ranked.append(_Ranked(q, a, position, sentence))
    return ranked


def select_sentences(inspection: Inspection, limit: int = MAX_SENTENCES) -> list[str]:
    """Best context sentences for the question, in document order; full sentences preferred over stubs."""
    ranked = _rank(inspection)
    substantial = [r for r in ranked if len(r.sentence.text.split()) >= MIN_WORDS]
    pool = substantial or ranked
    best = sorted(pool, key=lambda r: (-r.question_overlap, -r.answer_overlap, r.position))[:limit]
    return [r.sentence.text.strip() for r in sorted(best, key=lambda r: r.position)]


def rewrite(inspection: Inspection, limit: int = MAX_SENTENCES) -> Attempt:
    """The rewritten answer, or text None when no context sentence relates to the question or answer."""
    chosen = select_sentences(inspection, limit)
    if not chosen:
        return Attempt(GROUNDING_REWRITE, None, ())
    body = " ".join(chosen)
    prefix = choose_prefix(body)
    text = f"{prefix} {body}"
    change = Change(
        "rewrite",
        inspection.answer,
        text,
        f"Rebuilt the answer from {len(chosen)} context sentence(s) with the lead-in '{prefix}'",
    )
    return Attempt(GROUNDING_REWRITE, text, (change,))
