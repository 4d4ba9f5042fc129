"""Sentence alignment for the contradiction family: which context sentence an answer sentence restates.

An answer sentence is compared only with context sentences that share its content stems, found through an
inverted index (stem -> sentence ids), so the cost grows with the overlap, not with answer x context.
`ContradictionView` holds everything the four contradiction sub-checks compute once per inspection; each
sub-check's public `find_*` function builds one when called on its own, and `ContradictionCheck` builds a
single one and shares it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Protocol, Sequence, TypeVar

from stream_guard.text.cached_view import cached_property
from stream_guard.text.analysis import MAX_CONTEXT_VALUES, capped_per_sentence, shared_counts  # noqa: F401 - the checks' bound
from stream_guard.text.inspection import ContextSentence, Inspection
from stream_guard.text.quantities import Quantity, extract_quantities
from stream_guard.wire.report import Finding, FindingType
from stream_guard.text.words import NEGATORS, STOP_WORDS, stem, stem_set

_T = TypeVar("_T")

# Caps on the pairwise work of the contradiction checks, so that an event dense in numbers, dates or shared
# words costs bounded time whatever its size. Values past a cap are not compared at all (neither flagged
# nor counted as unsupported); chunks come in retrieval order, so the caps keep the best-ranked ones. On the
# labelled data (RAGTruth QA, summaries and data-to-text, SummEdits, HaluEval: 3,557 events) the largest
# answer has 20 quantities and 6 dates, the largest context 31 quantities and 15 dates, the most quantities
# or dates in one answer sentence is 7, a stem occurs in at most 48 context sentences and an answer
# sentence shares stems with at most 55: no cap binds there. The index keeps MAX_POSTINGS sentences per stem.
MAX_ANSWER_VALUES = 64  # quantities (and, separately, dates) of the answer that are checked
# (MAX_CONTEXT_VALUES, in text/analysis.py: the context's values they are checked against.)
MAX_SENTENCE_NEIGHBOURS = 8  # other values of the same answer sentence that can account for a context value

# Words that carry no subject of their own in policy or factual prose: "at any time", "definitely",
# "currently". Counting them as shared content would pair unrelated sentences.
FILLER_STEMS = frozenset(
    stem(w)
    for w in """time times anytime always definitely certainly really actually simply just now currently also still
    even however please note generally usually typically like well way thing things lot get gets got make
    makes made according passage passages mentioned mention states stated say says said provided based
    information""".split()
)


@lru_cache(maxsize=65536)
def align_stems(text: str) -> frozenset[str]:
    """Content stems used for alignment: no digits (numbers are what the checks compare) and no fillers."""
    return _for_alignment(stem_set(text))


def _for_alignment(stems: frozenset[str]) -> frozenset[str]:
    return frozenset(s for s in stems if not s[0].isdigit() and s not in FILLER_STEMS)


class ContextIndex:
    """Content stems of every context sentence and an inverted index over the stems the answer uses.

    Only stems that occur in the answer are ever looked up, so only those are taken from the context's index.
    """

    __slots__ = ("sentences", "stems", "_postings")

    def __init__(self, inspection: Inspection, wanted: frozenset[str]) -> None:
        self.sentences = inspection.context_sentences
        # The context's shared per-sentence stems and inverted index (text/analysis.py: built once per context).
        # Digits and fillers are left in: they never meet an answer's alignment stems, which exclude them.
        self.stems: Sequence[frozenset[str]] = inspection.context_sentence_stems
        index = inspection.sentence_index
        self._postings = {s: index[s] for s in wanted if s in index}

    def shared_counts(self, stems: frozenset[str]) -> dict[int, int]:
        """Context sentence id -> number of `stems` it shares (only sentences sharing at least one).
        `stems` must come from the answer (the index holds postings for those only)."""
        return shared_counts(self._postings, stems)

    def containing(self, stem_: str) -> Sequence[int]:
        """Context sentences containing `stem_`, an answer stem."""
        return self._postings.get(stem_, ())


@dataclass(frozen=True)
class AnswerSentence:
    index: int
    text: str
    stems: frozenset[str]


class ContradictionView:
    """Lazily computed pieces shared by the numeric, date, negation and billing checks."""

    def __init__(self, inspection: Inspection) -> None:
        self.inspection = inspection

    @cached_property
    def context(self) -> ContextIndex:
        wanted = frozenset().union(*(a.stems for a in self.answer))
        return ContextIndex(self.inspection, wanted)

    @cached_property
    def answer(self) -> list[AnswerSentence]:
        return [AnswerSentence(i, text, align_stems(text)) for i, text in enumerate(self.inspection.answer_sentences)]

    @cached_property
    def answer_overlaps(self) -> list[dict[int, int]]:
        """For each answer sentence, context sentence id -> shared stem count (a function of the sentence's stems
        and the context alone: counted once per event, a repair's kept sentences read the original's)."""
        once = self.inspection.once
        return [once(("overlaps", a.stems), lambda a=a: self.context.shared_counts(a.stems)) for a in self.answer]

    @cached_property
    def answer_quantities(self) -> list[list[Quantity]]:
        """Quantities of each answer sentence, the first MAX_ANSWER_VALUES of the answer in all."""
        return capped_per_sentence((a.text for a in self.answer), extract_quantities, MAX_ANSWER_VALUES)

    @property
    def context_quantities(self) -> Sequence[Sequence[Quantity]]:
        """Quantities of each context sentence, the first MAX_CONTEXT_VALUES of the context in all."""
        return self.inspection.context_quantities

    def sentence(self, context_id: int) -> ContextSentence:
        return self.inspection.context_sentences[context_id]

    def per_sentence(self, check: str, sentence: tuple[object, ...], compute: Callable[[], _T]) -> _T:
        """What sub-check `check` finds in one answer sentence, `sentence` being everything of it the sub-check
        reads (its text, and how many of its values are checked when a cap on the answer's can cut them): a
        function of that and the context alone, so a repair's re-inspection (which shares the event's memo,
        `Inspection.with_answer`) re-checks only the sentences the repair changed. Treat what it returns as
        immutable: the re-inspections share it."""
        return self.inspection.once(("contradiction", check, *sentence), compute)


def neighbours(values: Sequence[_T], k: int) -> list[_T]:
    """The values of a sentence other than the k-th, nearest first in reading order, at most
    MAX_SENTENCE_NEIGHBOURS of them."""
    half = MAX_SENTENCE_NEIGHBOURS // 2
    return list(values[max(0, k - half) : k]) + list(values[k + 1 : k + 1 + half])


def contradiction_finding(
    view: ContradictionView,
    context_id: int,
    *,
    kind: str,
    statement: str,
    evidence: str,
    answer_value: str,
    source_value: str,
) -> Finding:
    """A contradiction between answer sentence `statement` and context sentence `context_id`. Every
    sub-check reports this way, so the source text and chunk id always come from the same sentence."""
    source = view.sentence(context_id)
    return Finding(
        type=FindingType.CONTRADICTION,
        kind=kind,
        statement=statement,
        source=source.text,
        evidence=evidence,
        answer_value=answer_value,
        source_value=source_value,
        chunk_id=source.chunk_id,
    )


# --------------------------------------------------------------------------------------------------
# Choosing the context value an answer value competes with (numeric and date checks)
# --------------------------------------------------------------------------------------------------


def tied_to_subject(local: int, shared: int, answer_stems: int) -> bool:
    """Whether a context value is about what an answer value is about, given `local` subject stems the two
    values share, `shared` stems their sentences share and the answer sentence's `answer_stems` stems:
    two local stems, one backed by an aligned sentence, or a sentence restating most of the answer's."""
    return local >= 2 or (local >= 1 and shared >= 2) or (shared >= 3 and shared >= 0.6 * answer_stems)


