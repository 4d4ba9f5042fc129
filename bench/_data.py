"""Shared helpers for the benchmark scripts: where the labelled data lives and how to load it."""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import orjson

# --- what the benchmarks take from stream_guard --------------------------------------------------------------
# Every stream_guard name the trust benchmarks (trust.py, perturb.py) use is imported here and nowhere else, so a
# move is fixed in one place. Answers are judged only by the `stream-guard check` command (`check`, below); these
# refit, score and choose thresholds from its verdicts, as `stream-guard calibrate` does.
from types import SimpleNamespace

from stream_guard.config import score_model as _model_data
from stream_guard.heal.readability import prose_problems, repair_problems
from stream_guard.ops.calibration import Example, Fitting, choose_threshold, scores_of
# The cross-validation group of a row (a RAGTruth document or question): the core's one definition, which
# calibrate's folds use too; the locked slice below is a keyed hash of it.
from stream_guard.ops.calibration import group_of as group_key
from stream_guard.ops.evaluation import roc_auc
from stream_guard.scoring import score_model as _model_fitting
from stream_guard.wire.events import AnswerEvent, parse_event
# cpu_profile.py judges in its own process exactly as `check --jobs 1` does, to sample where the CPU goes.
from stream_guard.config.load import build_config
from stream_guard.engine.history import MemoryHistory
from stream_guard.engine.judging import judge_events
from stream_guard.engine.pipeline import Guard
from stream_guard.engine.pool import BATCH_SIZE, REPLAY_QUALITY_LATENCY_MS

# Inline use (bench/inline_use.py): the clients, the embedded broker, and the sentence splitting a stream gets.
from stream_guard.agents.embedded_broker import EmbeddedBroker
# The memory soak (bench/memory_soak.py): a producer, a verdict reader, a worker process of its own.
from stream_guard.agents.clients import Reader, partition_key, start_producer
from stream_guard.agents.embedded_broker import die_with_parent, free_port
from stream_guard.agents.topics import ensure_topics
from stream_guard.client import GuardClient, KafkaGuardClient
from stream_guard.config.load import load as load_config
from stream_guard.engine.incremental import SentenceBuffer
from stream_guard.engine.pool import cpu_seconds as process_cpu_seconds
from stream_guard.wire.inline import StreamedSentence

# The score model as data (config.score_model) and its fitting (scoring.score_model), under one name.
score_model = SimpleNamespace(
    DEFAULT_MODEL=_model_data.DEFAULT_MODEL,
    save_model=_model_data.save_model,
    DEFAULT_SIGNALS=_model_fitting.DEFAULT_SIGNALS,
    Observation=_model_fitting.Observation,
    ScoreModel=_model_fitting.ScoreModel,
    fit=_model_fitting.fit,
    group_folds=_model_fitting.group_folds,
    observation_from_verdict=_model_fitting.observation_from_verdict,
)

REPO = Path(__file__).resolve().parents[1]
# The folder of the labelled files: `--data DIR` (add_data_option), else STREAM_GUARD_DATA, else ../shared/data.
DATA_DIR = Path(os.environ.get("STREAM_GUARD_DATA", REPO.parent / "shared" / "data"))
# Whether the user named the folder (--data or STREAM_GUARD_DATA): then a missing file is an error, not the sample.
_data_chosen = "STREAM_GUARD_DATA" in os.environ
# Shipped with the package (written for stream-guard, labels by construction): what the benchmarks fall back on
# beside a fresh clone, so that each runs; its figures are not the README's, which come from the labelled data.
SAMPLE = REPO / "stream_guard" / "samples" / "labelled.jsonl"
_said: set[str] = set()


def use_data(folder: Path) -> None:
    """Read the labelled files from `folder` from now on (what `--data DIR` does)."""
    global DATA_DIR, _data_chosen
    if not folder.is_dir():
        raise SystemExit(f"--data {folder}: not a folder (it must hold the labelled <name>.jsonl files)")
    DATA_DIR, _data_chosen = folder, True


