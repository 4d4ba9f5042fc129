"""Drop-in names for users of the `hallucination_detector` seed library: change one import.

    from stream_guard.compat import HallucinationDetector, HallucinationHealer, DetectorConfig, QualityScore

Every class keeps the seed's constructor and method signatures and its return shapes (tuples, lists of
"Name (type)" strings, mutable report objects with `risk_level` / `is_hallucinating` / `summary()`),
but the work is done by stream_guard's checks, healer and quality score. Differences a user may notice:

* Drift history only records answers the detector did not flag, so a repeated bad answer never becomes
  the baseline (the seed recorded every answer). `AnswerDriftMonitor.record` still records every call.
* Drift history lives in stream_guard's own table (`sg_drift_history`); an old seed drift file is not read.
* `DetectorConfig` is stream_guard's frozen config (a superset of the seed's fields): build a new one
  with `config.with_overrides(...)` instead of assigning attributes.
* Quality scoring calibrates confidence as min(confidence, faithfulness) and routes answers between the
  two thresholds by whether they were flagged (stream_guard.scoring.quality explains both); an empty answer
  routes to fallback (there is nothing to deliver).
* `triggered_checks` names the deciding signals in the seed's words where the seed has one
  (`contradiction`, `hallucinated_entities`, `answer_drift`, `confident_but_unfaithful`) and stream_guard's
  otherwise (`faithfulness` when the unsupported claims carry the score, `record_conflict`, ...).
* `confident_but_unfaithful` reads faithfulness strictly (engine/detector.py: strict_faithfulness): a claim the
  sources support only in part counts as partly unfaithful, so a strict `faithfulness_threshold` catches it.

Kept as in the seed, where the native API has changed: drift counts against the answer (it adds to the
hallucination score, makes the healer rewrite, and its -0.20 can route a grounded answer to fallback:
`DetectorConfig.drift_decides` is set here), and a repair that fails re-inspection serves the safe
decline (DISCARD) rather than routing to fallback.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from stream_guard.scoring import quality as _quality
from stream_guard.checks.confidence import confidence_score as _confidence_score
from stream_guard.checks.contradiction import ContradictionCheck as _ContradictionCheck
from stream_guard.checks.drift import DriftCheck as _DriftCheck
from stream_guard.checks.entities import EntityCheck as _EntityCheck
from stream_guard.checks.faithfulness import FaithfulnessCheck as _FaithfulnessCheck
from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.detector import HallucinationDetector as _NativeDetector
from stream_guard.errors import HallucinationBlocked as _NativeBlocked
from stream_guard.text.fingerprint import event_fingerprint as _event_fingerprint
from stream_guard.heal import HallucinationHealer as _NativeHealer
from stream_guard.heal import HealingResult as _NativeHealingResult
from stream_guard.heal.recalibrate import recalibrate_confidence as _recalibrate
from stream_guard.engine.history import SQLiteHistory as _SQLiteHistory
from stream_guard.text.inspection import Inspection
from stream_guard.logs import configure_logging as _configure_logging
from stream_guard.text.ner import SPACY_AVAILABLE as _SPACY_INSTALLED
from stream_guard.text.ner import make_recognizer as _make_recognizer
from stream_guard.wire.report import Finding, FindingType
from stream_guard.wire.report import HallucinationReport as _NativeReport
from stream_guard.text.questions import question_hash

__all__ = [
    "SPACY_AVAILABLE",
    "AnswerDriftMonitor",
    "ConfidenceScorer",
    "ContradictionDetector",
    "DetectorConfig",
    "EntityHallucinationDetector",
    "FaithfulnessScorer",
    "HallucinationBlocked",
    "HallucinationDetector",
    "HallucinationHealer",
    "HallucinationReport",
    "HealingResult",
    "QualityScore",
    "configure_logging",
]

_TENANT = "default"


def _spacy_model_loads() -> bool:
    if not _SPACY_INSTALLED:
        return False
    recognizer = _make_recognizer("auto", DetectorConfig().spacy_model)
    load = getattr(recognizer, "load", None)  # the spaCy recognizer loads its model when first used: now
    return bool(load()) if load is not None else False


def __getattr__(name: str) -> Any:
    # SPACY_AVAILABLE means "spaCy NER is usable" (as in the seed), which takes loading the model; it is
    # computed on first access so that importing this module stays cheap.
    if name == "SPACY_AVAILABLE":
        value = _spacy_model_loads()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def configure_logging(level: int = logging.INFO) -> None:
    """Structured JSON logs (the seed's default level is INFO)."""
    _configure_logging(level)


# ── report ───────────────────────────────────────────────────────────────────────────────────────────

# stream_guard's deciding signals -> the seed's triggered_checks vocabulary (a made-up citation is one of the
# seed's hallucinated entities).
_TRIGGER_NAMES = {"fabricated_entity": "hallucinated_entities", "fabricated_citation": "hallucinated_entities",
                  "drift": "answer_drift"}


def _contradiction_reason(finding: Finding) -> str:
    kind = (finding.kind or "factual").replace("_", " ")
    if finding.answer_value and finding.source_value:
        return (
            f"{kind.capitalize()} contradiction: answer says '{finding.answer_value}' "
            f"but the source says '{finding.source_value}'"
        )
    return finding.evidence


def _explanations(report: _NativeReport) -> list[str]:
    return [f"{f.type.value}: {f.evidence}" for f in report.hallucinated_statements]


@dataclass
class HallucinationReport:
    question: str
    answer: str
    confidence_score: float = 0.0
    faithfulness_score: float = 0.0
    contradiction_found: bool = False
    contradiction_reason: str = ""
    hallucinated_entities: list = field(default_factory=list)
    drift_detected: bool = False
    drift_delta: float = 0.0
    is_hallucinating: bool = False
    risk_level: str = "low"
    triggered_checks: list = field(default_factory=list)
    explanation: list = field(default_factory=list)
    latency_ms: float = 0.0
    # The stream_guard report this view was made from (None for hand-built reports).
    native: Optional[_NativeReport] = field(default=None, repr=False, compare=False)

    @classmethod
    def from_native(cls, report: _NativeReport) -> "HallucinationReport":
        contradictions = report.findings_of(FindingType.CONTRADICTION)
        entities = report.findings_of(FindingType.FABRICATED_ENTITY)
        return cls(
            question=report.question,
            answer=report.answer,
            confidence_score=report.confidence_score,
            faithfulness_score=report.faithfulness_score,
            contradiction_found=report.has_contradiction,
            contradiction_reason=_contradiction_reason(contradictions[0]) if contradictions else "",
            hallucinated_entities=[f"{f.answer_value} ({f.kind})" for f in entities],
            drift_detected=report.drift_detected,
            drift_delta=report.drift_delta,
            is_hallucinating=report.flagged,
            risk_level=report.risk.value,
            triggered_checks=list(dict.fromkeys(_TRIGGER_NAMES.get(name, name) for name in report.triggered)),
            explanation=_explanations(report),
            latency_ms=report.latency_ms,
            native=report,
        )

    def summary(self) -> str:
        lines = [
            f"  Question  : {self.question[:80]}{'...' if len(self.question) > 80 else ''}",
            f"  Risk      : {self.risk_level.upper()}",
            f"  Confidence: {self.confidence_score:.2f}",
            f"  Faithful  : {self.faithfulness_score:.2f}",
            f"  Contradict: {self.contradiction_found}"
            + (f" - {self.contradiction_reason}" if self.contradiction_reason else ""),
            f"  Fake names: {self.hallucinated_entities[:5]}",
            f"  Drift     : {self.drift_detected} (delta={self.drift_delta:.2f})",
            f"  Triggered : {self.triggered_checks}",
            f"  Latency   : {self.latency_ms:.1f}ms",
        ]
        lines += [f"    - {e}" for e in self.explanation]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "risk_level": self.risk_level,
            "is_hallucinating": self.is_hallucinating,
            "confidence_score": round(self.confidence_score, 3),
            "faithfulness_score": round(self.faithfulness_score, 3),
            "contradiction_found": self.contradiction_found,
            "contradiction_reason": self.contradiction_reason,
            "hallucinated_entities": list(self.hallucinated_entities),
            "drift_detected": self.drift_detected,
            "drift_delta": round(self.drift_delta, 3),
            "triggered_checks": list(self.triggered_checks),
            "explanation": list(self.explanation),
            "latency_ms": round(self.latency_ms, 2),
        }


