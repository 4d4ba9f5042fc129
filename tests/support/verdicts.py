"""Verdicts compared across runs: everything but the measured timings."""

from __future__ import annotations

from typing import Any


def without_timings(value: Any) -> Any:
    """`value` with every `latency_ms` and `cost_ms` left out, at any depth (they differ from run to run)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in ("latency_ms", "cost_ms")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value
