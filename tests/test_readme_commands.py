"""Every offline command in the README's code blocks, run as written from a fresh directory.

The README's placeholders are given the shipped sample (`answers.jsonl`, `other.jsonl`: its events;
`graded.jsonl`: its labels as (event_id, label)), so the commands run exactly as a newcomer would type them.
Commands that need a broker, `make`, the benchmarks or `../shared/data` are listed and left to the tests
that cover them (tests/agents, `make test-long`); the test fails when a new command fits none of these, so
a README command cannot go untried.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from labelled_data import REPO, SAMPLE

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(900)]

# Commands not run here, and why.
ELSEWHERE = {
    "make": "builds and runs the suite itself",
    "stream-guard worker": "needs a broker (tests/agents)",
    "stream-guard up": "needs a broker (tests/agents/test_cli_up.py)",
    "stream-guard produce": "needs a broker (tests/agents/test_worker_stream.py)",
    "stream-guard tail": "needs a broker (tests/agents)",
    "stream-guard replay-dlq": "needs a broker (tests/agents/test_dead_letters.py)",
    "stream-guard backtest --topic": "needs a broker (tests/agents/test_replay.py)",
    "stream-guard backtest ...": "an elided command",
    ".venv/bin/stream-guard serve": "a server (tests/stream_guard/http/test_serve.py)",
    "python -m stream_guard.ops.monitoring.tokens": "prints a random token",
    ".venv/bin/python bench/": "a benchmark (minutes; bench/)",
}


def readme_commands() -> list[str]:
    """The command lines of the README's fenced blocks, continuation lines joined, comments dropped."""
    out, inside, pending = [], False, ""
    for line in (REPO / "README.md").read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside:
            continue
        text = pending + line.split(" #")[0].strip()
        if text.endswith("\\"):
            pending = text[:-1] + " "
            continue
        pending = ""
        if text.startswith(("stream-guard ", ".venv/bin/", "make ", "python ")):
            out.append(text)
    return out


def runnable(command: str) -> bool:
    """Not covered elsewhere, not on `../shared/data`, not rewriting the shipped model (`--write-default`, the
    refit on the labelled data's development rows, after `bench/dev_rows.py`), and a command rather than a usage
    line (`[...]`, `a|b`)."""
    return (not any(command.startswith(prefix) for prefix in ELSEWHERE) and "../shared/data" not in command
            and "--write-default" not in command and "[" not in command and "|" not in command)


@pytest.fixture()
def newcomer_dir(tmp_path: Path) -> Path:
    """A directory as the README's commands expect it: the repository's shipped files and the placeholders."""
    (tmp_path / "stream_guard").mkdir()
    shutil.copytree(REPO / "stream_guard" / "samples", tmp_path / "stream_guard" / "samples")
    rows = [orjson.loads(line) for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    events = [{k: v for k, v in row.items() if k in ("id", "tenant", "question", "context", "answer")} for row in rows]
    lines = b"".join(orjson.dumps(e) + b"\n" for e in events)
    (tmp_path / "answers.jsonl").write_bytes(lines)
    (tmp_path / "other.jsonl").write_bytes(lines)
    (tmp_path / "graded.jsonl").write_bytes(b"".join(orjson.dumps({"event_id": r["id"], "label": r["label"]}) + b"\n"
                                                     for r in rows))
    return tmp_path


def test_every_offline_readme_command_runs_from_a_fresh_directory(newcomer_dir: Path) -> None:
    commands = readme_commands()
    run = [c for c in commands if runnable(c)]
    assert any("calibrate --labels stream_guard/samples/labelled.jsonl" in c for c in run)
    assert any(c.startswith(".venv/bin/stream-guard check") for c in run)
    env = {**os.environ, "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    # Order matters: the check writes verdicts.jsonl that a backtest reads; calibrate writes calibrated.toml.
    order = sorted(run, key=lambda c: (" check " not in f" {c} ", "--config calibrated.toml" in c))
    for command in order:
        shell = command.replace(".venv/bin/", "")
        done = subprocess.run(shell, shell=True, cwd=newcomer_dir, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, command
    assert (newcomer_dir / "calibrated.toml").exists() and (newcomer_dir / "report" / "report.json").exists()
