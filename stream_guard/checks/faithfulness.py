"""Faithfulness: what share of the answer's claims can be traced back to the retrieved context.

score = grounded claims / claims (1.0 when the answer makes no claims). A claim is grounded when at
least `faithfulness_overlap_threshold` of its content stems occur in the context, every quantity it
states agrees with one the context states, and it says the opposite of no field of a structured chunk.
Bag-of-context overlap is lenient (every word may come from a different passage), so `details` also
carries, per claim, the coverage by the single best context sentence and the answer's novel stems, and the count
quantifiers ("many", "several", "most": a count or share the stem measures miss) that no source uses: the scorer
combines those as features.

Paraphrase is read as the numeric check reads it: quantities are compared as values
(`quantities.extract_quantities`: "three weeks" is "21 days", "1,200" is "1200"), and the words of an
agreeing quantity count as grounded. Against a structured chunk (text/records.py, checks/record_claims.py) a claim is also
checked field by field: "offers outdoor seating" against `"OutdoorSeating": false`, "open until 10 pm"
against `"Friday": "16:0-21:0"`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Protocol, Sequence

from stream_guard.text.cached_view import cached_property
from stream_guard.checks.alignment import MAX_ANSWER_VALUES, MAX_CONTEXT_VALUES, capped_per_sentence
from stream_guard.checks.base import elapsed_ms
from stream_guard.text import regex_cache
from stream_guard.text.claims import (
    MAJORITY,
    Claim,
    claim_words,
    extract_claims,
    may_hold_quantifier,
    states_majority,
    unstated_quantifiers,
)
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.analysis import ContextAnalysis, shared_counts
from stream_guard.text.inspection import Inspection
from stream_guard.text.quantities import Quantity, bears_out, comparable, extract_quantities, may_contain_quantity, same_value
from stream_guard.text.quantities.bounds import BOUNDS
from stream_guard.text.quantities.units import MONEY_UNITS
from stream_guard.wire.report import CheckResult, Finding, FindingType
from stream_guard.checks.record_claims import (
    FieldConflict,
    day_conflicts,
    field_conflicts,
    schema_stems,
    TimeConflict,
    time_conflicts,
    unstated_fields,
)
from stream_guard.checks.dates import DateMention, context_dates, stated_by, stated_dates
from stream_guard.text.quantities.frequency import Frequency, frequencies, stated_frequencies
from stream_guard.text.names import equivalent_words, stated_name_groups
from stream_guard.text.schedule import clock_times, day_spans
from stream_guard.text.words import may_match, stem

# A figure starts a word, or follows the "x" of a size glued to its first figure ("9x13": 9 and 13). The look-behinds
# are read after the first digit ("\d(?<![\w.]\d)" is "(?<![\w.])\d"): a pattern that opens on a digit lets the
# regex engine skip to the next digit, where one that opens on a look-behind is tried at every character (a
# context's figures read about three times faster, the same matches: tests/stream_guard/checks/test_faithfulness.py).
_NUMBER_RE = regex_cache.compile(r"\d(?:(?<![\w.]\d)|(?<=\d[xX]\d))\d*(?:[.,]\d+)*")
# Small spelled-out numbers in the context count for a digit in the answer ("three" grounds "3"). Looked
# up through the context's cached stems rather than by scanning the text again.
_SPELLED_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split()
)
_SPELLED_STEMS: dict[str, str] = {stem(w): str(i) for i, w in enumerate(_SPELLED_WORDS)}
_SPELLED_STEMS.update(
    {stem(w): str(10 * i) for i, w in enumerate("_ _ _ thirty forty fifty sixty seventy eighty ninety".split()) if i >= 3}
)
_ONE_RE = regex_cache.compile(r"\bone\b")  # "one" is a stop word, so it never reaches the stems

_MAX_MISSING_LISTED = 6


def _normalize_number(raw: str) -> str:
    # "1,000" and "1000" are the same figure; a trailing ".0" is not a different one either.
    value = raw.replace(",", "")
    return value[:-2] if value.endswith(".0") else value


def numbers_in(text: str) -> set[str]:
    return {_normalize_number(m.group()) for m in _NUMBER_RE.finditer(text)}


def context_numbers(inspection: Inspection) -> frozenset[str]:
    """Figures the context states, in digits or as small spelled-out numbers."""
    return inspection.context.derive(_NUMBERS, _numbers_of)


_NUMBERS = "faithfulness.numbers"  # the ContextAnalysis.derive keys of this check's per-context values
_FACTS = "faithfulness.facts"
_SHARES = "faithfulness.shares"


def _numbers_of(context: ContextAnalysis) -> frozenset[str]:
    found = set().union(*(numbers_in(text) for text in context.texts))
    stems = context.stems
    found.update(digit for key, digit in _SPELLED_STEMS.items() if key in stems)
    if _ONE_RE.search(context.lower):
        found.add("1")
    return frozenset(found)


def _facts_of(context: ContextAnalysis) -> "_ContextFacts":
    neutral = schema_stems(context.records) if context.records else frozenset()
    return _ContextFacts(context, context.derive(_NUMBERS, _numbers_of), neutral)


def context_quantities(context: ContextAnalysis) -> list[Quantity]:
    """The quantities the context states, the first MAX_CONTEXT_VALUES in retrieval order, as the numeric
    check reads them: sentences past the cap are never parsed, so a context of a million characters of figures
    costs no more than one of a few hundred (the cap binds on no labelled event)."""
    return [q for per_sentence in context.quantities for q in per_sentence]


@dataclass(frozen=True)
class ClaimGrounding:
    claim: Claim
    stems: frozenset[str]
    overlap: float
    best_sentence_overlap: float
    best_sentence_index: int  # into inspection.context_sentences; -1 when there are none
    missing_words: tuple[str, ...]
    missing_numbers: tuple[str, ...]
    grounded: bool
    field_conflicts: tuple[FieldConflict, ...] = ()
    wrong_times: tuple[TimeConflict, ...] = ()
    wrong_days: tuple[str, ...] = ()
    # Amenities the claim names that the record has no field for (record_claims.unstated_fields).
    unstated: tuple[str, ...] = ()
    # Count quantifiers ("many", "several", "most") no source uses (claims.unstated_quantifiers).
    quantifiers: tuple[str, ...] = ()
    # Values the claim states as its source does, in any form: quantities, clock times, frequencies, days (not dates).
    stated_values: int = 0


@dataclass
class _ContextFacts:
    """What a claim's figures are compared with, built once per context (ContextAnalysis.derive) and only when a
    claim has any."""

    context: ContextAnalysis
    numbers: frozenset[str]
    # Stems that neither ground nor unground a claim: the words naming a structured record's fields.
    neutral: frozenset[str] = frozenset()
    _pools: dict[str, list[Quantity]] | None = None

    @cached_property
    def clock(self) -> frozenset[int]:
        """Clock times the context states, in minutes after midnight (the first MAX_CONTEXT_VALUES)."""
        texts = (sentence.text for sentence in self.context.sentences)
        return frozenset(t.minutes for found in capped_per_sentence(texts, clock_times, MAX_CONTEXT_VALUES) for t in found)

    @cached_property
    def frequencies(self) -> list[Frequency]:
        """Frequencies the context states (the first MAX_CONTEXT_VALUES), bare adverbs of period included."""
        texts = (sentence.text for sentence in self.context.sentences)
        return [f for found in capped_per_sentence(texts, stated_frequencies, MAX_CONTEXT_VALUES) for f in found]

    @cached_property
    def names(self) -> tuple[tuple[str, ...], ...]:
        """The well-known names the context writes in some form (text/names.py: "UK", "United Kingdom")."""
        return stated_name_groups(self.context.text, self.context.words)

    @cached_property
    def days(self) -> tuple[frozenset[str], ...]:
        """The sets of weekdays the context names ("Monday to Friday", "weekends"; the first MAX_CONTEXT_VALUES)."""
        texts = (sentence.text for sentence in self.context.sentences)
        return tuple(d.days for found in capped_per_sentence(texts, day_spans, MAX_CONTEXT_VALUES) for d in found)

    @cached_property
    def dates(self) -> tuple[DateMention, ...]:
        """Dates the context states (the first MAX_CONTEXT_VALUES), as the date check reads them."""
        return tuple(p.date for p in context_dates(self.context))

    @property
    def pools(self) -> dict[str, list[Quantity]]:
        """Context quantities by dimension: a figure is only ever compared with its own kind."""
        if self._pools is None:
            pools: dict[str, list[Quantity]] = {}
            for c in context_quantities(self.context):
                pools.setdefault(c.dimension, []).append(c)
            self._pools = pools
        return self._pools

    def supports(self, q: Quantity) -> bool:
        """Whether the context states `q`: the same value anywhere (in any comparable form), or a value that
        bears it out (a range holding it, a figure meeting its bound) said of the same subject (shared words
        near the two values, or the same counted noun: "over 130 people" and "131 people"). A limit in the
        context supports only itself, and an answer's range must lie inside the context's, never the reverse."""
        if q.unit is None and q.qualifier not in BOUNDS and _normalize_number(f"{q.magnitude:g}") in self.numbers:
            return True
        pool = [c for c in self.pools.get(q.dimension, ()) if comparable(q, c)]
        if any(same_value(q, c) for c in pool):
            return True
        if any(bears_out(c, q) and ((q.subject & c.subject) - q.counted or q.counted & c.counted) for c in pool):
            return True
        # "5 mg per day" where the context states "5 mg": the amount is attested (the numeric check does the
        # same; a rate is never compared with a plain amount as if they were alike).
        if q.numerator is not None:
            unit, amount = q.numerator
            return any(_same_amount(amount, c.value) for c in self.pools.get(unit, ()))
        # "100 GB" where the context states "$5 per 100 GB per month": the amount of a rate is attested too.
        return any(
            c.numerator is not None and c.numerator[0] == q.dimension and _same_amount(q.value, c.numerator[1])
            for dimension, pool in self.pools.items() if "/" in dimension for c in pool
        )


def _same_amount(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _figures(text: str, facts: _ContextFacts, question: str = "") -> tuple[str, tuple[str, ...], int]:
    """The claim text with its supported values blanked out (their words are grounded), and the literal
    figures the context does not support: quantities that agree with none, clock times and frequencies it
    states in no form ("4 pm" is "16:00", "every 12 hours" is "twice daily"), and other numbers (years,
    identifiers) that occur nowhere in the context. At most MAX_ANSWER_VALUES quantities of a claim are
    compared; any past them are read as plain numbers."""
    quantities = extract_quantities(text)[:MAX_ANSWER_VALUES]
    times = clock_times(text)
    timed = [any(t.minutes == c or {t.minutes, c} <= {0, 1440} for c in facts.clock) for t in times]
    often = frequencies(text)
    oftened = [any(f.agrees(c) for c in facts.frequencies) for f in often]
    verdicts = [facts.supports(q) for q in quantities]
    # A date the source states in another form ("January 31, 2026" for "2026-01-31") is supported whole: its
    # month name is grounded and its figures are not compared one by one.
    answer_dates = stated_dates(text)
    dated = [d for d in answer_dates if any(stated_by(d, c) for c in facts.dates)] if answer_dates else []
    # Days inside a span the source names ("weekdays" for "Monday to Friday", "Tuesday" in "Mon-Fri") are borne
    # out; the schedule checks compare what is said of them.
    answer_days = day_spans(text)
    days = [d for d in answer_days if any(d.days <= c for c in facts.days)] if answer_days else []
    supported: list[_Span] = [_with_price_verb(text, q) for q, ok in zip(quantities, verdicts) if ok]
    supported += [t for t, ok in zip(times, timed) if ok] + [f for f, ok in zip(often, oftened) if ok] + dated + days
    missing = [q.text for q, ok in zip(quantities, verdicts) if not ok]
    missing += [t.text for t, ok in zip(times, timed) if not ok]
    # A frequency no source states in any form is a figure no source states. Not one that is the days of a
    # schedule ("open every day": the record's days are compared with it; a count of times in a day, "three times
    # daily", is no schedule's days) or a price's billing period ("$10 per month": the price is compared).
    if often:
        missing += [f.text for f, ok in zip(often, oftened) if not ok
                    and not any(d.start <= f.start and f.end <= d.end for d in answer_days)
                    and not any(q.start < f.end and f.start < q.end for q in quantities if q.unit in MONEY_UNITS)]
    missing += sorted(numbers_in(_strip_spans(text, [*quantities, *times, *often, *dated])) - facts.numbers)
    # A date stated as the source does is grounded but not counted as a stated value (score_model.short_finding
    # reads the count): a date names an event, and which event is the claim ("died on May 23, 2015" where the
    # source gives that day for another event). A clock time, a frequency or a weekday span answers "when" or "how
    # often" of the claim's own subject, and so does a period: a first and a last date the source states ("runs
    # from 1 March 2026 to 28 February 2027", "May 12-14") are how long the claim's subject lasts, one value.
    # Not one the question gives ("Where was he mayor from 1973 to 1981?"): the answer repeats its frame.
    period = {d.role for d in dated} >= {"start", "end"} and {
        d.role for d in dated if not any(stated_by(d, q) for q in stated_dates(question))} >= {"start", "end"}
    return _strip_spans(text, supported), tuple(dict.fromkeys(missing)), len(supported) - len(dated) + period


# A cheap gate for the figures of a claim without digits or number words: days ("weekdays", "Mon") and months,
# as two searches (`names_calendar`). The days' pattern ignores case, so the engine tries it at every character:
# it runs only where words.may_match finds one of _DAY_NEEDLES, which every match of it holds. The months open
# on their capital and read the word boundary after it (`\b` before a letter is `(?<!\w)`; the two-character
# look-behind sees the character before and the capital just read), so the engine skips to those capitals.
_DAY_WORD_RE = regex_cache.compile(r"\b(?i:(?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)(?:day)?s?|week(?:day|end)s?)\b")
_DAY_NEEDLES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun", "week")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_MONTH_WORD_RE = regex_cache.compile("(?:" + "|".join(m[0] + r"(?<!\w.)" + m[1:] for m in _MONTHS) + r")\b")


def names_calendar(text: str) -> bool:
    """Whether `text` names a day of the week ("Mon", "Tuesdays"), "weekday(s)", "weekend(s)" or a month, as a word."""
    return _MONTH_WORD_RE.search(text) is not None or (
        may_match(text, _DAY_NEEDLES) and _DAY_WORD_RE.search(text) is not None)


class _Span(Protocol):
    start: int
    end: int


@dataclass(frozen=True)
class _Stretch:
    start: int
    end: int


# The words that only say "has this price" ("costs $49.99", "is priced at $49.99", "sells for $49.99"): once the
# price agrees with the source, they state nothing more than the source's own wording of it does.
_PRICE_VERB_RE = regex_cache.compile(r"\b(?:costs?|costing|priced(?:\s++at)?|(?:sells?|sold|retails?)\s++(?:at|for))\s*+$",
                            re.IGNORECASE)


def _with_price_verb(text: str, quantity: Quantity) -> _Span:
    """A supported price with the verb that introduces it, whose words are grounded with it."""
    if quantity.unit not in MONEY_UNITS:
        return quantity
    m = _PRICE_VERB_RE.search(text, 0, quantity.start)
    return _Stretch(m.start(), quantity.end) if m else quantity


def _strip_spans(text: str, spans: Sequence[_Span]) -> str:
    if not spans:
        return text
    out, cursor = [], 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < cursor:
            cursor = max(cursor, span.end)  # overlapping readings of one value ("three times daily")
            continue
        out.append(text[cursor : span.start])
        out.append(" ")
        cursor = span.end
    out.append(text[cursor:])
    return "".join(out)


def _best_sentence(stems: frozenset[str], inspection: Inspection) -> tuple[float, int]:
    """Coverage of `stems` by the single context sentence that shares most of them, and its index.

    Counts through the inspection's stem -> sentences index, so the cost follows the claim's own stems
    rather than the number of context sentences; ties go to the earliest sentence.
    """
    if not stems:
        return 1.0, -1
    index = inspection.sentence_index
    shared = shared_counts(index, stems)
    if not shared:
        return 0.0, -1
    count = max(shared.values())
    best_index = min(i for i, n in shared.items() if n == count)  # the earliest of the best
    return count / len(stems), best_index


# A quotation of at least this many characters found verbatim in a chunk is grounded by the chunk.
_QUOTE_RE = regex_cache.compile(r"[\"“]([^\"“”\n]{12,600})[\"”]")
# Words around a verbatim quote that are only its framing ("As the source puts it:"); more is a claim of its own.
_FRAMING_WORDS = 4


def _folded(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split())


def _without_verbatim_quotes(text: str, inspection: Inspection) -> tuple[str, bool]:
    """The claim text with every quotation the context holds verbatim blanked out, and whether there was one."""
    if '"' not in text and "“" not in text:
        return text, False
    context = inspection.once(("folded context",), lambda: _folded(inspection.context_text))
    out, cursor, found = [], 0, False
    for m in _QUOTE_RE.finditer(text):
        if _folded(m.group(1)).strip(" .,;:") in context:  # type: ignore[operator]
            out.append(text[cursor : m.start()])
            out.append(" ")
            cursor, found = m.end(), True
    out.append(text[cursor:])
    return "".join(out), found


def ground_claim(
    claim: Claim,
    inspection: Inspection,
    numbers: frozenset[str] | _ContextFacts,
    overlap_threshold: float,
) -> ClaimGrounding:
    facts = numbers if isinstance(numbers, _ContextFacts) else _ContextFacts(inspection.context, numbers)
    has_figures = may_contain_quantity(claim.text) or (
        names_calendar(claim.text) and bool(facts.days or facts.dates)
    )
    text, missing_numbers, stated = _figures(claim.text, facts, inspection.question) if has_figures else (claim.text, (), 0)
    text, quoted = _without_verbatim_quotes(text, inspection)
    words = claim_words(text)
    if missing_numbers or any(w[:1].isdigit() for w in words):
        # A bare figure the question states ("how to uninstall uTorrent on Windows 10") is the user's own: an
        # answer restating it adds no figure. A value with a unit or currency is still compared ("$10" stays).
        asked = inspection.once(("question numbers",), lambda: frozenset(numbers_in(inspection.question)))
        missing_numbers = tuple(m for m in missing_numbers if m not in asked)
        words = [w for w in words if w not in asked]
    if quoted and len(words) <= _FRAMING_WORDS:
        words = []  # a verbatim quote and its framing ("As the source puts it: ...") is grounded by the quote
    if facts.neutral:
        words = [w for w in words if stem(w) not in facts.neutral]
    if facts.names:
        # "the UK" where the source writes "the United Kingdom": one name, written another way.
        named = equivalent_words(text.lower(), facts.names)
        words = [w for w in words if w not in named]
    stems = frozenset(stem(w) for w in words)
    context = inspection.context_stems
    overlap = len(stems & context) / len(stems) if stems else 1.0
    best, best_index = _best_sentence(stems, inspection)
    missing_words = tuple(dict.fromkeys(w for w in words if stem(w) not in context))
    conflicts: tuple[FieldConflict, ...] = ()
    wrong_times: tuple[TimeConflict, ...] = ()
    wrong_days: tuple[str, ...] = ()
    unstated: tuple[str, ...] = ()
    if inspection.records:
        conflicts = tuple(field_conflicts(claim.text, inspection.records))
        wrong_times = tuple(time_conflicts(claim.text, inspection.records))
        wrong_days = tuple(day_conflicts(claim.text, inspection.records))
        unstated = tuple(unstated_fields(claim.text, inspection.records))
    grounded = (
        overlap >= overlap_threshold and not missing_numbers and not conflicts and not wrong_times and not wrong_days
        and not unstated
    )
    return ClaimGrounding(
        claim, stems, overlap, best, best_index, missing_words, missing_numbers, grounded, conflicts, wrong_times,
        wrong_days, unstated, _quantifiers(claim.text, inspection), stated,
    )


def _quantifiers(text: str, inspection: Inspection) -> tuple[str, ...]:
    """The count quantifiers ("many", "several", "most") of a claim that neither the context nor the question
    uses."""
    if not may_hold_quantifier(text):  # the question's words and the context's shares only when a claim needs them
        return ()
    shares = inspection.context.derive(_SHARES, _majority_of)
    return unstated_quantifiers(text, inspection.context.words, inspection.question_words, shares)


def _majority_of(context: ContextAnalysis) -> frozenset[str]:
    """The quantifiers a context's shares over half state ("70% of those infected": "most", "the majority")."""
    return MAJORITY if states_majority(context.text) else frozenset()


