"""Numeric contradictions: the answer puts a different number on a subject than the context does.

Two shapes are caught:

- numeric: the answer's value occurs nowhere in the context (in any comparable form: "two weeks" is
  "14 days", "1,200" is "1200"), while the context gives a different value of the same dimension for the
  same subject ("30 days" vs "14 days" for returns).
- bound: the same figure under another limit ("at least 10 users" where the source says "up to 10 users", "at
  least $50,000" for "shall not exceed $50,000"); the finding's values are the whole phrases.
- currency: the same amount in another currency ("$20" where the source says "€20").
- swapped_value: the answer's value does occur in the context, but attached to another subject; the
  context gives the answer's subject a different value ("Basic costs $10, Pro costs $20" -> "Pro costs $10").

"Same subject" means shared content stems around the two values (within their clauses) and/or a context
sentence that restates the answer sentence. A number that is simply absent from the context, with nothing
competing for its subject, is not a contradiction; it is listed in `unsupported` for the scorer.
"""

from __future__ import annotations

from dataclasses import dataclass

from stream_guard.checks.alignment import (
    AnswerSentence,
    ContradictionView,
    contradiction_finding,
    neighbours,
    strongest_rival,
    surface_words,
    tied_to_subject,
)
from stream_guard.checks.dates import DateMention
from stream_guard.checks.periods import other_period, period_of, same_period
from stream_guard.text.quantities import Quantity, bears_out, comparable, same_value, values_agree, written_in
from stream_guard.text.quantities.bounds import BOUNDS
from stream_guard.wire.report import Finding


# Swap candidates compared pairwise (rivals tied to the answer's subject x mentions agreeing with its value).
# Each is at most 19 on the labelled data (the largest context pool of one dimension): neither binds there.
MAX_SWAP_RIVALS = 24
MAX_OWNERS = 32


@dataclass(frozen=True)
class _Placed:
    """A context quantity and the context sentence it sits in."""

    quantity: Quantity
    sentence: int


@dataclass(frozen=True)
class NumericAnalysis:
    findings: tuple[Finding, ...]
    unsupported: tuple[str, ...]  # literal answer quantities found nowhere in the context
    checked: int  # answer quantities looked at


def analyze_numeric(view: ContradictionView) -> NumericAnalysis:
    if not any(view.answer_quantities):
        return NumericAnalysis((), (), 0)
    pools: dict[str, list[_Placed]] | None = None

    def analyse(sentence: AnswerSentence, quantities: list[Quantity]) -> NumericAnalysis:
        nonlocal pools
        if pools is None:
            pools = _context_pools(view)
        return _analyze_sentence(view, pools, sentence, quantities)

    findings: list[Finding] = []
    unsupported: list[str] = []
    checked = 0
    for sentence, quantities in zip(view.answer, view.answer_quantities):
        if not quantities:
            continue
        # The answer's cap on values keeps a prefix of the sentence's: their number names the ones read.
        found = view.per_sentence("numeric", (sentence.text, len(quantities)),
                                  lambda sentence=sentence, quantities=quantities: analyse(sentence, quantities))
        findings += found.findings
        unsupported += found.unsupported
        checked += found.checked
    return NumericAnalysis(tuple(findings), tuple(unsupported), checked)


