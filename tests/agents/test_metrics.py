"""The worker's Faust Monitor sensor (agents/metrics.py: GuardMonitor)."""

from __future__ import annotations

from types import SimpleNamespace

from stream_guard.agents.metrics import WorkerMetrics
from stream_guard.ops.latency import LatencyRegistry


def test_the_monitor_still_counts_rebalances_into_the_worker_metrics() -> None:
    metrics = WorkerMetrics(LatencyRegistry())
    monitor = metrics.monitor()
    app = SimpleNamespace(rebalancing_count=1)
    monitor.on_rebalance_end(app, monitor.on_rebalance_start(app))
    assert "stream_guard_kafka_rebalances_total 1.0" in metrics.text().decode()
