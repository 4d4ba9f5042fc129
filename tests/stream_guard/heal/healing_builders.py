"""Hand-built reports and a scripted detector, so healing can be tested without the real checks."""

from __future__ import annotations

from typing import Callable, Sequence

from stream_guard.config.detector import DetectorConfig
from stream_guard.text.fingerprint import Fingerprint
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import CheckResult, Finding, FindingType, HallucinationReport, Risk


def contradiction(statement: str, answer_value: str, source_value: str, *, kind: str = "numeric", source: str = "") -> Finding:
    return Finding(FindingType.CONTRADICTION, statement, "conflicts with source", kind=kind, source=source,
                   answer_value=answer_value, source_value=source_value)


def entity(statement: str, text: str, *, kind: str = "person") -> Finding:
    return Finding(FindingType.FABRICATED_ENTITY, statement, "absent from context", kind=kind, answer_value=text)


def make_report(
    answer: str = "A.",
    *,
    faithfulness: float = 1.0,
    confidence: float = 0.5,
    drift: bool = False,
    findings: Sequence[Finding] = (),
    risk: Risk = Risk.LOW,
    flagged: bool | None = None,
    latency_ms: float = 2.0,
) -> HallucinationReport:
    contradictions = tuple(f for f in findings if f.type is FindingType.CONTRADICTION)
    entities = tuple(f for f in findings if f.type is FindingType.FABRICATED_ENTITY)
    checks = {
        "confidence": CheckResult("confidence", confidence, False),
        "faithfulness": CheckResult("faithfulness", faithfulness, faithfulness < 0.5),
        "contradiction": CheckResult("contradiction", float(bool(contradictions)), bool(contradictions), contradictions),
        "entities": CheckResult("entities", 1.0 if entities else 0.0, bool(entities), entities),
        "drift": CheckResult("drift", 0.6 if drift else 0.0, drift),
    }
    is_flagged = risk.rank >= Risk.HIGH.rank if flagged is None else flagged
    return HallucinationReport(
        question="Q?", answer=answer, checks=checks, hallucinated_statements=tuple(findings), verified_statements=(),
        risk=risk, flagged=is_flagged, hallucination_score=0.9 if is_flagged else 0.1,
        hallucination_type="factual_error" if is_flagged else "none", triggered=(), latency_ms=latency_ms,
    )


CLEAN = make_report()


class ScriptedDetector:
    """Answers `analyze` from a function of the answer text and records every call."""

    def __init__(self, judge: Callable[[str], HallucinationReport] | None = None, config: DetectorConfig | None = None):
        self.config = config or DetectorConfig()
        self.judge = judge or (lambda answer: make_report(answer))
        self.calls: list[tuple[Inspection, tuple[Fingerprint, ...]]] = []

    def analyze(self, inspection: Inspection, history: Sequence[Fingerprint] = ()) -> HallucinationReport:
        self.calls.append((inspection, tuple(history)))
        return self.judge(inspection.answer)

    def analyze_repair(self, inspection: Inspection, history: Sequence[Fingerprint] = ()) -> HallucinationReport:
        return self.analyze(inspection, history)

    @property
    def analyzed(self) -> list[str]:
        return [i.answer for i, _ in self.calls]