def _analyze_sentence(
    view: ContradictionView, pools: dict[str, list[_Placed]], sentence: AnswerSentence, quantities: list[Quantity]
) -> NumericAnalysis:
    """The numeric analysis of one answer sentence with its (checked) quantities."""
    context_text = view.inspection.context_text
    findings: list[Finding] = []
    unsupported: list[str] = []
    overlaps = view.answer_overlaps[sentence.index]
    for k, q in enumerate(quantities):
        others = neighbours(quantities, k)
        pool = [p for p in pools.get(q.dimension, ()) if comparable(q, p.quantity)]
        # The same value anywhere, or a value that bears it out said of the same subject (a range holding it,
        # a figure meeting its bound): never a limit or a range that merely does not exclude it.
        agreeing = [
            p for p in pool
            if same_value(q, p.quantity)
            or bears_out(p.quantity, q)
            and (q.counted & p.quantity.counted or _same_subject(q, p, overlaps, len(sentence.stems)) is not None)
        ]
        rivals = [p for p in pool if not _accounted(p.quantity, q, others)]
        # A bare count written anywhere in the context ("131 were affected") is attested, even when the
        # context words it differently from the answer (unless the answer makes it a limit).
        literal = q.unit is None and q.qualifier not in BOUNDS and written_in(context_text, q.magnitude)
        opposite = _opposite_bound(q, pool, agreeing, overlaps, len(sentence.stems))
        if opposite is not None:
            findings.append(_numeric_finding(view, sentence.text, q, opposite))
            continue
        if agreeing or literal:
            own_stems = sentence.stems - frozenset().union(*(o.subject for o in others))
            swap = _swapped(view, q, own_stems, agreeing, rivals, overlaps)
            if swap is not None:
                findings.append(_swap_finding(view, sentence.text, q, swap, agreeing))
            else:
                moved = _period_swap(view, sentence.text, q, agreeing, rivals, overlaps, len(sentence.stems))
                if moved is not None:
                    findings.append(_period_swap_finding(view, sentence.text, q, *moved))
                elif (rival := _coincidence(q, agreeing, rivals, overlaps)) is not None:
                    findings.append(_numeric_finding(view, sentence.text, q, rival))
            continue
        rival = _best_rival(q, rivals, overlaps, len(sentence.stems))
        if rival is None:
            other = _other_currency(q, pools, overlaps, len(sentence.stems))
            if other is not None:
                findings.append(_currency_finding(view, sentence.text, q, other))
            elif not _stated_as_amount(q, pools):  # "5 mg per day" where the context says "5 mg" is attested
                unsupported.append(q.text)
            continue
        findings.append(_numeric_finding(view, sentence.text, q, rival))
    return NumericAnalysis(tuple(findings), tuple(unsupported), len(quantities))


def _context_pools(view: ContradictionView) -> dict[str, list[_Placed]]:
    pools: dict[str, list[_Placed]] = {}
    for i, quantities in enumerate(view.context_quantities):
        for q in quantities:
            pools.setdefault(q.dimension, []).append(_Placed(q, i))
    return pools


_MONEY = frozenset("usd eur gbp jpy inr".split())


def _other_currency(
    q: Quantity, pools: dict[str, list[_Placed]], overlaps: dict[int, int], answer_stems: int
) -> _Placed | None:
    """The same amount in another currency, said of the same subject ("$20" where the source says "€20")."""
    if q.unit not in _MONEY:
        return None
    scored = [
        (*evidence, p)
        for unit in _MONEY - {q.unit}
        for p in pools.get(unit, ())
        if _same_number(q, p.quantity) and (evidence := _same_subject(q, p, overlaps, answer_stems)) is not None
    ]
    return strongest_rival(scored, lambda a, b: a.quantity.unit == b.quantity.unit)


def _currency_finding(view: ContradictionView, statement: str, q: Quantity, other: _Placed) -> Finding:
    evidence = f"answer says '{q.text}' ({q.unit.upper()}) but the source says '{other.quantity.text}' ({other.quantity.unit.upper()})"  # type: ignore[union-attr]
    return _quantity_finding(view, "currency", statement, q, other, evidence)


def _stated_as_amount(q: Quantity, pools: dict[str, list[_Placed]]) -> bool:
    """A rate whose amount the context states without a denominator, or an amount the context states as a
    rate: the figure is attested, and comparing a rate with a plain amount would not be like with like."""
    if q.numerator is not None:
        unit, amount = q.numerator
        return any(_same_amount(amount, p.quantity.value) for p in pools.get(unit, ()))
    return any(
        p.quantity.numerator is not None
        and p.quantity.numerator[0] == q.dimension
        and _same_amount(q.value, p.quantity.numerator[1])
        for dimension, placed in pools.items()
        if "/" in dimension
        for p in placed
    )