class HallucinationBlocked(_NativeBlocked):
    """As in the seed, `.report` is the report object itself; `.report_dict` is its JSON-ready form.

    Catching stream_guard.errors.HallucinationBlocked also catches this."""

    def __init__(self, report: Any) -> None:
        super().__init__(report)
        self.report_dict = self.report
        self.report = report


# ── single checks ────────────────────────────────────────────────────────────────────────────────────


def _inspection(answer: str, context_chunks: Iterable[str] | None, question: str = "") -> Inspection:
    return Inspection.build(question, list(context_chunks or ()), answer or "")


class ConfidenceScorer:
    def score(self, answer: str) -> float:
        return _confidence_score(answer or "")


class FaithfulnessScorer:
    def __init__(self, overlap_threshold: float = 0.40) -> None:
        self.overlap_threshold = overlap_threshold
        self._check = _FaithfulnessCheck(DetectorConfig(faithfulness_overlap_threshold=overlap_threshold))

    def score(self, answer: str, context_chunks: list[str]) -> tuple[float, list[str]]:
        """(grounded fraction of claims, the ungrounded claims)."""
        result = self._check.run(_inspection(answer, context_chunks))
        return result.score, [f.statement for f in result.findings]


class ContradictionDetector:
    def __init__(self) -> None:
        self._check = _ContradictionCheck(DetectorConfig())

    def detect(self, answer: str, context_chunks: list[str]) -> tuple[bool, str]:
        """(contradiction found, a one-line reason naming both values)."""
        result = self._check.run(_inspection(answer, context_chunks))
        if not result.flagged:
            return False, ""
        first = next((f for f in result.findings if f.type is FindingType.CONTRADICTION), None)
        return True, _contradiction_reason(first) if first is not None else "contradiction with the source"


