"""What `stream-guard check` gives for the shipped demo events, as committed: any change to a verdict shows here.

When a verdict changes on purpose, regenerate the expected file and commit it with the change that explains it:

    .venv/bin/python tests/stream_guard/cli/test_demo_verdicts.py

Timings (`latency_ms`, `cost_ms`, at any depth) are left out: they are measured, so they differ on every run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "stream_guard" / "samples" / "demo.jsonl"
EXPECTED = Path(__file__).resolve().parent / "data" / "demo_verdicts.jsonl"
COMMAND = [sys.executable, "-m", "stream_guard", "check", str(DEMO), "--ner", "spacy", "--jobs", "1", "--quiet"]

sys.path.insert(0, str(REPO / "tests" / "support"))  # also run as a script, to regenerate the expected file
from verdicts import without_timings  # noqa: E402


def demo_verdicts() -> list[Any]:
    done = subprocess.run(COMMAND, cwd=REPO, capture_output=True, timeout=300)
    # The demo's two broken lines fail on purpose: check says so and exits 1, every other line judged.
    assert done.returncode == 1 and b"2 line(s) failed" in done.stderr, done.stderr[-2000:]
    return [without_timings(orjson.loads(line)) for line in done.stdout.splitlines() if line.strip()]


def test_the_demo_events_get_the_committed_verdicts() -> None:
    expected = [orjson.loads(line) for line in EXPECTED.read_bytes().splitlines() if line.strip()]
    got = demo_verdicts()
    assert len(got) == len(expected) == sum(1 for line in DEMO.read_bytes().splitlines() if line.strip())
    for number, (mine, theirs) in enumerate(zip(got, expected), start=1):
        assert mine == theirs, f"line {number} differs; if on purpose, regenerate: python {Path(__file__).relative_to(REPO)}"


if __name__ == "__main__":
    EXPECTED.write_bytes(b"".join(orjson.dumps(v, option=orjson.OPT_SORT_KEYS) + b"\n" for v in demo_verdicts()))
    print(f"wrote {EXPECTED.relative_to(REPO)}")