class _DataFolder(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        use_data(Path(values))
        setattr(namespace, self.dest, Path(values))


def add_data_option(parser: argparse.ArgumentParser) -> None:
    """The one `--data DIR` option of every benchmark that reads labelled data."""
    parser.add_argument(
        "--data", metavar="DIR", type=Path, action=_DataFolder, default=DATA_DIR,
        help="folder of the labelled <name>.jsonl files (default: $STREAM_GUARD_DATA, else ../shared/data beside "
             "the repository, else the shipped sample stream_guard/samples/labelled.jsonl)")


def data_path(name: str) -> Path:
    """The labelled file `name` in DATA_DIR; without --data, STREAM_GUARD_DATA and ../shared/data, the shipped
    sample (said once on stderr). A folder the user named that lacks the file is an error."""
    path = DATA_DIR / f"{name}.jsonl"
    if path.exists():
        return path
    if _data_chosen:
        raise SystemExit(f"{path} not found: --data (or STREAM_GUARD_DATA) must be the folder holding the "
                         "labelled data")
    if name not in _said:
        _said.add(name)
        print(f"{path} not found: {name} is the shipped sample {SAMPLE.relative_to(REPO)} instead (192 answers; "
              "not the README's figures). Give --data DIR (or STREAM_GUARD_DATA) for the labelled data's folder.",
              file=sys.stderr)
    return SAMPLE
RESULTS_DIR = REPO / "bench" / "results"
DATASETS = ("ragtruth_dev", "ragtruth_d2t_dev", "summedits_dev", "halueval_qa_dev")
DEMO = REPO / "stream_guard" / "samples" / "demo.jsonl"
# The streaming benchmarks' workers: four partitions, and short group timeouts (a group join waits half the
# session timeout on the embedded broker).
STREAM_PARTITIONS = 4
STREAM_WORKER_ENV = {
    "STREAM_GUARD_SESSION_TIMEOUT_S": "10",
    "STREAM_GUARD_HEARTBEAT_INTERVAL_S": "2",
    "STREAM_GUARD_PARTITIONS": str(STREAM_PARTITIONS),
    "STREAM_GUARD_ANSWERS_PARTITIONS": str(STREAM_PARTITIONS),
    "STREAM_GUARD_OUTPUT_PARTITIONS": str(STREAM_PARTITIONS),
}


def demo_events() -> list[dict[str, Any]]:
    """The demo's well-formed events (its deliberately broken lines would go to the dead-letter topic)."""
    out = []
    for line in DEMO.read_bytes().splitlines():
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("answer"), str) and obj["answer"].strip():
            out.append(obj)
    return out


def load_events(name: str, limit: int | None = None) -> list[AnswerEvent]:
    path = data_path(name)
    events = []
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                raw = orjson.loads(line)
                # The labelled files carry their task and dataset next to the contract fields; keep
                # them in metadata so results can be broken down by task type.
                extra = {k: raw[k] for k in ("task_type", "source", "hallucination_type") if raw.get(k)}
                raw["metadata"] = {**(raw.get("metadata") or {}), **extra}
                events.append(parse_event(raw))
                if limit and len(events) >= limit:
                    break
    return events


def development_events(name: str, limit: int | None = None) -> list[AnswerEvent]:
    """The development rows of a labelled file as events (the locked slice left out), in file order."""
    dev, _ = split_rows(read_rows(name))
    events = []
    for raw in dev[:limit] if limit else dev:
        extra = {k: raw[k] for k in ("task_type", "source", "hallucination_type") if raw.get(k)}
        events.append(parse_event({**raw, "metadata": {**(raw.get("metadata") or {}), **extra}}))
    return events


def machine() -> dict[str, object]:
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}


