"""Citations: do the answer's inline markers name real chunks, and do those chunks support the sentence?

The markers are read once with the rest of the answer's markup (text/markup.py): "[2]", "[1, 3]", "[1-3]"
(1-based chunk positions), "[doc-id]" / "[source: doc-id]" (chunk ids), "[Passage 2]", "【1】", footnote markers
"[^1]" (citing what their definition line names) and "(Source: passage 2)". Event-level `citations` must each
name a chunk.

score = mismatched / cited refs (0 with none). A marker mismatches when it names no chunk (fabricated) or when
it names the wrong chunk for the sentence it is attached to. An id-shaped ref whose prefix is neither a chunk
id's nor a generic one ("doc", "source", ...) is not judged: "[COVID-19]" is not a citation.

A citation says where a sentence's claims can be read, so a marker is judged by what its chunk holds of them
(the sentence's claim stems, S), together with every other marker of the same sentence ("A [1] and B [2]", "A
[1][2]" and "A [1, 2]" all say the sentence draws on the chunks they name). A marker names the wrong chunk when
- its chunk holds none of S while another chunk holds some: it points away from what the sentence talks about;
- or S is read elsewhere: the sentence's other cited chunks support it without this one (or, when the cited
  chunks together fall short, another chunk supports it), and this chunk holds less than half as much of S as
  they do and nothing of S they lack: it merely shares the topic while the claims are elsewhere.
Not wrong: a cited chunk that another matches only slightly better; one holding a part of S the others lack (the
sentence draws on it); one holding part of a sentence that no chunk supports, or naming a chunk when no chunk
holds any of S (a summary, an inference or an unsupported sentence: no other chunk would be a better citation,
and whether the sentence is grounded is the faithfulness check's question).
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
    position: int  # which answer sentence: every marker of one sentence cites for it together


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
    for position, sentence in enumerate(inspection.answer_markup.sentences):
        for marker in sentence.markers:
            refs = [r for r in marker.refs if _judged(r, inspection, prefixes)]
            markers.extend(Marker(ref, marker.raw, sentence.text, position) for ref in refs)
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
        by_sentence: dict[int, list[Marker]] = {}
        for marker in markers:
            by_sentence.setdefault(marker.position, []).append(marker)
        for group in by_sentence.values():
            resolved = [(m, inspection.chunk_by_ref(m.ref)) for m in group]
            findings.extend(_fabricated(m, inspection) for m, index in resolved if index is None)
            cited = [(m, index) for m, index in resolved if index is not None]
            if cited:
                findings.extend(self._wrong_chunks(cited, inspection))
        return findings

    def _wrong_chunks(self, cited: list[tuple[Marker, int]], inspection: Inspection) -> list[Finding]:
        """The markers of one sentence that name the wrong chunk (module docstring)."""
        stems = _claim_stems(cited[0][0].sentence, inspection.question)
        if not stems:
            return []
        chunks = inspection.chunk_stems
        together = _support(stems, frozenset().union(*(chunks[i] for _, i in cited))) >= self._threshold
        supports = [_support(stems, chunk) for chunk in chunks]
        best = max(range(len(supports)), key=supports.__getitem__)
        wrong = []
        for m, index in cited:
            # What the sentence's claims are read in instead: the sentence's other cited chunks when they support
            # it without this one, else (the cited chunks together fall short) the best-supporting chunk.
            others = frozenset().union(*(chunks[i] for _, i in cited if i != index))
            elsewhere = others if together else chunks[best]
            unrelated = not stems & chunks[index] and supports[best] > 0.0
            if unrelated or _elsewhere(stems, chunks[index], elsewhere, self._threshold):
                wrong.append((m, index))
        return [_wrong_chunk(m, index, supports, best, self._threshold, inspection) for m, index in wrong]

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


def _elsewhere(stems: frozenset[str], cited: frozenset[str], other: frozenset[str], threshold: float) -> bool:
    """Whether the sentence's claims are read in `other` rather than the cited chunk: `other` supports the
    sentence, the cited chunk holds less than half as much of it ("slightly better" is no reason to re-point a
    marker) and nothing of it that `other` lacks (else the sentence draws on both)."""
    other_support = _support(stems, other)
    return other_support >= threshold and _support(stems, cited) < other_support / 2 and stems & cited <= other


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
    share = f"covers only {supports[index]:.0%} of" if supports[index] else "holds none of"
    evidence = f"{marker.raw} cites chunk {chunk.id!r}, which {share} the sentence's content words"
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
