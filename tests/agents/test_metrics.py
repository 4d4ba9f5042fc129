"""The worker's Faust Monitor sensor (agents/metrics.py: GuardMonitor)."""

from __future__ import annotations

from types import SimpleNamespace

from faust.types import TP

from stream_guard.agents.metrics import WorkerMetrics
from stream_guard.ops.latency import LatencyRegistry


def test_the_monitor_keeps_no_per_message_figures() -> None:
    """Faust calls these hooks for every input message, event, table read and write and send; only Faust's
    own web views (never served) read what they record, so they record nothing (issue 16: CPU per event)."""
    monitor = WorkerMetrics(LatencyRegistry()).monitor()
    tp = TP("rag.answers", 0)
    message = SimpleNamespace(time_in=None)
    table = SimpleNamespace(name="drift-history")
    monitor.on_message_in(tp, 3, message)
    state = monitor.on_stream_event_in(tp, 3, SimpleNamespace(task_owner=None), SimpleNamespace())
    monitor.on_stream_event_out(tp, 3, SimpleNamespace(task_owner=None), SimpleNamespace(), state)
    monitor.on_message_out(tp, 3, message)
    monitor.on_table_get(table, b"k")
    monitor.on_table_set(table, b"k", b"v")
    monitor.on_table_del(table, b"k")
    sent = monitor.on_send_initiated(None, "guard.verdicts", message=None, keysize=1, valsize=2)
    monitor.on_send_completed(None, sent, None)
    assert (monitor.messages_received_total, monitor.events_total, monitor.messages_sent) == (0, 0, 0)
    assert message.time_in is None and not monitor.tables and not monitor.send_latency
    assert not monitor.events_by_stream and not monitor.events_runtime


def test_the_monitor_still_counts_rebalances_into_the_worker_metrics() -> None:
    metrics = WorkerMetrics(LatencyRegistry())
    monitor = metrics.monitor()
    app = SimpleNamespace(rebalancing_count=1)
    monitor.on_rebalance_end(app, monitor.on_rebalance_start(app))
    assert "stream_guard_kafka_rebalances_total 1.0" in metrics.text().decode()
