"""Citations: do the answer's inline markers name real chunks, and do those chunks support the sentence?

Markers are `[2]` / `[1, 3]` / `[1-3]` (1-based chunk positions), `[doc-id]` / `[source: doc-id]`
(chunk ids) and `[Passage 2]`. Square brackets are also used for "[sic]", "[Note]", "[2019]" and markdown
link text, so a bracket only counts as a citation when it has a citation shape (numbers, a "source:"
prefix, an id like "kb-12") or names an existing chunk. Event-level `citations` must each name a chunk.

score = mismatched / markers (0 with none). A marker mismatches when it names no chunk (fabricated) or
when the chunk it names does not support the sentence it is attached to (wrong chunk).
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from stream_guard.checks.base import elapsed_ms
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import CheckResult, Finding, FindingType
from stream_guard.text.words import stem_set

# Not followed by "(" so "[text](https://...)" markdown links are left alone.
_BRACKET_RE = re.compile(r"\[([^\[\]\n]{1,120})\](?!\()")
_PREFIX_RE = re.compile(r"^(?:source|sources|src|ref|refs|doc|docs|document|chunk|passage|citation|cite)s?\s*[:#]\s*", re.I)
_POSITIONAL_RE = re.compile(r"^(?:(?:source|passage|doc|document|chunk|ref)s?(?:\s*+#)?\s*+)?(\d{1,3})$", re.I)
_RANGE_RE = re.compile(r"^(\d{1,3})\s*[-–]\s*(\d{1,3})$")
_YEAR_RE = re.compile(r"^(?:1[5-9]|20)\d\d$")
# An id-shaped token: letters then a separator then more ("kb-12", "doc_7", "faq:returns"), no spaces.
_ID_SHAPE_RE = re.compile(r"^([A-Za-z][A-Za-z0-9]*)[-_:./#]([\w.:/#-]+)$")
_GENERIC_ID_PREFIXES = frozenset("doc docs document source src ref chunk passage kb id".split())
_SPLIT_RE = re.compile(r"\s*+[,;]\s*+|\s++and\s++")
_MAX_RANGE = 20
# Brackets read as citation markers per answer. RAGTruth answers cite at most a handful; the cap keeps an
# answer made of brackets ("[1][1][1]...") in bounded time.
MAX_MARKERS = 256
# Leading markers of a sentence ("[2] The fee ..."), which belong to the sentence before.
_LEADING_BRACKETS_RE = re.compile(r"(?:\s*+\[[^\[\]\n]{1,120}\](?!\())*+")


@dataclass(frozen=True)
class Marker:
    """One cited reference, as written, and the sentence it is attached to."""

    ref: str
    raw: str  # the whole bracket, e.g. "[1, 3]"
    sentence: str
    group: int  # markers from the same bracket share a group: together they support the sentence


def _chunk_prefixes(inspection: Inspection) -> frozenset[str]:
    out = set()
    for chunk in inspection.chunks:
        match = _ID_SHAPE_RE.match(chunk.id)
        if match:
            out.add(match.group(1).lower())
    return frozenset(out)


def _expand(part: str) -> list[str] | None:
    """The refs in one comma-separated part of a bracket; None when it is not citation-shaped."""
    part = part.strip()
    positional = _POSITIONAL_RE.match(part)
    if positional:
        return [str(int(positional.group(1)))]
    ranged = _RANGE_RE.match(part)
    if ranged:
        low, high = int(ranged.group(1)), int(ranged.group(2))
        if low <= high and high - low < _MAX_RANGE:
            return [str(i) for i in range(low, high + 1)]
    return None


def parse_bracket(body: str, inspection: Inspection, id_prefixes: frozenset[str]) -> list[str]:
    """Refs named by one bracket's text; [] when the bracket is not a citation."""
    text = body.strip()
    if inspection.chunk_by_ref(text) is not None:
        return [text]  # an exact chunk id, whatever its shape ("[sic]" too, if a chunk is called that)
    prefixed = bool(_PREFIX_RE.match(text))
    text = _PREFIX_RE.sub("", text)
    refs: list[str] = []
    for part in filter(None, _SPLIT_RE.split(text)):
        if inspection.chunk_by_ref(part) is not None:
            refs.append(part)
            continue
        expanded = _expand(part)
        if expanded is not None:
            if not prefixed and len(expanded) == 1 and _YEAR_RE.match(part):
                return []  # "[2019]" is a year unless a chunk is called that
            refs.extend(expanded)
            continue
        shape = _ID_SHAPE_RE.match(part)
        looks_like_id = shape is not None and (
            shape.group(1).lower() in id_prefixes or shape.group(1).lower() in _GENERIC_ID_PREFIXES
        )
        if (prefixed and " " not in part) or looks_like_id:
            refs.append(part)
            continue
        return []  # prose in brackets: "[sic]", "[Note]", "[citation needed]"
    return refs


def _sentence_spans(inspection: Inspection) -> list[tuple[int, int, str]]:
    spans, cursor = [], 0
    answer = inspection.answer
    for sentence in inspection.answer_sentences:
        start = answer.find(sentence, cursor)
        if start < 0:
            continue
        spans.append((start, start + len(sentence), sentence))
        cursor = start + len(sentence)
    return spans


def find_markers(inspection: Inspection) -> list[Marker]:
    """Inline citation markers in reading order, each attached to its sentence. A marker that opens a
    sentence (or is all of it) belongs to the sentence before: "... 14 days. [2]". At most MAX_MARKERS."""
    spans = _sentence_spans(inspection)
    starts = [start for start, _, _ in spans]
    leading_ends = [_LEADING_BRACKETS_RE.match(inspection.answer, start, end).end() for start, end, _ in spans]
    prefixes = _chunk_prefixes(inspection)
    markers: list[Marker] = []
    for group, match in enumerate(_BRACKET_RE.finditer(inspection.answer)):
        if len(markers) >= MAX_MARKERS:
            break
        refs = parse_bracket(match.group(1), inspection, prefixes)
        if not refs:
            continue
        sentence = _attached_sentence(spans, starts, leading_ends, match.start())
        markers.extend(Marker(ref, match.group(), sentence, group) for ref in refs[: MAX_MARKERS - len(markers)])
    return markers


def _attached_sentence(
    spans: list[tuple[int, int, str]], starts: list[int], leading_ends: list[int], start: int
) -> str:
    i = bisect_right(starts, start) - 1
    if i >= 0 and start < spans[i][1]:
        leading = start <= spans[i][0] or start < leading_ends[i]  # only brackets before it
        if leading and i > 0:
            return spans[i - 1][2]
        return spans[i][2]
    return spans[-1][2] if spans else ""


@lru_cache(maxsize=4096)
def _sentence_stems(sentence: str) -> frozenset[str]:
    # Cached: every bracket of one long sentence asks for the same stems.
    return stem_set(_BRACKET_RE.sub(" ", sentence))


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
        stems = _sentence_stems(cited[0][0].sentence)
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
