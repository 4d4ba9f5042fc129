"""Detection quality of stream-guard on the outside-labelled data in ../shared/data.

For each file and task type: ROC AUC of `hallucination_score`, precision / recall / F1 of `flagged`,
precision at recall 0.80 / 0.90 / 0.95 (seed 004's table), and which checks fired on faithful rows. Development
rows only (`_data.split_rows`): the locked slice is never judged here.

    .venv/bin/python bench/detection_quality.py [--ner regex|spacy] [--limit N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DATASETS, add_data_option, development_events, machine, write_result  # noqa: E402

from stream_guard.config.detector import DetectorConfig  # noqa: E402
from stream_guard.engine.detector import HallucinationDetector  # noqa: E402
from stream_guard.ops.evaluation import confusion, precision_at_recall, roc_auc  # noqa: E402
from stream_guard.engine.history import MemoryHistory  # noqa: E402
from stream_guard.text.inspection import Inspection  # noqa: E402
from stream_guard.engine.pipeline import Guard  # noqa: E402


def evaluate(name: str, detector: HallucinationDetector, limit: int | None) -> dict[str, object]:
    events = [e for e in development_events(name, limit) if e.label is not None]
    rows: dict[str, list[tuple[float, bool, int, tuple[str, ...]]]] = defaultdict(list)
    batch = 64
    for start in range(0, len(events), batch):
        chunk = events[start : start + batch]
        inspections = detector.with_entities(
            [Inspection.build(e.question, e.context, e.answer, e.citations, e.tenant) for e in chunk]
        )
        for event, inspection in zip(chunk, inspections):
            report = detector.analyze(inspection, ())
            task = str(event.metadata.get("task_type") or "all")
            row = (report.hallucination_score, report.flagged, int(event.label or 0), report.triggered)
            rows[task].append(row)
            if task != "all":
                rows["all"].append(row)
    return {task: summarize(values) for task, values in sorted(rows.items())}


def routing_by_label(name: str, config: DetectorConfig, limit: int | None) -> dict[str, dict[str, int]]:
    """What users would get: routing of every event, in file order with drift history threaded through,
    broken down by the label (faithful answers that get rewritten are the cost of the false positives)."""
    events = [e for e in development_events(name, limit) if e.label is not None]
    guard = Guard(config)
    histories: dict[str, list] = {}
    counts: dict[str, dict[str, int]] = {"faithful": defaultdict(int), "hallucinated": defaultdict(int)}
    for start in range(0, len(events), 32):
        chunk = events[start : start + 32]
        verdicts, updated = guard.evaluate_batch(chunk, histories)
        histories.update(updated)
        for event, verdict in zip(chunk, verdicts):
            counts["hallucinated" if event.label else "faithful"][getattr(verdict, "routing", "error")] += 1
    return {label: dict(sorted(c.items())) for label, c in counts.items()}


def summarize(values: list[tuple[float, bool, int, tuple[str, ...]]]) -> dict[str, object]:
    scores = [v[0] for v in values]
    flagged = [v[1] for v in values]
    labels = [v[2] for v in values]
    fired_on_faithful: dict[str, int] = defaultdict(int)
    fired_on_hallucinated: dict[str, int] = defaultdict(int)
    for _, _, label, triggered in values:
        for name in triggered:
            (fired_on_hallucinated if label else fired_on_faithful)[name] += 1
    return {
        "rows": len(values),
        "hallucinated": sum(labels),
        "roc_auc": round(roc_auc(scores, labels), 4),
        "flagged": confusion(flagged, labels).to_dict(),
        "precision_at_recall": {
            str(r): round(precision_at_recall(scores, labels, r), 4) for r in (0.80, 0.90, 0.95)
        },
        "checks_fired_on_faithful": dict(sorted(fired_on_faithful.items())),
        "checks_fired_on_hallucinated": dict(sorted(fired_on_hallucinated.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ner", default="regex", choices=("regex", "spacy"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    add_data_option(parser)
    args = parser.parse_args()
    config = DetectorConfig(db_path=":memory:", ner=args.ner, log_flagged=False)
    detector = HallucinationDetector(config, history=MemoryHistory())
    started = time.perf_counter()
    results = {name: evaluate(name, detector, args.limit) for name in args.datasets}
    routing = {name: routing_by_label(name, config, args.limit) for name in args.datasets}
    print(f"{'dataset':<18}{'task':<10}{'rows':>6}{'AUC':>8}{'P':>7}{'R':>7}{'F1':>7}{'FPR':>7}{'P@R.8':>8}")
    for name, tasks in results.items():
        for task, s in tasks.items():
            f = s["flagged"]
            print(f"{name:<18}{task:<10}{s['rows']:>6}{s['roc_auc']:>8.3f}{f['precision']:>7.3f}{f['recall']:>7.3f}"
                  f"{f['f1']:>7.3f}{f['false_positive_rate']:>7.3f}{s['precision_at_recall']['0.8']:>8.3f}")
    print("routing by label (drift history threaded through the file):")
    for name, by_label in routing.items():
        print(f"  {name}: " + "; ".join(f"{label} {dict(c)}" for label, c in by_label.items()))
    payload = {"ner": args.ner, "limit": args.limit, "machine": machine(),
               "seconds": round(time.perf_counter() - started, 1), "results": results, "routing": routing}
    print(f"wrote {write_result(f'detection_quality_{args.ner}', payload)}")


if __name__ == "__main__":
    main()