class EntityHallucinationDetector:
    def __init__(self) -> None:
        config = DetectorConfig()
        self._check = _EntityCheck(config, _make_recognizer(config.ner, config.spacy_model))

    def detect(self, answer: str, context_chunks: list[str]) -> list[str]:
        """"Name (type)" for each entity in the answer that no context chunk mentions."""
        if not (answer or "").strip():
            return []
        result = self._check.run(_inspection(answer, context_chunks))
        return [f"{f.answer_value} ({f.kind})" for f in result.findings if f.type is FindingType.FABRICATED_ENTITY]


class AnswerDriftMonitor:
    """Records every answer per question in SQLite and reports drift against the recent ones."""

    def __init__(self, db_path: str = "hallucination_drift.db", window_size: int = 50, drift_threshold: float = 0.35):
        self.window_size = window_size
        self.drift_threshold = drift_threshold
        self._store = _SQLiteHistory(db_path)
        self._check = _DriftCheck(DetectorConfig(drift_threshold=drift_threshold, window_size=window_size))
        # evaluate + append must be one step, or two threads could each miss the other's answer.
        self._lock = threading.Lock()

    def record(self, question: str, answer: str) -> tuple[bool, float]:
        """Check `answer` against this question's history, then record it. Returns (drift, delta)."""
        key = question_hash(_TENANT, question)
        with self._lock:
            inspection = _inspection(answer, (), question)
            result = self._check.evaluate(inspection, self._store.get(key))
            # The fingerprint drift computed (when there was enough history), not a second one.
            self._store.append(key, _event_fingerprint(inspection, answer), self.window_size)
        return result.flagged, result.score

    def clear_history(self, question: Optional[str] = None) -> None:
        self._store.clear(question_hash(_TENANT, question) if question else None)

    def get_stats(self, question: str) -> dict[str, Any]:
        return {"question": question[:60], "total_recorded": self._store.count(question_hash(_TENANT, question))}


