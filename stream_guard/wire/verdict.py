"""The verdict: one per input event, what to deliver and everything the checks found and changed.

The wire shape is defined here, once, as msgspec Structs: the worker and `check` encode these objects as they
are, and `python -m stream_guard.wire.schemas` publishes their JSON Schema (schemas/verdict.v2.schema.json).
msgspec rather than pydantic because a verdict is built per event, and msgspec's Structs are plain slotted
objects with a C encoder (no validation on construction); no comparison was benchmarked in this repository.

Version 2 (from 1): `produced_at` is `produced_at_ms`; `model`, `produced_at_ms`, `label` and `metadata`
are always present (null / {} when the event had none); `checks`, `healing` and `quality` are typed.

Version 3 (from 2): `reason` says why an answer was not delivered as written (null when it was); `triggered`
lists the deciding signals that fired (a hard signal such as `record_conflict` or `fabricated_citation`, and the
check whose findings carry the soft evidence), not the checks that flagged on their own; a verdict is flagged
only when one of them says so; each hallucinated statement names the `check` that found it; `original_answer`
may be empty (an empty answer is judged: nothing to deliver).
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Iterable, Literal, Mapping, TypeVar

import msgspec
from msgspec import Meta

from stream_guard.wire.check_details import (
    CitationsDetails,
    ConfidenceDetails,
    ContradictionDetails,
    DriftDetails,
    EntitiesDetails,
    FaithfulnessDetails,
    RelevanceDetails,
)
from stream_guard.wire.report import CheckResult, Finding

VERDICT_VERSION = 3

Score = Annotated[float, Meta(ge=0.0, le=1.0)]
RiskLevel = Literal["low", "medium", "high", "critical"]
Routing = Literal["accept", "healed_accept", "fallback", "discard"]
HallucinationType = Literal["factual_error", "unsupported_claim", "none"]
FindingKind = Literal["contradiction", "unsupported", "fabricated_entity", "citation_mismatch"]
EpochMs = Annotated[int, Meta(ge=0, description="epoch milliseconds (UTC)")]


class Statement(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """One hallucinated statement and why (report.Finding on the wire). `kind` refines `type`: numeric,
    swapped_value, date, negation, billing, ... (contradiction); person, org, citation (fabricated_entity);
    wrong_chunk, fabricated_citation (citation_mismatch); claim, weak_support, irrelevant_context (unsupported).
    `evidence` says why: the source sentence and value it contradicts, or what no source mentions. `check` is
    the check that found it."""

    type: FindingKind
    statement: str
    evidence: str
    kind: str | None = None
    source: str | None = None
    answer_value: str | None = None
    source_value: str | None = None
    chunk_id: str | None = None
    check: str | None = None

    @classmethod
    def of(cls, finding: Finding) -> "Statement":
        return cls(finding.type.value, finding.statement, finding.evidence, finding.kind, finding.source,
                   finding.answer_value, finding.source_value, finding.chunk_id, finding.check)


D = TypeVar("D")


class CheckOutcome(msgspec.Struct, Generic[D], frozen=True, forbid_unknown_fields=True):
    """One check's result: `score` is the check's own measure in [0, 1] (docs/ARCHITECTURE.md)."""

    score: Score
    flagged: bool
    findings: list[Statement]
    verified: list[str]
    details: D
    latency_ms: float

    @classmethod
    def of(cls, result: CheckResult) -> "CheckOutcome[Any]":
        return cls(round(result.score, 4), result.flagged, [Statement.of(f) for f in result.findings],
                   list(result.verified), result.details, round(result.latency_ms, 3))


class Checks(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Every check, by name. A new check is declared here (and its details in check_details.py)."""

    confidence: CheckOutcome[ConfidenceDetails]
    faithfulness: CheckOutcome[FaithfulnessDetails]
    contradiction: CheckOutcome[ContradictionDetails]
    entities: CheckOutcome[EntitiesDetails]
    citations: CheckOutcome[CitationsDetails]
    relevance: CheckOutcome[RelevanceDetails]
    drift: CheckOutcome[DriftDetails]

    @classmethod
    def of(cls, results: Mapping[str, CheckResult]) -> "Checks":
        return cls(**{name: CheckOutcome.of(result) for name, result in results.items()})


