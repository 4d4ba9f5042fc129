"""Strategy: contradiction patch. Put the source's value where the answer got it wrong, in place.

Two steps:

1. Every contradiction finding that names the literal wrong value (`answer_value`) and the source's value
   (`source_value`) is patched inside its own answer sentence. All spans are located on the unpatched
   text first and applied right to left, so one replacement can never be re-matched by another
   ("$10" -> "$120" followed by "$12" -> ... cannot touch the new "$120"). A negation flip is the
   exception: its sentence is replaced by the source sentence (see `_sentence_edit`).

2. Billing wording is normalised to the source's cycle in ONE ordered pass. The overall direction
   (e.g. monthly -> annual) is decided first, from billing findings or from the cycle the contradicted
   source sentences name. Then a single regex whose alternatives list specific multi-word phrases before
   bare adjectives rewrites each phrase exactly once. Running the phrases as separate substitutions is
   what produces "yearly subscription annually"-style wreckage; a single pass cannot.

A patch touches only the contradicted sentences: a value is replaced inside the sentence the finding
names (or, when that sentence cannot be found, inside the one sentence that holds the value), and the
billing pass runs over those sentences alone. "Our monthly newsletter is free" stays monthly when
another sentence got the plan's billing cycle wrong.

A patch speaks in the answer's voice. A sentence that asserts nothing ("Sure!", "Here is a summary:") is never
a patch's target, whatever a finding says. A polarity flip ("supports" where the source says "does not
support") is swapped in place when the two phrases differ only in their negation and auxiliaries; otherwise
the source sentence takes the answer sentence's place only when it reads like the answer (no first person,
quotation or crawl artefact the answer did not have: readability.reading_problems), and when it does not, the
contradicted sentence is dropped (the healer's note names it) rather than spliced.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Callable, Iterable, Sequence

from stream_guard.heal import edits
from stream_guard.heal.readability import readability_problems, reading_problems
from stream_guard.heal.result import CONTRADICTION_PATCH, Attempt, Change
from stream_guard.text.claims import extract_claims
from stream_guard.text.markup import Markup
from stream_guard.text.spans import sentence_spans
from stream_guard.text.words import NEGATORS, stem
from stream_guard.wire.report import Finding, FindingType

MONTHLY, ANNUAL, WEEKLY, QUARTERLY = "monthly", "annual", "weekly", "quarterly"
CYCLES = (MONTHLY, ANNUAL, WEEKLY, QUARTERLY)


@dataclass(frozen=True)
class _CycleWords:
    unit: str  # per month
    adjective: str  # monthly subscription
    adverb: str  # billed monthly
    slash_short: str  # $10/mo
    slash_long: str  # $10/month
    # Every adjective / adverb spelling that names this cycle in an answer.
    adjectives: tuple[str, ...]
    adverbs: tuple[str, ...]
    slashes: tuple[str, ...]


_WORDS: dict[str, _CycleWords] = {
    MONTHLY: _CycleWords("month", "monthly", "monthly", "/mo", "/month", ("monthly",), ("monthly",), ("/month", "/mo")),
    ANNUAL: _CycleWords(
        "year", "annual", "annually", "/yr", "/year",
        ("annual", "yearly"), ("annually", "yearly"), ("/year", "/yr"),
    ),
    WEEKLY: _CycleWords("week", "weekly", "weekly", "/wk", "/week", ("weekly",), ("weekly",), ("/week", "/wk")),
    QUARTERLY: _CycleWords(
        "quarter", "quarterly", "quarterly", "/qtr", "/quarter", ("quarterly",), ("quarterly",), ("/quarter", "/qtr")
    ),
}

# Nouns a billing adjective commonly qualifies. A cycle word before any other noun is still rewritten by
# the bare-adjective fallback; listing the common ones keeps their (noun-preserving) change logged as one
# phrase, which is what an operator reads.
_BILLING_NOUNS = (
    "subscriptions", "subscription", "plans", "plan", "billing", "fees", "fee", "payments", "payment",
    "pricing", "price", "charges", "charge", "memberships", "membership", "renewals", "renewal", "cost",
    "rate", "contracts", "contract", "invoices", "invoice", "license", "licence", "term", "cycle",
)
_BILLING_VERBS = ("billed", "charged", "paid", "payable", "invoiced", "renewed", "renews")

# After a bare cycle word, these mean it was used as an adverb ("paid monthly and ...").
_NOT_A_NOUN = frozenset(
    "and or but at in on for with to by from the a an of as if so than then via per until unless".split()
)


def _alt(options: Iterable[str]) -> str:
    return "|".join(re.escape(o) for o in sorted(options, key=len, reverse=True))


def _match_case(template: str, replacement: str) -> str:
    if template.isupper() and len(template) > 1:
        return replacement.upper()
    if template[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


_Render = Callable[["re.Match[str]", _CycleWords], str]


def _phrase_table(source: _CycleWords) -> list[tuple[str, _Render]]:
    """(pattern, render) pairs for one source cycle, most specific first: the order IS the fix."""
    adj, adv, slash = _alt(source.adjectives), _alt(source.adverbs), _alt(source.slashes)
    unit = re.escape(source.unit)
    return [
        # "billed monthly", "paid annually"
        (rf"\b(?P<verb>{_alt(_BILLING_VERBS)})\s+(?:{adv})\b", lambda m, t: f"{m['verb']} {t.adverb}"),
        # "annually billed"
        (rf"\b(?:{adv})\s+(?P<verb2>{_alt(_BILLING_VERBS)})\b", lambda m, t: f"{t.adverb} {m['verb2']}"),
        # "monthly subscription", "yearly plan"
        (rf"\b(?:{adj})\s+(?P<noun>{_alt(_BILLING_NOUNS)})\b", lambda m, t: f"{t.adjective} {m['noun']}"),
        # "per month", "every month", "each month"
        (rf"\b(?P<prep>per|every|each)\s+{unit}\b", lambda m, t: f"{m['prep']} {t.unit}"),
        # "$10 a month" (only right after a figure, so "within a month" stays a duration)
        (rf"(?<=\d\s)a\s+{unit}\b", lambda m, t: f"a {t.unit}"),
        # "$10/mo", "$10/month": keep the short or long style the answer used
        (
            rf"(?P<slash>{slash})\b",
            lambda m, t: t.slash_short if len(m["slash"]) <= 3 else t.slash_long,
        ),
        # Bare "monthly" / "annually" / "yearly": adjective before a noun, adverb otherwise.
        (rf"\b(?P<bare>{_alt(set(source.adjectives) | set(source.adverbs))})\b(?=(?P<after>\s+\w+)?)", _render_bare),
    ]


def _render_bare(m: "re.Match[str]", target: _CycleWords) -> str:
    word = m["bare"].lower()
    following = (m["after"] or "").strip().lower()
    if word in ("annual",):
        return target.adjective
    if word in ("annually",):
        return target.adverb
    used_as_adjective = bool(following) and following not in _NOT_A_NOUN and not following.isdigit()
    return target.adjective if used_as_adjective else target.adverb


def normalize_billing(text: str, source_cycle: str, target_cycle: str) -> tuple[str, tuple[Change, ...]]:
    """Rewrite every `source_cycle` billing phrase in `text` to `target_cycle`, in one pass."""
    if source_cycle == target_cycle or source_cycle not in _WORDS or target_cycle not in _WORDS:
        return text, ()
    table, combined = _phrases(source_cycle)
    target = _WORDS[target_cycle]
    changes: list[Change] = []

    def replace(m: "re.Match[str]") -> str:
        index = _which(m, len(table))
        before = m.group(0)
        after = _match_case(before, table[index][1](m, target))
        if after != before:
            changes.append(
                Change("billing", before, after, f"Normalized billing cycle '{before}' -> '{after}' ({source_cycle} -> {target_cycle})")
            )
        return after

    return combined.sub(replace, text), tuple(changes)


@cache
def _phrases(source_cycle: str) -> tuple[list[tuple[str, _Render]], re.Pattern[str]]:
    """The phrase table of one source cycle and its patterns as one, built once per process (four cycles)."""
    table = _phrase_table(_WORDS[source_cycle])
    return table, re.compile("|".join(f"(?P<p{i}>{pattern})" for i, (pattern, _) in enumerate(table)), re.IGNORECASE)


def _which(m: "re.Match[str]", count: int) -> int:
    # The outer alternative that matched; lastgroup is not reliable with nested named groups.
    for i in range(count):
        if m.group(f"p{i}") is not None:
            return i
    return 0


def cycles_in(text: str) -> Counter[str]:
    """How often each billing cycle is named in `text` (per month, billed annually, /yr, yearly ...)."""
    counts: Counter[str] = Counter()
    for cycle, pattern in _cycle_patterns():
        counts[cycle] = len(pattern.findall(text))
    return +counts


@cache
def _cycle_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each cycle's spellings as one pattern, built once per process (a patch asks for them several times)."""
    return tuple(
        (cycle, re.compile(
            rf"\b(?:per|every|each)\s+{words.unit}\b|(?<=\d\s)a\s+{words.unit}\b"
            rf"|\b(?:{_alt(set(words.adjectives) | set(words.adverbs))})\b|(?:{_alt(words.slashes)})\b",
            re.IGNORECASE,
        ))
        for cycle, words in _WORDS.items()
    )


