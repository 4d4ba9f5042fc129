"""Shared fixtures and settings for the whole suite."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# CI machines have 2 cores and run broker tests beside property tests: judge properties, not speed.
settings.register_profile(
    "stream-guard", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.load_profile("stream-guard")
