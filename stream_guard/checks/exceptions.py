"""Exception contradictions: the answer takes into its scope what the source leaves out, or the other way round
("open every day including public holidays" for "open every day except public holidays", "prices excluding
VAT" for "prices including VAT"). Only exceptions naming the same thing are compared."""

from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView, contradiction_finding, first_disagreeing, restating
from stream_guard.text.exceptions import Scope, scopes
from stream_guard.wire.report import Finding


def analyze_exceptions(view: ContradictionView) -> list[Finding]:
    findings: list[Finding] = []
    for sentence in view.answer:
        for ours in scopes(sentence.text)[:4]:
            candidates = restating(view, sentence, ours.stems, minimum=1)
            hit = first_disagreeing(candidates, lambda i: scopes(view.sentence(i).text), _agrees(ours))
            if hit is None:
                continue
            i, (theirs, *_) = hit
            findings.append(contradiction_finding(
                view, i, kind="exception", statement=sentence.text,
                evidence=f"answer says '{ours.text}' but the source says '{theirs.text}'",
                answer_value=ours.text, source_value=theirs.text,
            ))
    return findings


def _agrees(ours: Scope):  # noqa: ANN202 - a predicate over the source's scopes
    def agrees(theirs: Scope) -> bool | None:
        if not ours.stems & theirs.stems:
            return None  # another thing excepted: says nothing about this one
        return theirs.polarity == ours.polarity

    return agrees