def _evidence(g: ClaimGrounding) -> str:
    reasons = [c.describe() for c in g.field_conflicts]
    reasons += [t.describe() for t in g.wrong_times]
    if g.wrong_days:
        reasons.append(f"the record gives no opening hours on {', '.join(d.capitalize() for d in g.wrong_days)}")
    if g.unstated:
        reasons.append(f"the record says nothing about {', '.join(g.unstated)}")
    if g.quantifiers:
        reasons.append(quantifier_evidence(g.quantifiers))
    if g.missing_numbers:
        # "States", not "occurs": "14 weeks" is unsupported where the source says "14 days", although the number
        # 14 occurs in it.
        figures = ", ".join(repr(f) for f in g.missing_numbers)
        reasons.append(f"no source states the figure{'s' if len(g.missing_numbers) > 1 else ''} {figures}")
    shared = round(g.overlap * len(g.stems))
    missing = ", ".join(repr(w) for w in g.missing_words[:_MAX_MISSING_LISTED])
    more = "" if len(g.missing_words) <= _MAX_MISSING_LISTED else f" (+{len(g.missing_words) - _MAX_MISSING_LISTED} more)"
    if g.stems or not reasons:  # a claim of times alone has no content words to count: "only 0 of 0" says nothing
        reasons.append(
            f"only {shared} of {len(g.stems)} content words occur in the retrieved context"
            + (f"; missing {missing}{more}" if missing else "")
        )
    return "; ".join(reasons)


