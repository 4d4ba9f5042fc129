"""Citations: do the answer's inline markers name real chunks, and do those chunks support the sentence?

The markers are read once with the rest of the answer's markup (text/markup.py): "[2]", "[1, 3]", "[1-3]"
(1-based chunk positions), "[doc-id]" / "[source: doc-id]" (chunk ids), "[Passage 2]", "【1】", footnote markers
"[^1]" (citing what their definition line names) and "(Source: passage 2)". Event-level `citations` must each
name a chunk.

score = mismatched / cited refs (0 with none). A marker mismatches when it names no chunk (fabricated) or when
the chunks it names do not support the sentence it is attached to (wrong chunk). An id-shaped ref whose prefix
is neither a chunk id's nor a generic one ("doc", "source", ...) is not judged: "[COVID-19]" is not a citation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

from stream_guard.checks.base import elapsed_ms
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.claims import extract_claims
from stream_guard.text.inspection import Inspection
from stream_guard.text.markup import ID_SHAPE_RE, MAX_MARKERS
from stream_guard.wire.report import CheckResult, Finding, FindingType
from stream_guard.text.words import stem_set

_GENERIC_ID_PREFIXES = frozenset("doc docs document source src ref chunk passage kb id".split())


@dataclass(frozen=True)
class Marker:
    """One cited reference, as written, and the (plain) sentence it is attached to."""

    ref: str
    raw: str  # the whole marker, e.g. "[1, 3]"
    sentence: str
    group: int  # refs from the same marker share a group: together they support the sentence


def _chunk_prefixes(inspection: Inspection) -> frozenset[str]:
    out = set()
    for chunk in inspection.chunks:
        match = ID_SHAPE_RE.match(chunk.id)
        if match:
            out.add(match.group(1).lower())
    return frozenset(out)


def _judged(ref: str, inspection: Inspection, prefixes: frozenset[str]) -> bool:
    if inspection.chunk_by_ref(ref) is not None:
        return True
    shape = ID_SHAPE_RE.match(ref)
    return shape is None or shape.group(1).lower() in prefixes or shape.group(1).lower() in _GENERIC_ID_PREFIXES


def find_markers(inspection: Inspection) -> list[Marker]:
    """Inline citation refs in reading order, each with the sentence its marker is attached to ("... 14 days
    [2]." and "... 14 days. [2]" both cite for that sentence). At most MAX_MARKERS."""
    prefixes = _chunk_prefixes(inspection)
    markers: list[Marker] = []
    group = 0
    for sentence in inspection.answer_markup.sentences:
        for marker in sentence.markers:
            group += 1
            refs = [r for r in marker.refs if _judged(r, inspection, prefixes)]
            markers.extend(Marker(ref, marker.raw, sentence.text, group) for ref in refs)
    return markers[:MAX_MARKERS]


@lru_cache(maxsize=4096)
def _claim_stems(sentence: str, question: str) -> frozenset[str]:
    """Content stems of what the sentence claims (claims.py): none for a refusal or a greeting, whose marker
    cannot cite the wrong chunk; the question's for a bare "yes" / "no". Cached: every marker of one long
    sentence asks for the same stems."""
    return frozenset().union(*(stem_set(c.text) for c in extract_claims(sentence, [sentence], question)))


def _support(stems: frozenset[str], chunk_stems: frozenset[str]) -> float:
    return len(stems & chunk_stems) / len(stems) if stems else 1.0


class CitationCheck:
    """Inline markers and event citations versus the retrieved chunks."""

    name = "citations"

    def __init__(self, config: DetectorConfig) -> None:
        self._threshold = config.faithfulness_overlap_threshold

    def run(self, inspection: Inspection) -> CheckResult:
        started = time.perf_counter()
        markers = find_markers(inspection)
        findings = self._inline_findings(markers, inspection) + self._event_findings(inspection)
        total = len(markers) + len(inspection.citations)
        fabricated = sum(f.kind == "fabricated_citation" for f in findings)
        return CheckResult(
            name=self.name,
            score=len(findings) / total if total else 0.0,
            flagged=bool(findings),
            findings=tuple(findings),
            verified=_verified(markers, findings),
            details={
                "markers": len(markers),
                "event_citations": len(inspection.citations),
                "total": total,
                "mismatched": len(findings),
                "fabricated": fabricated,
                "wrong_chunk": len(findings) - fabricated,
            },
            latency_ms=elapsed_ms(started),
        )

    def _inline_findings(self, markers: list[Marker], inspection: Inspection) -> list[Finding]:
        findings: list[Finding] = []
        by_group: dict[int, list[Marker]] = {}
        for marker in markers:
            by_group.setdefault(marker.group, []).append(marker)
        for group in by_group.values():
            resolved = [(m, inspection.chunk_by_ref(m.ref)) for m in group]
            findings.extend(_fabricated(m, inspection) for m, index in resolved if index is None)
            cited = [(m, index) for m, index in resolved if index is not None]
            if cited:
                findings.extend(self._wrong_chunks(cited, inspection))
        return findings

    def _wrong_chunks(self, cited: list[tuple[Marker, int]], inspection: Inspection) -> list[Finding]:
        stems = _claim_stems(cited[0][0].sentence, inspection.question)
        union = frozenset().union(*(inspection.chunk_stems[i] for _, i in cited))
        if _support(stems, union) >= self._threshold:
            return []  # the cited chunks together support the sentence
        supports = [_support(stems, chunk) for chunk in inspection.chunk_stems]
        best = max(range(len(supports)), key=supports.__getitem__)
        return [_wrong_chunk(m, index, supports, best, self._threshold, inspection) for m, index in cited]

    def _event_findings(self, inspection: Inspection) -> list[Finding]:
        return [
            Finding(
                type=FindingType.CITATION_MISMATCH,
                kind="fabricated_citation",
                statement="",
                evidence=f"the event cites {ref!r}, which is none of the {len(inspection.chunks)} retrieved chunks",
                answer_value=ref,
            )
            for ref in inspection.citations
            if inspection.chunk_by_ref(ref) is None
        ]


def _verified(markers: list[Marker], findings: list[Finding]) -> tuple[str, ...]:
    """Cited sentences whose every marker checked out."""
    faulty = {f.statement for f in findings}
    return tuple(dict.fromkeys(m.sentence for m in markers if m.sentence and m.sentence not in faulty))


def _fabricated(marker: Marker, inspection: Inspection) -> Finding:
    ids = ", ".join(c.id for c in inspection.chunks[:8]) or "none"
    return Finding(
        type=FindingType.CITATION_MISMATCH,
        kind="fabricated_citation",
        statement=marker.sentence,
        evidence=f"{marker.raw} cites {marker.ref!r}, but the {len(inspection.chunks)} retrieved chunks are: {ids}",
        answer_value=marker.ref,
    )


def _wrong_chunk(
    marker: Marker, index: int, supports: list[float], best: int, threshold: float, inspection: Inspection
) -> Finding:
    chunk = inspection.chunks[index]
    evidence = f"{marker.raw} cites chunk {chunk.id!r}, which covers only {supports[index]:.0%} of the sentence's content words"
    supporting = inspection.chunks[best].id if best != index and supports[best] >= threshold else None
    if supporting is not None:
        evidence += f"; chunk {supporting!r} supports it ({supports[best]:.0%})"
    else:
        evidence += "; no retrieved chunk supports it"
    # answer_value is the marker as cited, source_value the chunk it should cite (if any): what a healer
    # needs to re-point the marker in place.
    return Finding(
        type=FindingType.CITATION_MISMATCH,
        kind="wrong_chunk",
        statement=marker.sentence,
        evidence=evidence,
        answer_value=marker.ref,
        source_value=supporting,
        chunk_id=chunk.id,
    )
