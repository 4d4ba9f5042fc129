"""Relevance: does the retrieved context address the question at all?

A CPU stand-in for an LLM retrieval judge: the share of the question's content stems that the context
covers. Coverage by the whole context is the base; a small bonus goes to context where one chunk covers
the terms together, since terms scattered over unrelated chunks are weaker evidence than one passage
about the subject. Summaries have no question and are never flagged; no context at all scores 0.
"""

from __future__ import annotations

import dataclasses
import time

from stream_guard.checks.base import elapsed_ms
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import CheckResult, Finding, FindingType
from stream_guard.text.words import content_words, stem

# Question scaffolding that survives the stop list but says nothing about the subject: the answer
# to "how long" is a duration, not the word "long".
_QUESTION_WORDS: frozenset[str] = frozenset(
    stem(w)
    for w in """
    many long much often far old kind kinds type types way ways tell explain describe list give know
    mean means meaning please define definition difference differences example examples best good
    """.split()
)
# Weight of the best single chunk's coverage; the rest is whole-context coverage.
_CHUNK_WEIGHT = 0.15
_MAX_MISSING_LISTED = 6


def question_terms(question: str) -> dict[str, str]:
    """Content stems of the question mapped to a word as written, for evidence."""
    out: dict[str, str] = {}
    for word in content_words(question):
        key = stem(word)
        if key not in _QUESTION_WORDS:
            out.setdefault(key, word)
    return out


def _coverage(terms: frozenset[str], stems: frozenset[str]) -> float:
    return len(terms & stems) / len(terms)


class RelevanceCheck:
    """Question coverage by the retrieved context; flagged below `relevance_threshold`."""

    name = "relevance"

    def __init__(self, config: DetectorConfig) -> None:
        self._threshold = config.relevance_threshold

    def run(self, inspection: Inspection) -> CheckResult:
        """Judged once per event: it reads only the question and the context, which the re-inspections of its
        repairs share with it (and their memo, `Inspection.with_answer`)."""
        started = time.perf_counter()
        key = ("relevance", self._threshold, inspection.question)
        kept = inspection.memo.get(key)
        if isinstance(kept, CheckResult):
            return dataclasses.replace(kept, latency_ms=elapsed_ms(started))
        result = self._judge(inspection, started)
        inspection.memo[key] = result
        return result

    def _judge(self, inspection: Inspection, started: float) -> CheckResult:
        terms_by_stem = question_terms(inspection.question)
        terms = frozenset(terms_by_stem)
        if not inspection.question.strip():
            # Summaries and other question-less tasks: nothing to judge the context against.
            return self._unjudged(started)
        if not inspection.context_text.strip():
            return self._result(started, 0.0, 0.0, -1, terms_by_stem, inspection)
        if not terms:
            return self._unjudged(started)  # "What is it?": no subject words to look for
        whole = _coverage(terms, inspection.context_stems)
        per_chunk = [_coverage(terms, stems) for stems in inspection.chunk_stems]
        best_index = max(range(len(per_chunk)), key=per_chunk.__getitem__)
        score = (1 - _CHUNK_WEIGHT) * whole + _CHUNK_WEIGHT * per_chunk[best_index]
        return self._result(started, score, whole, best_index, terms_by_stem, inspection, per_chunk[best_index])

    def _unjudged(self, started: float) -> CheckResult:
        return CheckResult(self.name, 1.0, False, details={"question_terms": 0}, latency_ms=elapsed_ms(started))

    def _result(
        self,
        started: float,
        score: float,
        whole: float,
        best_index: int,
        terms_by_stem: dict[str, str],
        inspection: Inspection,
        best_chunk: float = 0.0,
    ) -> CheckResult:
        missing = [word for key, word in terms_by_stem.items() if key not in inspection.context_stems]
        flagged = score < self._threshold
        findings = (_finding(inspection, len(terms_by_stem), missing),) if flagged else ()
        return CheckResult(
            name=self.name,
            score=score,
            flagged=flagged,
            findings=findings,
            details={
                "question_terms": len(terms_by_stem),
                "context_coverage": round(whole, 4),
                "best_chunk_coverage": round(best_chunk, 4),
                "best_chunk_id": inspection.chunks[best_index].id if best_index >= 0 else None,
                "missing_terms": missing,
            },
            latency_ms=elapsed_ms(started),
        )


def _finding(inspection: Inspection, n_terms: int, missing: list[str]) -> Finding:
    if not inspection.chunks:
        evidence = "no context was retrieved for the question"
    else:
        listed = ", ".join(repr(w) for w in missing[:_MAX_MISSING_LISTED])
        evidence = (
            f"the retrieved context covers {n_terms - len(missing)} of {n_terms} question terms"
            + (f"; missing {listed}" if listed else "")
        )
    return Finding(type=FindingType.UNSUPPORTED, kind="irrelevant_context", statement=inspection.question, evidence=evidence)