def strongest_rival(scored: list[tuple[int, int, _T]], agree: Callable[[_T, _T], object]) -> _T | None:
    """The candidate with the most (local, shared) evidence, or None when there is none or when another
    candidate with the same evidence does not `agree` with it: then the context itself is ambiguous."""
    if not scored:
        return None
    # A stable sort: among equal evidence the earliest candidate (context order) wins.
    ranked = sorted(scored, key=lambda item: (item[0], item[1]), reverse=True)
    best_local, best_shared, best = ranked[0]
    for local, shared, other in ranked[1:]:
        if (local, shared) != (best_local, best_shared):
            break
        if not agree(other, best):
            return None
    return best


_WORD_OR_BREAK_RE = re.compile(r"[A-Za-z][A-Za-z'’]*|[,;:()\[\]{}|\"“”—–.!?]")
_CLAUSE_WORDS = frozenset("and but or while whereas although though however nor".split())


def clause_stems(
    text: str, start: int, end: int, left: int = 6, right: int = 4, skip: frozenset[str] = frozenset()
) -> frozenset[str]:
    """Content stems within `left` words before `start` and `right` words after `end`, not crossing a clause
    break (punctuation or a coordinating conjunction). Used as the subject of a value found at start:end."""
    out: set[str] = set()
    before = [m.group() for m in _WORD_OR_BREAK_RE.finditer(text, max(0, start - 160), start)]
    out.update(_take(reversed(before), left, skip))
    after = [m.group() for m in _WORD_OR_BREAK_RE.finditer(text, end, min(len(text), end + 120))]
    out.update(_take(after, right, skip))
    return frozenset(out)