def _cycle_name(value: str | None) -> str | None:
    if not value:
        return None
    lowered = value.strip().lower()
    aliases = {"month": MONTHLY, "year": ANNUAL, "yearly": ANNUAL, "annually": ANNUAL, "week": WEEKLY, "quarter": QUARTERLY}
    if lowered in CYCLES:
        return lowered
    if lowered in aliases:
        return aliases[lowered]
    found = cycles_in(value)
    return found.most_common(1)[0][0] if len(found) == 1 else None


def billing_direction(answer: str, findings: Sequence[Finding]) -> tuple[list[str], str] | None:
    """(cycles to rewrite, target cycle), or None when the billing wording should be left alone.

    Billing findings say it outright. Otherwise the cycle named by the contradicted source sentences is
    the target, but only when the answer names exactly one other cycle: with two cycles in the answer
    ("$120 a year or $10 a month") we cannot tell which phrase the contradiction was about.
    """
    billing = [f for f in findings if f.kind == "billing"]
    targets = Counter(c for c in (_cycle_name(f.source_value) for f in billing) if c)
    if targets:
        target = targets.most_common(1)[0][0]
        sources = {c for c in (_cycle_name(f.answer_value) for f in billing) if c and c != target}
        sources |= {c for c in cycles_in(answer) if c != target}
        return (sorted(sources), target) if sources else None
    source_cycles = cycles_in(" ".join(f.source or "" for f in findings))
    if not source_cycles:
        return None
    target = source_cycles.most_common(1)[0][0]
    named = set(cycles_in(answer))
    if len(named) == 1 and target not in named:
        return [named.pop()], target
    return None


