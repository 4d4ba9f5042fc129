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
    "HallucinationDetector": "stream_guard.detector",
    "HallucinationHealer": "stream_guard.healing",
    "HealingResult": "stream_guard.healing",
    "QualityScore": "stream_guard.quality",
    "HallucinationBlocked": "stream_guard.errors",
    "configure_logging": "stream_guard.logs",
    "DetectorConfig": "stream_guard.config",
    "preset": "stream_guard.config",
    "load_config": "stream_guard.config",
    "HallucinationReport": "stream_guard.report",
    "Finding": "stream_guard.report",
    "FindingType": "stream_guard.report",
    "Risk": "stream_guard.report",
    "AnswerEvent": "stream_guard.events",
    "Chunk": "stream_guard.events",
    "EventError": "stream_guard.events",
    "Limits": "stream_guard.events",
    "decode_event": "stream_guard.events",
    "parse_event": "stream_guard.events",
    "Guard": "stream_guard.pipeline",
    "Verdict": "stream_guard.verdict",
    "MemoryHistory": "stream_guard.history",
    "SQLiteHistory": "stream_guard.history",
    "HistoryStore": "stream_guard.history",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'stream_guard' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
