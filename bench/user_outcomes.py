"""What users get from `stream-guard check` as shipped, on the outside-labelled data in ../shared/data.

Runs the installed `stream-guard check` command in a subprocess (default settings, spaCy NER), one file
at a time in the file's own order so that drift history is live, and computes per task type and overall:

- faithful kept: share of faithful (label 0) events routed `accept` and delivered unchanged;
- hallucinated caught: share of hallucinated (label 1) events not delivered unchanged;
- hallucinated spans removed: share of label-1 events with labelled spans whose delivered answer
  contains none of the span texts;
- changed readable: share of changed answers that pass `stream_guard.heal.readability.is_readable`;
- ROC AUC of `hallucination_score` and F1 of `flagged`, as shipped and cross-validated grouped by source
  (stream_guard.scoring.score_model refits the model without the held-out documents and questions);
- whole-process CPU per event of `check` (user + system time of the child / events) on each file, and the
  same minus a one-event run (the fixed start-up cost: interpreter, imports, spaCy model).

    .venv/bin/python bench/user_outcomes.py [--label final] [--ner spacy] [--datasets ragtruth_dev ...]

Results are merged into bench/results/user_outcomes.json under the run's label.

It reads every row, the locked slice included. Development figures (development rows only, grouped
cross-validated, flags explained, within-model AUC) come from bench/trust.py, which supersedes this script once the
README cites its figures.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import chunks_of, data_path, group_key, machine, store_run  # noqa: E402

from stream_guard.ops.evaluation import confusion, roc_auc  # noqa: E402
from stream_guard.heal.readability import readability_problems  # noqa: E402

TARGET_DATASETS = ("ragtruth_dev", "ragtruth_d2t_dev")
OTHER_DATASETS = ("summedits_dev", "halueval_qa_dev")
CLI = Path(sys.executable).parent / "stream-guard"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_check(path: Path, out: Path, ner: str) -> dict[str, float]:
    """Run `stream-guard check` as shipped; returns its wall and CPU seconds (user + system)."""
    cpu_before, started = _children_cpu(), time.perf_counter()
    subprocess.run([str(CLI), "check", str(path), "--ner", ner, "-q", "-o", str(out)], check=True)
    return {"wall_s": time.perf_counter() - started, "cpu_s": _children_cpu() - cpu_before}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, "rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def _span_texts(row: dict[str, Any]) -> list[str]:
    answer = row["answer"]
    out = []
    for span in row.get("spans") or []:
        text = answer[int(span[0]) : int(span[1])].strip()
        if text:
            out.append(text)
    return out


def outcomes(rows: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The user-facing figures for matching (row, verdict) pairs."""
    faithful = [(r, v) for r, v in zip(rows, verdicts) if r["label"] == 0]
    hallucinated = [(r, v) for r, v in zip(rows, verdicts) if r["label"] == 1]
    kept = sum(1 for r, v in faithful if v.get("routing") == "accept" and v.get("delivered_answer") == r["answer"])
    caught = sum(1 for r, v in hallucinated if v.get("delivered_answer") != r["answer"])
    with_spans = [(r, v, _span_texts(r)) for r, v in hallucinated]
    with_spans = [(r, v, s) for r, v, s in with_spans if s]
    removed = sum(1 for r, v, spans in with_spans if not any(s in v.get("delivered_answer", "") for s in spans))
    changed = [(r, v) for r, v in zip(rows, verdicts) if v.get("delivered_answer") != r["answer"]]
    problems: dict[str, int] = defaultdict(int)
    readable = 0
    for r, v in changed:
        texts, ids = chunks_of(r)
        found = readability_problems(v.get("delivered_answer", ""), texts, ids)
        readable += not found
        for p in found:
            problems[p] += 1
    routing: dict[str, dict[str, int]] = {"faithful": defaultdict(int), "hallucinated": defaultdict(int)}
    strategies: dict[str, dict[str, int]] = {"faithful": defaultdict(int), "hallucinated": defaultdict(int)}
    for r, v in zip(rows, verdicts):
        side = "hallucinated" if r["label"] else "faithful"
        routing[side][str(v.get("routing"))] += 1
        strategies[side][str((v.get("healing") or {}).get("attempted", "none"))] += 1
    scores = [float(v.get("hallucination_score", 0.0)) for v in verdicts]
    labels = [int(r["label"]) for r in rows]
    return {
        "rows": len(rows),
        "faithful": len(faithful),
        "hallucinated": len(hallucinated),
        "faithful_kept": _share(kept, len(faithful)),
        "hallucinated_caught": _share(caught, len(hallucinated)),
        "hallucinated_spans_removed": _share(removed, len(with_spans)),
        "labelled_span_rows": len(with_spans),
        "changed": len(changed),
        "changed_readable": _share(readable, len(changed)),
        "unreadable_problems": dict(sorted(problems.items())),
        "roc_auc_as_shipped": round(roc_auc(scores, labels), 4),
        "flagged_as_shipped": confusion([bool(v.get("flagged")) for v in verdicts], labels).to_dict(),
        "routing": {k: dict(sorted(c.items())) for k, c in routing.items()},
        "healing_attempted": {k: dict(sorted(c.items())) for k, c in strategies.items()},
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def by_task(rows: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    tasks: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        tasks[str(row.get("task_type") or "all")].append(i)
    out = {task: outcomes([rows[i] for i in idx], [verdicts[i] for i in idx]) for task, idx in sorted(tasks.items())}
    if len(tasks) > 1:
        out["all"] = outcomes(rows, verdicts)
    return out


def cross_validated(rows: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]], folds: int) -> dict[str, Any]:
    """ROC AUC and F1 of the score model refitted without each held-out group of sources."""
    try:
        from stream_guard.scoring import score_model
    except ImportError:  # the code being measured predates the score_model module
        return {"available": False}
    features = [score_model.observation_from_verdict(v) for v in verdicts]
    labels = [int(r["label"]) for r in rows]
    groups = [group_key(r) for r in rows]
    cv = score_model.cross_validate(features, labels, groups, folds=folds)
    tasks: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        tasks[str(row.get("task_type") or "all")].append(i)
    tasks["all"] = list(range(len(rows)))
    out: dict[str, Any] = {"available": True, "folds": folds}
    for task, idx in sorted(tasks.items()):
        scores = [cv.scores[i] for i in idx]
        task_labels = [labels[i] for i in idx]
        out[task] = {
            "roc_auc": round(roc_auc(scores, task_labels), 4),
            "flagged": confusion([cv.flagged[i] for i in idx], task_labels).to_dict(),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="final", help="key under which this run is stored (baseline, final)")
    parser.add_argument("--ner", default="spacy", choices=("spacy", "regex"))
    parser.add_argument("--datasets", nargs="*", default=list(TARGET_DATASETS + OTHER_DATASETS))
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    started = time.perf_counter()
    run: dict[str, Any] = {"ner": args.ner, "machine": machine(), "datasets": {}}
    target_rows: list[dict[str, Any]] = []
    target_verdicts: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets:
            path = data_path(name)
            rows = read_jsonl(path)
            out = Path(tmp) / f"{name}.verdicts.jsonl"
            cost = run_check(path, out, args.ner)
            verdicts = read_jsonl(out)
            if len(verdicts) != len(rows) or any("error" in v for v in verdicts):
                raise SystemExit(f"{name}: {len(verdicts)} verdicts for {len(rows)} rows, or errors")
            one = Path(tmp) / f"{name}.one.jsonl"
            one.write_bytes(orjson.dumps(rows[0]) + b"\n")
            startup = run_check(one, Path(tmp) / "one.out.jsonl", args.ner)
            n = len(rows)
            cpu = {
                "events": n,
                "cpu_s": round(cost["cpu_s"], 3),
                "wall_s": round(cost["wall_s"], 3),
                "cpu_ms_per_event": round(cost["cpu_s"] * 1000 / n, 3),
                "startup_cpu_s": round(startup["cpu_s"], 3),
                "cpu_ms_per_event_minus_startup": round((cost["cpu_s"] - startup["cpu_s"]) * 1000 / max(n - 1, 1), 3),
            }
            entry = {"cpu": cpu, "outcomes": by_task(rows, verdicts), "cv": cross_validated(rows, verdicts, args.folds)}
            run["datasets"][name] = entry
            if name in TARGET_DATASETS:
                target_rows += rows
                target_verdicts += verdicts
            _print(name, entry)
    if target_rows:
        combined = {"outcomes": by_task(target_rows, target_verdicts),
                    "cv": cross_validated(target_rows, target_verdicts, args.folds)}
        run["targets"] = combined
        _print("ragtruth_dev + ragtruth_d2t_dev", combined)
    run["seconds"] = round(time.perf_counter() - started, 1)
    print(f"wrote {store_run('user_outcomes', args.label, run)} [{args.label}]")