def write_result(name: str, payload: dict[str, object]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    return path


def store_run(name: str, label: str, run: dict[str, Any]) -> Path:
    """Merge one run into bench/results/<name>.json under `label` (other labels' runs are kept)."""
    path = RESULTS_DIR / f"{name}.json"
    stored = orjson.loads(path.read_bytes()) if path.exists() else {}
    stored[label] = run
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(stored, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    return path


def chunks_of(row: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(texts, ids) of a labelled row's or an event's context: plain strings get their 1-based position as id."""
    texts, ids = [], []
    for i, chunk in enumerate(row.get("context") or []):
        if isinstance(chunk, dict):
            texts.append(str(chunk.get("text", "")))
            ids.append(str(chunk.get("id", i + 1)))
        else:
            texts.append(str(chunk))
            ids.append(str(i + 1))
    return texts, ids


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100.0 * (len(ordered) - 1))))
    return ordered[index]


# The locked slice: a fifth of the sources of every labelled file, chosen by a keyed hash of the source (never by
# looking at rows). Nothing is fitted, chosen or inspected on it while developing; it is read once, at the end of a
# round, beside the grouped cross-validated figures. A change that lifts the dev figure but not the locked one
# fits the rows.
LOCK_SALT = b"stream-guard-locked-v1"


def is_locked(row: dict[str, Any]) -> bool:
    digest = hashlib.blake2b(group_key(row).encode(), digest_size=8, key=LOCK_SALT).digest()
    return int.from_bytes(digest, "big") % 5 == 0


def split_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(development rows, locked rows), each in file order."""
    dev = [r for r in rows if not is_locked(r)]
    locked = [r for r in rows if is_locked(r)]
    return dev, locked


def read_rows(name: str) -> list[dict[str, Any]]:
    """The raw labelled rows of one file (with task_type, spans and meta), in file order."""
    path = data_path(name)
    with open(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    with open(path, "wb") as fh:
        for row in rows:
            fh.write(orjson.dumps(row) + b"\n")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


# --- judging through the shipped command ---------------------------------------------------------------------

CLI = Path(sys.executable).parent / "stream-guard"


def children_cpu() -> float:
    """User + system seconds of every finished child process (and the processes they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check(events: Path, out: Path, *, config: Path | None = None, ner: str = "spacy",
          extra: Sequence[str] = ()) -> dict[str, Any]:
    """`stream-guard check` as a user runs it (default settings unless `config`); returns the child's wall and CPU
    seconds and, from its summary line, how many judge processes it ran (each loads spaCy once). Raises when
    the command fails."""
    command = [str(CLI), "check", str(events), "--ner", ner, "-o", str(out), *extra]
    if config is not None:
        command += ["--config", str(config)]
    cpu_before, started = children_cpu(), time.perf_counter()
    done = subprocess.run(command, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    cost: dict[str, Any] = {"wall_s": time.perf_counter() - started, "cpu_s": children_cpu() - cpu_before}
    summary = re.search(r"NER (\S+), (\d+) process", done.stderr)
    if summary is None:
        raise SystemExit(f"stream-guard check printed no summary: {done.stderr[-500:]}")
    cost.update(ner=summary.group(1).rstrip(","), processes=int(summary.group(2)))
    return cost


def judge(rows: Sequence[dict[str, Any]], workdir: Path, name: str, *, config: Path | None = None,
          ner: str = "spacy") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Verdicts for `rows` (one per row, in order) from `stream-guard check`, and what the run cost."""
    events = write_jsonl(workdir / f"{name}.events.jsonl", rows)
    out = workdir / f"{name}.verdicts.jsonl"
    cost = check(events, out, config=config, ner=ner)
    verdicts = read_jsonl(out)
    bad = [v for v in verdicts if "error" in v]
    if len(verdicts) != len(rows) or bad:
        raise SystemExit(f"{name}: {len(verdicts)} verdicts for {len(rows)} events, {len(bad)} errors"
                         + (f" (first: {bad[0]})" if bad else ""))
    return verdicts, cost
