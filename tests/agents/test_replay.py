"""Backtests over a real broker: a topic replays like the file it came from, time ranges work without the
broker's timestamp lookup, and a configuration change shows as exactly the decisions it changes against a
real worker's live verdicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from in_process import stream_guard
from stream_guard.config.load import build_config
from stream_guard.engine.pool import Pool
from streamkit import REPO, Names, new_worker, produce, wait_for
from labelled_data import labelled

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]



def ragtruth(count: int, start: int = 0) -> list[bytes]:
    lines = [line for line in labelled("ragtruth_dev").read_bytes().splitlines() if line.strip()]
    return lines[start:start + count]


def backtest(names: Names, out: Path, *args: str) -> dict[str, Any]:
    """`stream-guard backtest` as a real process: the runs that judge in 2 processes (--jobs 2)."""
    env = {**os.environ, **names.env()}
    done = subprocess.run([sys.executable, "-m", "stream_guard", "backtest", "--out", str(out), "--ner", "regex",
                           "--json-only", "-q", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads((out / "report.json").read_text())


def backtest_here(names: Names, out: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                  *args: str) -> dict[str, Any]:
    """The same command through its entry function in this process (--jobs 1 judges here too): what it reads
    and writes is the same; a process start-up is saved."""
    for name, value in names.env().items():
        monkeypatch.setenv(name, value)
    done = stream_guard(capsys, "backtest", "--out", str(out), "--ner", "regex", "--json-only", "-q", *args)
    assert done.returncode == 0, done.stderr
    return json.loads((out / "report.json").read_text())


def verdicts_by_id(out: Path) -> dict[str, Any]:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "latency_ms"}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return {v["event_id"]: strip(v) for v in map(orjson.loads, (out / "verdicts.jsonl").read_bytes().splitlines())}


COMPARED = ("events", "inputs", "routing", "flagged", "labels", "metrics")


def counts(report: dict[str, Any]) -> dict[str, Any]:
    """Alert and error counts; their examples are the first few in input order, and a topic's order (merged
    partitions) is not the file's."""
    return {key: {k: v for k, v in report[key].items() if k != "examples"} for key in ("alerts", "errors")}


def test_a_topic_backtest_equals_the_file_backtest_metric_for_metric(
        names: Names, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ragtruth(60)
    produce(names, lines)  # keyed by question hash over 4 partitions, as `stream-guard produce` does
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    from_topic = backtest(names, tmp_path / "topic", "--topic", names.topics.answers, "--broker", names.broker,
                          "--jobs", "2")
    from_file = backtest_here(names, tmp_path / "file", monkeypatch, capsys, "--file", str(path), "--jobs", "1")
    assert from_topic["events"] == 60 and from_topic["source"]["kind"] == "topic"
    for key in COMPARED:
        assert from_topic[key] == from_file[key], key
    assert counts(from_topic) == counts(from_file)
    assert verdicts_by_id(tmp_path / "topic") == verdicts_by_id(tmp_path / "file")
    # No live verdicts on that topic (no worker ran): nothing compared, nothing invented.
    assert from_topic["live"] == {"compared": 0, "without_live_verdict": 60, "changed": 0, "by_kind": {},
                                  "examples": {}}


def test_a_time_range_is_cut_by_record_timestamps(names: Names, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    before, after = ragtruth(10), ragtruth(12, start=100)
    produce(names, before)
    time.sleep(1.5)
    cut = datetime.now(timezone.utc)
    time.sleep(1.5)
    produce(names, after)
    report = backtest_here(names, tmp_path / "range", monkeypatch, capsys, "--topic", names.topics.answers,
                           "--broker", names.broker, "--from", cut.isoformat(), "--no-live", "--jobs", "1")
    assert report["events"] == 12
    assert set(verdicts_by_id(tmp_path / "range")) == {orjson.loads(line)["id"] for line in after}
    early = backtest_here(names, tmp_path / "early", monkeypatch, capsys, "--topic", names.topics.answers,
                          "--broker", names.broker, "--to", cut.isoformat(), "--no-live", "--jobs", "1")
    assert set(verdicts_by_id(tmp_path / "early")) == {orjson.loads(line)["id"] for line in before}


def expected_changes(lines: list[bytes], candidate: str) -> dict[str, str]:
    """event_id -> difference kind between the default and the candidate configuration, judged offline."""
    def decisions(config: Any) -> dict[str, tuple[str, bool]]:
        with Pool(config, jobs=1) as judges:
            out = {}
            for _, judged in judges.judge(enumerate(lines)):
                v = orjson.loads(judged.verdict)
                out[v["event_id"]] = (v["routing"], v["flagged"])
            return out

    live = decisions(build_config(None, None, "regex"))
    new = decisions(build_config(candidate, None, "regex"))
    changes = {}
    for event_id, (routing, flagged) in new.items():
        old_routing, old_flagged = live[event_id]
        if routing != old_routing:
            changes[event_id] = f"{old_routing}->{routing}"
        elif flagged != old_flagged:
            changes[event_id] = "unflagged->flagged" if flagged else "flagged->unflagged"
    return changes


def test_a_config_change_shows_exactly_the_decisions_it_changes_against_a_real_worker(
        names: Names, tmp_path: Path, workers: list[Any]) -> None:
    lines = ragtruth(40)
    worker = new_worker(names, tmp_path, workers, "live").wait_ready()
    produce(names, lines)
    wait_for(names, names.topics.verdicts, lambda records: len({r["event_id"] for r in records}) >= len(lines),
             timeout=180)
    candidate = tmp_path / "candidate.toml"
    candidate.write_text("[detector]\nflag_threshold = 0.25\n")
    expected = expected_changes(lines, str(candidate))
    assert 0 < len(expected) < len(lines)  # the change matters, and not everywhere
    report = backtest(names, tmp_path / "out", "--topic", names.topics.answers, "--broker", names.broker,
                      "--config", str(candidate), "--jobs", "2")  # live: the verdicts topic, by default
    assert report["live"]["compared"] == len(lines) and report["live"]["without_live_verdict"] == 0
    assert {d["event_id"]: d["kind"] for d in report["differences"]} == expected
    assert all(d["candidate"]["flagged"] and not d["live"]["flagged"] for d in report["differences"]
               if d["kind"] == "unflagged->flagged")
    # The replay read the topic beside the worker without taking its partitions or committing anything.
    assert worker.proc is not None and worker.proc.poll() is None