def _fmt(value: float | None) -> str:
    return "   -" if value is None else f"{value:.3f}"


def _print(name: str, entry: dict[str, Any]) -> None:
    print(f"== {name}")
    if "cpu" in entry:
        c = entry["cpu"]
        print(f"   check CPU {c['cpu_ms_per_event']:.2f} ms/event, {c['cpu_ms_per_event_minus_startup']:.2f} minus "
              f"start-up ({c['startup_cpu_s']:.2f} s), {c['events']} events")
    print(f"   {'task':<10}{'rows':>6}{'kept':>8}{'caught':>8}{'spans':>8}{'readable':>10}{'AUC':>8}{'cvAUC':>8}{'cvF1':>8}")
    cv = entry.get("cv", {})
    for task, o in entry["outcomes"].items():
        c = cv.get(task, {}) if cv.get("available") else {}
        print(f"   {task:<10}{o['rows']:>6}{_fmt(o['faithful_kept']):>8}{_fmt(o['hallucinated_caught']):>8}"
              f"{_fmt(o['hallucinated_spans_removed']):>8}{_fmt(o['changed_readable']):>10}"
              f"{o['roc_auc_as_shipped']:>8.3f}{_fmt(c.get('roc_auc')):>8}{_fmt(c.get('flagged', {}).get('f1')):>8}")


if __name__ == "__main__":
    main()
