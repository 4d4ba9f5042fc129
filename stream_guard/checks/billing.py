"""Billing-cycle contradictions: the answer bills monthly where the context bills annually (and the like).

Cycles are "weekly", "monthly", "quarterly" and "annual". A cycle word counts only in a billing sense: near
a price or a billing word ("$10 per month", "billed annually", "monthly subscription"), and not as part of
"annual report", "monthly newsletter" or "annual revenue". An answer sentence contradicts when it states a
cycle that the context never uses for billing, while the context bills in another cycle; if the context
offers several cycles, the one in the context sentence best aligned with the answer sentence decides, and
only when that sentence states no other.

A cycle word plays one of two roles, compared separately: the period a price is stated for ("$20 per user per
month", "1.5% per month") and how often billing or renewal happens ("billed annually", "renews every month",
"successive one (1) year terms"). "$20 per user per year, billed quarterly" against "$20 per user per month,
billed monthly" is two contradictions; the evidence quotes the terms as written on both sides.

Findings carry normalised cycle names as `answer_value` / `source_value` (the healer rewrites every
phrasing of a cycle, so the literal words are not needed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stream_guard.checks.alignment import ContradictionView, contradiction_finding
from stream_guard.text import regex_cache
from stream_guard.wire.report import Finding
from stream_guard.text.words import stem

CYCLES = ("weekly", "monthly", "quarterly", "annual")
_ADVERB = {"weekly": "weekly", "monthly": "monthly", "quarterly": "quarterly", "annual": "annually"}

# A figure is read from its first digit only (the look-behind) and never given back, so a long run of digits
# is scanned once rather than once per digit.
_MONEY = (
    r"(?:[$€£¥₹]\s?\d[\d,]*+(?:\.\d+)?(?:\s?(?:k|m|bn|million|billion))?"
    r"|(?<![\d,.])\d[\d,]*+(?:\.\d++)?\s?(?:dollars|euros|usd|eur|gbp))"
)
_CYCLE_PATTERNS: dict[str, str] = {
    "weekly": r"\bweekly\b|\b(?:per|every|each|a)\s+week\b|/\s?(?:wk|week)\b",
    "monthly": (
        r"\bmonthly\b|\b(?:per|every|each|a)\s+month\b|\bmonth[-\s]to[-\s]month\b|/\s?(?:mo|mth|month)\b|\bmo\.\s"
        r"|\b(?:one|1)(?:\s*+\(1\))?[-\s]month\s+terms?\b"
    ),
    "quarterly": r"\bquarterly\b|\b(?:per|every|each|a)\s+quarter\b|\bevery\s+(?:three|3)\s+months\b",
    "annual": (
        r"\bannual(?:ly)?\b|\byearly\b|\b(?:per|every|each|a)\s+(?:year|annum)\b|/\s?(?:yr|year)\b"
        r"|\bper\s+yr\b|\bp\.a\.|\b(?:one|1)(?:\s*+\(1\))?[-\s]year\s+terms?\b"
    ),
}
_CYCLE_RE = regex_cache.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _CYCLE_PATTERNS.items()), re.IGNORECASE)
_MONEY_RE = regex_cache.compile(_MONEY, re.IGNORECASE | re.ASCII)
_CYCLE_NEEDLES = ("week", "month", "quarter", "annu", "year", "/mo", "/yr", "/wk", "p.a.")
_BILLING_WORD_RE = regex_cache.compile(
    r"\b(?:bill(?:ed|ing|s)?|charg(?:e|ed|es|ing)|subscri(?:be|bed|ption|ptions)|plans?|fees?|pric(?:e|ed|es|ing)|"
    r"costs?|pay(?:s|ing|ment|ments|able)?|paid|invoic(?:e|ed|es|ing)|renew(?:s|ed|al|als)?|membership|premiums?|"
    r"dues|rent|tuition|licen[cs]es?|installments?|contract|interest|apr|overdue|accru(?:e|es|ed|ing))\b",
    re.IGNORECASE,
)
# "annual report", "monthly newsletter": the cycle word names how often something happens, not billing.
_NOT_BILLING_AFTER_RE = regex_cache.compile(
    r"\s++(?:report|reports|meeting|meetings|conference|event|events|festival|newsletter|newsletters|review|reviews|"
    r"revenue|revenues|sales|income|profit|profits|earnings|growth|rainfall|leave|holiday|percentage|salary|"
    r"return|returns|output|production|budget|check-?up|survey|update|updates|issue|magazine|average|basis)\b",
    re.IGNORECASE,
)
_CYCLE_STEMS = frozenset(
    stem(w) for w in "week weekly month monthly quarter quarterly annual annually year yearly annum bill billed".split()
)
_WINDOW = 48  # characters either side of a cycle word in which a price or a billing word must appear
# Sentences compared pairwise (answer sentences stating a cycle x context sentences billing in one). The
# labelled data has at most 1 and 7: neither binds there.
MAX_ANSWER_SENTENCES = 32
MAX_CONTEXT_SENTENCES = 128


PERIOD, CYCLE = "period", "cycle"


@dataclass(frozen=True)
class CycleMention:
    """A billing cycle word as written. `role` is PERIOD when it is the period a price is stated for ("$20 per
    user per month", "1.5% per month", "$5 a month") and CYCLE when it says how often billing or renewal happens
    ("billed annually", "renews every month", "monthly subscription"): "$20 per month, billed annually" states
    both, and each is compared with the source's of the same role."""

    cycle: str
    text: str
    start: int
    end: int
    role: str = CYCLE


def may_mention_cycle(text: str) -> bool:
    """Substring pre-test; the cycle regex is slow to run over long contexts."""
    low = text.lower()
    return any(needle in low for needle in _CYCLE_NEEDLES)


def billing_cycles(text: str) -> list[CycleMention]:
    """Cycle words used in a billing sense, in order."""
    out: list[CycleMention] = []
    for m in _CYCLE_RE.finditer(text):
        cycle = m.lastgroup or ""
        if _NOT_BILLING_AFTER_RE.match(text, m.end()):
            continue
        # "a month" is a cycle only right after a price ("$10 a month"); otherwise it is a duration.
        if m.group().lower().startswith(("a ",)) and not _MONEY_RE.search(text, max(0, m.start() - 24), m.start()):
            continue
        lo, hi = max(0, m.start() - _WINDOW), min(len(text), m.end() + _WINDOW)
        if _MONEY_RE.search(text, lo, hi) or _BILLING_WORD_RE.search(text, lo, hi):
            out.append(CycleMention(cycle, m.group(), m.start(), m.end(), _role(text, m.start(), m.group())))
    return out


# A price (or a rate in percent) and the "per ..." chain that follows it up to the cycle word: "$20 per user per",
# "1.5% per", "$5 per 100 GB per", "$5 a".
_PRICED_RE = regex_cache.compile(
    r"(?:[$€£¥₹]\s?\d[\d,.]*+|\d[\d,.]*+\s?(?:%|percent|dollars|euros|usd|eur|gbp))"
    r"(?:\s*+(?:k|m|bn|million|billion))?(?:\s++(?:per|a|an|each|for)\s++(?:\d[\d,.]*+\s++)?[a-z]++)*+\s*+$",
    re.IGNORECASE,
)


def _role(text: str, start: int, written: str) -> str:
    """PERIOD when the cycle word follows a price through "per"/"a"/"/" ("$20 per user per month"), else CYCLE."""
    head = written.lower()
    if not head.startswith(("per ", "a ", "an ", "each ", "/")):
        return CYCLE
    return PERIOD if _PRICED_RE.search(text, max(0, start - 48), start) else CYCLE


def analyze_billing(view: ContradictionView) -> list[Finding]:
    answer_cycles = [billing_cycles(a.text) if may_mention_cycle(a.text) else [] for a in view.answer]
    if not any(answer_cycles):
        return []
    context: dict[int, list[CycleMention]] = {}
    for i, s in enumerate(view.inspection.context_sentences):
        if len(context) >= MAX_CONTEXT_SENTENCES:
            break
        if may_mention_cycle(s.text):
            found = billing_cycles(s.text)
            if found:
                context[i] = found
    if not context:
        return []
    findings: list[Finding] = []
    stating = [(sentence, mentions) for sentence, mentions in zip(view.answer, answer_cycles) if mentions]
    for sentence, mentions in stating[:MAX_ANSWER_SENTENCES]:
        # Alignment without the cycle words themselves: they are what differs, not what the sentence is about.
        stems = sentence.stems - _CYCLE_STEMS
        overlaps = {i: len(stems & view.context.stems[i]) for i in context}
        for role in (PERIOD, CYCLE):
            stated = {m.cycle for m in mentions if m.role == role}
            if len(stated) != 1:
                continue  # none, or "$10 a month or $100 a year": several offers, not one to check
            (cycle,) = stated
            in_role = {i: found for i, m in context.items() if (found := [x for x in m if x.role == role])}
            if not in_role:
                continue
            used = {m.cycle for found in in_role.values() for m in found}
            source = _contradicting_sentence(cycle, used, in_role, overlaps)
            if source is None:
                continue
            mention = next(m for m in mentions if m.role == role)
            finding = _finding(view, sentence.text, mention, mentions, source, in_role[source])
            if not any((f.statement, f.answer_value, f.source_value) == (finding.statement, finding.answer_value,
                                                                       finding.source_value) for f in findings):
                findings.append(finding)  # "$10 per month, billed monthly" against annual: one finding, not two
    return findings


def _contradicting_sentence(
    cycle: str, used: set[str], context: dict[int, list[CycleMention]], overlaps: dict[int, int]
) -> int | None:
    """The context sentence that bills in another cycle, or None when the context allows `cycle`."""
    ranked = sorted(context, key=lambda i: overlaps.get(i, 0), reverse=True)
    if cycle not in used:
        others = [i for i in ranked if cycle not in {m.cycle for m in context[i]}]
        if not others:
            return None
        best = others[0]
        other_cycles = {m.cycle for m in context[best]}
        # Several other cycles and nothing aligning the answer with one of them: do not pick at random.
        if (len(used) > 1 and overlaps.get(best, 0) < 2) or len(other_cycles) > 1:
            return None
        return best
    # The context uses this cycle somewhere: contradict only when the sentence restating this one says otherwise.
    best = ranked[0]
    if overlaps.get(best, 0) < 1:
        return None
    cycles = {m.cycle for m in context[best]}
    if cycle in cycles or len(cycles) != 1:
        return None
    if any(overlaps.get(i, 0) >= overlaps[best] and cycle in {m.cycle for m in context[i]} for i in ranked[1:]):
        return None
    return best


def _finding(
    view: ContradictionView,
    statement: str,
    mention: CycleMention,
    mentions: list[CycleMention],
    source_id: int,
    source_mentions: list[CycleMention],
) -> Finding:
    theirs = source_mentions[0]
    ours_terms = _terms(statement, mentions)
    theirs_terms = _terms(view.sentence(source_id).text, billing_cycles(view.sentence(source_id).text))
    what = "states the price" if mention.role == PERIOD else "bills"
    return contradiction_finding(
        view,
        source_id,
        kind="billing",
        statement=statement,
        evidence=(
            f"answer {what} {_ADVERB[mention.cycle]} ('{ours_terms}') but the source {what} "
            f"{_ADVERB[theirs.cycle]} ('{theirs_terms}')"
        ),
        answer_value=mention.cycle,
        source_value=theirs.cycle,
    )


_PRICE_BEFORE_RE = regex_cache.compile(_MONEY + r"|\d[\d,.]*+\s?%", re.IGNORECASE)


def _terms(text: str, mentions: list[CycleMention]) -> str:
    """The billing terms as written: from the price before the first cycle word (if one is near) to the last
    cycle word of the same stretch ("$20 per user per month, billed monthly")."""
    if not mentions:
        return ""
    first, last = mentions[0], mentions[0]
    for m in mentions[1:]:
        if m.start - last.end > _WINDOW:
            break
        last = m
    start = first.start
    for price in _PRICE_BEFORE_RE.finditer(text, max(0, first.start - _WINDOW), first.start):
        start = price.start()
        break
    return text[start : last.end]