def _value_pattern(value: str) -> re.Pattern[str]:
    # The value must stand alone: "$10" must not match inside "$100" or "$10.50", "30 days" not in "130 days".
    return re.compile(rf"(?<![\w$€£.]){re.escape(value)}(?![\w]|[.,]\d)")


def statement_span(answer: str, finding: Finding) -> tuple[int, int] | None:
    """Where the finding's answer sentence sits in the answer, or None."""
    if not finding.statement:
        return None
    start = answer.find(finding.statement)
    return (start, start + len(finding.statement)) if start >= 0 else None


def _only_sentence_with(answer: str, value: str) -> tuple[int, int] | None:
    """The one answer sentence that holds `value`; None when none or several do (we cannot tell which)."""
    pattern = _value_pattern(value)
    holding = [(start, end) for start, end, sentence in sentence_spans(answer) if pattern.search(sentence)]
    return holding[0] if len(holding) == 1 else None


def _locate(answer: str, finding: Finding, taken: list[tuple[int, int]]) -> tuple[int, int] | None:
    assert finding.answer_value is not None
    region = statement_span(answer, finding) or _only_sentence_with(answer, finding.answer_value)
    if region is None:
        return None
    regions = [region]
    for flags in (0, re.IGNORECASE):
        pattern = re.compile(_value_pattern(finding.answer_value).pattern, flags)
        for lo, hi in regions:
            for m in pattern.finditer(answer, lo, hi):
                span = (m.start(), m.end())
                if not any(a < span[1] and span[0] < b for a, b in taken):
                    return span
    return None


