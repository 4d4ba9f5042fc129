"""Frequency contradictions: the answer says something happens more or less often than the source sentence it
restates says ("three times daily" for "twice daily", "every 4 hours" for "every 6 hours"). Equivalent forms
agree: "twice daily" = "every 12 hours" = "2 times a day"."""

from __future__ import annotations

from stream_guard.checks.alignment import ContradictionView, contradiction_finding, first_disagreeing, restating
from stream_guard.text.frequency import frequencies
from stream_guard.text.words import stem
from stream_guard.wire.report import Finding

_VALUE_STEMS = frozenset(
    stem(w) for w in """once twice thrice times time daily weekly monthly hourly nightly yearly annually quarterly
    fortnightly every hour hours day days week weeks month months year years other""".split()
)


def analyze_frequency(view: ContradictionView) -> list[Finding]:
    findings: list[Finding] = []
    for sentence in view.answer:
        for ours in frequencies(sentence.text)[:4]:
            candidates = restating(view, sentence, _VALUE_STEMS)
            hit = first_disagreeing(candidates, lambda i: frequencies(view.sentence(i).text), ours.agrees)
            if hit is None:
                continue
            i, (theirs, *_) = hit
            findings.append(contradiction_finding(
                view, i, kind="frequency", statement=sentence.text,
                evidence=f"answer says '{ours.text}' but the source says '{theirs.text}'",
                answer_value=ours.text, source_value=theirs.text,
            ))
    return findings
