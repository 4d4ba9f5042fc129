"""An answer checked sentence by sentence as it is generated (POST /v1/check/stream).

Two halves:

- `SentenceBuffer` (wherever the chunks arrive): the sentences of an answer that arrives in pieces, each as
  soon as it is complete. The splitter (text/sentences.py) decides an end by the word that follows it ("Dr.
  Liu", "$49.99", "the U.S. The"), so a sentence is complete once the next sentence's first word has arrived
  whole (followed by a space), or the answer has ended. Pieces are contiguous: joined, they are the answer.
- `check_sentences` (in a judge process, engine/pool.py `run_in`): each sentence against the event's context,
  with the context analysed once per stream (a cached base inspection; `Inspection.with_answer` carries its
  views), judged and repaired by the same detector, healer and routing as a whole answer: a sentence is
  released as generated when it would be accepted on its own, released repaired when its repair passes, and
  withheld (with the reason) otherwise.

Checks that need the whole answer run at the end, on the full event, exactly as /v1/check: drift (against the
question's history, which only the whole answer joins), relevance to the question and confidence (features of
the answer as a whole), the overall hallucination score and the routing. That verdict can still turn the
answer to fallback or discard after every sentence was released.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import orjson

from stream_guard.config.detector import Limits
from stream_guard.engine.pipeline import Guard
from stream_guard.heal.result import CONTRADICTION_PATCH, ENTITY_SCRUB, HealingResult
from stream_guard.scoring.quality import ACCEPT, HEALED_ACCEPT, QualityScore
from stream_guard.text.analysis import BoundedLRU
from stream_guard.text.inspection import Inspection
from stream_guard.text.sentences import split_sentences
from stream_guard.wire.events import AnswerEvent, EventError, decode_event
from stream_guard.wire.inline import RELEASED, REPAIRED, WITHHELD, StreamedSentence
from stream_guard.wire.report import Finding, HallucinationReport
from stream_guard.wire.verdict import Statement

# A "sentence" that has not ended after this many characters is released at its last space: re-splitting an
# endless one on every chunk would cost its length squared.
MAX_SENTENCE_CHARS = 4000
# Repairs that edit the sentence where it stands. A sentence only a rewrite from the sources (or dropping it) would
# mend is withheld: mid-answer, a rewrite repeats the sources rather than saying what the sentence meant to.
IN_PLACE = frozenset({CONTRADICTION_PATCH, ENTITY_SCRUB})
# Base inspections kept per judge process (one per stream in flight on it; a miss only re-reads the context).
STREAMS_CACHED = 64


@dataclass(frozen=True)
class Piece:
    """A complete sentence: its position among the sentences, the sentence, the text it spans (with the
    whitespace before the next one), and where that text ends in the answer (characters)."""

    index: int
    sentence: str
    raw: str
    end: int


@dataclass
class SentenceBuffer:
    """Feed it chunks; it gives back the sentences they complete."""

    pending: str = ""  # the text after the last complete sentence
    offset: int = 0  # where `pending` starts in the answer
    parts: list[str] = field(default_factory=list)
    size: int = 0
    index: int = 0

    @property
    def answer(self) -> str:
        """Everything fed so far."""
        return "".join(self.parts)

    def feed(self, chunk: str) -> list[Piece]:
        self.parts.append(chunk)
        self.size += len(chunk)
        self.pending += chunk
        cut = max(self.pending.rfind(" "), self.pending.rfind("\n"), self.pending.rfind("\t"))
        if cut <= 0:
            return []
        spans = _spans(self.pending, split_sentences(self.pending[:cut]))  # whole words only
        complete = spans[:-1]  # the last sentence may go on
        while complete and _MARKER_RE.match(self.pending[slice(*complete[-1])]):
            complete.pop()  # "1." ends a sentence only until "2." shows it to be a list's marker: wait for its item
        if not complete:
            if len(self.pending) > MAX_SENTENCE_CHARS:
                return self._release([(0, cut)], cut)
            return []
        return self._release(complete, spans[len(complete)][0])

    def finish(self) -> list[Piece]:
        """The sentences left when the answer has ended."""
        pieces = self._release(_spans(self.pending, split_sentences(self.pending)), len(self.pending))
        self.pending = ""
        return pieces

    def _release(self, spans: Sequence[tuple[int, int]], end: int) -> list[Piece]:
        """The sentences at `spans` of `pending`, each piece's text running to the next one's start (the last
        one's to `end`); a list marker ("1.", "b)") goes with the sentence after it."""
        pieces: list[Piece] = []
        begin = first = 0
        for i, (start, stop) in enumerate(spans):
            if i + 1 < len(spans) and _MARKER_RE.match(self.pending[start:stop]):
                continue
            upto = spans[i + 1][0] if i + 1 < len(spans) else end
            lead = spans[first][0]
            pieces.append(Piece(self.index + len(pieces), self.pending[lead:stop].strip(), self.pending[begin:upto],
                                self.offset + upto))
            begin, first = upto, i + 1
        self.index += len(pieces)
        self.pending = self.pending[end:]
        self.offset += end
        return pieces


# A sentence that is only an enumerator: the splitter ends "1." as a sentence until a "2." follows it.
_MARKER_RE = re.compile(r"^[-*•⁃]?\s*(?:\d{1,2}|[A-Za-z])[.)]{1,2}$")


def _spans(text: str, sentences: Sequence[str]) -> list[tuple[int, int]]:
    """Where each sentence (stripped substrings of `text`, in order) starts and ends in `text`."""
    out, cursor = [], 0
    for sentence in sentences:
        at = text.find(sentence, cursor)
        at = cursor if at < 0 else at
        out.append((at, at + len(sentence)))
        cursor = at + len(sentence)
    return out


# --- in the judge process -------------------------------------------------------------------------------------


def decode_header(raw: bytes, limits: Limits) -> AnswerEvent:
    """The first line of a streamed answer: an AnswerEvent without its answer, checked by the same decoder as a
    whole event (every error names the field)."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise EventError("$", f"the first line is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise EventError("$", f"the first line must be the event as a JSON object, got {type(obj).__name__}")
    if "answer" in obj:
        raise EventError("answer", "must not be in the first line: the answer arrives as the lines that follow")
    # The placeholder only satisfies the decoder; the answer's own limits are checked on the full answer.
    return decode_event(orjson.dumps({**obj, "answer": "-"}), limits)


_bases: BoundedLRU[str, Inspection] = BoundedLRU(STREAMS_CACHED, STREAMS_CACHED)  # by count: weight 1 each


def _base(guard: Guard, stream: str, header: bytes) -> Inspection:
    """The stream's question and context, analysed once per process (header: as `open_stream` accepted it)."""
    def analyse() -> Inspection:
        event = decode_header(header, guard.config.limits)
        return Inspection.build(event.question, event.context, "", event.citations, event.tenant).analysed()

    return _bases.get_or_make(stream, analyse, 1)


def open_stream(guard: Guard, stream: str, header: bytes) -> dict[str, str] | None:
    """Check a stream's first line and analyse its context: None, or what is wrong with it (field, reason)."""
    try:
        _base(guard, stream, header)
    except EventError as exc:
        return {"field": exc.field, "reason": exc.reason}
    return None


def check_sentences(guard: Guard, stream: str, header: bytes, pieces: Sequence[Piece]) -> list[StreamedSentence]:
    """Each piece's sentence checked against the stream's context (no drift history: that is the whole answer's)."""
    base = _base(guard, stream, header)
    # One entity pass for the sentences that completed together (spaCy's cost is largely per call).
    inspections = guard.detector.with_entities([base.with_answer(piece.sentence) for piece in pieces])
    return [check_sentence(guard, base, inspection, piece) for inspection, piece in zip(inspections, pieces)]


def check_sentence(guard: Guard, base: Inspection, inspection: Inspection, piece: Piece) -> StreamedSentence:
    """One sentence (`inspection`: the base with the sentence as its answer, entities found), judged and routed as
    an answer that is only this sentence would be."""
    report = guard.detector.analyze(inspection, ())
    latency = guard.quality_latency_ms
    healing: HealingResult | None = None
    quality = QualityScore.compute(report, None, guard.config, latency_ms=latency)
    if report.flagged:
        healing = guard.healer.heal(base.question, base.chunks, piece.sentence, report, citations=base.citations,
                                    tenant=base.tenant, inspection=inspection)
        quality = QualityScore.compute(report, healing, guard.config, latency_ms=latency)
    findings = [Statement.of(f) for f in report.hallucinated_statements]
    if quality.routing == ACCEPT:
        return StreamedSentence(index=piece.index, status=RELEASED, text=piece.raw, end=piece.end, findings=findings)
    trailing = piece.raw[len(piece.raw.rstrip()):]
    if quality.routing == HEALED_ACCEPT and healing is not None and healing.strategy in IN_PLACE:
        return StreamedSentence(index=piece.index, status=REPAIRED, text=healing.healed_answer.strip() + trailing,
                                end=piece.end,
                                original=piece.sentence, reason=_why(report), strategy=healing.strategy,
                                findings=findings)
    return StreamedSentence(index=piece.index, status=WITHHELD, text="", end=piece.end, original=piece.sentence,
                            reason=_why(report, healing), strategy=healing.strategy if healing else None,
                            findings=findings)


def _why(report: HallucinationReport, healing: HealingResult | None = None) -> str:
    """The finding that decided, in words; for a withheld sentence, also why no repair was delivered."""
    first: Finding | None = report.hallucinated_statements[0] if report.hallucinated_statements else None
    reason = (f"{first.type.value.replace('_', ' ')}: {first.evidence}" if first is not None
              else f"flagged (hallucination score {report.hallucination_score:.2f})")
    if healing is not None and healing.applied and healing.strategy not in IN_PLACE:
        reason += f"; only {healing.strategy.replace('_', ' ')} would mend it, not an edit in place"
    elif healing is not None and not healing.applied:
        refused = [c.description for c in healing.changes if c.kind in ("fallback", "refused")]
        reason += "; no repair passed" + (f" ({refused[-1]})" if refused else "")
    return reason


def stream_payload(header: bytes, answer: str) -> bytes:
    """The whole event of a finished stream: its first line with the answer, for the verdict at the end."""
    obj: dict[str, Any] = orjson.loads(header)
    obj["answer"] = answer
    return orjson.dumps(obj)
