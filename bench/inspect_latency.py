"""Per-event cost of the detector on ../shared/data/ragtruth_dev.jsonl, regex NER vs spaCy NER.

Two modes, both measured in the same run so their ratio is meaningful on a noisy machine:
- single: `inspect()` one event at a time (what a library caller pays per call);
- single_cold: the same with the chunk-analysis cache cleared before every event (a context never seen);
- batched: `Guard.evaluate_batch` over batches of 32 (what the streaming service and `stream-guard check`
  pay), where spaCy runs once per batch through `nlp.pipe`; per-event cost = the event's own checks plus
  its share of the batch's NER time.

    .venv/bin/python bench/inspect_latency.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import add_data_option, load_events, machine, percentile, write_result  # noqa: E402

from stream_guard.config.detector import DetectorConfig  # noqa: E402
from stream_guard.engine.detector import HallucinationDetector  # noqa: E402
from stream_guard.engine.history import MemoryHistory  # noqa: E402
from stream_guard.text.analysis import clear_caches  # noqa: E402
from stream_guard.text.inspection import Inspection  # noqa: E402


def single(detector: HallucinationDetector, events: list, repeat: int, cold: bool = False) -> list[float]:
    costs = []
    for _ in range(repeat):
        for e in events:
            if cold:
                clear_caches()
            started = time.perf_counter()
            detector.analyze(detector.with_entities([Inspection.build(e.question, e.context, e.answer)])[0], ())
            costs.append((time.perf_counter() - started) * 1000)
    return costs


def batched(detector: HallucinationDetector, events: list, repeat: int, size: int = 32) -> list[float]:
    costs = []
    for _ in range(repeat):
        for start in range(0, len(events), size):
            chunk = events[start : start + size]
            inspections = [Inspection.build(e.question, e.context, e.answer) for e in chunk]
            t0 = time.perf_counter()
            inspections = detector.with_entities(inspections)
            ner_share = (time.perf_counter() - t0) * 1000 / len(chunk)
            for inspection in inspections:
                t1 = time.perf_counter()
                detector.analyze(inspection, ())
                costs.append((time.perf_counter() - t1) * 1000 + ner_share)
    return costs


def summary(costs: list[float]) -> dict[str, float]:
    return {
        "events": len(costs),
        "p50_ms": round(percentile(costs, 50), 3),
        "p95_ms": round(percentile(costs, 95), 3),
        "p99_ms": round(percentile(costs, 99), 3),
        "mean_ms": round(sum(costs) / len(costs), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    add_data_option(parser)
    args = parser.parse_args()
    events = load_events("ragtruth_dev")
    results: dict[str, dict[str, float]] = {}
    for ner in ("regex", "spacy"):
        detector = HallucinationDetector(
            DetectorConfig(db_path=":memory:", ner=ner, log_flagged=False), history=MemoryHistory()
        )
        if not detector.ner_backend.startswith(ner):
            print(f"skipping {ner}: backend unavailable ({detector.ner_backend})")
            continue
        single(detector, events[:20], 1)  # warm caches and the model
        results[f"{ner}_single_cold"] = summary(single(detector, events, 1, cold=True))
        results[f"{ner}_single"] = summary(single(detector, events, args.repeat))
        results[f"{ner}_batched"] = summary(batched(detector, events, args.repeat))
    print(f"{'mode':<16}{'events':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'mean ms':>9}")
    for mode, s in results.items():
        print(f"{mode:<16}{s['events']:>8}{s['p50_ms']:>9.2f}{s['p95_ms']:>9.2f}{s['p99_ms']:>9.2f}{s['mean_ms']:>9.2f}")
    print(f"wrote {write_result('inspect_latency', {'machine': machine(), 'results': results})}")


if __name__ == "__main__":
    main()
