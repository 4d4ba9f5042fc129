"""The shapes of inline use (`stream-guard serve` and stream_guard.client), defined once as msgspec Structs: the
service encodes them, the client decodes them, /openapi.json publishes their JSON Schemas.

- `Failure`: why an event got no verdict; exactly the object `stream-guard check` prints for a bad line
  (`error`, `field`, `reason`, `stage`; the worker's dead letters carry the same field and reason), with the
  batch `index` where it applies.
- A streamed answer (POST /v1/check/stream) answers with one JSON object per line: a `StreamedSentence` for each
  sentence as soon as it is complete and checked, then a `StreamedVerdict` (the whole answer's verdict, as
  /v1/check gives it) or a `StreamFailure`.
- `DriftHistory`: what is remembered of a tenant's question (fingerprints, never answer text).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from stream_guard.wire.verdict import Statement, Verdict

Stage = Literal["decode", "judge", "timeout", "request"]
SentenceStatus = Literal["released", "repaired", "withheld"]
RELEASED, REPAIRED, WITHHELD = "released", "repaired", "withheld"


class Failure(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Why an event (or a request) got no verdict. stage: decode (the event breaks the contract: the same field
    and reason as the dead-letter topic), judge (the guard failed on it), timeout (over its CPU budget),
    request (the HTTP request itself: its size, its token, its framing)."""

    error: Annotated[str, Meta(description='"<field>: <reason>"')]
    field: Annotated[str, Meta(description='the offending field as a dotted path ("context[2].text"); "$": the '
                                           'whole payload')]
    reason: str
    stage: Stage
    event_id: str | None = None
    cost_ms: Annotated[float, Meta(description="CPU spent when stopped (stage timeout)")] | None = None
    index: Annotated[int, Meta(ge=0, description="the event's position in a batch")] | None = None


class StreamedSentence(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="type",
                       tag="sentence"):
    """One sentence of a streamed answer, released as soon as it is complete and checked against the context.
    `text` is what to show (with the whitespace that followed the sentence, so the texts of a stream joined
    give the answer as released): the sentence as generated (released), its repair (repaired), or nothing
    (withheld). Sentence checks see the context and that sentence; drift and the whole-answer score come with
    the verdict at the end."""

    index: Annotated[int, Meta(ge=0)]
    status: SentenceStatus
    text: str
    end: Annotated[int, Meta(ge=0, description="where the sentence (with its whitespace) ends in the answer as "
                                               "generated, in characters: what follows is not checked yet")]
    original: Annotated[str, Meta(description="the sentence as generated (repaired or withheld)")] | None = None
    reason: Annotated[str, Meta(description="why it was repaired or withheld")] | None = None
    strategy: Annotated[str, Meta(description="the repair's strategy (heal/)")] | None = None
    findings: list[Statement] = msgspec.field(default_factory=list)


class StreamedVerdict(msgspec.Struct, frozen=True, tag_field="type", tag="verdict"):
    """The last line of a streamed answer: the whole answer's verdict (what /v1/check gives for the event with
    the full answer). Its routing can differ from what the sentences suggested (drift, the overall score):
    when it is fallback or discard, replace what was shown with `verdict.delivered_answer`."""

    verdict: Verdict


class StreamFailure(msgspec.Struct, frozen=True, tag_field="type", tag="error"):
    """The last line of a streamed answer that got no verdict (stage decode: the full event breaks the contract)."""

    failure: Failure


StreamLine = StreamedSentence | StreamedVerdict | StreamFailure


class StreamChunk(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A line of a streamed request after the first (the event without its answer): the next piece of the
    answer, as generated."""

    text: str


class DriftHistory(msgspec.Struct, frozen=True, kw_only=True):
    """The drift history of a tenant's question: fingerprints of the last delivered answers, oldest first."""

    tenant: str
    question: str
    question_hash: str
    window_size: int
    fingerprints: list[dict[str, Any]]


_DECODER = msgspec.json.Decoder(StreamLine)  # type: ignore[var-annotated]


def decode_stream_line(raw: bytes) -> StreamLine:
    """One line of a streamed answer's response (msgspec.ValidationError says where it is not)."""
    line: StreamLine = _DECODER.decode(raw)
    return line
