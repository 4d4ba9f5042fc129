"""Events per second of `stream-guard check --jobs N` (stream_guard.engine.pool.Pool) on labelled data.

Each round judges the dataset `--repeat` times over (fresh event ids each time, so later copies of a question
drift against the earlier ones as real traffic would) with --jobs 1 and with --jobs N, alternating, after
the processes have loaded their models: startup (spawning, loading spaCy) is reported apart. The figure is
wall-clock events/s, the median over rounds, and the ratio of medians. The machine is shared and noisy:
compare the ratio within one run, not absolute numbers across runs.

    .venv/bin/python bench/jobs_scaling.py [--dataset ragtruth_dev] [--jobs 2] [--rounds 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import add_data_option, data_path, machine, write_result  # noqa: E402

from stream_guard.config.load import build_config  # noqa: E402
from stream_guard.engine.pool import Pool  # noqa: E402


def payloads(name: str, repeat: int) -> list[bytes]:
    rows = [orjson.loads(line) for line in (data_path(name)).read_bytes().splitlines() if line.strip()]
    return [orjson.dumps({**row, "id": f"{row['id']}#{r}"}) for r in range(repeat) for row in rows]


def run(config: object, lines: list[bytes], jobs: int) -> dict[str, float]:
    started = time.perf_counter()
    with Pool(config, jobs=jobs) as judges:  # type: ignore[arg-type]
        judges.wait_ready()
        ready = time.perf_counter()
        cpu = time.process_time()
        count = sum(1 for _, judged in judges.judge(enumerate(lines)) if judged.ok)
        wall = time.perf_counter() - ready
        parent_cpu = time.process_time() - cpu
        children = judges.cpu_seconds if jobs > 1 else [parent_cpu]
    assert count == len(lines), f"{count} verdicts for {len(lines)} events"
    return {"startup_s": round(ready - started, 3), "wall_s": round(wall, 3),
            "events_per_s": round(count / wall, 1), "parent_cpu_s": round(parent_cpu, 3),
            "judge_cpu_s": [round(c, 3) for c in children]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ragtruth_dev")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="copies of the dataset per run")
    parser.add_argument("--ner", default="auto", choices=("auto", "spacy", "regex"))
    add_data_option(parser)
    args = parser.parse_args()
    config = build_config(None, None, args.ner)
    lines = payloads(args.dataset, args.repeat)
    runs: dict[int, list[dict[str, float]]] = {1: [], args.jobs: []}
    for round_no in range(args.rounds):
        for jobs in (1, args.jobs):
            result = run(config, lines, jobs)
            runs[jobs].append(result)
            print(f"round {round_no + 1} jobs {jobs}: {result['events_per_s']:.1f} events/s "
                  f"({len(lines)} events in {result['wall_s']:.2f}s, startup {result['startup_s']:.2f}s, "
                  f"parent CPU {result['parent_cpu_s']:.2f}s, judges' CPU {result['judge_cpu_s']})", flush=True)
    medians = {jobs: statistics.median(r["events_per_s"] for r in results) for jobs, results in runs.items()}
    ratio = medians[args.jobs] / medians[1]
    # What the split allows when every process has a core of its own: the one process's judging CPU over the
    # busiest of the N processes' (a bound, not a measurement of speed; other load on the machine hides it).
    bound = statistics.median(one["judge_cpu_s"][0] / max(many["judge_cpu_s"])
                              for one, many in zip(runs[1], runs[args.jobs]))
    print(f"median events/s: jobs 1 {medians[1]:.1f}, jobs {args.jobs} {medians[args.jobs]:.1f}: x{ratio:.2f} "
          f"(CPU split bound x{bound:.2f}; load average {os.getloadavg()[0]:.2f})")
    path = write_result(f"jobs_scaling_{args.dataset}", {
        "dataset": args.dataset, "events": len(lines), "ner": args.ner, "rounds": args.rounds,
        "median_events_per_s": {str(k): v for k, v in medians.items()}, "speedup": round(ratio, 3),
        "cpu_split_bound": round(bound, 3), "load_average_1m": round(os.getloadavg()[0], 2),
        "runs": {str(k): v for k, v in runs.items()}, "machine": machine(),
    })
    print(f"written to {path}")


if __name__ == "__main__":
    main()
