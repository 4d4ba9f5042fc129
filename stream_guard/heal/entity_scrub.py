"""Strategy: entity scrub. Drop every sentence that leans on a fabricated person, organisation or citation.

Deleting silently would hand the user a shorter answer with no explanation, so the healer ends the repair with
one note naming what was removed (heal/note.py). If every sentence goes, there is nothing left worth sending
and the strategy offers nothing (the healer then tries the next strategy). Only the names the entity check
finds in no source are scrubbed: a well-known name written differently ("U.S." for "United States", "MA" for
Massachusetts) is not a finding there, so no sentence is dropped for it.
"""

from __future__ import annotations

import re
from typing import Sequence

from stream_guard.heal import edits
from stream_guard.heal.result import ENTITY_SCRUB, Attempt, Change
from stream_guard.text.markup import Markup
from stream_guard.wire.report import Finding, FindingType

_TITLES = frozenset("dr dr. prof prof. mr mr. mrs mrs. ms ms. sir".split())


def _needles(finding: Finding) -> list[re.Pattern[str]]:
    """Patterns that mark a sentence as relying on the finding's entity."""
    entity = (finding.answer_value or "").strip()
    if not entity:
        return []
    patterns = [re.compile(rf"(?<!\w){re.escape(entity)}(?!\w)", re.IGNORECASE)]
    if finding.kind == "person":
        # A later "Harrison's study ..." leans on the same invented person as "Dr. James Harrison".
        parts = [p for p in entity.split() if p.lower() not in _TITLES]
        if len(parts) >= 2 and len(parts[-1]) >= 4:
            patterns.append(re.compile(rf"\b{re.escape(parts[-1])}\b"))
    return patterns


def scrub(answer: str | Markup, findings: Sequence[Finding]) -> Attempt:
    entities = [f for f in findings if f.type is FindingType.FABRICATED_ENTITY]
    markup = edits.read(answer)
    statements = {f.statement.strip() for f in entities if f.statement}
    needles = [(f, p) for f in entities for p in _needles(f)]
    dropped: list[tuple[int, int]] = []
    changes: list[Change] = []
    sentences = edits.spans(markup)
    for start, end, sentence in sentences:
        culprit = next((f for f, p in needles if p.search(sentence)), None)
        if culprit is None and sentence.strip() in statements:
            culprit = next(f for f in entities if f.statement.strip() == sentence.strip())
        if culprit is None:
            continue
        dropped.append((start, end))
        changes.append(
            Change(
                "drop_sentence",
                sentence,
                "",
                f"Removed a sentence citing '{culprit.answer_value}' ({culprit.kind or 'entity'}), "
                "which appears in no source document",
            )
        )
    if not changes or len(dropped) == len(sentences):
        return Attempt(ENTITY_SCRUB, None, tuple(changes))
    return Attempt(ENTITY_SCRUB, edits.drop(markup, dropped), tuple(changes))