# ── detector ─────────────────────────────────────────────────────────────────────────────────────────


class HallucinationDetector:
    def __init__(self, config: Optional[DetectorConfig] = None) -> None:
        # The seed's drift rule: drift counts against the answer, picks a rewrite and can route to fallback.
        self.config = (config or DetectorConfig()).with_overrides(drift_decides=True)
        self._native = _NativeDetector(self.config)
        self._silent: _NativeDetector | None = None
        self._stats_lock = threading.Lock()
        self._inspected = 0
        self._flagged = 0

    @property
    def native(self) -> _NativeDetector:
        return self._native

    def inspect(
        self, question: str, context_chunks: list[str], answer: str, _silent: bool = False
    ) -> HallucinationReport:
        """Run every check. `_silent=True` skips the flagged-answer log line (the healer uses it)."""
        detector = self._quiet() if _silent else self._native
        report = HallucinationReport.from_native(detector.inspect(question, list(context_chunks or ()), answer or ""))
        with self._stats_lock:
            self._inspected += 1
            self._flagged += int(report.is_hallucinating)
        return report

    async def ainspect(self, question: str, context_chunks: list[str], answer: str) -> HallucinationReport:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(self.inspect, question, context_chunks, answer))

    def stats(self) -> dict[str, Any]:
        with self._stats_lock:
            inspected, flagged = self._inspected, self._flagged
        rate = flagged / inspected * 100 if inspected else 0.0
        backend = "spaCy" if self._native.ner_backend.startswith("spacy") else "regex (fallback)"
        return {
            "total_inspected": inspected,
            "total_flagged": flagged,
            "hallucination_rate": f"{rate:.1f}%",
            "ner_backend": backend,
        }

    def reset_stats(self) -> None:
        with self._stats_lock:
            self._inspected = self._flagged = 0

    def _history(self, question: str) -> list[Any]:
        return self._native.history.get(question_hash(_TENANT, question))

    def _quiet(self) -> _NativeDetector:
        # Same history and recognizer, logging off: built once, on first use.
        if self._silent is None:
            self._silent = _NativeDetector(
                self.config.with_overrides(log_flagged=False), self._native.history, self._native.recognizer
            )
        return self._silent


# ── healing ──────────────────────────────────────────────────────────────────────────────────────────


@dataclass
class HealingResult:
    original_answer: str
    healed_answer: str
    strategy_used: str
    healing_applied: bool
    initial_risk: str = "low"
    final_risk: str = "low"
    changes_made: list = field(default_factory=list)
    re_inspection_report: Optional[HallucinationReport] = None
    native: Optional[_NativeHealingResult] = field(default=None, repr=False, compare=False)

    @classmethod
    def from_native(cls, result: _NativeHealingResult) -> "HealingResult":
        re_report = None
        if result.final_report is not None and result.applied:
            re_report = HallucinationReport.from_native(result.final_report)
            re_report.confidence_score = result.confidence_after
        return cls(
            original_answer=result.original_answer,
            healed_answer=result.healed_answer,
            strategy_used=result.strategy,
            healing_applied=result.applied,
            initial_risk=result.initial_risk.value,
            final_risk=result.final_risk.value,
            changes_made=[c.description for c in result.changes],
            re_inspection_report=re_report,
            native=result,
        )

    def summary(self) -> str:
        lines = [
            f"  Strategy     : {self.strategy_used}",
            f"  Healing      : {'yes' if self.healing_applied else 'no'}",
            f"  Initial risk : {self.initial_risk.upper()}",
            f"  Final risk   : {self.final_risk.upper()}",
            f"  Before       : {self.original_answer[:100]}",
            f"  After        : {self.healed_answer[:100]}",
        ]
        lines += [f"    - {c}" for c in self.changes_made]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy_used": self.strategy_used,
            "healing_applied": self.healing_applied,
            "initial_risk": self.initial_risk,
            "final_risk": self.final_risk,
            "changes_made": list(self.changes_made),
            "healed_answer": self.healed_answer,
        }


