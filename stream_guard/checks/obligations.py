"""Obligation contradictions: the answer makes required what the source permits, permitted what it forbids, or
the other way round, for the same action ("may disclose" for "shall not disclose", "must give notice" for "may
give notice"). Only modals governing the same action are compared; "can" and "may" are one permission, "must",
"shall" and "is required to" one obligation."""

from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView, contradiction_finding, first_disagreeing, restating
from stream_guard.text.modality import Modality, modalities
from stream_guard.text.words import stem
from stream_guard.wire.report import Finding

_VALUE_STEMS = frozenset(stem(w) for w in "required obliged obligated permitted allowed entitled prohibited forbidden "
                         "barred free needs".split())
_READ = {"required": "requires", "permitted": "permits", "forbidden": "forbids"}


def analyze_obligations(view: ContradictionView) -> list[Finding]:
    findings: list[Finding] = []
    for sentence in view.answer:
        for ours in modalities(sentence.text)[:4]:
            candidates = restating(view, sentence, _VALUE_STEMS | {ours.action})
            hit = first_disagreeing(candidates, lambda i: modalities(view.sentence(i).text), _agrees(ours))
            if hit is None:
                continue
            i, (theirs, *_) = hit
            findings.append(contradiction_finding(
                view, i, kind="obligation", statement=sentence.text,
                evidence=(f"answer says '{ours.text}' ({_READ[ours.force]} it) but the source says "
                          f"'{theirs.text}' ({_READ[theirs.force]} it)"),
                answer_value=ours.text, source_value=theirs.text,
            ))
    return findings


def _agrees(ours: Modality):  # noqa: ANN202 - a predicate over the source's modalities
    def agrees(theirs: Modality) -> bool | None:
        if theirs.action != ours.action:
            return None  # another action: says nothing about this one
        return theirs.force == ours.force

    return agrees
