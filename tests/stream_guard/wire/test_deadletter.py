"""Dead letters: the original record unchanged, the error in `sg-dlt-*` headers, sizes, version-1 records."""

from __future__ import annotations

import base64
import hashlib

import orjson
import pytest

from stream_guard.wire.deadletter import (
    HEADROOM_BYTES,
    MAX_REASON_BYTES,
    Source,
    dead_letter_headers,
    error_headers,
    read_error,
    read_legacy,
    record_size,
    view,
    without_error_headers,
    without_value,
)

SRC = Source(topic="rag.answers", partition=3, offset=42, timestamp_ms=1_700_000_000_000, key=b"k1")


def _error(**extra):
    return error_headers(stage="decode", error_field="answer", reason="is required", source=SRC, failed_at_ms=5,
                         worker="w1", **extra)


def test_the_error_goes_in_headers_and_the_original_headers_stay_in_order():
    original = [("traceparent", b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), ("x", b"1"), ("x", b"2")]
    headers = dead_letter_headers(original, _error(event_id="e1"))
    assert headers[:3] == original  # duplicates and order kept
    named = dict(headers[3:])
    assert named == {"sg-dlt-version": b"2", "sg-dlt-stage": b"decode", "sg-dlt-field": b"answer",
                     "sg-dlt-reason": b"is required", "sg-dlt-original-topic": b"rag.answers",
                     "sg-dlt-original-partition": b"3", "sg-dlt-original-offset": b"42",
                     "sg-dlt-original-timestamp-ms": b"1700000000000", "sg-dlt-failed-at-ms": b"5",
                     "sg-dlt-worker": b"w1", "sg-dlt-event-id": b"e1"}
    error = read_error(headers)
    assert error is not None and (error.stage, error.partition, error.offset, error.failed_at) == ("decode", 3, 42, 5)
    assert without_error_headers(headers) == original


def test_a_producers_own_error_headers_are_replaced_by_ours():
    forged = [("sg-dlt-stage", b"judge"), ("sg-dlt-reason", b"forged"), ("keep", b"me")]
    headers = dead_letter_headers(forged, _error())
    assert [v for n, v in headers if n == "sg-dlt-stage"] == [b"decode"]
    assert [v for n, v in headers if n == "sg-dlt-reason"] == [b"is required"]
    assert ("keep", b"me") in headers


def test_a_bug_carries_its_exception_class_and_a_timeout_its_cost():
    bug = error_headers(stage="judge", error_field="$", reason="KeyError: 'x'", source=SRC, failed_at_ms=1,
                        exception_class="builtins.KeyError")
    timeout = error_headers(stage="timeout", error_field="$", reason="over budget", source=SRC, failed_at_ms=1,
                            cost_ms=251.37)
    assert dict(bug.to_headers())["sg-dlt-exception-class"] == b"builtins.KeyError"
    assert dict(timeout.to_headers())["sg-dlt-cost-ms"] == b"251.4"


def test_a_huge_reason_is_cut_and_the_headers_stay_within_the_headroom():
    error = error_headers(stage="judge", error_field="x" * 5000, reason="é" * 100_000, source=SRC, failed_at_ms=1,
                          event_id="e" * 5000)
    headers = error.to_headers()
    assert len(dict(headers)["sg-dlt-reason"]) <= MAX_REASON_BYTES + 3
    assert record_size(None, b"", headers) < HEADROOM_BYTES
    dict(headers)["sg-dlt-reason"].decode("utf-8")  # cut on a character boundary


def test_a_value_too_large_to_carry_is_named_by_size_and_digest():
    raw = b"x" * 10_000
    error = without_value(raw, _error())
    assert error.value_omitted == "10000" and error.value_sha256 == hashlib.sha256(raw).hexdigest()
    assert read_error(error.to_headers()) == error


def test_records_that_are_not_dead_letters_have_no_error():
    assert read_error([("content-type", b"application/json")]) is None
    assert read_error([("sg-dlt-stage", b"decode")]) is None  # incomplete: not one of ours


def test_the_view_shows_text_or_base64_and_the_other_headers():
    headers = dead_letter_headers([("h", b"v")], _error())
    shown = view(b"\xff", b'{"event_id": "e1"', headers)
    assert shown["stage"] == "decode" and shown["original_offset"] == "42"
    assert shown["value"] == '{"event_id": "e1"' and shown["value_encoding"] == "utf-8" and shown["value_bytes"] == 17
    assert shown["key"] == base64.b64encode(b"\xff").decode() and shown["key_encoding"] == "base64"
    assert shown["headers"] == {"h": "v"}


def _legacy(**extra):
    record = {"version": 1, "stage": "decode", "error": {"field": "answer", "reason": "is required",
                                                          "message": "answer: is required"},
              "source": {"topic": "rag.answers", "partition": 1, "offset": 9, "key": "k"},
              "payload": '{"event_id": "e1"}', "payload_encoding": "utf-8", "payload_bytes": 18,
              "payload_truncated": False, "failed_at_ms": 7, "worker": "w"}
    record.update(extra)
    return orjson.dumps(record)


def test_version_1_records_are_read_back_to_their_original():
    legacy = read_legacy(_legacy())
    assert legacy is not None and legacy.key == b"k" and legacy.value == b'{"event_id": "e1"}'
    assert (legacy.error.stage, legacy.error.offset, legacy.error.failed_at) == ("decode", 9, 7)
    binary = read_legacy(_legacy(payload=base64.b64encode(b"\xff").decode(), payload_encoding="base64"))
    assert binary is not None and binary.value == b"\xff"


@pytest.mark.parametrize("raw", [_legacy(payload_truncated=True)])
def test_a_truncated_version_1_record_has_no_value_to_replay(raw):
    legacy = read_legacy(raw)
    assert legacy is not None and legacy.value is None


def test_other_json_is_not_a_version_1_dead_letter():
    assert read_legacy(b'{"event_id": "e1", "answer": "x"}') is None
    assert read_legacy(b"not json") is None
