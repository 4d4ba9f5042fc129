"""Dead letters the way Kafka Connect and Spring Kafka write them: the original record, and why, in headers.

Pure. A dead letter is the message the guard could not judge with its key, value and headers exactly as they
were read (no JSON wrapping, no base64, no cut), plus error headers under one prefix, `sg-dlt-`. So any Kafka
tool can read, filter or re-send it, and `stream-guard replay-dlq` re-submits it after a fix by removing
the `sg-dlt-*` headers: what is left is the original record.

Why our own prefix rather than Kafka Connect's `__connect.errors.*` or Spring's `kafka_dlt-*`: those name
a connector, a task or a consumer group, which would be false here, and tools that know them would report
them as such; one prefix of our own is what makes "strip the error headers" a prefix match that can never
remove a header the producer set (a producer's own `sg-dlt-*` headers are dropped when the record is
dead-lettered, so the error headers are always ours). The names follow Spring's (`original-topic`,
`original-partition`, `original-offset`, `original-timestamp`, `exception-class`). Every value is UTF-8 text;
numbers are decimal. The header set's JSON Schema is schemas/dead-letter.v2.schema.json.

Size: the dead letter is the original plus at most `HEADROOM_BYTES` of headers. The service creates the
dead-letter topic with `max.message.bytes` = `max_message_bytes` + that headroom and sizes its producer the
same, so every message the input topics accepted fits. A record that still would not fit (an input topic
with a larger limit than `max_message_bytes`, or a dead-letter topic created with a smaller one) goes out
without its value and says so: `sg-dlt-value-omitted` (its size) and `sg-dlt-value-sha256`, never stalling
the partition. Such a dead letter cannot be replayed; find the original by its position.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Annotated, Iterable, Literal, Sequence

import msgspec
import orjson
from msgspec import Meta

DLQ_VERSION = 2
PREFIX = "sg-dlt-"
# Error headers never take more than this (reasons are cut to MAX_REASON_BYTES); what the topic and the
# producer allow beyond max_message_bytes.
HEADROOM_BYTES = 64 * 1024
MAX_REASON_BYTES = 8 * 1024
# A Kafka record's own framing, generously: batch header, record header, varints.
RECORD_OVERHEAD_BYTES = 128

Header = tuple[str, bytes]
Stage = Literal["decode", "intake", "judge", "timeout", "label", "webhook"]
_Decimal = Annotated[str, Meta(pattern=r"^-?[0-9]+$")]
_Text = Annotated[str, Meta(min_length=1)]


def _header_name(field: str) -> str:
    return PREFIX + field.replace("_", "-")


class DeadLetterHeaders(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename=_header_name):
    """The error headers of a dead letter (header `sg-dlt-<field, dashes for underscores>`). Beside them the
    record keeps every header it was read with."""

    version: Annotated[_Decimal, Meta(description="2")]
    stage: Annotated[Stage, Meta(description="decode: breaks the event contract; intake / judge: a bug, on this "
                                             "event alone; timeout: over its CPU budget; label: a bad grade; "
                                             "webhook: an alert its webhook refused or never took")]
    field: Annotated[_Text, Meta(description='the offending field, "$" for the whole payload')]
    reason: Annotated[_Text, Meta(description="why, in words (cut at 8 KiB)")]
    original_topic: _Text
    original_partition: _Decimal
    original_offset: _Decimal
    failed_at_ms: Annotated[_Decimal, Meta(description="epoch milliseconds (UTC)")]
    original_timestamp_ms: Annotated[_Decimal, Meta(description="the original's Kafka timestamp")] | None = None
    worker: str | None = None
    event_id: str | None = None
    exception_class: Annotated[str, Meta(description="a stream-guard bug's exception (stage judge / intake)")] \
        | None = None
    cost_ms: Annotated[str, Meta(description="CPU spent when stopped (stage timeout)")] | None = None
    value_omitted: Annotated[_Decimal, Meta(description="the original value's size in bytes, when the dead letter "
                                                        "could not carry it (module docstring)")] | None = None
    value_sha256: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")] | None = None

    @property
    def partition(self) -> int:
        return int(self.original_partition)

    @property
    def offset(self) -> int:
        return int(self.original_offset)

    @property
    def failed_at(self) -> int:
        return int(self.failed_at_ms)

    def to_headers(self) -> list[Header]:
        return [(name, str(value).encode("utf-8")) for name, value in msgspec.to_builtins(self).items()]

    def to_dict(self) -> dict[str, str]:
        """Field names without the prefix (`stage`, `original_topic`, ...): for people and JSON tools."""
        return {f: getattr(self, f) for f in self.__struct_fields__ if getattr(self, f) is not None}


@dataclass(frozen=True)
class Source:
    """Where the message was read: enough to find it again with any Kafka tool."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None = None
    key: bytes | None = None


def _cut_utf8(text: str, limit: int) -> str:
    raw = text.encode("utf-8")
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore") + "…"


