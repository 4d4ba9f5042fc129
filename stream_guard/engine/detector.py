"""HallucinationDetector: runs every check on one answer and assembles the report."""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Iterable, Sequence

from stream_guard.checks.base import Check, elapsed_ms
from stream_guard.checks.citations import CitationCheck
from stream_guard.checks.confidence import ConfidenceCheck
from stream_guard.checks.contradiction import ContradictionCheck
from stream_guard.checks.drift import DriftCheck
from stream_guard.checks.entities import EntityCheck
from stream_guard.checks.faithfulness import FaithfulnessCheck
from stream_guard.checks.relevance import RelevanceCheck
from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.events import Chunk
from stream_guard.text.fingerprint import Fingerprint, event_fingerprint
from stream_guard.engine.history import HistoryStore, MemoryHistory, SQLiteHistory
from stream_guard.text.analysis import BoundedLRU
from stream_guard.text.inspection import Inspection
from stream_guard.text.ner import EntityRecognizer, batch_answer_entities, make_recognizer
from stream_guard.wire.report import CheckResult, Finding, FindingType, HallucinationReport
from stream_guard.scoring.hallucination import (
    assess_risk,
    hallucination_score,
    hallucination_type,
    model_for,
    signal_probabilities,
)
from stream_guard.engine.explain import SOFT_CHECK, deciding, partial_findings, stamped
from stream_guard.text.questions import question_hash

log = logging.getLogger("stream_guard.detector")
# The detector's "hallucination flagged" record (one per flagged answer) goes to the handlers a program configures
# (the worker's, `configure_logging()`), never to Python's last-resort handler: a program that only calls
# `inspect()` and never configured logging got a bare line on stderr per flagged answer. The seed library's logger
# is silent the same way. Only this logger: the commands' own warnings (the worker waiting for its broker) still
# reach stderr before any logging is configured.
log.addHandler(logging.NullHandler())

# Repairs whose checks are kept per detector (see `analyze_repair`), and the characters their keys may hold in all
# (the key holds the question, the context and the repair's text).
REPAIRS_CACHED = 256
REPAIR_CACHE_CHARS = 4_000_000

# Findings are listed most severe first: what an operator should read first.
_FINDING_ORDER = {
    FindingType.CONTRADICTION: 0,
    FindingType.FABRICATED_ENTITY: 1,
    FindingType.CITATION_MISMATCH: 2,
    FindingType.UNSUPPORTED: 3,
}


def default_history(config: DetectorConfig) -> HistoryStore:
    if not config.db_path or config.db_path == ":memory:":
        return MemoryHistory()
    return SQLiteHistory(config.db_path)


