"""Dead-letter records: a message the guard could not judge, with why, and where it came from.

Pure. The payload is kept as text when it is valid UTF-8, else base64, so the record is always valid JSON.
A payload over `max_payload_bytes` keeps only its head and says so (`payload_truncated`, its full size and
SHA-256): the dead-letter topic must accept the record under a broker's default ~1 MB message limit, or a
5 MB answer would stall the partition instead of being set aside.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

import orjson

DLQ_VERSION = 1


@dataclass(frozen=True)
class Source:
    """Where the message was read: enough to find it again with any Kafka tool."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None = None
    key: bytes | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"topic": self.topic, "partition": self.partition, "offset": self.offset}
        if self.timestamp_ms is not None:
            out["timestamp_ms"] = self.timestamp_ms
        if self.key is not None:
            text, encoding = _text_or_base64(self.key)
            out["key"] = text
            if encoding != "utf-8":
                out["key_encoding"] = encoding
        return out


def _text_or_base64(raw: bytes) -> tuple[str, str]:
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), "base64"


def _cut(raw: bytes, limit: int) -> bytes:
    """Cut at `limit` bytes without splitting a UTF-8 character of an otherwise valid payload."""
    head = raw[:limit]
    for back in range(0, 4):
        try:
            head[: len(head) - back].decode("utf-8")
            return head[: len(head) - back]
        except UnicodeDecodeError:
            continue
    return head


def dead_letter(
    raw: bytes | None,
    *,
    error_field: str,
    reason: str,
    source: Source,
    stage: str,
    failed_at_ms: int,
    worker: str = "",
    event_id: str | None = None,
    max_payload_bytes: int = 256 * 1024,
    cost_ms: float | None = None,
) -> dict[str, Any]:
    """The record for one message. `stage` says which step refused it: decode (a bad message), judge (a bug),
    or timeout (it spent its CPU budget; `cost_ms` is the CPU it had used when it was stopped)."""
    raw = raw if raw is not None else b""
    size = len(raw)
    truncated = size > max_payload_bytes
    kept = _cut(raw, max_payload_bytes) if truncated else raw
    payload, encoding = _text_or_base64(kept)
    out: dict[str, Any] = {
        "version": DLQ_VERSION,
        "stage": stage,
        "error": {"field": error_field, "reason": reason, "message": f"{error_field}: {reason}"},
        "source": source.to_dict(),
        "payload": payload,
        "payload_encoding": encoding,
        "payload_bytes": size,
        "payload_truncated": truncated,
        "failed_at_ms": failed_at_ms,
    }
    if truncated:
        out["payload_sha256"] = hashlib.sha256(raw).hexdigest()
    if worker:
        out["worker"] = worker
    if event_id is not None:
        out["event_id"] = event_id
    if cost_ms is not None:
        out["cost_ms"] = round(cost_ms, 1)
    return out


def encode(record: Mapping[str, Any]) -> bytes:
    return orjson.dumps(record)


def original_payload(record: Mapping[str, Any]) -> bytes:
    """The payload bytes back out of a record (only the kept head when `payload_truncated`)."""
    payload = str(record.get("payload", ""))
    if record.get("payload_encoding") == "base64":
        return base64.b64decode(payload)
    return payload.encode("utf-8")
