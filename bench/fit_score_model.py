"""Fit the hallucination-score model (stream_guard/calibration.py) on labelled data, cross-validated.

Runs the detector as shipped (no drift history: drift is not evidence of unfaithfulness) over the labelled
files, turns each report into a calibration.Observation, reports the cross-validated figures (folds
grouped by source: a RAGTruth document or question is never on both sides), and with --write replaces
the shipped model in stream_guard/score_model.py with the one fitted on all the rows.

    .venv/bin/python bench/fit_score_model.py [--ner spacy] [--keep-rate 0.9] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import REPO, group_key, read_rows  # noqa: E402

from stream_guard import score_model as calibration  # noqa: E402
from stream_guard.config import DetectorConfig  # noqa: E402
from stream_guard.detector import HallucinationDetector  # noqa: E402
from stream_guard.evaluation import confusion, roc_auc  # noqa: E402
from stream_guard.history import MemoryHistory  # noqa: E402
from stream_guard.inspection import Inspection  # noqa: E402

MODEL_MODULE = REPO / "stream_guard" / "models" / calibration.DEFAULT_MODEL_FILE
BATCH = 64


def observations(names: list[str], ner: str) -> tuple[list[calibration.Observation], list[dict[str, Any]]]:
    detector = HallucinationDetector(DetectorConfig(db_path=":memory:", ner=ner, log_flagged=False),
                                     history=MemoryHistory())
    out: list[calibration.Observation] = []
    rows: list[dict[str, Any]] = []
    for name in names:
        data = [r for r in read_rows(name) if r.get("label") is not None]
        for start in range(0, len(data), BATCH):
            chunk = data[start : start + BATCH]
            inspections = detector.with_entities([Inspection.build(r["question"], r["context"], r["answer"]) for r in chunk])
            for row, inspection in zip(chunk, inspections):
                report = detector.analyze(inspection, ())
                out.append(calibration.observation(report.checks, "confident_but_unfaithful" in report.triggered))
                rows.append(row)
    return out, rows


def summarize(rows: list[dict[str, Any]], scores: list[float], flagged: list[bool]) -> dict[str, Any]:
    tasks: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        tasks[str(row.get("task_type"))].append(i)
        tasks["all"].append(i)
    out = {}
    for task, idx in sorted(tasks.items()):
        labels = [int(rows[i]["label"]) for i in idx]
        m = confusion([flagged[i] for i in idx], labels)
        out[task] = {"rows": len(idx), "roc_auc": round(roc_auc([scores[i] for i in idx], labels), 4),
                     "f1": round(m.f1, 4), "kept_faithful": round(1 - m.false_positive_rate, 4),
                     "caught": round(m.recall, 4)}
    return out


def write_module(model: calibration.ScoreModel) -> None:
    calibration.save_model(model, str(MODEL_MODULE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ner", default="spacy", choices=("spacy", "regex"))
    parser.add_argument("--datasets", nargs="*", default=["ragtruth_dev", "ragtruth_d2t_dev"])
    parser.add_argument("--keep-rate", type=float, default=0.90)
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="replace stream_guard/score_model.py")
    args = parser.parse_args()
    obs, rows = observations(args.datasets, args.ner)
    labels = [int(r["label"]) for r in rows]
    groups = [group_key(r) for r in rows]
    options = {"keep_rate": args.keep_rate, "l2": args.l2}
    cv = calibration.cross_validate(obs, labels, groups, folds=args.folds, **options)
    print(f"{args.folds}-fold cross-validated, grouped by source ({len(set(groups))} groups):")
    for task, s in summarize(rows, cv.scores, cv.flagged).items():
        print(f"  {task:<10}{s['rows']:>5}  AUC {s['roc_auc']:.3f}  F1 {s['f1']:.3f}  "
              f"faithful unflagged {s['kept_faithful']:.3f}  hallucinated flagged {s['caught']:.3f}")
    model = calibration.fit(obs, labels, fitted_on=f"{'+'.join(args.datasets)}, {len(rows)} rows, NER {args.ner}",
                            **options)
    fitted = [calibration.score(o, model) for o in obs]
    print("in-sample (for reference only):")
    for task, s in summarize(rows, fitted, [v >= model.threshold for v in fitted]).items():
        print(f"  {task:<10}{s['rows']:>5}  AUC {s['roc_auc']:.3f}  F1 {s['f1']:.3f}")
    for name, weight in zip(model.features, model.weights):
        print(f"  {name:<24}{weight:+.3f}")
    print(f"  {'intercept':<24}{model.intercept:+.3f}")
    if args.write:
        write_module(model)
        print(f"wrote {MODEL_MODULE}")


if __name__ == "__main__":
    main()