def _same_amount(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _accounted(rival: Quantity, q: Quantity, others: list[Quantity]) -> bool:
    """A context value that another quantity of the same answer sentence states, for the rival's own subject,
    is accounted for: it cannot also be the value `q` should have had ("a 32-year-old man ... a 26-year-old
    man"). When the other quantity sits on a different subject (a full swap), it does not count."""
    return any(
        comparable(o, rival) and values_agree(o, rival) and _local(o, rival) >= _local(q, rival) for o in others
    )


def _local(q: Quantity, other: Quantity) -> int:
    """Subject stems the two values share, not counting the counted noun itself ("people")."""
    return len((q.subject & other.subject) - q.counted)


def _same_limit(q: Quantity, other: Quantity) -> bool:
    return q.qualifier in BOUNDS and q.qualifier == other.qualifier and bool(q.counted) and q.counted == other.counted


def _same_subject(q: Quantity, rival: _Placed, overlaps: dict[int, int], answer_stems: int) -> tuple[int, int] | None:
    """(local, sentence) evidence that `rival` is about what `q` is about, or None when it is not."""
    local = _local(q, rival.quantity)
    shared = overlaps.get(rival.sentence, 0)
    if q.unit is None:
        if _same_limit(q, rival.quantity):
            # A limit of the same kind on the same counted thing ("no more than 3 tablets" where the source
            # says "do not exceed 2 tablets") is one limit stated twice: the counted noun is its subject.
            local += 1
        # Bare counts are common and loosely attached ("3 children", "3 times"); ask for both kinds.
        return (local, shared) if local >= 1 and shared >= 2 else None
    return (local, shared) if tied_to_subject(local, shared, answer_stems) else None


def _best_rival(q: Quantity, pool: list[_Placed], overlaps: dict[int, int], answer_stems: int) -> _Placed | None:
    scored: list[tuple[int, int, _Placed]] = []
    for placed in pool:
        evidence = _same_subject(q, placed, overlaps, answer_stems)
        if evidence is not None:
            scored.append((*evidence, placed))
    return strongest_rival(scored, lambda a, b: values_agree(a.quantity, b.quantity))


def _swapped(
    view: ContradictionView,
    q: Quantity,
    own_stems: frozenset[str],
    agreeing: list[_Placed],
    rivals: list[_Placed],
    overlaps: dict[int, int],
) -> _Placed | None:
    """A context value that belongs to the answer's subject, when the answer's own value belongs to another.

    Swaps are judged only between values the context lists side by side (same or adjacent sentence of one
    chunk): across a long document the same figure legitimately recurs for unrelated things.
    """
    if not agreeing or not q.subject:
        return None
    # However the answer's value is attested, the rival must be tied to the answer's subject more closely
    # than any mention that agrees with it, by at least two stems.
    best_agreeing = max(_local(q, p.quantity) for p in agreeing)
    agreeing = agreeing[:MAX_OWNERS]
    strong = [(local, rival) for rival in rivals if (local := _local(q, rival.quantity)) >= 2 and local > best_agreeing]
    strong.sort(key=lambda item: item[0], reverse=True)  # stable: context order among equals
    candidates: list[tuple[int, _Placed]] = []
    for local, rival in strong[:MAX_SWAP_RIVALS]:
        if values_agree(q, rival.quantity) or any(values_agree(p.quantity, rival.quantity) for p in agreeing):
            continue
        for owner in agreeing:
            owner_only = owner.quantity.subject - rival.quantity.subject
            # The owner is about something else, listed beside the rival, and the answer never names it.
            if owner_only and _adjacent(view, owner.sentence, rival.sentence) and not (own_stems & owner_only):
                candidates.append((local, rival))
                break
    if not candidates:
        return None
    candidates.sort(key=lambda item: item[0], reverse=True)
    best_local, best = candidates[0]
    if any(local == best_local and not values_agree(r.quantity, best.quantity) for local, r in candidates[1:]):
        return None  # two different values equally tied to the subject
    return best


def _opposite_bound(
    q: Quantity, pool: list[_Placed], agreeing: list[_Placed], overlaps: dict[int, int], answer_stems: int
) -> _Placed | None:
    """The answer's figure under the opposite limit, said of the same subject ("more than an hour" where the source
    says "Sim swaps usually take less than an hour"), when no mention states the answer's own limit. Another figure
    meeting the answer's limit ("within 48 hours" for "more than an hour") does not outweigh the source limiting
    the same figure the other way."""
    if q.qualifier not in BOUNDS or any(same_value(q, p.quantity) for p in agreeing):
        return None
    scored = []
    for p in pool:
        if p.quantity.qualifier not in BOUNDS or p.quantity.qualifier == q.qualifier or not _same_number(q, p.quantity):
            continue
        evidence = _same_subject(q, p, overlaps, answer_stems)
        if evidence is None and q.counted and q.counted == p.quantity.counted and overlaps.get(p.sentence, 0) >= 2:
            # The same count of the same thing limited both ways ("at least 4 doses" / "not more than 4 doses"):
            # the counted noun is the subject, as for one limit stated twice (_same_limit).
            evidence = (_local(q, p.quantity) + 1, overlaps[p.sentence])
        if evidence is not None:
            scored.append((*evidence, p))
    return strongest_rival(scored, lambda a, b: a.quantity.qualifier == b.quantity.qualifier)


# Subject stems a context value must share with the answer's value to overrule a match that shares none.
MIN_RESTATED_SUBJECT = 3


def _coincidence(q: Quantity, agreeing: list[_Placed], rivals: list[_Placed], overlaps: dict[int, int]) -> _Placed | None:
    """The context value the answer's value should have had, when the answer's value occurs in the context only
    by coincidence: every mention of it is about something else (no subject stem shared, its sentence not a
    restatement of the answer's), and a different value of the same kind is said of the answer's own subject
    ("the IRS keeps records for 6 months" where the source says "6 years" and, elsewhere, "a 6 month
    extension"). Measured quantities only: bare counts recur too freely."""
    if q.unit is None or not agreeing or len(agreeing) > MAX_OWNERS:
        return None
    if any(_local(q, p.quantity) or overlaps.get(p.sentence, 0) >= 2 for p in agreeing):
        return None
    scored = [
        (local, overlaps.get(rival.sentence, 0), rival)
        for rival in rivals[:MAX_SWAP_RIVALS]
        if (local := _local(q, rival.quantity)) >= MIN_RESTATED_SUBJECT and not values_agree(q, rival.quantity)
    ]
    return strongest_rival(scored, lambda a, b: values_agree(a.quantity, b.quantity))


def _period_swap(
    view: ContradictionView,
    statement: str,
    q: Quantity,
    agreeing: list[_Placed],
    rivals: list[_Placed],
    overlaps: dict[int, int],
    answer_stems: int,
) -> tuple[_Placed, DateMention, DateMention] | None:
    """(the source's value for the answer's period, that period, the period the source gives the answer's
    value to) when the answer's figure is stated by the source only for other periods ("$3.6 million in Q2
    2025" answered as Q3's revenue) and the source gives the answer's period a different value of the same
    kind for the same subject. None otherwise."""
    period = period_of(statement, q)
    if period is None or not agreeing:
        return None
    theirs = [period_of(_source_text(view, p), p.quantity) for p in agreeing[:MAX_OWNERS]]
    if not all(other_period(period, t) for t in theirs):
        return None
    scored = []
    for rival in rivals[:MAX_SWAP_RIVALS]:
        if values_agree(q, rival.quantity) or not same_period(period, period_of(_source_text(view, rival), rival.quantity)):
            continue
        # The shared period is subject evidence, and so is the same counted noun ("1,200 units" / "1,500 units").
        local = _local(q, rival.quantity) + 1 + bool(q.counted and q.counted == rival.quantity.counted)
        shared = overlaps.get(rival.sentence, 0)
        if tied_to_subject(local, shared, answer_stems):
            scored.append((local, shared, rival))
    best = strongest_rival(scored, lambda a, b: values_agree(a.quantity, b.quantity))
    return None if best is None else (best, period, theirs[0])  # type: ignore[return-value]


def _period_swap_finding(
    view: ContradictionView, statement: str, q: Quantity, rival: _Placed, period: DateMention, other: DateMention
) -> Finding:
    evidence = (
        f"answer gives '{q.text}' to '{period.as_written}', but the source gives '{q.text}' to "
        f"'{other.as_written}' and '{rival.quantity.text}' to '{period.as_written}'"
    )
    return _quantity_finding(view, "swapped_value", statement, q, rival, evidence)


def _source_text(view: ContradictionView, placed: _Placed) -> str:
    return view.sentence(placed.sentence).text


def _adjacent(view: ContradictionView, a: int, b: int) -> bool:
    return abs(a - b) <= 1 and view.sentence(a).chunk_index == view.sentence(b).chunk_index


def _subject_words(statement: str, *quantities: Quantity) -> str:
    shared = frozenset.intersection(*(q.subject for q in quantities))
    return surface_words(statement, shared or quantities[0].subject) or "the same subject"


def _numeric_finding(view: ContradictionView, statement: str, q: Quantity, rival: _Placed) -> Finding:
    theirs = rival.quantity
    evidence = (
        f"answer says '{q.lead}{q.text}' but the source says '{theirs.lead}{theirs.text}' "
        f"for '{_subject_words(statement, q, theirs)}'"
    )
    if q.qualifier != theirs.qualifier and _same_number(q, theirs):
        # The same figure under another limit ("at least 10" for "up to 10"): the bound words are the value.
        return contradiction_finding(
            view, rival.sentence, kind="bound", statement=statement, evidence=evidence,
            answer_value=f"{q.lead}{q.text}", source_value=f"{_PLAIN_BOUND.get(theirs.qualifier, '')}{theirs.text}",
        )
    return _quantity_finding(view, "numeric", statement, q, rival, evidence)


# The source's limit as a repair writes it into the answer's sentence ("shall not exceed $50,000" -> "no more
# than $50,000"); the evidence quotes the source as written.
_PLAIN_BOUND = {"at_most": "no more than ", "at_least": "at least ", "approx": "about "}


def _same_number(a: Quantity, b: Quantity) -> bool:
    return abs(a.low - b.low) <= max(a.precision, b.precision, 1e-9 * abs(a.low)) and abs(a.high - b.high) <= max(
        a.precision, b.precision, 1e-9 * abs(a.high)
    )


def _swap_finding(
    view: ContradictionView, statement: str, q: Quantity, rival: _Placed, agreeing: list[_Placed]
) -> Finding:
    owner = max(agreeing, key=lambda p: len(p.quantity.subject - rival.quantity.subject))
    owner_words = surface_words(_source_text(view, owner), owner.quantity.subject - rival.quantity.subject)
    subject = _subject_words(statement, q, rival.quantity)
    evidence = (
        f"answer gives '{q.text}' to '{subject}', but the source gives '{owner.quantity.text}' to "
        f"'{owner_words or 'something else'}' and '{rival.quantity.text}' to '{subject}'"
    )
    return _quantity_finding(view, "swapped_value", statement, q, rival, evidence)


def _quantity_finding(
    view: ContradictionView, kind: str, statement: str, q: Quantity, rival: _Placed, evidence: str
) -> Finding:
    # Both kinds are patched the same way: the answer's literal value is replaced by the rival's.
    return contradiction_finding(
        view,
        rival.sentence,
        kind=kind,
        statement=statement,
        evidence=evidence,
        answer_value=q.text,
        source_value=rival.quantity.text,
    )