HealingStrategy = Literal["none", "no_healing_needed", "contradiction_patch", "entity_scrub", "claim_prune",
                          "grounding_rewrite", "safe_decline"]


class Change(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One edit. kind: replace, billing, drop_sentence, note, rewrite, fallback, decline, refused,
    confidence (heal/result.py)."""

    kind: str
    before: str
    after: str
    description: str


class Healing(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """What the healer did. `strategy` is "none" when the answer was not flagged (then only `strategy`,
    `applied` and `changes` are present); the other fields describe an attempt."""

    strategy: HealingStrategy
    applied: bool
    changes: list[Change]
    attempted: HealingStrategy | None = None
    passed: bool | None = None
    declined: bool | None = None
    initial_risk: RiskLevel | None = None
    final_risk: RiskLevel | None = None
    healed_answer: str | None = None
    confidence_before: Score | None = None
    confidence_after: Score | None = None
    final_hallucination_score: Score | None = None
    final_triggered: list[str] | None = None


NO_HEALING = Healing("none", False, [])


class QualityComponents(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The weighted parts of the quality score (quality.py), each already multiplied by its weight."""

    faithfulness: float
    consistency: float
    confidence: float
    latency: float


class Quality(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    score: Score
    routing: Routing
    components: QualityComponents
    drift_penalty: float
    basis: Literal["original", "healed"]


ReasonCode = Literal["hallucination", "empty_answer", "low_quality", "drift"]


class Reason(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Why the answer was not delivered as written: `hallucination` (flagged: `triggered` names the deciding
    checks, `detail` what the repair did or why none passed), `empty_answer` (nothing to deliver),
    `low_quality` (not flagged, but its quality score is under `fallback_threshold`: `detail` names the
    unsupported claims behind it) or `drift` (drift counts against answers, `drift_decides`)."""

    code: ReasonCode
    detail: str


class Verdict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The verdict on one event, as it goes to the verdicts topic and out of `stream-guard check`."""

    version: int = VERDICT_VERSION
    event_id: str
    tenant: str
    question_hash: str
    question: str
    flagged: bool
    hallucination_score: Score
    risk: RiskLevel
    final_risk: RiskLevel
    routing: Routing
    hallucination_type: HallucinationType
    triggered: list[str]
    delivered_answer: str
    original_answer: str
    hallucinated_statements: list[Statement]
    verified_statements: list[str]
    checks: Checks
    healing: Healing
    quality: Quality
    latency_ms: float
    # Null when the answer was delivered as written; otherwise why not (every fallback, repair or decline).
    reason: Reason | None = None
    model: str | None = None
    produced_at_ms: EpochMs | None = None
    label: Literal[0, 1] | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.delivered_answer != self.original_answer

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def to_partial_dict(self, fields: Iterable[str], checks: Iterable[str] = ()) -> dict[str, Any]:
        """`to_dict()` cut to `fields` and, under "checks", to the named checks: the same values, for a reader
        of a few parts (engine/alerts.py) that need not have every check's details converted."""
        out = {name: msgspec.to_builtins(getattr(self, name)) for name in fields}
        if checks:
            out["checks"] = {name: msgspec.to_builtins(getattr(self.checks, name)) for name in checks}
        return out

    def to_json(self) -> bytes:
        return _ENCODER.encode(self)


_ENCODER = msgspec.json.Encoder()


def decode_verdict(raw: bytes) -> Verdict:
    """A verdict off the wire, validated against its shape (msgspec.ValidationError says where it is not)."""
    return msgspec.json.decode(raw, type=Verdict)


def flagged_checks(verdict: Verdict) -> tuple[str, ...]:
    """Names of the checks that flagged the answer on their own."""
    checks = verdict.checks
    return tuple(name for name in checks.__struct_fields__ if getattr(checks, name).flagged)
