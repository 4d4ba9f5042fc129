"""Slice noise (issue 15): is the locked slice's shortfall distinguishable from sampling noise, and how many
answers would a fresh labelled set need to decide it?

    .venv/bin/python bench/trust.py --label NAME --dump /tmp/oof.jsonl      # held-out verdicts, first
    .venv/bin/python bench/trust_slices.py /tmp/oof.jsonl [--draws 10000] [--strata task|file]
                                           [--without-replacement] [--locked-label locked-r15] [--label NAME]

Slices. From the held-out cross-validated verdicts of the DEVELOPMENT rows (the dump; the locked slice is never
read), draw `--draws` slices the size of the locked one: per stratum, whole sources (`_data.group_key`: the six
models' answers to one document stay together) at random until the slice holds as many answers as the locked
slice holds there. Strata are task types by default (the locked slice has as many summaries as QA answers, the
development rows a third as many, and summaries are the hardest: matching the mix compares like with like), or
files (`--strata file`: the mix left to chance, as the keyed hash that chose the locked slice left it). Sources are
drawn with replacement by default: the locked slice is a draw from the population the development rows sample,
not from those rows (`--without-replacement` draws from the development rows themselves, narrower by the finite
population correction). Each slice reads one fold seed's verdicts (in turn), so fold noise is in the spread too.
For each slice: kept, caught and caught at 90% kept (one threshold for the pooled slice, as trust.py computes it),
overall and per task. Reported: the slice mean (what the cross-validated figures predict for a slice of that
mix), the 2.5th / 5th / 97.5th percentiles, and the share of slices reading at or below the locked figure: how
often sampling alone takes a slice that low when the cross-validated figure is the truth (a one-sided p-value).

The locked figures are the recorded ones (bench/results/trust.json under --locked-label, `targets.shipped`:
the shipped build on the locked rows), with their Wilson 95% intervals from the recorded counts.

Power. How many faithful (hallucinated) answers a fresh labelled set needs for a one-sided test at alpha 0.05 to
tell kept 0.90 from 0.855 (caught 0.70 from 0.672, caught at 90% kept 0.65 from 0.578) with 80% power, both ways
round (rejecting the locked figure when the target holds, and the target when the locked figure holds): normal
approximation and exact binomial, for independent answers; then times the design effect of answers that come six
to a source (Kish, 1 + (m - 1) ICC, the intraclass correlation of kept / caught within a source estimated on the
development rows' held-out verdicts, m the mean answers of that label per source).

Results are merged into bench/results/trust_slices.json under --label.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import RESULTS_DIR, add_data_option, group_key, read_jsonl, machine, store_run  # noqa: E402
from _uncertainty import (  # noqa: E402
    answers_needed,
    design_effect,
    exact_answers_needed,
    intraclass_correlation,
    quantile,
    wilson,
)
from trust import TARGETS, caught_at_keep, development_rows  # noqa: E402

TASKS = ("QA", "Summary", "Data2txt")
# Issue 15's targets, and which locked figure each is told apart from.
TARGET = {"faithful_kept": 0.90, "hallucinated_caught": 0.70, "caught_at_90_kept": 0.65}
FIGURES = tuple(TARGET)


@dataclass(frozen=True)
class Answer:
    """One development answer's held-out outcome in one fold seed."""

    group: str
    file: str
    task: str
    label: int
    kept: bool
    caught: bool
    score: float


def answers_by_seed(dump: Sequence[dict[str, Any]]) -> dict[int, list[Answer]]:
    """The dump's answers per fold seed, with their source (group) and file read from the development rows by
    id."""
    where: dict[str, tuple[str, str]] = {}
    for name in TARGETS:
        for row in development_rows(name, False):
            where[str(row["id"])] = (group_key(row), name)
    out: dict[int, list[Answer]] = defaultdict(list)
    for d in dump:
        group, file = where[str(d["id"])]
        out[int(d["seed"])].append(Answer(group, file, d["task"], int(d["label"]), bool(d["kept"]),
                                          bool(d["caught"]), float(d["score"])))
    return dict(out)


def draw_slice(sources: dict[str, list[list[int]]], sizes: dict[str, int], rng: random.Random,
               replace: bool) -> list[int]:
    """Row indices of one slice: per stratum, whole sources at random until it holds `sizes[stratum]` answers."""
    picked: list[int] = []
    for stratum, size in sizes.items():
        pool = sources[stratum]
        order = iter(rng.sample(pool, len(pool))) if not replace else None
        held = 0
        while held < size:
            unit = rng.choice(pool) if order is None else next(order, None)
            if unit is None:
                raise SystemExit(f"--without-replacement: stratum {stratum} has fewer than {size} answers")
            picked += unit
            held += len(unit)
    return picked


