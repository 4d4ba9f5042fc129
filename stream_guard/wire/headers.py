"""Kafka record headers on what the guard sends: what a record is, which event it is about, and the trace.

Pure: headers are (name, bytes) pairs, in order; nothing here knows a client library.

Every verdict, alert and review record carries
    content-type       application/json
    sg-schema          verdict | alert | review (schemas/<name>.v<version>.schema.json where published)
    sg-schema-version  the record's version, as in its body
    sg-event-id        the event it is about (absent on alerts about no single event)
and, when the input event carried a valid W3C Trace Context, its `traceparent` and `tracestate` unchanged,
so a trace that starts in the RAG service continues through stream-guard to whoever consumes the verdict.
stream-guard starts no span of its own (it has no tracer); downstream spans hang off the producer's span.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from stream_guard.wire.alert import ALERT_VERSION, Alert

Header = tuple[str, bytes]

CONTENT_TYPE = "content-type"
SCHEMA = "sg-schema"
SCHEMA_VERSION = "sg-schema-version"
EVENT_ID = "sg-event-id"
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
JSON = b"application/json"

# W3C Trace Context level 1: version-traceid-parentid-flags, lower-case hex; the all-zero ids and version ff
# are invalid. A later version may append fields after a dash, which a level-1 reader keeps.
_TRACEPARENT = re.compile(rb"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[^\s]*)?$")
# The spec's own bound: 32 list members; vendors may drop a longer one. Ours: 512 bytes, as recommended.
MAX_TRACESTATE_BYTES = 512


def valid_traceparent(value: bytes) -> bool:
    match = _TRACEPARENT.match(value.strip())
    if match is None:
        return False
    version, trace_id, parent_id, _, rest = match.groups()
    if version == b"ff" or trace_id == b"0" * 32 or parent_id == b"0" * 16:
        return False
    return version != b"00" or rest is None


def trace_context(headers: Iterable[Header]) -> list[Header]:
    """The input's `traceparent` (and its `tracestate`, when not over 512 bytes), if the traceparent is valid;
    nothing otherwise, as the specification says (a receiver must not pass on an invalid one)."""
    parent: bytes | None = None
    state: bytes | None = None
    for name, value in headers:
        lower = name.lower()
        if lower == TRACEPARENT and parent is None:
            parent = value
        elif lower == TRACESTATE and state is None:
            state = value
    if parent is None or not valid_traceparent(parent):
        return []
    out = [(TRACEPARENT, parent.strip())]
    if state is not None and 0 < len(state) <= MAX_TRACESTATE_BYTES:
        out.append((TRACESTATE, state))
    return out


def output_headers(schema: str, version: int, event_id: str | None = None,
                   trace: Sequence[Header] = ()) -> list[Header]:
    out = [(CONTENT_TYPE, JSON), (SCHEMA, schema.encode()), (SCHEMA_VERSION, str(version).encode())]
    if event_id:
        out.append((EVENT_ID, event_id.encode("utf-8")))
    out.extend(trace)
    return out


def alert_headers(alert: Alert, trace: Sequence[Header] = ()) -> list[Header]:
    return output_headers("alert", ALERT_VERSION, alert.event_id, trace)
