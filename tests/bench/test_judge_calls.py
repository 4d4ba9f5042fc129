"""bench/judge_calls.py: the judge process's own loop, fed one call at a time, against `check`'s batches."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "judge_calls.py"

pytestmark = pytest.mark.slow


def events_file(path: Path, count: int) -> Path:
    rows = [{"event_id": f"ev-{i}", "question": f"What does plan {i % 5} cost?",
             "answer": f"Plan {i % 5} costs {i} euros.", "context": [f"Plan {i % 5} costs {i} euros a month."]}
            for i in range(count)]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_each_side_judges_the_counted_events_and_reports_its_cost_per_event(tmp_path: Path) -> None:
    done = run(str(events_file(tmp_path / "events.jsonl", 32)), "--ner", "regex", "--skip", "16", "--count", "16")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "check in batches of 16", "check in batches of 1", "judge in batches of 16", "judge in batches of 1"]
    figures = [float(m.group(1)) for line in lines if (m := re.search(r": ([0-9.]+) ms CPU per event", line))]
    assert len(figures) == 4 and all(f > 0 for f in figures)


def test_the_judge_loop_answers_every_call_and_carries_histories(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import judge_calls
    finally:
        sys.path.remove(str(SCRIPT.parent))
    lines = [orjson.dumps(row) for row in orjson.loads(b"[" + b",".join(
        events_file(tmp_path / "events.jsonl", 4).read_bytes().splitlines()) + b"]")]
    requests = judge_calls._Requests([[line] for line in lines], 2, 0.0)
    from stream_guard.config.load import build_config
    from stream_guard.engine import pool

    pool._child_main(requests, pool.Options(build_config(None, None, "regex", env={}), 0.0))  # type: ignore[arg-type]
    assert requests.answers == 1 + len(lines)  # "ready", then one answer per call
    assert requests.table and all(raw for raw in requests.table.values())  # the drift histories came back


def test_counts_must_be_whole_batches(tmp_path: Path) -> None:
    done = run(str(events_file(tmp_path / "events.jsonl", 32)), "--skip", "10")
    assert done.returncode != 0 and "multiples of 16" in done.stderr
