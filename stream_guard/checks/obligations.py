"""Obligation contradictions: the answer makes required what the source permits, permitted what it forbids, or
the other way round, for the same action ("may disclose" for "shall not disclose", "must give notice" for "may
give notice"). Only modals governing the same action are compared; "can" and "may" are one permission, "must",
"shall" and "is required to" one obligation. A modal said under a condition ("if you are a new customer, you
need not ...") is not compared: which condition the other side states would take the sentence's grammar."""

from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView, contradiction_finding, first_disagreeing, restating
from stream_guard.text.modality import Modality, modalities
from stream_guard.text.words import stem
from stream_guard.wire.report import Finding

_VALUE_STEMS = frozenset(stem(w) for w in "required obliged obligated permitted allowed entitled prohibited forbidden "
                         "barred free needs".split())
_READ = {"required": "requires it", "permitted": "permits it", "forbidden": "forbids it", "optional": "leaves it optional"}
# Forces that cannot both hold of one action. "optional" and "permitted" can; "optional" and "forbidden" can
# ("need not" and "must not" both leave it undone).
_CONFLICTS = {frozenset({"required", "permitted"}), frozenset({"required", "forbidden"}),
              frozenset({"permitted", "forbidden"}), frozenset({"required", "optional"})}


def analyze_obligations(view: ContradictionView) -> list[Finding]:
    findings: list[Finding] = []
    for sentence in view.answer:
        for ours in modalities(sentence.text)[:4]:
            if ours.conditional:
                continue  # "if you are a new customer, you need not ...": which condition the source states is unknown
            candidates = restating(view, sentence, _VALUE_STEMS | {ours.action})
            hit = first_disagreeing(candidates, lambda i: modalities(view.sentence(i).text), _agrees(ours))
            if hit is None:
                continue
            i, (theirs, *_) = hit
            findings.append(contradiction_finding(
                view, i, kind="obligation", statement=sentence.text,
                evidence=(f"answer says '{ours.text}' ({_READ[ours.force]}) but the source says "
                          f"'{theirs.text}' ({_READ[theirs.force]})"),
                answer_value=ours.text, source_value=theirs.text,
            ))
    return findings


def _agrees(ours: Modality):  # noqa: ANN202 - a predicate over the source's modalities
    def agrees(theirs: Modality) -> bool | None:
        if theirs.action != ours.action or theirs.conditional:
            return None  # another action, or one said only under a condition
        return frozenset({theirs.force, ours.force}) not in _CONFLICTS

    return agrees