def quantifier_evidence(quantifiers: Sequence[str]) -> str:
    """What a claim's unstated count quantifiers amount to, as its evidence says it."""
    listed = ", ".join(repr(q) for q in quantifiers)
    return f"no source says {listed} (a count or share it does not state)"


def _finding(g: ClaimGrounding, inspection: Inspection) -> Finding:
    source = chunk_id = None
    if g.best_sentence_index >= 0:
        sentence = inspection.context_sentences[g.best_sentence_index]
        source, chunk_id = sentence.text, sentence.chunk_id
    return Finding(
        type=FindingType.UNSUPPORTED,
        kind="claim",
        statement=g.claim.text,
        evidence=_evidence(g),
        source=source,
        chunk_id=chunk_id,
    )


def _details(groundings: list[ClaimGrounding], inspection: Inspection) -> dict[str, object]:
    overlaps = [round(g.overlap, 4) for g in groundings]
    best = [round(g.best_sentence_overlap, 4) for g in groundings]
    answer_stems = frozenset().union(*(g.stems for g in groundings)) if groundings else frozenset()
    # Words the answer repeats from the question are the user's own; it adds only what neither holds.
    novel = answer_stems - inspection.context_stems - inspection.question_stems
    # The per-claim counts in one pass over the claims (a pass per count was ten, for one to three claims).
    grounded = quantifiers = stated = conflicts = empty = times = days = unstated = 0
    missing: set[str] = set()
    for g in groundings:
        grounded += g.grounded
        quantifiers += len(g.quantifiers)
        stated += g.stated_values
        missing.update(g.missing_numbers)
        for conflict in g.field_conflicts:
            if conflict.empty:
                empty += 1
            else:
                conflicts += 1
        times += len(g.wrong_times)
        days += len(g.wrong_days)
        unstated += len(g.unstated)
    return {
        "claims": len(groundings),
        "grounded": grounded,
        "claim_overlaps": overlaps,
        "min_overlap": min(overlaps, default=1.0),
        "mean_overlap": round(sum(overlaps) / len(overlaps), 4) if overlaps else 1.0,
        "overlap_with_best_sentence": best,
        "min_best_sentence_overlap": min(best, default=1.0),
        "mean_best_sentence_overlap": round(sum(best) / len(best), 4) if best else 1.0,
        "answer_stems": len(answer_stems),
        "novel_stems": len(novel),
        "novel_fraction": round(len(novel) / len(answer_stems), 4) if answer_stems else 0.0,
        "unstated_quantifiers": quantifiers,
        "stated_values": stated,
        "missing_numbers": sorted(missing),
        "field_conflicts": conflicts,
        "empty_fields": empty,
        "wrong_times": times,
        "wrong_days": days,
        "unstated_fields": unstated,
        "structured": inspection.structured,
        "has_question": bool(inspection.question.strip()),
        "context_stems": len(inspection.context_stems),
    }