class HallucinationDetector:
    """Runs the seven checks; `analyze` is pure, `inspect` adds the drift-history bookkeeping.

    Thread-safe: checks hold no mutable state, the history store and stats take their own locks.
    """

    def __init__(
        self,
        config: DetectorConfig | None = None,
        history: HistoryStore | None = None,
        recognizer: EntityRecognizer | None = None,
    ) -> None:
        self.config = config or DetectorConfig()
        self.history = history if history is not None else default_history(self.config)
        self.recognizer = recognizer or make_recognizer(self.config.ner, self.config.spacy_model)
        self._faithfulness = FaithfulnessCheck(self.config)
        self._checks: tuple[Check, ...] = (
            ConfidenceCheck(self.config),
            self._faithfulness,
            ContradictionCheck(self.config),
            EntityCheck(self.config, self.recognizer),
            CitationCheck(self.config),
            RelevanceCheck(self.config),
        )
        self._drift = DriftCheck(self.config)
        self.score_model = model_for(self.config.score_model_path)
        self._stats_lock = threading.Lock()
        self._stats = {"inspected": 0, "flagged": 0}
        self._repairs: BoundedLRU[tuple[object, ...], dict[str, CheckResult]] = BoundedLRU(REPAIRS_CACHED,
                                                                                          REPAIR_CACHE_CHARS)

    @property
    def ner_backend(self) -> str:
        return self.recognizer.name

    def analyze(self, inspection: Inspection, history: Sequence[Fingerprint] = ()) -> HallucinationReport:
        """Inspect one answer against its context and the given drift history. Records nothing."""
        started = time.perf_counter()
        checks = self._run_checks(inspection)
        return self._report(inspection, checks, history, started)

    def analyze_repair(self, inspection: Inspection, history: Sequence[Fingerprint] = ()) -> HallucinationReport:
        """`analyze` for a repair's text (heal/healer.py). A repair recurs where the answer does: a help desk's
        model repeats the same wrong figure to everyone asking, and the same sources give the same rewrite or
        the same patch each time. Every check but drift is a function of the inspection alone (its question,
        context, answer, citations, tenant and the answer's entities), so their results for a repair already
        checked against the same inputs are read back rather than computed again; drift, which reads the
        history, and the score are computed every time. Only repairs are kept: an original answer recurs
        rarely, a repair of it whenever it does."""
        started = time.perf_counter()
        key = _repair_key(inspection)
        checks = self._repairs.get(key)
        if checks is None:
            checks = self._run_checks(inspection)
            self._repairs.put(key, checks, _repair_chars(inspection))
        return self._report(inspection, dict(checks), history, started)  # a copy: drift joins it

    def _run_checks(self, inspection: Inspection) -> dict[str, CheckResult]:
        """Every check but drift (the one that reads a history)."""
        return {check.name: check.run(inspection) for check in self._checks}

    def _report(self, inspection: Inspection, checks: dict[str, CheckResult], history: Sequence[Fingerprint],
                started: float) -> HallucinationReport:
        checks["drift"] = self._drift.evaluate(inspection, history)
        report = self._assemble(inspection, checks, started)
        self._count(report)
        if report.flagged and self.config.log_flagged:
            log.warning("hallucination flagged", extra={"report": report.to_dict()})
        return report

    def _assemble(self, inspection: Inspection, checks: dict[str, CheckResult], started: float) -> HallucinationReport:
        config = self.config
        # The seed's rule, extremes included: confidence at or above its threshold, grounding below its own.
        confident_but_unfaithful = (
            checks["confidence"].score >= config.confidence_threshold
            and strict_faithfulness(checks["faithfulness"]) < config.faithfulness_threshold
        )
        signals = signal_probabilities(checks, confident_but_unfaithful, self.score_model,
                                       answer=inspection.answer_markup.claim_text, drift_counts=config.drift_decides)
        score = hallucination_score(signals)
        triggered = deciding(signals, config.flag_threshold)
        # Flagged only when a deciding check says so: a score made of nothing is no flag.
        flagged = score >= config.flag_threshold and bool(triggered)
        findings = _ordered_findings(stamped({name: result.findings for name, result in checks.items()}))
        if flagged and not any(f.check == SOFT_CHECK for f in findings) and (
                SOFT_CHECK in triggered or "confident_but_unfaithful" in triggered):
            # The score rests on claims the faithfulness check grounds, only in part: name them.
            findings += tuple(partial_findings(self._faithfulness.groundings(inspection), inspection))
        hallucinated = {f.statement for f in findings}
        verified = tuple(s for s in checks["faithfulness"].verified if s not in hallucinated)
        return HallucinationReport(
            question=inspection.question,
            answer=inspection.answer,
            checks=checks,
            hallucinated_statements=findings,
            verified_statements=verified,
            risk=assess_risk(checks, confident_but_unfaithful, score, config),
            flagged=flagged,
            hallucination_score=score,
            hallucination_type=hallucination_type(checks, flagged),
            triggered=tuple(triggered),
            latency_ms=elapsed_ms(started),
            ner_backend=self.ner_backend,
        )

    def inspect(
        self,
        question: str,
        context_chunks: Iterable[str | Chunk] | str | None,
        answer: str,
        *,
        citations: Sequence[str] = (),
        tenant: str = "default",
    ) -> HallucinationReport:
        """Library entry point: analyze, then remember the answer for drift if it would be delivered as is."""
        inspection = Inspection.build(question, context_chunks, answer, citations, tenant)
        key = question_hash(tenant, question)
        report = self.analyze(inspection, self.history.get(key))
        if not report.flagged and answer.strip():
            self.history.append(key, event_fingerprint(inspection, answer), self.config.window_size)
        return report

    async def ainspect(
        self,
        question: str,
        context_chunks: Iterable[str | Chunk] | str | None,
        answer: str,
        **kwargs: object,
    ) -> HallucinationReport:
        """`inspect` in the default executor, so an event loop (FastAPI, Faust) is never blocked."""
        import asyncio  # loaded by the loop running this; not at module level: `check` never needs it (30 ms)

        loop = asyncio.get_running_loop()
        call = functools.partial(self.inspect, question, context_chunks, answer, **kwargs)
        return await loop.run_in_executor(None, call)

    def with_entities(self, inspections: Sequence[Inspection]) -> list[Inspection]:
        """Fill `answer_entities` for many inspections in one batched NER pass (spaCy's `nlp.pipe`)."""
        pending = [i for i, insp in enumerate(inspections) if insp.answer_entities is None]
        if not pending:
            return list(inspections)
        # Only names absent from the context can be fabricated, so spaCy sees just the windows around
        # capitalised words the context never uses: same flags, a fraction of the NER cost.
        extracted = batch_answer_entities(self.recognizer, [inspections[i] for i in pending])
        out = list(inspections)
        for i, entities in zip(pending, extracted):
            out[i] = out[i].with_entities(tuple(entities))
        return out

    def _count(self, report: HallucinationReport) -> None:
        with self._stats_lock:
            self._stats["inspected"] += 1
            self._stats["flagged"] += int(report.flagged)
            key = f"risk_{report.risk.value}"
            self._stats[key] = self._stats.get(key, 0) + 1

    def stats(self) -> dict[str, object]:
        with self._stats_lock:
            out: dict[str, object] = dict(self._stats)
        out["ner_backend"] = self.ner_backend
        return out

    def reset_stats(self) -> None:
        with self._stats_lock:
            self._stats = {"inspected": 0, "flagged": 0}