def _take(tokens: Iterable[str], limit: int, skip: frozenset[str]) -> list[str]:
    taken: list[str] = []
    for tok in tokens:
        low = tok.lower().replace("’", "'")
        if not low[0].isalpha() or low in _CLAUSE_WORDS:
            break
        if low in STOP_WORDS or low in NEGATORS or len(low) < 2 or low in skip:
            continue
        taken.append(stem(low))
        if len(taken) >= limit:
            break
    return taken


def surface_words(text: str, stems: frozenset[str], limit: int = 4) -> str:
    """The words of `text` whose stems are in `stems`, as written and in order: readable evidence."""
    out: list[str] = []
    seen: set[str] = set()
    for m in _WORD_OR_BREAK_RE.finditer(text):
        word = m.group()
        low = word.lower().replace("’", "'")
        if word[0].isalpha() and low not in seen and stem(low) in stems:
            seen.add(low)
            out.append(word)
            if len(out) >= limit:
                break
    return ", ".join(out)


# --------------------------------------------------------------------------------------------------
# Word-valued values (schedules, frequencies, obligations, exceptions): the source sentence an answer
# sentence restates, compared value against value
# --------------------------------------------------------------------------------------------------

# Context sentences an answer sentence is compared with, best aligned first. The labelled data has at most 55
# sharing a stem with one answer sentence: the cap does not bind there.
MAX_RESTATING = 32
# Word values of one answer sentence that are compared (frequencies, obligations, exceptions); the labelled data
# has at most 2 of a kind in a sentence.
MAX_VALUES_PER_SENTENCE = 4


def restating(
    view: ContradictionView, sentence: AnswerSentence, exclude: frozenset[str] = frozenset(), minimum: int = 2
) -> list[tuple[int, int]]:
    """(shared stems, context id) of the context sentences that restate `sentence`, most shared first: at least
    `minimum` shared content stems (fewer only when the sentence has fewer), not counting `exclude` (the value
    words themselves, which are what differs) nor the fields of a structured record (record_claims owns them)."""
    stems = sentence.stems - exclude
    if not stems:
        return []
    need = min(minimum, len(stems))
    fields = view.inspection.field_sentence_ids
    scored = [
        (shared, i)
        for i in view.answer_overlaps[sentence.index]
        if i not in fields and (shared := len(stems & view.context.stems[i])) >= need
    ]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return scored[:MAX_RESTATING]


