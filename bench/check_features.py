"""ROC AUC of single check features on labelled dev data, per task type.

Guides how the scorer combines features; it is not a detector benchmark. Usage:

    .venv/bin/python bench/check_features.py /work/shared/data/ragtruth_dev.jsonl [--ner spacy|regex|both]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Callable

from stream_guard.checks.confidence import ConfidenceCheck
from stream_guard.checks.entities import EntityCheck
from stream_guard.checks.faithfulness import FaithfulnessCheck
from stream_guard.checks.relevance import RelevanceCheck
from stream_guard.config.detector import DetectorConfig
from stream_guard.ops.evaluation import roc_auc
from stream_guard.text.inspection import Inspection
from stream_guard.text.ner import batch_answer_entities, make_recognizer
from stream_guard.wire.report import CheckResult


Feature = Callable[[dict[str, CheckResult]], float]

FEATURES: dict[str, Feature] = {
    "1-faithfulness": lambda r: 1 - r["faithfulness"].score,
    "1-min_overlap": lambda r: 1 - r["faithfulness"].details["min_overlap"],
    "1-mean_overlap": lambda r: 1 - r["faithfulness"].details["mean_overlap"],
    "novel_fraction": lambda r: r["faithfulness"].details["novel_fraction"],
    "1-min_best_sentence": lambda r: 1 - r["faithfulness"].details["min_best_sentence_overlap"],
    "1-mean_best_sentence": lambda r: 1 - r["faithfulness"].details["mean_best_sentence_overlap"],
    "missing_numbers": lambda r: len(r["faithfulness"].details["missing_numbers"]),
    "confidence": lambda r: r["confidence"].score,
    "1-relevance": lambda r: 1 - r["relevance"].score,
}


def evaluate(path: str, backends: list[str]) -> None:
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    config = DetectorConfig()
    inspections = [Inspection.build(r["question"], r["context"], r["answer"]) for r in rows]
    base = [FaithfulnessCheck(config), ConfidenceCheck(config), RelevanceCheck(config)]
    results = [{c.name: c.run(i) for c in base} for i in inspections]
    features = {name: [f(r) for r in results] for name, f in FEATURES.items()}
    for backend in backends:
        recognizer = make_recognizer(backend)  # type: ignore[arg-type]
        started = time.perf_counter()
        entities = []
        for k in range(0, len(inspections), 64):
            entities += batch_answer_entities(recognizer, inspections[k : k + 64])
        per_answer = (time.perf_counter() - started) * 1000 / len(inspections)
        check = EntityCheck(config, recognizer)
        counts = [
            len(check.run(Inspection.build(i.question, i.chunks, i.answer, answer_entities=e)).details["fabricated"])
            for i, e in zip(inspections, entities)
        ]
        features[f"fabricated_entities[{backend}]"] = counts
        print(f"{path.rsplit('/', 1)[-1]}: NER {recognizer.name} gated+batched {per_answer:.2f} ms/answer")
    for task in sorted({r["task_type"] for r in rows}):
        idx = [k for k, r in enumerate(rows) if r["task_type"] == task]
        labels = [rows[k]["label"] for k in idx]
        print(f"  {task} (n={len(idx)}, positives={sum(labels)})")
        for name, values in features.items():
            picked = [values[k] for k in idx]
            flagged = sum(1 for v in picked if v > 0) if name.startswith("fabricated") else None
            extra = ""
            if flagged is not None:
                hits = sum(1 for v, y in zip(picked, labels) if v > 0 and y)
                extra = f"   flagged {flagged}, of which hallucinated {hits}"
            print(f"    {name:32s} AUC {roc_auc(picked, labels):.3f}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--ner", choices=["spacy", "regex", "both"], default="both")
    args = parser.parse_args()
    backends = ["regex", "spacy"] if args.ner == "both" else [args.ner]
    for path in args.paths:
        evaluate(path, backends)


if __name__ == "__main__":
    main()