def error_headers(
    *,
    stage: str,
    error_field: str,
    reason: str,
    source: Source,
    failed_at_ms: int,
    worker: str = "",
    event_id: str | None = None,
    exception_class: str | None = None,
    cost_ms: float | None = None,
) -> DeadLetterHeaders:
    return DeadLetterHeaders(
        version=str(DLQ_VERSION), stage=stage,  # type: ignore[arg-type]
        field=_cut_utf8(error_field or "$", 1024), reason=_cut_utf8(reason or "unknown", MAX_REASON_BYTES),
        original_topic=source.topic, original_partition=str(source.partition),
        original_offset=str(source.offset), failed_at_ms=str(failed_at_ms),
        original_timestamp_ms=str(source.timestamp_ms) if source.timestamp_ms is not None else None,
        worker=worker or None, event_id=_cut_utf8(event_id, 1024) if event_id is not None else None,
        exception_class=exception_class, cost_ms=f"{cost_ms:.1f}" if cost_ms is not None else None,
    )


def without_error_headers(headers: Iterable[Header]) -> list[Header]:
    """The headers with every `sg-dlt-*` one removed, order kept: what the original record carried."""
    return [(name, value) for name, value in headers if not name.startswith(PREFIX)]


def dead_letter_headers(original: Iterable[Header], error: DeadLetterHeaders) -> list[Header]:
    return [*without_error_headers(original), *error.to_headers()]


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> int:
    """An upper bound of the bytes one record takes in a produce request."""
    return (RECORD_OVERHEAD_BYTES + len(key or b"") + len(value or b"")
            + sum(len(name.encode("utf-8")) + len(v) + 10 for name, v in headers))


def without_value(value: bytes | None, error: DeadLetterHeaders) -> DeadLetterHeaders:
    """The error headers of a dead letter that cannot carry its value (too large), saying what it was."""
    raw = value or b""
    return msgspec.structs.replace(error, value_omitted=str(len(raw)), value_sha256=hashlib.sha256(raw).hexdigest())


def read_error(headers: Iterable[Header]) -> DeadLetterHeaders | None:
    """The error headers of a record read back from the dead-letter topic; None if it has none (or they do
    not parse: not one of ours)."""
    found = {name: value.decode("utf-8", "replace") for name, value in headers if name.startswith(PREFIX)}
    if not found:
        return None
    try:
        return msgspec.convert(found, DeadLetterHeaders)
    except msgspec.ValidationError:
        return None


# --- version 1: the JSON-wrapped records of stream-guard 0.1 --------------------------------------------------


@dataclass(frozen=True)
class LegacyDeadLetter:
    """A version-1 dead letter (a JSON record with the payload inside), read so that `replay-dlq` can re-send
    what an older worker set aside. `value` is None when the record kept only the payload's head."""

    error: DeadLetterHeaders
    key: bytes | None
    value: bytes | None


def read_legacy(raw: bytes | None) -> LegacyDeadLetter | None:
    try:
        record = orjson.loads(raw or b"")
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("version") != 1 or "payload" not in record:
        return None
    source, error = record.get("source") or {}, record.get("error") or {}
    try:
        headers = error_headers(
            stage=str(record.get("stage", "decode")), error_field=str(error.get("field", "$")),
            reason=str(error.get("reason", "")),
            source=Source(str(source.get("topic", "")), int(source.get("partition", -1)), int(source.get("offset", -1)),
                          source.get("timestamp_ms")),
            failed_at_ms=int(record.get("failed_at_ms") or 0), worker=str(record.get("worker") or ""),
            event_id=record.get("event_id"))
        msgspec.convert(msgspec.to_builtins(headers), DeadLetterHeaders)  # stage and numbers as version 2 has them
    except (TypeError, ValueError, msgspec.ValidationError):
        return None
    key_text = source.get("key")
    key = None if key_text is None else _bytes(str(key_text), source.get("key_encoding"))
    truncated = record.get("payload_truncated")
    value = None if truncated else _bytes(str(record.get("payload", "")), record.get("payload_encoding"))
    return LegacyDeadLetter(headers, key, value)


def _bytes(text: str, encoding: object) -> bytes:
    return base64.b64decode(text) if encoding == "base64" else text.encode("utf-8")


def _text_or_base64(raw: bytes) -> tuple[str, str]:
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), "base64"


def view(key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> dict[str, object]:
    """A dead letter as one JSON-ready object, for people and JSON tools (`stream-guard tail dlq`): the error
    fields, the original's key and value (as text, or base64 when not UTF-8: only in this view, never on the
    wire) and its other headers. A version-1 record is shown from its JSON."""
    error = read_error(headers)
    legacy = read_legacy(value) if error is None else None
    if legacy is not None:
        error, key, value = legacy.error, legacy.key, legacy.value
    out: dict[str, object] = dict(error.to_dict()) if error is not None else {"stage": None}
    if key is not None:
        out["key"], encoding = _text_or_base64(key)
        if encoding != "utf-8":
            out["key_encoding"] = encoding
    if value is not None:
        out["value"], out["value_encoding"] = _text_or_base64(value)
        out["value_bytes"] = len(value)
    out["headers"] = {name: _text_or_base64(v)[0] for name, v in without_error_headers(headers)}
    if legacy is not None:
        out["legacy"] = True
    return out
