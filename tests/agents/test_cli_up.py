"""`stream-guard up --once`: the out-of-the-box job, end to end (its own embedded broker, worker, producer)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from streamkit import REPO

pytestmark = [pytest.mark.broker, pytest.mark.timeout(180)]


def test_up_once_replays_the_demo_and_prints_verdicts_alerts_and_dead_letters() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_GUARD_")}
    done = subprocess.run([sys.executable, "-m", "stream_guard.agents", "up", "--once", "--interval", "0.02"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=150, check=False)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "embedded broker at 127.0.0.1:" in out
    # Issue 19.5: where the dashboard is, and a token to sign in with (none is configured: one made for this run).
    assert re.search(r"dashboard http://127\.0\.0\.1:\d+/monitor \(sign in with \S{20,}: a token made for this run", out), out
    assert "✔ ACCEPT" in out
    # A repair is shown as what changed: a value patched (demo-03), or the rewrite from the sources (demo-01's
    # '30 days' since the dev-rows model: the patched sentence still stated what no source does).
    assert "✚ HEALED" in out and "'$10' → '$120'" in out and "(grounding_rewrite)" in out
    assert "↩ FALLBACK" in out  # no repair of demo-13 passes: it routes to fallback
    assert "⚠ ALERT critical critical_risk" in out
    assert "☠ DLQ" in out
    assert "14 verdicts" in out and "2 dead letters" in out
