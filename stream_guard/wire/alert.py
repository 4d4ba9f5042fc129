"""The alert record (schemas/alert.v1.schema.json) and its deterministic id.

An alert's id is a hash of its kind and its cause (the event for verdict alerts, the partition and the start
of the breach for latency alerts), never of the time it was computed, so a redelivered or replayed event
produces the same id and the streaming service's dedupe table (agents/) suppresses it. Which alerts an event
raises: engine/alerts.py; dedupe records and the latency budget: ops/alerting.py.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

ALERT_VERSION = 1
CRITICAL, HIGH, WARNING = "critical", "high", "warning"
Severity = Literal["critical", "high", "warning"]
QUESTION_CHARS = 200
EXAMPLE_EVENTS = 5


def question_excerpt(question: str) -> str:
    """The question as an alert carries it: whitespace collapsed, at most QUESTION_CHARS characters."""
    text = " ".join(question.split())
    return text if len(text) <= QUESTION_CHARS else text[:QUESTION_CHARS - 1] + "…"


class Alert(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One alert, as it goes to the alerts topic (schemas/alert.v1.schema.json). `evidence` depends on the
    kind: verdict alerts carry the scores, statements and healing; latency and monitoring alerts their
    windows and figures (README)."""

    version: int = ALERT_VERSION
    alert_id: str
    kind: str
    severity: Severity
    tenant: str | None = None
    question_hash: str | None = None
    # The question's text, cut at QUESTION_CHARS: an on-call person reads the question, not its hash. Only in
    # alerts about one question, which are keyed and filed under that question's tenant.
    question: Annotated[str, Meta(max_length=QUESTION_CHARS)] | None = None
    event_id: str | None = None
    # Events that show the problem (the first that raised the alert first), at most EXAMPLE_EVENTS.
    example_event_ids: Annotated[list[str], Meta(max_length=EXAMPLE_EVENTS)] = msgspec.field(default_factory=list)
    summary: str
    evidence: dict[str, Any]
    created_at_ms: Annotated[int, Meta(ge=0, description="epoch milliseconds (UTC)")] = 0

    @property
    def key(self) -> str:
        """Topic key: alerts about one question stay ordered; latency alerts are keyed by their own id."""
        return self.question_hash or self.alert_id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def to_json(self) -> bytes:
        return _ENCODER.encode(self)


_ENCODER = msgspec.json.Encoder()


def alert_id(kind: str, *cause: object) -> str:
    """Deterministic id of one cause of one kind of alert."""
    text = "\x1f".join([kind, *(str(part) for part in cause)])
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
