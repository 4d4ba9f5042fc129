"""CPU per event of the whole judge (inspect, heal, re-inspect, verdict), one event at a time, over every
labelled file: the distribution the per-event CPU budget (`event_budget_ms`) is chosen against.

    .venv/bin/python bench/event_cost.py [--ner regex spacy]

Each event runs once through `Guard.evaluate_batch` with no drift history (so caches are cold for a context
seen the first time, warm when a dataset repeats one, as in production); CPU time, not wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import add_data_option, load_events, machine, percentile, write_result  # noqa: E402

from stream_guard.config.detector import DetectorConfig  # noqa: E402
from stream_guard.engine.pipeline import Guard  # noqa: E402

FILES = ("ragtruth_dev", "ragtruth_d2t_dev", "summedits_dev", "halueval_qa_dev")


def costs(ner: str) -> dict[str, object]:
    guard = Guard(DetectorConfig(ner=ner, log_flagged=False, db_path=":memory:"))
    spent: list[tuple[float, str]] = []
    for name in FILES:
        for event in load_events(name):
            started = time.process_time()
            guard.evaluate_batch([event], {})
            spent.append(((time.process_time() - started) * 1000.0, f"{name}:{event.event_id}"))
    values = [ms for ms, _ in spent]
    return {"events": len(values), **{f"p{q:g}_ms": round(percentile(values, q), 2) for q in (50, 99, 99.9)},
            "max_ms": round(max(values), 2), "slowest": [(round(ms, 1), which) for ms, which in sorted(spent)[-5:]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ner", nargs="+", default=["regex", "spacy"])
    add_data_option(parser)
    args = parser.parse_args()
    result: dict[str, object] = {"machine": machine()}
    for ner in args.ner:
        result[ner] = costs(ner)
        print(ner, result[ner])
    print("wrote", write_result("event_cost", result))


if __name__ == "__main__":
    main()
