"""Why an answer is flagged: the deciding signals that fired, and the statements the score rests on.

A flag an operator cannot read is a flag nobody can act on or appeal, so every flagged verdict names (in
`triggered`) what decided it and carries, for each unsupported or contradicted claim, the claim, the check that
found it and the evidence. The hard signals bring their own findings (a contradiction quotes the source sentence
and both values, a fabricated entity names the name). The soft evidence rests on the faithfulness check's claims:
the ones it does not ground carry "only 2 of 7 content words occur ..."; when the score rests on claims it does
ground, only partly (a word no source mentions, a count such as "many" no source states, or no single source
sentence stating the claim whole), those are listed here with what no source states.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from stream_guard.checks.faithfulness import ClaimGrounding, quantifier_evidence
from stream_guard.scoring.score_model import noisy_or
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import Finding, FindingType

# The signal name of the soft evidence, and the check whose findings it rests on.
SOFT = "weak_grounding"
SOFT_CHECK = "faithfulness"
# Claims listed for the soft evidence when the faithfulness check grounds them all: the most telling first.
MAX_PARTIAL_CLAIMS = 3
_MAX_WORDS_LISTED = 6


def deciding(signals: Mapping[str, float], threshold: float) -> list[str]:
    """The deciding signals that fired, most probable first: every hard signal in `signals` (the caller leaves
    drift out unless drift counts), then the faithfulness check when its soft evidence carries the score: at
    or above the threshold on its own, or what brings the hard signals over it."""
    hard = {name: p for name, p in signals.items() if name != SOFT}
    names = sorted(hard, key=lambda name: (-hard[name], name))
    soft = signals.get(SOFT, 0.0)
    if soft > 0.0 and (soft >= threshold or noisy_or(hard) < threshold <= noisy_or(signals)):
        names.append(SOFT_CHECK)
    return names


def stamped(results: Mapping[str, Sequence[Finding]]) -> list[Finding]:
    """Every check's findings, each with the name of the check that found it."""
    return [f if f.check == name else dataclasses.replace(f, check=name)
            for name, findings in results.items() for f in findings]


def partial_findings(groundings: Sequence[ClaimGrounding], inspection: Inspection,
                     limit: int = MAX_PARTIAL_CLAIMS) -> list[Finding]:
    """Findings for the claims the faithfulness check grounds only in part, the least supported first: a word
    no source mentions, or no single source sentence stating the claim whole."""
    partial = [g for g in groundings
               if g.grounded and (g.missing_words or g.quantifiers or g.best_sentence_overlap < 1.0)]
    partial.sort(key=lambda g: (-len(g.missing_words) - len(g.quantifiers), g.best_sentence_overlap))
    return [_partial_finding(g, inspection) for g in partial[:limit]]


def _partial_finding(g: ClaimGrounding, inspection: Inspection) -> Finding:
    source = chunk_id = None
    if g.best_sentence_index >= 0:
        sentence = inspection.context_sentences[g.best_sentence_index]
        source, chunk_id = sentence.text, sentence.chunk_id
    missing = g.missing_words
    closest = round(g.best_sentence_overlap * len(g.stems))
    said = [quantifier_evidence(g.quantifiers)] if g.quantifiers else []
    if missing:
        listed = ", ".join(repr(w) for w in missing[:_MAX_WORDS_LISTED])
        more = "" if len(missing) <= _MAX_WORDS_LISTED else f" (+{len(missing) - _MAX_WORDS_LISTED} more)"
        evidence = "; ".join([*said, f"no source mentions {listed}{more}"])
    elif said:
        evidence = said[0]
    else:
        evidence = "every content word occurs in the retrieved context, but no single source sentence states it"
    evidence += f"; the closest source sentence covers {closest} of {len(g.stems)} content words"
    return Finding(type=FindingType.UNSUPPORTED, kind="weak_support", statement=g.claim.text, evidence=evidence,
                   source=source, chunk_id=chunk_id, check=SOFT_CHECK)
