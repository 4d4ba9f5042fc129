"""calibrate: refuses too few labels; its threshold delivers the faithful share asked for on other data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from stream_guard.calibration import Example, choose_threshold, fold_of
from stream_guard.config import build_config

from test_backtest import DATA, REPO


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream_guard", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=False)


def example(label: int, keepable: bool = True) -> Example:
    return Example("e", label, "g", "s", (), (), keepable)


def test_the_threshold_is_the_lowest_that_keeps_the_share_asked_for() -> None:
    examples = [example(0), example(0), example(0), example(0, keepable=False), example(1), example(1)]
    scores = [0.1, 0.2, 0.5, 0.05, 0.3, 0.9]
    # 3 of 4 faithful answers can be kept (one routes to fallback whatever the score): keep 0.75 needs all three,
    # so the threshold must pass 0.5; halfway to the next score (0.9).
    assert choose_threshold(scores, examples, 0.75) == 0.7
    # Keeping 2 of 4 only needs 0.1 and 0.2 below it: halfway to 0.3, which it then flags.
    assert choose_threshold(scores, examples, 0.50) == 0.25
    assert choose_threshold(scores, examples, 1.0) == 1.0  # unreachable: flag only certainties


def test_folds_keep_a_group_together() -> None:
    assert len({fold_of("ragtruth:source:14364", 5) for _ in range(3)}) == 1
    assert len({fold_of(f"g{i}", 5) for i in range(50)}) == 5


def test_too_few_labels_are_refused_with_the_counts(tmp_path: Path) -> None:
    lines = (DATA / "ragtruth_dev.jsonl").read_bytes().splitlines()[:30]
    path = tmp_path / "few.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    done = cli("calibrate", "--labels", str(path), "--out", str(tmp_path / "c.toml"))
    assert done.returncode == 2
    assert "too few labels to calibrate" in done.stderr and "at least 20 of each" in done.stderr
    assert not (tmp_path / "c.toml").exists()


def test_separate_label_files_label_events_files(tmp_path: Path) -> None:
    rows = [orjson.loads(line) for line in (DATA / "ragtruth_dev.jsonl").read_bytes().splitlines()[:10]]
    events, labels = tmp_path / "events.jsonl", tmp_path / "labels.jsonl"
    events.write_bytes(b"\n".join(orjson.dumps({k: v for k, v in r.items() if k != "label"}) for r in rows))
    labels.write_bytes(b"\n".join(orjson.dumps({"event_id": r["id"], "label": r["label"], "grader": "g"})
                                  for r in rows))
    done = cli("calibrate", "--events", str(events), "--labels", str(labels), "--out", str(tmp_path / "c.toml"))
    assert done.returncode == 2 and f"{len(rows) - sum(r['label'] for r in rows)} faithful" in done.stderr


@pytest.mark.slow
def test_calibrated_on_one_file_the_backtest_on_another_keeps_about_the_share_asked_for(tmp_path: Path) -> None:
    # Two files of RAGTruth answers about different source documents.
    rows = (DATA / "ragtruth_dev.jsonl").read_bytes().splitlines()
    by_doc: dict[str, list[bytes]] = {}
    for line in rows:
        by_doc.setdefault(str(orjson.loads(line)["meta"]["source_id"]), []).append(line)
    docs = sorted(by_doc)
    fit, held = tmp_path / "fit.jsonl", tmp_path / "held.jsonl"
    fit.write_bytes(b"\n".join(line for d in docs[0::2] for line in by_doc[d]) + b"\n")
    held.write_bytes(b"\n".join(line for d in docs[1::2] for line in by_doc[d]) + b"\n")
    toml = tmp_path / "calibrated.toml"
    done = cli("calibrate", "--labels", str(fit), "--keep", "0.90", "--out", str(toml), "--ner", "regex",
               "--fixed-weights")
    assert done.returncode == 0, done.stderr
    assert "Operating points" in done.stdout and "Cross-validated" in done.stdout
    config = build_config(str(toml), None, None)  # what check, worker and backtest load
    assert 0.0 < config.flag_threshold <= 1.0
    out = tmp_path / "out"
    done = cli("backtest", "--file", str(held), "--config", str(toml), "--ner", "regex", "--out", str(out),
               "--json-only", "-q")
    assert done.returncode == 0, done.stderr
    kept = json.loads((out / "report.json").read_text())["metrics"]["overall"]["faithful_kept"]
    # Held-out documents differ: over six splits of this file by document the share ranged 0.78-0.96 (mean
    # 0.86) for a 0.90 target; the bound is that spread, not a promise tighter than the data allows.
    assert 0.75 <= kept <= 0.99, kept
