"""What the checks find and what one inspection reports. Plain frozen data, JSON-ready via `to_dict`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping


class Risk(str, Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RISK_RANK[self]


_RISK_RANK = {Risk.LOW: 0, Risk.MEDIUM: 1, Risk.HIGH: 2, Risk.CRITICAL: 3}


class FindingType(str, Enum):
    CONTRADICTION = "contradiction"
    UNSUPPORTED = "unsupported"
    FABRICATED_ENTITY = "fabricated_entity"
    CITATION_MISMATCH = "citation_mismatch"


@dataclass(frozen=True)
class Finding:
    """One hallucinated statement and why.

    `kind` refines `type`: for contradictions numeric / swapped_value / date / negation / billing; for entities
    person / org / citation; for citations wrong_chunk / fabricated_citation. `answer_value` and
    `source_value` carry what the healer needs to patch a contradiction in place. `check` names the check that
    found it (the detector sets it when it assembles the report).
    """

    type: FindingType
    statement: str
    evidence: str
    kind: str | None = None
    source: str | None = None
    answer_value: str | None = None
    source_value: str | None = None
    chunk_id: str | None = None
    check: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type.value, "statement": self.statement, "evidence": self.evidence}
        for key in ("kind", "source", "answer_value", "source_value", "chunk_id", "check"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check. `score` is the check's own measure in [0, 1] (documented per check);
    `flagged` is whether the check considers the answer faulty on its own."""

    name: str
    score: float
    flagged: bool
    findings: tuple[Finding, ...] = ()
    verified: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    latency_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 4),
            "flagged": self.flagged,
            "findings": [f.to_dict() for f in self.findings],
            "verified": list(self.verified),
            "details": dict(self.details),
            "latency_ms": round(self.latency_ms, 3),
        }


@dataclass(frozen=True)
class HallucinationReport:
    question: str
    answer: str
    checks: Mapping[str, CheckResult]
    hallucinated_statements: tuple[Finding, ...]
    verified_statements: tuple[str, ...]
    risk: Risk
    flagged: bool
    hallucination_score: float
    hallucination_type: str  # factual_error / unsupported_claim / none (seed 004)
    triggered: tuple[str, ...]
    latency_ms: float
    ner_backend: str = "regex"

    def check(self, name: str) -> CheckResult | None:
        return self.checks.get(name)

    def _score(self, name: str, default: float) -> float:
        result = self.checks.get(name)
        return result.score if result is not None else default

    @property
    def is_hallucinating(self) -> bool:
        return self.flagged

    @property
    def confidence_score(self) -> float:
        return self._score("confidence", 0.5)

    @property
    def faithfulness_score(self) -> float:
        return self._score("faithfulness", 1.0)

    @property
    def has_contradiction(self) -> bool:
        result = self.checks.get("contradiction")
        return bool(result and result.flagged)

    @property
    def drift_detected(self) -> bool:
        result = self.checks.get("drift")
        return bool(result and result.flagged)

    @property
    def drift_delta(self) -> float:
        return self._score("drift", 0.0)

    def findings_of(self, kind: FindingType) -> tuple[Finding, ...]:
        return tuple(f for f in self.hallucinated_statements if f.type is kind)

    def to_dict(self) -> dict[str, Any]:
        return {
            "flagged": self.flagged,
            "hallucination_score": round(self.hallucination_score, 4),
            "risk": self.risk.value,
            "hallucination_type": self.hallucination_type,
            "triggered": list(self.triggered),
            "hallucinated_statements": [f.to_dict() for f in self.hallucinated_statements],
            "verified_statements": list(self.verified_statements),
            "checks": {name: result.to_dict() for name, result in self.checks.items()},
            "ner_backend": self.ner_backend,
            "latency_ms": round(self.latency_ms, 3),
        }
