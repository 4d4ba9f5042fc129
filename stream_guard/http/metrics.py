"""What `stream-guard serve` serves at /metrics: prometheus_client metrics in a registry of its own.

- Requests: by route and status, their latency (request read to response written; for a stream, to its end),
  those in flight.
- What the guard decided: verdicts by routing ("failed" for an event that got none), streamed sentences by
  status, and each streamed sentence's added delay (its completing chunk read to its line written).
- The judges: events waiting for a free process, processes busy, processes replaced, each one's CPU seconds.
- The process itself (prometheus_client's process, platform and GC collectors) and `stream_guard_build_info`.
"""

from __future__ import annotations

from typing import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from stream_guard.engine.dispatch import Dispatcher
from stream_guard.ops.process_metrics import service_registry

CONTENT_TYPE = CONTENT_TYPE_LATEST
REQUEST_BUCKETS_S = (0.001, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.05, 0.075, 0.1, 0.25,
                     0.5, 1.0, 2.5, 5.0, 10.0, 30.0, float("inf"))
DELAY_BUCKETS_S = (0.0005, 0.001, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25, 1.0,
                   float("inf"))


class ServeMetrics:
    def __init__(self, dispatcher: Dispatcher) -> None:
        r = self.registry = service_registry("aiohttp", "prometheus-client")
        self.requests = Counter("stream_guard_http_requests", "HTTP requests answered, by route and status.",
                                ["route", "status"], registry=r)
        self.latency = Histogram("stream_guard_http_request_seconds", "From a request's arrival to its response "
                                 "written (a streamed answer: to its last line).", ["route"],
                                 buckets=REQUEST_BUCKETS_S, registry=r)
        self.in_flight = Gauge("stream_guard_http_in_flight", "Requests being answered.", registry=r)
        self.verdicts = Counter("stream_guard_verdicts", "Events judged, by routing (failed: no verdict).",
                                ["routing"], registry=r)
        self.sentences = Counter("stream_guard_streamed_sentences", "Sentences of streamed answers, by status.",
                                 ["status"], registry=r)
        self.sentence_delay = Histogram("stream_guard_streamed_sentence_delay_seconds",
                                        "From the chunk that completed a streamed sentence being read to the "
                                        "sentence's line being written.", buckets=DELAY_BUCKETS_S, registry=r)
        r.register(_JudgeCollector(dispatcher))

    def text(self) -> bytes:
        return generate_latest(self.registry)


class _JudgeCollector:
    """The judge processes, read when Prometheus scrapes."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        d, pool = self.dispatcher, self.dispatcher.pool
        yield GaugeMetricFamily("stream_guard_judge_waiting", "Events and calls waiting for a free judge process.",
                                value=d.waiting)
        yield GaugeMetricFamily("stream_guard_judge_busy", "Judge processes with a call in flight.", value=d.busy)
        yield CounterMetricFamily("stream_guard_judge_replaced", "Judge processes replaced (killed past a wall-clock "
                                  "limit, or found dead).", value=pool.replaced)
        cpu = CounterMetricFamily("stream_guard_judge_cpu_seconds", "CPU (user + system) each judge process has used.",
                                  labels=["process"])
        for index, seconds in enumerate(pool.cpu_seconds):
            cpu.add_metric([str(index)], seconds)
        yield cpu