def slice_figures(answers: Sequence[Answer], picked: Sequence[int]) -> dict[str, dict[str, float | None]]:
    """Kept, caught and caught at 90% kept of one slice, per task and overall."""
    out: dict[str, dict[str, float | None]] = {}
    for column in (*TASKS, "all"):
        rows = [answers[i] for i in picked if column in ("all", answers[i].task)]
        faithful = [a for a in rows if not a.label]
        hallucinated = [a for a in rows if a.label]
        out[column] = {
            "faithful_kept": sum(a.kept for a in faithful) / len(faithful) if faithful else None,
            "hallucinated_caught": sum(a.caught for a in hallucinated) / len(hallucinated) if hallucinated else None,
            "caught_at_90_kept": caught_at_keep([a.label for a in rows], [a.score for a in rows])}
    return out


def stratum_of(answer: Answer, strata: str) -> str:
    return answer.task if strata == "task" else answer.file


def slice_noise(by_seed: dict[int, list[Answer]], sizes: dict[str, int], strata: str,
                locked: dict[str, dict[str, float]], draws: int, seed: int, replace: bool) -> dict[str, Any]:
    """The distribution of each figure over `draws` slices holding `sizes[stratum]` answers per stratum, beside the
    locked figure: mean, percentiles, and the share of slices at or below the locked figure and below the
    target."""
    rng = random.Random(seed)
    seeds = sorted(by_seed)
    sources: dict[int, dict[str, list[list[int]]]] = {}
    for s in seeds:
        units: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for i, a in enumerate(by_seed[s]):
            units[stratum_of(a, strata)][a.group].append(i)
        sources[s] = {stratum: list(groups.values()) for stratum, groups in units.items()}
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for k in range(draws):
        fold_seed = seeds[k % len(seeds)]
        picked = draw_slice(sources[fold_seed], sizes, rng, replace)
        for column, figures in slice_figures(by_seed[fold_seed], picked).items():
            for name, value in figures.items():
                if value is not None:
                    values[column][name].append(value)
    whole = [slice_figures(by_seed[s], range(len(by_seed[s]))) for s in seeds]
    out: dict[str, Any] = {}
    for column, figures in values.items():
        out[column] = {}
        for name, got in figures.items():
            got.sort()
            mark = locked.get(column, {}).get(name)
            out[column][name] = {
                "cv_all_rows": statistics.mean(w[column][name] or 0.0 for w in whole),
                "slice_mean": statistics.mean(got), "p2.5": quantile(got, 0.025), "p5": quantile(got, 0.05),
                "p97.5": quantile(got, 0.975), "slices": len(got), "locked": mark,
                "share_at_or_below_locked": sum(v <= mark + 1e-9 for v in got) / len(got) if mark is not None else None,
                "share_below_target": sum(v < TARGET[name] - 1e-9 for v in got) / len(got)}
    return out


def locked_figures(label: str) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """The recorded locked figures (the shipped build on the locked rows) per task and overall, and the counts
    they are shares of: read from bench/results/trust.json, never from the rows."""
    stored = orjson.loads((RESULTS_DIR / "trust.json").read_bytes())
    if label not in stored or stored[label].get("rows") != "locked":
        raise SystemExit(f"bench/results/trust.json has no locked run labelled {label!r}")
    outcomes = stored[label]["targets"]["shipped"]["outcomes"]
    figures = {c: {n: o[n] for n in FIGURES if o.get(n) is not None} for c, o in outcomes.items()}
    counts = {c: {"faithful": int(o["faithful"]), "hallucinated": int(o["hallucinated"])} for c, o in outcomes.items()}
    return figures, counts


def locked_intervals(figures: dict[str, dict[str, float]],
                     counts: dict[str, dict[str, int]]) -> dict[str, dict[str, list[float] | None]]:
    """Wilson 95% intervals of the locked shares from their recorded counts (caught at 90% kept as a share of the
    hallucinated answers, its threshold taken as given)."""
    whole = {"faithful_kept": "faithful", "hallucinated_caught": "hallucinated", "caught_at_90_kept": "hallucinated"}
    out: dict[str, dict[str, list[float] | None]] = {}
    for column, values in figures.items():
        out[column] = {}
        for name, value in values.items():
            n = counts[column][whole[name]]
            bounds = wilson(round(value * n), n)
            out[column][name] = [round(b, 4) for b in bounds] if bounds else None
    return out


def clustering(by_seed: dict[int, list[Answer]]) -> dict[str, dict[str, float | None]]:
    """Per label: the intraclass correlation of its outcome (kept for faithful answers, caught for hallucinated)
    within a source, mean over fold seeds; the mean answers of that label per source; their design effect."""
    out: dict[str, dict[str, float | None]] = {}
    for name, label in (("faithful_kept", 0), ("hallucinated_caught", 1)):
        iccs = []
        sizes = []
        for answers in by_seed.values():
            mine = [a for a in answers if a.label == label]
            icc = intraclass_correlation([a.group for a in mine], [float(a.kept if label == 0 else a.caught)
                                                                    for a in mine])
            if icc is not None:
                iccs.append(icc)
            sizes.append(len(mine) / len({a.group for a in mine}))
        icc = statistics.mean(iccs) if iccs else None
        size = statistics.mean(sizes)
        out[name] = {"icc": icc, "answers_per_source": size,
                     "design_effect": design_effect(size, icc) if icc is not None else None}
    return out