class FaithfulnessCheck:
    """Claim-level grounding of the answer in the retrieved context."""

    name = "faithfulness"

    def __init__(self, config: DetectorConfig) -> None:
        self._overlap_threshold = config.faithfulness_overlap_threshold
        self._threshold = config.faithfulness_threshold

    def groundings(self, inspection: Inspection) -> list[ClaimGrounding]:
        claims = extract_claims(inspection.answer_text, inspection.answer_sentences, inspection.question)
        if not claims:
            return []
        # A repair is re-inspected against the same context and mostly repeats the original's claims: the
        # inspections of one event share a memo (Inspection.memo), so each claim is grounded once.
        memo = inspection.memo
        facts: _ContextFacts | None = None
        out: list[ClaimGrounding] = []
        for claim in claims:
            key = ("grounding", self._overlap_threshold, claim.text, claim.sentence)
            grounding = memo.get(key)
            if grounding is None:
                if facts is None:
                    facts = inspection.context.derive(_FACTS, _facts_of)
                grounding = ground_claim(claim, inspection, facts, self._overlap_threshold)
                memo[key] = grounding
            out.append(grounding)
        return out

    def run(self, inspection: Inspection) -> CheckResult:
        started = time.perf_counter()
        groundings = self.groundings(inspection)
        grounded = [g for g in groundings if g.grounded]
        score = len(grounded) / len(groundings) if groundings else 1.0
        return CheckResult(
            name=self.name,
            score=score,
            flagged=score < self._threshold,
            findings=tuple(_finding(g, inspection) for g in groundings if not g.grounded),
            verified=tuple(g.claim.text for g in grounded),
            details=_details(groundings, inspection),
            latency_ms=elapsed_ms(started),
        )
