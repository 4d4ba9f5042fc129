"""The declared `details` of every check, as the verdict carries them (`checks.<name>.details`).

Checks build their details as plain dicts (checks/*.py); these TypedDicts are what the published verdict
schema says about them. They cost nothing per event: a dict is encoded as it is, whatever its declaration.

A new details key is declared here with ONE line in its check's TypedDict, then `make schemas` regenerates
schemas/. Until it is declared, the strict schema the tests validate every verdict against (schemas.py,
`strict=True`) refuses it, so an undeclared key cannot reach a release unnoticed. The published schema
leaves details open (`DETAILS_OPEN` in schemas.py): details are diagnostics, and consumers must ignore keys
they do not know, so a new key is not a breaking change.
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from msgspec import Meta

Fraction = Annotated[float, Meta(ge=0.0, le=1.0)]
Count = Annotated[int, Meta(ge=0)]


class ConfidenceDetails(TypedDict, total=False):
    assertive_markers: Count
    hedging_markers: Count
    words: Count
    assertive: list[str]
    hedging: list[str]


class FaithfulnessDetails(TypedDict, total=False):
    claims: Count
    grounded: Count
    claim_overlaps: list[float]
    min_overlap: float
    mean_overlap: float
    overlap_with_best_sentence: list[float]
    min_best_sentence_overlap: float
    mean_best_sentence_overlap: float
    answer_stems: Count
    novel_stems: Count
    novel_fraction: Fraction
    unstated_quantifiers: Count
    stated_values: Count
    missing_numbers: list[str]
    field_conflicts: Count
    empty_fields: Count
    wrong_times: Count
    wrong_days: Count
    unstated_fields: Count
    structured: bool
    has_question: bool
    context_stems: Count


class ContradictionDetails(TypedDict, total=False):
    # one count per finding kind (checks/contradiction.py KINDS)
    numeric: Count
    bound: Count
    currency: Count
    swapped_value: Count
    date: Count
    negation: Count
    billing: Count
    hours: Count
    weekday: Count
    time_zone: Count
    frequency: Count
    obligation: Count
    exception: Count
    unsupported_numbers: list[str]
    numbers_checked: Count
    numbers_unsupported: Count
    sentences_checked: Count


class EntitiesDetails(TypedDict, total=False):
    entities: Count
    fabricated: list[str]
    found: list[str]
    by_label: dict[str, Count]
    backend: str


class CitationsDetails(TypedDict, total=False):
    markers: Count
    event_citations: Count
    total: Count
    mismatched: Count
    fabricated: Count
    wrong_chunk: Count


class RelevanceDetails(TypedDict, total=False):
    question_terms: Count
    context_coverage: Fraction
    best_chunk_coverage: Fraction
    best_chunk_id: str | None
    missing_terms: list[str]


class DriftDetails(TypedDict, total=False):
    history: Count
    min_history: Count
    reason: str
    compared: Count
    consensus: Count
    delta: float
    mean_similarity: float
    threshold: float
    similarity_floor: float
    numbers: list[str]
    consensus_numbers: list[str]
