"""Strategy of last resort: say we cannot answer reliably instead of delivering a wrong answer."""

from __future__ import annotations

from stream_guard.config.detector import DetectorConfig
from stream_guard.heal.result import SAFE_DECLINE, Attempt, Change


def decline(config: DetectorConfig, attempted_answer: str, reason: str) -> Attempt:
    message = config.decline_message
    return Attempt(SAFE_DECLINE, message, (Change("decline", attempted_answer, message, reason),))