def _sentence_edit(answer: str, finding: Finding, taken: list[tuple[int, int]]) -> tuple[int, int, str] | None:
    """Swap a whole answer sentence for its source sentence, or drop it (empty replacement).

    Used for polarity flips whose phrases cannot be swapped in place: the answer's "can cancel" and the source's
    "cannot be cancelled" are not interchangeable literals (splicing one into the other's grammar gives "You
    cannot be cancelled your subscription"). The source sentence is grounded and grammatical, but it is taken
    only when it reads like the answer; otherwise the sentence goes.
    """
    if not finding.source or not finding.statement:
        return None
    start = answer.find(finding.statement)
    if start < 0:
        return None
    span = (start, start + len(finding.statement))
    if any(a < span[1] and span[0] < b for a, b in taken):
        return None
    source = finding.source.strip()
    if readability_problems(source) or reading_problems(source, finding.statement):
        return span[0], span[1], ""
    return span[0], span[1], source


# Words that carry a polarity flip's grammar but not its content: "does not support" vs "supports".
_AUXILIARIES = frozenset(
    "do does did is are was were be been being am can could will would shall should may might must has have had "
    "ever any".split())
# "Do" only carries the negation of a simple verb ("supports" -> "does not support"); any other auxiliary is
# part of the verb's form ("can cancel" is not "cannot be cancelled").
_DO = frozenset({"do", "does", "did"})


def _swappable(answer_value: str | None, source_value: str | None) -> bool:
    """Whether two polarity phrases differ only in their negation, so one can replace the other in the answer's
    own sentence: the same content words and the same auxiliaries but "do" ("supports" -> "does not support",
    "can cancel" -> "cannot cancel"; not "includes" -> "is not included")."""
    if not answer_value or not source_value:
        return False

    def parts(text: str) -> tuple[frozenset[str], frozenset[str]]:
        words = re.findall(r"[A-Za-z]+", text.lower().replace("n't", " not").replace("cannot", "can not"))
        content = frozenset(stem(w) for w in words if w not in NEGATORS and w not in _AUXILIARIES)
        return content, frozenset(w for w in words if w in _AUXILIARIES and w not in _DO)

    ours, theirs = parts(answer_value), parts(source_value)
    return bool(ours[0]) and ours == theirs


def _asserts(statement: str | None) -> bool:
    """Whether an answer sentence asserts anything a patch could correct ("Sure!" does not)."""
    return bool(statement and extract_claims(statement))


