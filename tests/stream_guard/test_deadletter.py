"""Dead-letter records: text or base64 payloads, bounded size, source position, error."""

from __future__ import annotations

import base64
import hashlib

import orjson

from stream_guard.deadletter import Source, dead_letter, encode, original_payload

SRC = Source(topic="rag.answers", partition=3, offset=42, timestamp_ms=1_700_000_000_000, key=b"k1")


def test_text_payload_is_kept_as_text_with_error_and_source() -> None:
    raw = b'{"event_id": "e1"'
    record = dead_letter(raw, error_field="$", reason="payload is not valid JSON", source=SRC, stage="decode",
                         failed_at_ms=5, worker="w1")
    assert record["payload"] == raw.decode() and record["payload_encoding"] == "utf-8"
    assert record["error"] == {"field": "$", "reason": "payload is not valid JSON",
                               "message": "$: payload is not valid JSON"}
    assert record["source"] == {"topic": "rag.answers", "partition": 3, "offset": 42,
                                "timestamp_ms": 1_700_000_000_000, "key": "k1"}
    assert record["stage"] == "decode" and record["worker"] == "w1" and not record["payload_truncated"]
    assert orjson.loads(encode(record)) == record
    assert original_payload(record) == raw


def test_invalid_utf8_is_base64() -> None:
    raw = b'\xff\xfe{"a": 1}'
    record = dead_letter(raw, error_field="$", reason="not UTF-8", source=Source("t", 0, 1, key=b"\xff"),
                         stage="decode", failed_at_ms=0)
    assert record["payload_encoding"] == "base64"
    assert base64.b64decode(record["payload"]) == raw
    assert record["source"]["key_encoding"] == "base64"
    assert original_payload(record) == raw


def test_oversized_payload_keeps_a_bounded_head_and_says_so() -> None:
    raw = ('{"answer": "' + "é" * 3_000_000 + '"}').encode()
    record = dead_letter(raw, error_field="$", reason="too big", source=SRC, stage="decode", failed_at_ms=0,
                         max_payload_bytes=1000)
    assert record["payload_truncated"] is True
    assert record["payload_bytes"] == len(raw)
    assert record["payload_sha256"] == hashlib.sha256(raw).hexdigest()
    head = original_payload(record)
    assert len(head) <= 1000 and raw.startswith(head)
    assert record["payload_encoding"] == "utf-8"  # cut on a character boundary, not mid "é"
    assert len(encode(record)) < 2000


def test_missing_payload_and_event_id() -> None:
    record = dead_letter(None, error_field="$", reason="RuntimeError: boom", source=Source("t", 1, 2),
                         stage="judge", failed_at_ms=0, event_id="evt-9")
    assert record["payload"] == "" and record["payload_bytes"] == 0 and record["event_id"] == "evt-9"
    assert "timestamp_ms" not in record["source"] and "key" not in record["source"]
