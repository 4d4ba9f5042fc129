"""What a check gave the caller, and the caller's policy when it could not be made in time.

`on_timeout` (when the service is slow, unreachable, or failed on the event):
    "deliver"   fail open: deliver the original answer, marked unchecked (seed 004's guardrails default)
    "fallback"  fail closed: deliver the configured fallback message instead
Either way `GuardResult.outcome` says which happened, `reason` says why, and the counter
`stream_guard_client_checks_total{transport, outcome}` counts it, in the prometheus_client registry the caller
passes (else one of the client's own, `client.registry`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Literal, Mapping

import orjson
from prometheus_client import CollectorRegistry, Counter

from stream_guard.config.detector import DEFAULT_FALLBACK_MESSAGE
from stream_guard.errors import ConfigurationError
from stream_guard.wire.verdict import Verdict

Outcome = Literal["checked", "unchecked", "fallback"]
OnTimeout = Literal["deliver", "fallback"]
CHECKED, UNCHECKED, FALLBACK = "checked", "unchecked", "fallback"
POLICIES = ("deliver", "fallback")


@dataclass(frozen=True)
class GuardResult:
    """What to deliver. `outcome`: checked (the verdict decided: `answer` is its delivered_answer), unchecked (fail
    open: the original answer), fallback (fail closed: the fallback message). `reason`: why it was not checked.
    For a streamed answer, `unreleased` is the answer's text after the last sentence the service released: show
    it when unchecked, never when fallback."""

    outcome: Outcome
    answer: str
    verdict: Verdict | None = None
    reason: str | None = None
    unreleased: str = ""

    @property
    def checked(self) -> bool:
        return self.outcome == CHECKED

    @property
    def routing(self) -> str | None:
        return self.verdict.routing if self.verdict is not None else None


_counters: "weakref.WeakKeyDictionary[CollectorRegistry, Counter]" = weakref.WeakKeyDictionary()


def outcome_counter(registry: CollectorRegistry) -> Counter:
    """The checks counter in `registry`, made once per registry (clients sharing one share the counter)."""
    counter = _counters.get(registry)
    if counter is None:
        counter = _counters[registry] = Counter(
            "stream_guard_client_checks", "Checks a stream-guard client made, by transport and outcome (checked, "
            "unchecked: delivered without a verdict, fallback: the fallback message delivered).",
            ["transport", "outcome"], registry=registry)
    return counter


class Policy:
    """The caller's policy and its bookkeeping, shared by the HTTP and Kafka clients."""

    def __init__(self, transport: str, on_timeout: str, fallback_message: str | None,
                 registry: CollectorRegistry | None) -> None:
        if on_timeout not in POLICIES:
            raise ConfigurationError(f"on_timeout must be one of {', '.join(POLICIES)}, got {on_timeout!r}")
        self.transport, self.on_timeout = transport, on_timeout
        self.fallback_message = DEFAULT_FALLBACK_MESSAGE if fallback_message is None else fallback_message
        self.registry = registry if registry is not None else CollectorRegistry()
        self.counter = outcome_counter(self.registry)

    def checked(self, verdict: Verdict) -> GuardResult:
        self.counter.labels(self.transport, CHECKED).inc()
        return GuardResult(CHECKED, verdict.delivered_answer, verdict)

    def unanswered(self, original: str, reason: str, unreleased: str = "") -> GuardResult:
        """No verdict in time: the policy decides."""
        if self.on_timeout == "deliver":
            self.counter.labels(self.transport, UNCHECKED).inc()
            return GuardResult(UNCHECKED, original, None, reason, unreleased)
        self.counter.labels(self.transport, FALLBACK).inc()
        return GuardResult(FALLBACK, self.fallback_message, None, reason, unreleased)


def event_bytes(event: Mapping[str, Any] | bytes | Any) -> bytes:
    """An event as JSON: bytes as they are, a mapping (or an object with `to_dict`, an AnswerEvent) encoded."""
    if isinstance(event, (bytes, bytearray)):
        return bytes(event)
    to_dict = getattr(event, "to_dict", None)
    return orjson.dumps(to_dict() if callable(to_dict) else event)


def answer_of(payload: bytes) -> str:
    """The answer an event carries (what fail-open delivers); "" when it has none."""
    try:
        answer = orjson.loads(payload).get("answer")
    except (orjson.JSONDecodeError, AttributeError):
        return ""
    return answer if isinstance(answer, str) else ""
