"""Event contract v1: the AnswerEvent a RAG system publishes for every generated answer.

Validation is strict and explicit: every error names the field and the reason, and nothing is ever
silently truncated. Parsing is the only place that sees untrusted input.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Mapping

import msgspec
import orjson
from msgspec import Meta

from stream_guard.config.detector import Limits
from stream_guard.errors import InputError

SCHEMA_VERSION = 1
# metadata is passed through into the verdict; deeper nesting than this is refused at the door, far below
# the depth at which the verdict could no longer be serialised (orjson stops at 254 levels).
MAX_METADATA_DEPTH = 32
_BOM = b"\xef\xbb\xbf"


class EventError(InputError):
    """An event that does not satisfy the contract. `field` is a dotted path ("context[2].text")."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "reason": self.reason, "error": str(self)}


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "text": self.text}
        if self.source is not None:
            out["source"] = self.source
        return out


@dataclass(frozen=True)
class AnswerEvent:
    event_id: str
    answer: str
    question: str = ""
    context: tuple[Chunk, ...] = ()
    tenant: str = "default"
    citations: tuple[str, ...] = ()
    model: str | None = None
    produced_at_ms: int | None = None
    label: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Top-level keys the contract does not name, as sent (at most MAX_UNKNOWN_REPORTED): judged without them,
    # reported by the caller. Not part of the event: never written back out.
    unknown_fields: tuple[str, ...] = ()

    @property
    def chunk_texts(self) -> list[str]:
        return [c.text for c in self.context]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "event_id": self.event_id,
            "tenant": self.tenant,
            "question": self.question,
            "context": [c.to_dict() for c in self.context],
            "answer": self.answer,
        }
        if self.citations:
            out["citations"] = list(self.citations)
        out.update(provenance_fields(self.model, self.produced_at_ms, self.label, self.metadata))
        return out


# --- the published contract (schemas/answer-event.v1.schema.json) -------------------------------------------
# What the decoder below accepts, as JSON Schema, for producers to validate against. The decoder stays the
# one that decides (it gives errors naming the field, and applies the configured limits, whose defaults the
# schema states); tests check that what it accepts the schema accepts and that the schema refuses what
# it refuses for a wrong type.

_DEFAULT_LIMITS = Limits()
_ChunkText = Annotated[str, Meta(max_length=_DEFAULT_LIMITS.max_chunk_chars)]


class ContextChunk(msgspec.Struct, kw_only=True):
    """A retrieved chunk. `id` defaults to its 1-based position; ids must be unique within an event."""

    text: _ChunkText
    id: str | int | None = None
    source: str | None = None


class CitationRef(msgspec.Struct, kw_only=True):
    id: str | int | None = None
    chunk_id: str | int | None = None


class AnswerEventContract(msgspec.Struct, kw_only=True):
    """The AnswerEvent a RAG system publishes for every answer (README, Event contract). Keys not named here
    are reported (refused with `[detector.limits] strict_fields`). Limits are the defaults of `[detector.limits]` (1 MB a payload in all)."""

    event_id: Annotated[str, Meta(min_length=1, max_length=256)] | int | None = None
    id: Annotated[str, Meta(min_length=1, max_length=256, description="alias of event_id")] | int | None = None
    tenant: Annotated[str, Meta(max_length=128, description='default "default"')] | None = None
    question: Annotated[str, Meta(max_length=_DEFAULT_LIMITS.max_question_chars)] | None = None
    context: (Annotated[list[_ChunkText | ContextChunk], Meta(max_length=_DEFAULT_LIMITS.max_chunks)] | _ChunkText
              | None) = None
    answer: Annotated[str, Meta(max_length=_DEFAULT_LIMITS.max_answer_chars,
                                description="may be empty: an empty answer is judged (nothing to deliver, so it "
                                            "routes to fallback with that reason)")]
    citations: list[str | int | CitationRef] | None = None
    model: str | None = None
    produced_at: (Annotated[str, Meta(description="ISO-8601 date-time; without an offset it is UTC")]
                  | Annotated[float, Meta(ge=0, description="epoch milliseconds")] | None) = None
    label: Literal[0, 1] | bool | None = None
    metadata: Annotated[dict[str, Any], Meta(description=f"nested at most {MAX_METADATA_DEPTH} levels")] | None = None


# Every event names itself: `event_id`, or its alias `id` (not null).
EVENT_SCHEMA_EXTRA = {"anyOf": [{"required": [key], "properties": {key: {"not": {"type": "null"}}}}
                                for key in ("event_id", "id")]}


def provenance_fields(
    model: str | None, produced_at_ms: int | None, label: int | None, metadata: Mapping[str, Any]
) -> dict[str, Any]:
    """The event's optional fields as they go on the wire, unset ones left out. The verdict echoes them
    too, so both share this: the same names ("produced_at", not produced_at_ms) and the same omissions."""
    out: dict[str, Any] = {}
    if model is not None:
        out["model"] = model
    if produced_at_ms is not None:
        out["produced_at"] = produced_at_ms
    if label is not None:
        out["label"] = label
    if metadata:
        out["metadata"] = dict(metadata)
    return out