def replace_values(answer: str | Markup, findings: Sequence[Finding]) -> tuple[str, tuple[Change, ...]]:
    """Swap each contradicted literal for the source's literal inside its own sentence.

    Polarity findings whose phrases cannot be swapped replace (or drop) their whole sentence and are placed
    first, so a value edit inside the same sentence cannot half-patch what the sentence edit replaces anyway.
    Everything is found in the answer's plain text (where the checks found it) and written back through the
    markup reader, so the answer's markdown and the markers of what it keeps stay.
    """
    markup = edits.read(answer)
    plain = markup.plain
    found: list[tuple[int, int, str, Finding]] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    claims = [f for f in findings if _asserts(f.statement)]
    whole = [f for f in claims if f.kind == "negation" and not _swappable(f.answer_value, f.source_value)]
    for finding in whole + [f for f in claims if f not in whole]:
        taken = [(lo, hi) for lo, hi, _, _ in found]
        if finding in whole:
            sentence = _sentence_edit(plain, finding, taken)
            if sentence is not None:
                found.append((*sentence, finding))
            continue
        if finding.kind == "billing" and _cycle_name(finding.answer_value) in CYCLES:
            continue  # cycle names are handled by the billing pass, not literally
        a, s = finding.answer_value, finding.source_value
        if not a or not s or a == s or (finding.statement, a, s) in seen:
            continue
        seen.add((finding.statement, a, s))
        span = _locate(plain, finding, taken)
        if span is not None:
            found.append((span[0], span[1], s, finding))
    ordered = sorted(found, key=lambda e: e[0])
    values = [(lo, hi, value if finding in whole else _match_case(plain[lo:hi], value)) for lo, hi, value, finding in ordered]
    patched = edits.replace(markup, values) if values else markup.original
    return patched, tuple(_describe(plain, edit, edit[3] in whole) for edit in ordered)


def _describe(answer: str, edit: tuple[int, int, str, Finding], whole: bool) -> Change:
    lo, hi, value, finding = edit
    before = answer[lo:hi]
    if whole and not value:
        return Change("drop_sentence", before, "", "Removed a sentence that contradicts the source (the source "
                                                     "sentence does not read like the answer)")
    if whole:
        return Change("replace_sentence", before, value, "Replaced a sentence that negates the source with the source sentence")
    where = f" per source: {finding.source}" if finding.source else ""
    return Change("replace", before, value, f"Replaced '{before}' with '{value}' ({finding.kind or 'contradiction'}){where}")


def _contradicted_sentences(patched: str, original: str, findings: Sequence[Finding]) -> list[tuple[int, int]]:
    """Spans, in the patched text, of the answer sentences a contradiction names (after value edits)."""
    originals = {f.statement for f in findings if f.statement and f.statement in original}
    return [
        (start, end) for start, end, sentence in sentence_spans(patched)
        if any(_same_sentence(sentence, s) for s in originals)
    ]


def _same_sentence(patched_sentence: str, statement: str) -> bool:
    """A patched sentence is the statement with values swapped: compare the words around the values."""
    a = re.sub(r"[\d$€£.,/%]+", " ", patched_sentence.lower()).split()
    b = re.sub(r"[\d$€£.,/%]+", " ", statement.lower()).split()
    return bool(a) and (a == b or (len(set(a) & set(b)) >= 0.7 * max(len(set(a)), len(set(b)))))


def _normalize_in_sentences(
    patched: str, original: str, findings: Sequence[Finding], sources: Sequence[str], target: str
) -> tuple[str, tuple[Change, ...]]:
    changes: list[Change] = []
    for lo, hi in sorted(_contradicted_sentences(patched, original, findings), reverse=True):
        piece = patched[lo:hi]
        for source in sources:
            piece, more = normalize_billing(piece, source, target)
            changes.extend(more)
        patched = patched[:lo] + piece + patched[hi:]
    return patched, tuple(changes)


def patch(answer: str | Markup, findings: Sequence[Finding]) -> Attempt:
    """Contradiction patch over the answer's contradiction findings; text None when nothing could be patched."""
    markup = edits.read(answer)
    contradictions = [f for f in findings if f.type is FindingType.CONTRADICTION]
    patched, changes = replace_values(markup, contradictions)
    # The direction is read from what the model wrote: a source sentence swapped in for a negation flip
    # names the target cycle and must not make the answer look like it already mixes two cycles.
    direction = billing_direction(markup.plain, contradictions)
    if direction is not None:
        sources, target = direction
        patched, billing_changes = _normalize_in_sentences(patched, markup.plain, contradictions, sources, target)
        changes += billing_changes
    if not changes or patched == markup.original:
        return Attempt(CONTRADICTION_PATCH, None, ())
    return Attempt(CONTRADICTION_PATCH, patched, changes)