class HallucinationHealer:
    SAFE_DECLINE = DetectorConfig().decline_message

    def __init__(self, detector: HallucinationDetector) -> None:
        self._detector = detector
        # The seed serves its safe decline when no repair passes (DISCARD); the native default is fallback.
        self._healer = _NativeHealer(detector.native, decline_on_failure=True)

    def heal(
        self, question: str, context_chunks: list[str], answer: str, report: HallucinationReport
    ) -> HealingResult:
        chunks = list(context_chunks or ())
        native = report.native
        history = self._detector._history(question)
        if native is None:
            # A hand-built report: judge the answer afresh so the healer has findings to work from.
            native = self._detector.native.analyze(Inspection.build(question, chunks, answer), history)
        return HealingResult.from_native(self._healer.heal(question, chunks, answer, native, history=history))

    @staticmethod
    def _recalibrate_confidence(
        healed_answer: str, context_chunks: list[str], strategy: str, original_confidence: float
    ) -> float:
        return _recalibrate(strategy, original_confidence, healed_answer)


# ── quality ──────────────────────────────────────────────────────────────────────────────────────────


@dataclass
class QualityScore:
    faithfulness_component: float = 0.0
    consistency_component: float = 0.0
    confidence_component: float = 0.0
    latency_component: float = 0.0
    drift_penalty: float = 0.0
    final_score: float = 0.0
    routing: str = "fallback"

    @classmethod
    def compute(
        cls,
        report: HallucinationReport | _NativeReport,
        healing_result: Optional[HealingResult] = None,
        config: Optional[DetectorConfig] = None,
    ) -> "QualityScore":
        if isinstance(report, _NativeReport):
            report = HallucinationReport.from_native(report)
        applied = healing_result is not None and healing_result.healing_applied
        declined = applied and healing_result is not None and healing_result.strategy_used == "safe_decline"
        basis, latency = report, report.latency_ms
        if applied and not declined and healing_result is not None and healing_result.re_inspection_report:
            basis = healing_result.re_inspection_report
            latency += basis.latency_ms
        parts = _quality.components(
            faithfulness=basis.faithfulness_score,
            confidence=basis.confidence_score,
            contradiction=basis.contradiction_found,
            latency_ms=latency,
        )
        score, penalty = _quality.combine(parts, basis.drift_detected)
        routing = _quality.route(
            score,
            flagged=basis.is_hallucinating,
            healing_applied=applied,
            healing_passed=applied and not declined,
            declined=declined,
            config=config,
        )
        return cls(
            faithfulness_component=parts["faithfulness"],
            consistency_component=parts["consistency"],
            confidence_component=parts["confidence"],
            latency_component=parts["latency"],
            drift_penalty=penalty,
            final_score=score,
            routing=routing,
        )

    def summary(self) -> str:
        drift = f"\n    drift      -{self.drift_penalty:.2f} penalty" if self.drift_penalty else ""
        return (
            f"  Score     : {self.final_score:.2f} -> {self.routing.upper()}\n"
            f"  Components:\n"
            f"    faithful   {self.faithfulness_component:.2f} / 0.40\n"
            f"    consistent {self.consistency_component:.2f} / 0.30\n"
            f"    confidence {self.confidence_component:.2f} / 0.20\n"
            f"    latency    {self.latency_component:.2f} / 0.10{drift}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "final_score": round(self.final_score, 3),
            "routing": self.routing,
            "faithfulness_component": round(self.faithfulness_component, 3),
            "consistency_component": round(self.consistency_component, 3),
            "confidence_component": round(self.confidence_component, 3),
            "latency_component": round(self.latency_component, 3),
            "drift_penalty": round(self.drift_penalty, 3),
        }
