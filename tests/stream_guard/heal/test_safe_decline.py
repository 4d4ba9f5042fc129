from __future__ import annotations

from stream_guard.config.detector import DetectorConfig
from stream_guard.heal.result import SAFE_DECLINE
from stream_guard.heal.safe_decline import decline


def test_serves_the_configured_message_and_logs_why():
    config = DetectorConfig(decline_message="Sorry, I can't confirm that.")
    result = decline(config, "It costs $10.", "contradiction_patch failed re-inspection")
    assert result.strategy == SAFE_DECLINE
    assert result.text == "Sorry, I can't confirm that."
    (change,) = result.changes
    assert (change.kind, change.before, change.after) == ("decline", "It costs $10.", "Sorry, I can't confirm that.")
    assert "failed re-inspection" in change.description
