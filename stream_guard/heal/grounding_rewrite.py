"""Strategy: grounding rewrite. Rebuild the answer from the context sentences that answer the question.

Sentences are ranked by how much of the question's content they cover, with their overlap with the
original answer as the tiebreak (the model was usually looking at the right passage even when it went
wrong). The chosen sentences keep their document order so the result reads like the source.

The lead-in says where the answer comes from, chosen by what the chosen sentences hold: figures and
durations, policy-like text, or anything else. A generic "based on available information" tells the
reader nothing; these do, and they read as attributed (hedged) statements, which the confidence check
scores accordingly.

A rewrite answers the question, it does not dump the source: at most `MAX_SENTENCES` sentences and no
more than the original answer had claims, within a character budget set by the original answer's length.
A sentence is never picked when it is not clean prose that reads like the answer (JSON, markup, a key-value
line; a crawl artefact such as a sentence glued to the next, "range.ost a", a cut-off chunk starting in lower
case or a stray list number; first person or a quotation the answer did not use: readability.py), holds a
credential, or addresses a model ("ignore previous instructions"). When nothing clean is left, the rewrite
offers nothing and says why, so the answer falls back with that reason. A structured chunk (a JSON record)
contributes no sentences: its fields are written as sentences by `structured.describe_record`, and when
that has nothing to say the rewrite offers nothing (the healer then falls back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from stream_guard.text.claims import extract_claims
from stream_guard.heal.delivery_safety import unsafe_reasons
from stream_guard.heal.readability import answer_reading_counts, readability_problems, reading_problems
from stream_guard.heal.result import GROUNDING_REWRITE, Attempt, Change
from stream_guard.text.inspection import ContextSentence, Inspection
from stream_guard.text.records import describe_record
from stream_guard.text.words import stem_set, words

PREFIX_FIGURES = "According to the provided information:"
PREFIX_POLICY = "As stated in the source documentation:"
PREFIX_GENERAL = "The retrieved sources suggest that:"

MAX_SENTENCES = 3
MIN_WORDS = 4
MAX_WORDS = 60  # a longer "sentence" is a run-on paragraph or a table row, not an answer
# The rewrite may run to this many characters, or the original answer's length if that is longer.
MIN_BUDGET_CHARS = 240

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


def _clean(text: str) -> bool:
    """Whether a context sentence, read alone, may appear in a rewrite: not too long, clean prose, no secret,
    nothing addressed to a model (whether it reads like the answer is judged per answer: _usable_in_order)."""
    return len(text.split()) <= MAX_WORDS and not readability_problems(text) and not unsafe_reasons(text)


# Per context (ContextAnalysis.derive): whether each of its sentences is `_clean`. The same chunks come back
# with many questions and answers (a help desk's policies), and a rewrite tries their sentences again each time.
_CLEAN = "grounding_rewrite.clean"


def _rank(inspection: Inspection) -> list[_Ranked]:
    """Context sentences sharing a stem with the question or the answer, best first (question overlap, then
    answer overlap, then document order). Found through the inverted index, so the cost follows the
    question's and answer's stems rather than the size of the context; readability is judged later, only
    for the sentences a rewrite may actually take."""
    question = inspection.question_stems
    answer = stem_set(inspection.answer)
    index = inspection.sentence_index
    candidates = {i for s in question | answer for i in index.get(s, ())}
    records = inspection.records
    ranked: list[_Ranked] = []
    for position in candidates:
        sentence = inspection.context_sentences[position]
        if records and records[sentence.chunk_index] is not None:
            continue  # a record's field lines are data, not sentences to hand a reader
        stems = inspection.context_sentence_stems[position]
        q = len(question & stems) / len(question) if question else 0.0
        a = len(answer & stems) / len(answer) if answer else 0.0
        ranked.append(_Ranked(q, a, position, sentence))
    ranked.sort(key=lambda r: (-r.question_overlap, -r.answer_overlap, r.position))
    return ranked


def _usable_in_order(ranked: list[_Ranked], answer: tuple[int, ...], clean: dict[str, bool]) -> Iterator[_Ranked]:
    """The ranked sentences a rewrite of an answer (its `reading_counts`) may use, each text once: clean prose in
    the answer's voice, not a question, safe to deliver. `clean` remembers, per context, what `_clean` said of
    each sentence."""
    seen: set[str] = set()
    for r in ranked:
        text = r.sentence.text.strip()
        key = text.lower()
        if not text or text.endswith("?") or key in seen:
            continue
        seen.add(key)
        ok = clean.get(text)
        if ok is None:
            ok = clean[text] = _clean(text)
        if ok and not reading_problems(text, answer):
            yield r


def _limit(inspection: Inspection, limit: int) -> int:
    """No more sentences than the original answer made claims, and at most `limit`."""
    claims = len(extract_claims(inspection.answer, inspection.answer_sentences))
    return max(1, min(limit, claims or limit))


def select_sentences(inspection: Inspection, limit: int = MAX_SENTENCES) -> list[str]:
    """Best context sentences for the question, in document order; full sentences preferred over stubs
    (stubs only when no full sentence is usable), within the sentence limit and the character budget."""
    budget = max(MIN_BUDGET_CHARS, len(inspection.answer))
    most = _limit(inspection, limit)
    best: list[_Ranked] = []
    stubs: list[_Ranked] = []
    used = 0
    clean: dict[str, bool] = inspection.context.derive(_CLEAN, lambda _: {})
    for r in _usable_in_order(_rank(inspection), answer_reading_counts(inspection), clean):
        if len(r.sentence.text.split()) < MIN_WORDS:
            if not best:
                stubs.append(r)
            continue
        size = len(r.sentence.text.strip()) + 1
        if best and used + size > budget:
            continue
        best.append(r)
        used += size
        if len(best) >= most:
            break
    if not best:  # no full sentence: the stubs, as many as fit
        for r in stubs:
            size = len(r.sentence.text.strip()) + 1
            if best and used + size > budget:
                continue
            best.append(r)
            used += size
    return [r.sentence.text.strip() for r in sorted(best, key=lambda r: r.position)]


def _record_rewrite(inspection: Inspection, limit: int) -> Attempt:
    """For an answer about a structured record: its main fields written as sentences."""
    record = next(r for r in inspection.records if r is not None)
    sentences = describe_record(record)[: _limit(inspection, limit)]
    if not sentences:
        return Attempt(GROUNDING_REWRITE, None, ())
    text = " ".join(sentences)
    change = Change("rewrite", inspection.answer, text, f"Wrote {len(sentences)} field(s) of the record as sentences")
    return Attempt(GROUNDING_REWRITE, text, (change,))


def rewrite(inspection: Inspection, limit: int = MAX_SENTENCES) -> Attempt:
    """The rewritten answer, or text None when no context sentence relates to the question or answer."""
    chosen = select_sentences(inspection, limit)
    if not chosen and any(inspection.records):
        return _record_rewrite(inspection, limit)
    if not chosen:
        why = ("no source sentence it relates to is clean prose that reads like the answer"
               if _rank(inspection) else "no source sentence relates to the question or the answer")
        return Attempt(GROUNDING_REWRITE, None, (Change("refused", inspection.answer, "", why),))
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
