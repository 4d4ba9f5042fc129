"""Fixtures of the broker tests; the helpers they use live in streamkit.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Iterator

import pytest
from streamkit import Names, Worker

from stream_guard.agents.topics import ensure_topics


@pytest.fixture
def names(kafka_bootstrap: str) -> Names:
    names = Names(kafka_bootstrap)
    asyncio.run(ensure_topics(names.settings()))
    return names


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[Worker]]:
    """Workers a test starts register here; whatever is still running at the end is stopped."""
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.proc is not None and worker.proc.poll() is None:
            worker.stop()


