"""`stream-guard worker` refuses a bad configuration at start, as `check` does: exit 2, the key and the reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from streamkit import REPO

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(("env", "needle"), [
    ({"STREAM_GUARD_FLAG_THRESHOLD": "5"}, "flag_threshold: must be a number from 0 to 1, got 5"),
    ({"STREAM_GUARD_NER": "foo"}, "ner: must be one of auto, spacy, regex, got 'foo'"),
    ({"STREAM_GUARD_DRIFT_MIN_HISTORY": "0"}, "drift_min_history: must be an integer of at least 1"),
    ({"STREAM_GUARD_EXECUTOR": "thread"}, "executor: 'thread' was removed"),
    ({"STREAM_GUARD_BATCH_MAKS": "8"}, "unknown environment variable(s): STREAM_GUARD_BATCH_MAKS"),
])
def test_a_bad_setting_stops_the_worker_before_it_connects(env: dict[str, str], needle: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "stream_guard.agents", "worker", "--broker", "127.0.0.1:9",
                           "--without-web"], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert needle in proc.stderr and "Traceback" not in proc.stderr