def first_disagreeing(
    candidates: Sequence[tuple[int, int]],
    read: Callable[[int], Sequence[_T]],
    agrees: Callable[[_T], bool | None],
) -> tuple[int, list[_T]] | None:
    """The best-aligned candidate whose values disagree with the answer's, when no candidate aligned at least
    as well agrees and the best one states such values: (context id, its disagreeing values). `agrees` returns
    None for a value that says nothing about the answer's (another action, another subject)."""
    best: tuple[int, int, list[_T]] | None = None
    for shared, i in candidates:
        if best is not None and shared < best[0]:
            break
        verdicts = [(v, agrees(v)) for v in read(i)]
        if any(verdict is True for _, verdict in verdicts):
            return None
        against = [v for v, verdict in verdicts if verdict is False]
        if against and best is None:
            best = (shared, i, against)
    return None if best is None else (best[1], best[2])


def literal_span(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The text from the first span's start to the last one's end ("9am-5pm" from "9am" and "5pm")."""
    return text[min(s for s, _ in spans) : max(e for _, e in spans)] if spans else ""


class _Written(Protocol):
    text: str


_V = TypeVar("_V", bound=_Written)


def value_conflicts(
    view: ContradictionView,
    kind: str,
    read: Callable[[str], Sequence[_V]],
    agrees: Callable[[_V, _V], bool | None],
    exclude: Callable[[_V], frozenset[str]],
    describe: Callable[[_V, _V], str] | None = None,
    minimum: int = 2,
    read_source: Callable[[str], Sequence[_V]] | None = None,
    reader: str = "",
) -> list[Finding]:
    """For each value `read` finds in an answer sentence (the first MAX_VALUES_PER_SENTENCE), the source sentence
    that restates that sentence (not counting the `exclude` words) and states a value that disagrees with it,
    when none aligned as well agrees: a `kind` contradiction naming both values as written. `agrees(ours,
    theirs)` is None for a source value about something else. `read_source` reads the source sentences when a
    source's wording states more values than an answer's does (default `read`). `reader` tells apart two
    readers that report one `kind` (their findings are memoised per sentence under kind and reader)."""
    read_theirs = read_source or read
    def conflicts(sentence: AnswerSentence) -> list[Finding]:
        found: list[Finding] = []
        for ours in read(sentence.text)[:MAX_VALUES_PER_SENTENCE]:
            candidates = restating(view, _subject_sentence(view, sentence, exclude(ours)), exclude(ours), minimum)
            hit = first_disagreeing(candidates, lambda i: read_theirs(view.sentence(i).text), lambda theirs: agrees(ours, theirs))
            if hit is None:
                continue
            i, (theirs, *_) = hit
            evidence = describe(ours, theirs) if describe else f"answer says '{ours.text}' but the source says '{theirs.text}'"
            found.append(contradiction_finding(
                view, i, kind=kind, statement=sentence.text, evidence=evidence,
                answer_value=ours.text, source_value=theirs.text,
            ))
        return found

    findings: list[Finding] = []
    for sentence in view.answer:
        # A short sentence may take its subject from the one before it (_subject_sentence): that one is part of it.
        key = (sentence.text, view.answer[sentence.index - 1].text) if _may_be_anaphoric(sentence) else (sentence.text,)
        findings += view.per_sentence(kind + reader, key, lambda sentence=sentence: conflicts(sentence))
    return findings


# An answer sentence of at most this many content stems can be one that states only a value of what the sentence
# before it says ("Massage your scalp with warm oil. Do this up to once a week.").
_ANAPHORIC_STEMS = 3


def _may_be_anaphoric(sentence: AnswerSentence) -> bool:
    return sentence.index > 0 and len(sentence.stems) <= _ANAPHORIC_STEMS


def _subject_sentence(view: ContradictionView, sentence: AnswerSentence, exclude: frozenset[str]) -> AnswerSentence:
    """The answer sentence whose words say what `sentence`'s value is of: itself, or, when it has no word but its
    value ("Do this up to once a week.": "this" is the previous sentence's action), the sentence before it, whose
    source sentence it restates."""
    if _may_be_anaphoric(sentence) and not (sentence.stems - exclude):
        return view.answer[sentence.index - 1]
    return sentence
