"""Strategy: claim prune. Keep the answer's grounded sentences, drop the ones the checks found unsupported.

Most hallucinations in real model output are additions: a sentence or clause the context does not
support, next to several that it does. Rebuilding the whole answer from the context throws the good part
away and reads like a different answer; pruning keeps the model's own wording for what is grounded and
removes what is not (the healer ends the repair with one note naming it, heal/note.py), so the user knows
something was taken out. It is also what cleans up after a patch: a patched answer must not keep an
unsupported claim next to the fixed one. A numbered list an item was dropped from counts on (heal/edits.py).

The strategy offers nothing when no claim would be left, or when what is left is too little of the
answer to stand as one.
"""

from __future__ import annotations

from typing import Sequence

from stream_guard.heal import edits
from stream_guard.heal.result import CLAIM_PRUNE, Attempt, Change
from stream_guard.text.claims import extract_claims
from stream_guard.text.markup import Markup
from stream_guard.text.words import stem_set
from stream_guard.wire.report import Finding, FindingType
# Share of a sentence's content stems a finding's statement must cover to mark it (statements are claims,
# which drop prefaces and inline "(passage 2)" tags, so they are not always literal substrings).
_MATCH_SHARE = 0.8
# What must be left: at least this share of the answer's claims.
MIN_KEPT_SHARE = 0.34

_PRUNED_KINDS = (FindingType.UNSUPPORTED, FindingType.CONTRADICTION, FindingType.FABRICATED_ENTITY)


def _marks(sentence: str, statements: Sequence[tuple[str, frozenset[str]]]) -> str | None:
    stems = stem_set(sentence)
    for text, wanted in statements:
        if text and text in sentence:
            return text
        if wanted and len(wanted & stems) >= _MATCH_SHARE * len(wanted):
            return text
    return None


def prune(answer: str | Markup, findings: Sequence[Finding]) -> Attempt:
    """The answer without the sentences that carry a finding; text None when too little would be left."""
    marked = [f for f in findings if f.type in _PRUNED_KINDS and f.kind != "irrelevant_context" and f.statement]
    if not marked:
        return Attempt(CLAIM_PRUNE, None, ())
    markup = edits.read(answer)
    answer = markup.original
    statements = [(f.statement.strip(), stem_set(f.statement)) for f in marked]
    dropped: list[tuple[int, int]] = []
    changes: list[Change] = []
    for start, end, sentence in edits.spans(markup):
        hit = _marks(sentence, statements)
        if hit is not None:
            dropped.append((start, end))
            changes.append(Change("drop_sentence", sentence, "", "Removed a statement the source documents do not support"))
    if not changes or len(dropped) == len(edits.spans(markup)):
        return Attempt(CLAIM_PRUNE, None, tuple(changes))
    text = edits.drop(markup, dropped)
    claims_before = len(extract_claims(answer))
    claims_after = len(extract_claims(text))
    if claims_after == 0 or claims_after < MIN_KEPT_SHARE * claims_before:
        return Attempt(CLAIM_PRUNE, None, tuple(changes))
    return Attempt(CLAIM_PRUNE, text, tuple(changes))