def _require_str(obj: Mapping[str, Any], key: str, *, default: str | None = None, max_chars: int | None = None) -> str:
    if key not in obj or obj[key] is None:
        if default is None:
            raise EventError(key, "is required")
        return default
    value = obj[key]
    if not isinstance(value, str):
        raise EventError(key, f"must be a string, got {type(value).__name__}")
    if max_chars is not None and len(value) > max_chars:
        raise EventError(key, f"is {len(value)} characters, over the limit of {max_chars}")
    return value


def _parse_event_id(obj: Mapping[str, Any]) -> str:
    key = "event_id" if obj.get("event_id") is not None else "id"
    if obj.get(key) is None:
        raise EventError("event_id", "is required (or its alias 'id')")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise EventError(key, f"must be a string, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise EventError(key, "must not be empty")
    if len(text) > 256:
        raise EventError(key, f"is {len(text)} characters, over the limit of 256")
    return text


def _parse_chunk(raw: Any, index: int, limits: Limits) -> Chunk:
    where = f"context[{index}]"
    if isinstance(raw, str):
        text, chunk_id, source = raw, str(index + 1), None
    elif isinstance(raw, Mapping):
        text = raw.get("text")
        if not isinstance(text, str):
            reason = "is required" if text is None else f"must be a string, got {type(text).__name__}"
            raise EventError(f"{where}.text", reason)
        raw_id = raw.get("id", index + 1)
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
            raise EventError(f"{where}.id", f"must be a string, got {type(raw_id).__name__}")
        chunk_id = str(raw_id)
        source = raw.get("source")
        if source is not None and not isinstance(source, str):
            raise EventError(f"{where}.source", f"must be a string, got {type(source).__name__}")
    else:
        raise EventError(where, f"must be a string or an object with 'text', got {type(raw).__name__}")
    if len(text) > limits.max_chunk_chars:
        raise EventError(f"{where}.text", f"is {len(text)} characters, over the limit of {limits.max_chunk_chars}")
    return Chunk(id=chunk_id, text=text, source=source)


def _parse_context(obj: Mapping[str, Any], limits: Limits) -> tuple[Chunk, ...]:
    raw = obj.get("context")
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise EventError("context", f"must be a list of chunks or a string, got {type(raw).__name__}")
    if len(raw) > limits.max_chunks:
        raise EventError("context", f"has {len(raw)} chunks, over the limit of {limits.max_chunks}")
    chunks = tuple(_parse_chunk(item, i, limits) for i, item in enumerate(raw))
    seen: set[str] = set()
    for i, chunk in enumerate(chunks):
        if chunk.id in seen:
            raise EventError(f"context[{i}].id", f"duplicates the id {chunk.id!r}")
        seen.add(chunk.id)
    return chunks


def _parse_citations(obj: Mapping[str, Any]) -> tuple[str, ...]:
    raw = obj.get("citations")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise EventError("citations", f"must be a list of chunk ids or 1-based positions, got {type(raw).__name__}")
    out: list[str] = []
    for i, item in enumerate(raw):
        if isinstance(item, Mapping):
            item = item.get("id", item.get("chunk_id"))
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise EventError(f"citations[{i}]", "must be a chunk id (string) or a 1-based position (integer)")
        out.append(str(item))
    return tuple(out)


def parse_produced_at(value: Any) -> int | None:
    """ISO-8601 text or epoch milliseconds (int/float) to epoch milliseconds."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise EventError("produced_at", "must be ISO-8601 text or epoch milliseconds, got bool")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise EventError("produced_at", "must be a non-negative finite number of epoch milliseconds")
        return int(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise EventError("produced_at", f"is not ISO-8601: {value[:40]!r}") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return int(parsed.timestamp() * 1000)
    raise EventError("produced_at", f"must be ISO-8601 text or epoch milliseconds, got {type(value).__name__}")


def _parse_label(obj: Mapping[str, Any]) -> int | None:
    value = obj.get("label")
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if value in (0, 1):
        return int(value)
    raise EventError("label", f"must be 0 or 1, got {value!r}")


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in `value` (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_METADATA_DEPTH:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _parse_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise EventError("metadata", f"must be an object, got {type(metadata).__name__}")
    if _depth(metadata) > MAX_METADATA_DEPTH:
        raise EventError("metadata", f"is nested more than {MAX_METADATA_DEPTH} levels deep")
    return dict(metadata)


def _parse_answer(obj: Mapping[str, Any], limits: Limits) -> str:
    # Required, but it may be empty or blank: a RAG system that produced nothing still gets a verdict (routed
    # to fallback, with the reason), so the user it was answering is served.
    return _require_str(obj, "answer", max_chars=limits.max_answer_chars)


# The top-level keys of contract v1 (AnswerEventContract's fields, which the schema publishes).
FIELDS: tuple[str, ...] = tuple(AnswerEventContract.__struct_fields__)
# An event with many stray keys reports the first few: the count of distinct names stays bounded downstream.
MAX_UNKNOWN_REPORTED = 5
_UNKNOWN_NAME_CHARS = 64


def suggestion(name: str) -> str | None:
    """The contract field a stray key most likely meant (`contexts` -> `context`), or None."""
    close = difflib.get_close_matches(name.strip().lower(), FIELDS, n=1, cutoff=0.75)
    return close[0] if close else None


def unknown_field_reason(name: str) -> str:
    """Why a stray key is reported, with the field it probably meant."""
    guess = suggestion(name)
    hint = f"; did you mean `{guess}`?" if guess else f" (the fields are {', '.join(FIELDS)})"
    return f"is not a field of the event contract{hint}"


def _unknown_fields(obj: Mapping[str, Any]) -> tuple[str, ...]:
    stray = [str(key)[:_UNKNOWN_NAME_CHARS] for key in obj if key not in FIELDS]
    return tuple(stray[:MAX_UNKNOWN_REPORTED])


def parse_event(obj: Any, limits: Limits = Limits()) -> AnswerEvent:
    """Validate a decoded JSON object against contract v1. A key the contract does not name is refused when
    `limits.strict_fields` is set; otherwise the event is judged without it and the key is listed in
    `unknown_fields` for the caller to report (a misspelt `contexts` would otherwise pass unseen)."""
    if not isinstance(obj, Mapping):
        raise EventError("$", f"an event must be a JSON object, got {type(obj).__name__}")
    unknown = _unknown_fields(obj)
    try:
        event = _parse_known(obj, limits, unknown)
    except EventError as exc:
        misspelt = next((name for name in unknown if suggestion(name) == exc.field), None)
        if misspelt is None or not exc.reason.startswith("is required"):
            raise
        raise EventError(exc.field, f"{exc.reason}; the event has `{misspelt}`: a misspelling?") from None
    if unknown and limits.strict_fields:
        raise EventError(unknown[0], unknown_field_reason(unknown[0]))
    return event


def _parse_known(obj: Mapping[str, Any], limits: Limits, unknown: tuple[str, ...]) -> AnswerEvent:
    metadata = _parse_metadata(obj)
    model = obj.get("model")
    if model is not None and not isinstance(model, str):
        raise EventError("model", f"must be a string, got {type(model).__name__}")
    tenant = _require_str(obj, "tenant", default="default", max_chars=128).strip() or "default"
    return AnswerEvent(
        event_id=_parse_event_id(obj),
        tenant=tenant,
        question=_require_str(obj, "question", default="", max_chars=limits.max_question_chars),
        context=_parse_context(obj, limits),
        answer=_parse_answer(obj, limits),
        citations=_parse_citations(obj),
        model=model,
        produced_at_ms=parse_produced_at(obj.get("produced_at")),
        label=_parse_label(obj),
        metadata=metadata,
        unknown_fields=unknown,
    )


def decode_event(raw: bytes | str | None, limits: Limits = Limits()) -> AnswerEvent:
    """Bytes off the wire (or a line of a file) to a validated event; errors say what is wrong with the
    payload. The one door for both the worker and `stream-guard check`, so they accept the same events."""
    if raw is None:
        raise EventError("$", "payload is empty (a tombstone)")
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise EventError("$", f"payload must be bytes, got {type(raw).__name__}")
    raw = bytes(raw)
    if len(raw) > limits.max_event_bytes:
        raise EventError("$", f"payload is {len(raw)} bytes, over the limit of {limits.max_event_bytes}")
    if raw.startswith(_BOM):  # some producers (and editors saving a file) write one; it carries no data
        raw = raw[len(_BOM):]
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EventError("$", f"payload is not valid UTF-8 (byte {exc.start})") from None
    if not raw.strip():
        raise EventError("$", "payload is empty")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise EventError("$", f"payload is not valid JSON: {exc}") from None
    return parse_event(obj, limits)


def split_events(raw: bytes) -> tuple[str, list[bytes]]:
    """A file of events as the payloads to send, and what it was read as: "a JSON array" (pretty-printed or
    not: each element becomes one compact payload), "a JSON object" (one event over several lines), or
    "JSONL" (one payload per non-blank line, sent as written, invalid lines too: the worker dead-letters them).
    A file counts as an array or an object only when the whole of it parses as one."""
    body = raw[len(_BOM):] if raw.startswith(_BOM) else raw
    if body.lstrip()[:1] in (b"[", b"{"):
        try:
            whole = orjson.loads(body)
        except orjson.JSONDecodeError:
            whole = None
        if isinstance(whole, list):
            return "a JSON array", [orjson.dumps(item) for item in whole]
        if isinstance(whole, dict) and body.strip().count(b"\n"):
            return "a JSON object", [orjson.dumps(whole)]
    return "JSONL", [line.rstrip(b"\r") for line in body.split(b"\n") if line.strip()]
