"""Run one streaming worker in this process: create topics, warm the core up, hand over to Faust's Worker."""

from __future__ import annotations

import asyncio
import logging
import time

import faust

from agents.app import GuardService, build_service
from agents.topics import ensure_topics
from stream_guard.config import DetectorConfig
from stream_guard.events import parse_event
from stream_guard.pipeline import Guard
from stream_guard.settings import StreamSettings

log = logging.getLogger("agents.worker")

_WARMUP = {
    "event_id": "warmup",
    "question": "How long is the refund window?",
    "context": ["Refunds are accepted within 14 days of purchase. Contact Dr. Ada Park at Acme Corp."],
    "answer": "You can request a refund within 14 days of purchase.",
}


def warm_up(guard: Guard) -> float:
    """Judge one event before joining the group: loading spaCy and compiling patterns takes seconds, and a
    first batch that slow would show as a latency spike (or, on a small machine, a missed heartbeat)."""
    started = time.perf_counter()
    guard.evaluate_batch([parse_event(_WARMUP)], {})
    return time.perf_counter() - started


def prepare(settings: StreamSettings, config: DetectorConfig, worker: str | None = None) -> GuardService:
    guard = Guard(config)
    seconds = warm_up(guard)
    log.info("core ready in %.2fs (NER %s)", seconds, getattr(guard.detector, "ner_backend", "?"))
    return build_service(settings, guard, worker)


def run_worker(settings: StreamSettings, config: DetectorConfig, *, loglevel: str = "info",
               worker: str | None = None) -> int:
    """Blocks until SIGINT/SIGTERM; Faust then leaves the group, flushes and closes the tables."""
    # The App must be created on the loop the Worker runs, so set it before anything touches asyncio.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(ensure_topics(settings))
    service = prepare(settings, config, worker)
    faust_worker = faust.Worker(service.app, loglevel=loglevel, loop=loop)
    try:
        faust_worker.execute_from_commandline()
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 1
    finally:
        service.pool.shutdown(wait=False, cancel_futures=True)
    return 0
