"""stream-guard: catch, repair and route hallucinated RAG answers, CPU only.

Library API (a drop-in for the seed library; `stream_guard.compat` keeps its exact names):

    from stream_guard import HallucinationDetector, HallucinationHealer, DetectorConfig, QualityScore

    detector = HallucinationDetector(DetectorConfig(db_path="drift.db"))
    report = detector.inspect(question, context_chunks, answer)
    score = QualityScore.compute(report)
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.2.0"

# Lazy so that `import stream_guard` stays cheap and never loads spaCy until a detector is built.
_EXPORTS = {
    "HallucinationDetector": "stream_guard.engine.detector",
    "HallucinationHealer": "stream_guard.heal",
    "HealingResult": "stream_guard.heal",
    "QualityScore": "stream_guard.scoring.quality",
    "HallucinationBlocked": "stream_guard.errors",
    "configure_logging": "stream_guard.logs",
    "DetectorConfig": "stream_guard.config.detector",
    "preset": "stream_guard.config.detector",
    "load_config": "stream_guard.config.load",
    "HallucinationReport": "stream_guard.wire.report",
    "Finding": "stream_guard.wire.report",
    "FindingType": "stream_guard.wire.report",
    "Risk": "stream_guard.wire.report",
    "AnswerEvent": "stream_guard.wire.events",
    "Chunk": "stream_guard.wire.events",
    "EventError": "stream_guard.wire.events",
    "Limits": "stream_guard.config.detector",
    "decode_event": "stream_guard.wire.events",
    "parse_event": "stream_guard.wire.events",
    "Guard": "stream_guard.engine.pipeline",
    "Verdict": "stream_guard.wire.verdict",
    "MemoryHistory": "stream_guard.engine.history",
    "SQLiteHistory": "stream_guard.engine.history",
    "HistoryStore": "stream_guard.engine.history",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'stream_guard' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