def power(locked: dict[str, float], cluster: dict[str, dict[str, float | None]]) -> dict[str, Any]:
    """Answers (of the label the figure is a share of) a fresh set needs to tell each target from the locked
    figure, one-sided alpha 0.05, power 0.80: both directions, normal and exact, and with the design effect."""
    out: dict[str, Any] = {}
    for name, target in TARGET.items():
        mark = locked.get(name)
        if mark is None or mark == target:
            continue
        # Caught at 90% kept is a share of the hallucinated answers, clustered as caught is.
        like = cluster["faithful_kept" if name == "faithful_kept" else "hallucinated_caught"]
        deff, per_source = like["design_effect"] or 1.0, like["answers_per_source"] or 1.0
        out[name] = {}
        for way, (null, true) in {"reject_locked_if_target_holds": (mark, target),
                                  "reject_target_if_locked_holds": (target, mark)}.items():
            normal = answers_needed(null, true)
            exact = exact_answers_needed(null, true, start=max(1, normal // 2))
            clustered = round((exact or normal) * deff)
            out[name][way] = {"null": null, "true": true, "normal": normal, "exact": exact,
                              "clustered": clustered, "sources": round(clustered / per_source)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump", type=Path, help="held-out verdicts written by bench/trust.py --dump")
    parser.add_argument("--draws", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1, help="seed of the slice draws")
    parser.add_argument("--strata", choices=("task", "file"), default="task")
    parser.add_argument("--without-replacement", action="store_true")
    parser.add_argument("--locked-label", default="locked-r15", help="the recorded locked run in trust.json")
    parser.add_argument("--label", default="current")
    add_data_option(parser)
    args = parser.parse_args()
    dump = read_jsonl(args.dump)
    by_seed = answers_by_seed(dump)
    locked, counts = locked_figures(args.locked_label)
    # The locked slice's answers per stratum, from its recorded counts per task (a task lies in one file).
    file_of = {a.task: a.file for answers in by_seed.values() for a in answers}
    sizes: dict[str, int] = defaultdict(int)
    for task in TASKS:
        if task in counts:
            sizes[task if args.strata == "task" else file_of[task]] += counts[task]["faithful"] + counts[task]["hallucinated"]
    noise = slice_noise(by_seed, dict(sizes), args.strata, locked, args.draws, args.seed, not args.without_replacement)
    cluster = clustering(by_seed)
    run = {"machine": machine(), "dump": str(args.dump), "draws": args.draws, "seed": args.seed,
           "strata": args.strata, "replace": not args.without_replacement, "locked_label": args.locked_label,
           "slice_sizes": dict(sizes), "locked": locked, "locked_counts": counts,
           "locked_wilson95": locked_intervals(locked, counts), "slices": noise, "clustering": cluster,
           "power": power(locked["all"], cluster)}
    path = store_run("trust_slices", args.label, run)
    report(run)
    print(f"wrote {path} [{args.label}]")


def report(run: dict[str, Any]) -> None:
    sizes = ", ".join(f"{k} {v}" for k, v in run["slice_sizes"].items())
    print(f"== {run['draws']} slices of the locked slice's size ({sizes} answers; strata {run['strata']}, sources "
          f"{'with' if run['replace'] else 'without'} replacement) from the development rows' held-out verdicts")
    print(f"   {'':<22}{'CV all':>8}{'slices':>8}{'p2.5':>7}{'p5':>7}{'p97.5':>7}{'locked':>8}{'Wilson 95%':>13}"
          f"{'<=locked':>10}{'<target':>9}")
    for column in (*TASKS, "all"):
        for name in FIGURES:
            f = run["slices"].get(column, {}).get(name)
            if f is None:
                continue
            bounds = run["locked_wilson95"].get(column, {}).get(name)
            mark = "-" if f["locked"] is None else f"{f['locked']:.3f}"
            below = "-" if f["share_at_or_below_locked"] is None else f"{f['share_at_or_below_locked']:.3f}"
            print(f"   {column + ' ' + name:<22}{f['cv_all_rows']:>8.3f}{f['slice_mean']:>8.3f}{f['p2.5']:>7.3f}"
                  f"{f['p5']:>7.3f}{f['p97.5']:>7.3f}{mark:>8}"
                  f"{(f'{bounds[0]:.2f}-{bounds[1]:.2f}' if bounds else '-'):>13}{below:>10}"
                  f"{f['share_below_target']:>9.3f}")
    for name, c in run["clustering"].items():
        print(f"   clustering of {name}: ICC {c['icc']:.3f} within a source, {c['answers_per_source']:.2f} answers "
              f"per source, design effect {c['design_effect']:.2f}")
    print("== answers a fresh labelled set needs (one-sided alpha 0.05, power 0.80)")
    for name, ways in run["power"].items():
        for way, p in ways.items():
            print(f"   {name:<20} {way:<31} H0 {p['null']:.3f} vs {p['true']:.3f}: normal {p['normal']}, exact "
                  f"{p['exact']}, clustered {p['clustered']} (~{p['sources']} sources)")


if __name__ == "__main__":
    main()
