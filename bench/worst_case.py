"""Worst-case CPU time per event: the named adversarial inputs and a seeded fuzz corpus through the core.

Every event is judged by `Guard.evaluate` (all checks, healing, re-inspection of the healed answer), one at
a time, and its CPU time (user + system of this process) recorded. Reports the worst event and the p99 over
the fuzz corpus, and each named input (bench/adversarial.py), per NER backend.

    .venv/bin/python bench/worst_case.py [--count 120] [--seed 20240607] [--ner regex spacy] [--patterns]

`--patterns` also probes every module-level regular expression of the core with its own literal words
followed by a long run of one character (1,000 then 4,000): a ratio well above 4 means super-linear
time. Patterns only ever applied at one position (`.match(text, pos)` right after a found token) are
listed separately: scanning them from every position, as the probe does, is not how they are used.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import machine, percentile, write_result  # noqa: E402
from adversarial import Case, fuzz_cases, named_cases  # noqa: E402

import stream_guard  # noqa: E402
from stream_guard.config.detector import DetectorConfig  # noqa: E402
from stream_guard.engine.pipeline import Guard  # noqa: E402

# Patterns applied only at one position (after a token found by another pattern), or to bounded text.
ANCHORED_ONLY = frozenset(
    {
        "stream_guard.checks.billing._NOT_BILLING_AFTER_RE",  # .match right after a cycle word
        "stream_guard.checks.dates._UNIT_AFTER_RE",  # .match right after a year
        "stream_guard.text.ner._COLON_AFTER_RE",  # .match right after an entity
        "stream_guard.text.markup._PARTS_RE",  # inside one marker, at most 120 characters
        "stream_guard.text.markup._POSITIONAL_RE",  # inside one marker, at most 120 characters
        "stream_guard.text.markup._PREFIX_RE",  # .match at the start of one marker
        "stream_guard.text.markup._RANGE_RE",  # .match on one part of one marker
        "stream_guard.text.markup._FENCE_RE",  # .match at a line start
        "stream_guard.text.markup._HEADING_RE",  # .match at a line start
        "stream_guard.text.markup._QUOTE_RE",  # .match at a line start
        "stream_guard.text.markup._ITEM_RE",  # .match at a line start or after a quote prefix
        "stream_guard.text.markup._BREAK_RE",  # .match at a line start
        "stream_guard.text.markup._DELIMITER_ROW_RE",  # .match at a line start
        "stream_guard.text.markup._FOOTNOTE_DEF_RE",  # .match at a line start
        "stream_guard.text.markup._SEE_RE",  # .sub on one marker body
    }
)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def judge(guard: Guard, case: Case) -> float:
    started = cpu()
    guard.evaluate(case.event())
    return cpu() - started


def run_backend(ner: str, count: int, seed: int) -> dict[str, Any]:
    guard = Guard(DetectorConfig(ner=ner, db_path=":memory:", log_flagged=False))
    guard.evaluate(Case("warm-up", "Sales rose.", ("Sales rose last year.",)).event())  # loads spaCy, if any
    named = {case.name: round(judge(guard, case), 4) for case in named_cases()}
    fuzz = [(case.name, judge(guard, case)) for case in fuzz_cases(seed=seed, count=count)]
    times = [t for _, t in fuzz]
    worst_name, worst = max(fuzz, key=lambda item: item[1])
    return {
        "named_cpu_s": named,
        "named_worst": max(named.items(), key=lambda item: item[1]),
        "fuzz": {
            "events": len(fuzz),
            "seed": seed,
            "worst_cpu_s": round(worst, 4),
            "worst_event": worst_name,
            "p99_cpu_s": round(percentile(times, 99), 4),
            "p50_cpu_s": round(percentile(times, 50), 4),
        },
    }


def summary(ner: str, result: dict[str, Any]) -> str:
    fuzz = result["fuzz"]
    name, worst = result["named_worst"]
    lines = [
        f"{ner}: fuzz {fuzz['events']} events: worst {fuzz['worst_cpu_s']:.3f} s ({fuzz['worst_event']}), "
        f"p99 {fuzz['p99_cpu_s']:.3f} s, p50 {fuzz['p50_cpu_s']:.3f} s; named worst {worst:.3f} s ({name})"
    ]
    lines += [f"    {case:32s} {seconds:7.3f} s" for case, seconds in result["named_cpu_s"].items()]
    return "\n".join(lines)


def probe_patterns() -> dict[str, list[dict[str, object]]]:
    """Module-level patterns whose time grows faster than their input on some long run."""
    found: dict[str, list[dict[str, object]]] = {"suspect": [], "anchored_only": []}
    seen: set[int] = set()
    for info in pkgutil.walk_packages(stream_guard.__path__, "stream_guard."):
        if ".agents" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            for pattern in value if isinstance(value, (tuple, list)) else [value]:
                if isinstance(pattern, re.Pattern) and id(pattern) not in seen:
                    seen.add(id(pattern))
                    result = _probe(pattern)
                    if result is not None:
                        key = f"{info.name}.{name}"
                        found["anchored_only" if key in ANCHORED_ONLY else "suspect"].append({"pattern": key, **result})
    return found


def _probe(pattern: re.Pattern[str]) -> dict[str, object] | None:
    words = list(dict.fromkeys(re.findall(r"[A-Za-z]{2,}", pattern.pattern)))[:40]
    for prefix in ["", *words, *(w.capitalize() for w in words[:10]), "1", "$1", "(", "["]:
        for unit in (" ", "\t", "\n", "1", ",", "a", "A", ".", "-", ", "):
            small = _time(pattern, prefix + unit * 1000 + "!")
            if small < 0.0002:
                continue
            large = _time(pattern, prefix + unit * 4000 + "!")
            if large > 0.002 and large / max(small, 1e-4) > 8:
                ratio = round(large / small, 1)
                return {"prefix": prefix, "unit": unit, "seconds_at_4000": round(large, 4), "ratio": ratio}
    return None


def _time(pattern: re.Pattern[str], text: str) -> float:
    started = time.process_time()
    pattern.search(text)
    pattern.match(text)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=120, help="fuzz events")
    parser.add_argument("--seed", type=int, default=20240607)
    parser.add_argument("--ner", nargs="*", default=["regex", "spacy"], choices=("regex", "spacy"))
    parser.add_argument("--patterns", action="store_true", help="also probe every module-level pattern")
    args = parser.parse_args()
    backends: dict[str, dict[str, Any]] = {}
    payload: dict[str, object] = {"machine": machine(), "backends": backends}
    for ner in args.ner:
        try:
            result = run_backend(ner, args.count, args.seed)
        except RuntimeError as exc:  # spaCy or its model missing
            print(f"{ner}: skipped ({exc})")
            continue
        backends[ner] = result
        print(summary(ner, result))
    if args.patterns:
        payload["patterns"] = patterns = probe_patterns()
        print(f"patterns: {len(patterns['suspect'])} suspect, {len(patterns['anchored_only'])} anchored-only")
        for item in patterns["suspect"]:
            print(f"    SUSPECT {item}")
    print(f"wrote {write_result('worst_case', payload)}")


if __name__ == "__main__":
    main()
