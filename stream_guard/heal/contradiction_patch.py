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
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from stream_guard.heal.result import CONTRADICTION_PATCH, Attempt, Change
from stream_guard.wire.report import Finding, FindingType
from stream_guard.text.spans import sentence_spans

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
    table = _phrase_table(_WORDS[source_cycle])
    target = _WORDS[target_cycle]
    combined = re.compile("|".join(f"(?P<p{i}>{pattern})" for i, (pattern, _) in enumerate(table)), re.IGNORECASE)
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


def _which(m: "re.Match[str]", count: int) -> int:
    # The outer alternative that matched; lastgroup is not reliable with nested named groups.
    for i in range(count):
        if m.group(f"p{i}") is not None:
            return i
    return 0


def cycles_in(text: str) -> Counter[str]:
    """How often each billing cycle is named in `text` (per month, billed annually, /yr, yearly ...)."""
    counts: Counter[str] = Counter()
    for cycle, words in _WORDS.items():
        pattern = (
            rf"\b(?:per|every|each)\s+{words.unit}\b|(?<=\d\s)a\s+{words.unit}\b"
            rf"|\b(?:{_alt(set(words.adjectives) | set(words.adverbs))})\b|(?:{_alt(words.slashes)})\b"
        )
        counts[cycle] = len(re.findall(pattern, text, re.IGNORECASE))
    return +counts


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
    """Swap a whole answer sentence for its source sentence.

    Used for negation flips: the answer's "can cancel" and the source's "cannot be cancelled" are not
    interchangeable literals (splicing one into the other's grammar gives "You cannot be cancelled your
    subscription"), but the source sentence itself is grounded and grammatical.
    """
    if not finding.source or not finding.statement:
        return None
    start = answer.find(finding.statement)
    if start < 0:
        return None
    span = (start, start + len(finding.statement))
    if any(a < span[1] and span[0] < b for a, b in taken):
        return None
    return span[0], span[1], finding.source.strip()


def replace_values(answer: str, findings: Sequence[Finding]) -> tuple[str, tuple[Change, ...]]:
    """Swap each contradicted literal for the source's literal inside its own sentence.

    Negation findings replace their whole sentence with the source sentence and are placed first, so a
    value edit inside the same sentence cannot half-patch what the sentence swap replaces anyway.
    """
    edits: list[tuple[int, int, str, Finding]] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    ordered = sorted(findings, key=lambda f: f.kind != "negation")
    for finding in ordered:
        taken = [(lo, hi) for lo, hi, _, _ in edits]
        if finding.kind == "negation":
            sentence = _sentence_edit(answer, finding, taken)
            if sentence is not None:
                edits.append((*sentence, finding))
            continue
        if finding.kind == "billing" and _cycle_name(finding.answer_value) in CYCLES:
            continue  # cycle names are handled by the billing pass, not literally
        a, s = finding.answer_value, finding.source_value
        if not a or not s or a == s or (finding.statement, a, s) in seen:
            continue
        seen.add((finding.statement, a, s))
        span = _locate(answer, finding, taken)
        if span is not None:
            edits.append((span[0], span[1], s, finding))
    patched = answer
    for lo, hi, value, finding in sorted(edits, key=lambda e: e[0], reverse=True):
        replacement = value if finding.kind == "negation" else _match_case(patched[lo:hi], value)
        patched = patched[:lo] + replacement + patched[hi:]
    return patched, tuple(_describe(answer, edit) for edit in sorted(edits, key=lambda e: e[0]))


def _describe(answer: str, edit: tuple[int, int, str, Finding]) -> Change:
    lo, hi, value, finding = edit
    before = answer[lo:hi]
    if finding.kind == "negation":
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


def patch(answer: str, findings: Sequence[Finding]) -> Attempt:
    """Contradiction patch over the answer's contradiction findings; text None when nothing could be patched."""
    contradictions = [f for f in findings if f.type is FindingType.CONTRADICTION]
    patched, changes = replace_values(answer, contradictions)
    # The direction is read from what the model wrote: a source sentence swapped in for a negation flip
    # names the target cycle and must not make the answer look like it already mixes two cycles.
    direction = billing_direction(answer, contradictions)
    if direction is not None:
        sources, target = direction
        patched, billing_changes = _normalize_in_sentences(patched, answer, contradictions, sources, target)
        changes += billing_changes
    if not changes or patched == answer:
        return Attempt(CONTRADICTION_PATCH, None, ())
    return Attempt(CONTRADICTION_PATCH, patched, changes)
