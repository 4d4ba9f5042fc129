"""Run one streaming worker in this process: create topics, load the core, hand over to Faust's Worker."""

from __future__ import annotations

import asyncio
import gc
import logging
import time

from stream_guard.agents.app import GuardService, build_service
from stream_guard.agents.faust_adapter import GuardWorker
from stream_guard.agents.topics import ensure_topics, topic_retention_ms
from stream_guard.config.detector import DetectorConfig
from stream_guard.config.monitor import MonitorSettings
from stream_guard.config.stream import StreamSettings
from stream_guard.engine.pool import Pool

log = logging.getLogger(__name__)


def prepare(settings: StreamSettings, config: DetectorConfig, worker: str | None = None,
            monitoring: MonitorSettings | None = None, answers_retention_ms: int | None = None) -> GuardService:
    """Load the core (and its model) before joining the group, so the first batch is not the slow one."""
    started = time.perf_counter()
    # One judge process (the event loop keeps its own core); decisions count the measured latency.
    judge = Pool(config, processes=1, log_format=settings.log_format, quality_latency_ms=None).wait_ready()
    log.info("core ready in %.2fs (judge process, NER %s, %g ms of CPU per event)", time.perf_counter() - started,
             judge.ner_backend, config.event_budget_ms, extra={"ner": judge.ner_backend})
    return build_service(settings, judge, worker, monitoring, answers_retention_ms)


def run_worker(settings: StreamSettings, config: DetectorConfig, *, loglevel: str = "info",
               worker: str | None = None, monitoring: MonitorSettings | None = None) -> int:
    """Blocks until SIGINT/SIGTERM; Faust then leaves the group, flushes and closes the tables."""
    # The App must be created on the loop the Worker runs, so set it before anything touches asyncio.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(ensure_topics(settings))
    retention = loop.run_until_complete(topic_retention_ms(settings, settings.topics.answers))
    service = prepare(settings, config, worker, monitoring, retention)
    json_logs = settings.log_format == "json"
    # quiet: no start-up banner (a table of plain text on stdout) when every line must be JSON.
    faust_worker = GuardWorker(service.app, loglevel=loglevel, loop=loop, quiet=json_logs)
    faust_worker.json_logs = json_logs
    faust_worker.shutdown_timeout_s = settings.shutdown_timeout_s
    # What is loaded by now (modules, the app, the core's tables) lives as long as the process: out of the
    # collector's sight, a full collection walks only what the worker builds later (issue 17: a full
    # collection stops the event loop for as long as it walks).
    gc.freeze()
    try:
        faust_worker.execute_from_commandline()
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 1
    finally:
        service.judge.close()
    return 0
