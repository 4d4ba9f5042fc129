"""Start-up paid once per pool: the fork server loads the spaCy model and every judge it forks starts with it.

In a file of its own: the fork server is shared by every pool open in a process and reads which model to load
only when it starts, so this test needs no other pool open (test_pool_processes.py keeps a regex one open).
"""

from __future__ import annotations

import asyncio
import os
import signal

import orjson
import pytest

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine import pool as pool_module
from stream_guard.engine.pipeline import Guard
from stream_guard.engine.pool import Pool

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _event(event_id: str, answer: str) -> bytes:
    return orjson.dumps({"event_id": event_id, "tenant": "t", "question": "What is the refund window?",
                         "context": ["Refunds are accepted within 14 days of purchase."], "answer": answer})


def _model_process(guard: Guard) -> tuple[int, int, int | None]:
    """In a judge: its id, its parent's (the fork server), and the id of the process that loaded its NER model."""
    from stream_guard.text.ner import loaded_by

    return os.getpid(), os.getppid(), loaded_by(getattr(guard.detector.recognizer, "model", ""))


def test_judges_start_with_the_model_the_fork_server_loaded_and_so_does_a_replacement() -> None:
    """Each judge, and the one that replaces it when it dies, judges with the model the fork server loaded (the
    name its context lacks is found) and loads none of its own: about half a second of CPU each, paid once."""
    pytest.importorskip("spacy")
    assert pool_module._open_pools == 0, "another pool is open: its fork server is already running"
    pool = Pool(DetectorConfig(ner="spacy", log_flagged=False), processes=1, quality_latency_ms=None).wait_ready()
    try:
        first = asyncio.run(pool.run_in(0, _model_process))
        os.kill(pool.children[0].process.pid, signal.SIGKILL)
        pool.children[0].process.join(10)
        result = asyncio.run(pool.judge_batch(
            [_event("named", "Refunds are accepted within 14 days of purchase, says Maria Lopez."),
             _event("plain", "Refunds are accepted within 30 days of purchase.")], {}, 0))
        second = asyncio.run(pool.run_in(0, _model_process))
    finally:
        pool.close()
    assert pool.replaced >= 1
    assert [(i.event_id, i.ok) for i in result.items] == [("named", True), ("plain", True)]
    assert b"Maria Lopez" in (result.items[0].verdict or b"")
    for pid, server, loader in (first, second):
        assert loader == server != pid
    assert first[0] != second[0] and first[1] == second[1]