def _repair_key(inspection: Inspection) -> tuple[object, ...]:
    """Everything of an inspection the checks but drift read: equal keys, equal results. The tenant is in it so
    that no tenant is ever handed a result computed for another's answer."""
    return (inspection.tenant, inspection.question, inspection.answer, inspection.chunks, inspection.sources,
            inspection.citations, inspection.answer_entities)


def _repair_chars(inspection: Inspection) -> int:
    """The characters a repair's key holds: what its entry weighs in the cache."""
    return (len(inspection.question) + len(inspection.answer) + sum(len(c.text) for c in inspection.chunks)
            + sum(map(len, inspection.sources)))


def _ordered_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    seen: set[tuple[object, ...]] = set()
    unique: list[Finding] = []
    for finding in findings:
        key = (finding.type, finding.kind, finding.statement, finding.answer_value)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return tuple(sorted(unique, key=lambda f: _FINDING_ORDER[f.type]))


def strict_faithfulness(result: CheckResult) -> float:
    """Faithfulness as the seed's confident-but-unfaithful rule reads it: the lower of the share of claims the
    context grounds and the mean share of each claim's content words it contains, so that a claim the sources
    support only in part ("Returns are allowed within some time period." against "returns within 14 days")
    counts as partly unfaithful under a strict faithfulness_threshold (the seed's own test, at 0.99)."""
    mean_overlap = result.details.get("mean_overlap", 1.0) if result.details else 1.0
    return min(result.score, float(mean_overlap))
