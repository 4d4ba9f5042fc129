"""The seed library's ranking beside ours, within one generating model (issue 15: "within the answers of one model
the score is no better than the seed library's").

    .venv/bin/python bench/trust.py --label NAME --dump /tmp/oof.jsonl      # our held-out verdicts, first
    .venv/bin/python bench/seed_trust.py --seed DIR --dump /tmp/oof.jsonl [--label NAME] [--data DIR]

DIR holds the seed library's hallucination_detector.py (github.com/Emmimal/hallucination-detector; never part of
this repository; imported as bench/_seed_run.py imports it, with its regex NER unless --seed-spacy). Every
development row of ragtruth_dev and ragtruth_d2t_dev (`_data.split_rows`: the locked slice is never read) is
inspected by the seed alone (a fresh detector per answer, so no drift history: its SQLite history would compare
each answer with the other models' answers to the same question, and every summary with every other summary,
whose question is ""), and its score is 1 - QualityScore.final_score, what it routes by, with its latency part
fixed at full marks (a timing, not evidence). Ours is each answer's held-out `hallucination_score` in the dump
(the mean over its fold seeds: grouped cross-validation, refitted per fold).

Reported, per generating model (`meta.model`) and macro over models, for QA + Summary, Data2txt and all:
- ROC AUC of ours and of the seed's score;
- each seed signal (a numeric, negation or temporal contradiction, an entity absent from the chunks, a claim under
  its 40% keyword overlap, its confidence): how often hallucinated and faithful answers carry it, over all answers
  and over those on which none of our checks triggered (where it could add what we lack);
- added to ours: the within-model macro AUC of our score plus w times the signal (w = 0.02, 0.05, 0.1), in sample
  (an upper bound: a signal that does not lift it even so carries no evidence ours lacks);
- per model, the hallucinated answers the seed ranks at least 0.3 higher among that model's faithful answers than
  ours does, with the seed signals and our triggered checks, to read.
Results are merged into bench/results/seed_trust.json under --label.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import add_data_option, chunks_of, machine, read_rows, roc_auc, split_rows, store_run  # noqa: E402
from _seed_run import _library  # noqa: E402

FILES = ("ragtruth_dev", "ragtruth_d2t_dev")
SCOPES: Mapping[str, tuple[str, ...]] = {"QA+Summary": ("QA", "Summary"), "Data2txt": ("Data2txt",),
                                         "all": ("QA", "Summary", "Data2txt")}
WEIGHTS = (0.02, 0.05, 0.1)
# A hallucinated answer listed when the seed places it this much higher among its model's faithful answers.
RANK_GAP = 0.3

Row = Mapping[str, Any]
# What the seed says of one answer: its score and signals (seed_view), keyed by name.
Signal = Callable[[Row], float]
SIGNALS: Mapping[str, Signal] = {
    "numeric contradiction": lambda s: float(s["contradiction"].startswith("Numeric")),
    "negation flip": lambda s: float(s["contradiction"].startswith("Negation")),
    "temporal contradiction": lambda s: float(s["contradiction"].startswith("Temporal")),
    "entity absent": lambda s: float(bool(s["entities"])),
    "ungrounded claim": lambda s: float(s["faithfulness"] < 1.0),
    "low confidence": lambda s: 1.0 - s["confidence"],
}


def seed_view(report: Mapping[str, Any], quality: float) -> dict[str, Any]:
    """The seed's verdict on one answer as compared here: its score (1 - quality: higher is riskier) and signals."""
    return {"score": round(1.0 - quality, 4), "contradiction": report.get("contradiction_reason") or "",
            "entities": list(report.get("hallucinated_entities") or ()),
            "faithfulness": float(report.get("faithfulness_score", 1.0)),
            "confidence": float(report.get("confidence_score", 0.5)), "risk": report.get("risk_level")}


def judge_with_seed(rows: Sequence[Row], seed_dir: Path, spacy_model: bool) -> dict[str, dict[str, Any]]:
    """The seed's view of every row, by id: one fresh detector per answer, latency fixed at full marks."""
    lib = _library(str(seed_dir), spacy_model)
    out = {}
    for row in rows:
        detector = lib.HallucinationDetector(lib.DetectorConfig(db_path=":memory:", log_flagged=False))
        texts, _ = chunks_of(dict(row))
        report = detector.inspect(row.get("question") or "", texts, row["answer"])
        report.latency_ms = 0.0
        out[row["id"]] = seed_view(report.to_dict(), lib.QualityScore.compute(report).final_score)
    return out


def our_scores(dump: Path) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Each answer's held-out score (mean over fold seeds) and the checks that triggered (first seed's)."""
    scores: dict[str, list[float]] = defaultdict(list)
    triggered: dict[str, list[str]] = {}
    for line in dump.read_bytes().splitlines():
        if line.strip():
            held = orjson.loads(line)
            scores[held["id"]].append(float(held["score"]))
            triggered.setdefault(held["id"], list(held.get("triggered") or ()))
    return {k: statistics.mean(v) for k, v in scores.items()}, triggered


def task_of(row: Row) -> str:
    return str(row.get("task_type") or "all").split("/")[0]


def model_of(row: Row) -> str:
    return str((row.get("meta") or {}).get("model") or "unknown")


def by_model(rows: Sequence[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        out[model_of(row)].append(row)
    return dict(sorted(out.items()))


def auc(rows: Sequence[Row], score: Callable[[Row], float]) -> float | None:
    labels = [int(r["label"]) for r in rows]
    return round(roc_auc([score(r) for r in rows], labels), 4) if 0 < sum(labels) < len(labels) else None


def within_model(rows: Sequence[Row], score: Callable[[Row], float]) -> dict[str, Any]:
    """AUC per generating model and their mean over the models where both labels occur."""
    per = {m: auc(group, score) for m, group in by_model(rows).items()}
    known = [v for v in per.values() if v is not None]
    return {"by_model": per, "macro": round(statistics.mean(known), 4) if known else None}


def signal_rates(rows: Sequence[Row], seed: Mapping[str, Row], signal: Signal) -> dict[str, Any]:
    """Share of hallucinated and of faithful answers carrying the signal (a graded signal counts above 0.5)."""
    def share(label: int) -> float | None:
        of = [r for r in rows if int(r["label"]) == label]
        return round(sum(signal(seed[r["id"]]) > 0.5 for r in of) / len(of), 3) if of else None

    return {"hallucinated": share(1), "faithful": share(0),
            "rows": [sum(int(r["label"]) == y for r in rows) for y in (1, 0)]}


def added_to_ours(rows: Sequence[Row], ours: Mapping[str, float], seed: Mapping[str, Row], signal: Signal,
                  weights: Sequence[float] = WEIGHTS) -> dict[str, float | None]:
    """Within-model macro AUC of our score plus w times the seed's signal, per weight (0 = ours alone)."""
    return {str(w): within_model(rows, lambda r: ours[r["id"]] + w * signal(seed[r["id"]]))["macro"]
            for w in (0.0, *weights)}


def rank_among_faithful(row: Row, group: Sequence[Row], score: Callable[[Row], float]) -> float:
    """Share of the group's faithful answers scoring below this one (ties count half): its part of the AUC."""
    faithful = [score(r) for r in group if not int(r["label"])]
    mine = score(row)
    return sum((s < mine) + 0.5 * (s == mine) for s in faithful) / len(faithful) if faithful else 0.0


def seed_ranks_higher(rows: Sequence[Row], ours: Mapping[str, float], seed: Mapping[str, Row],
                      triggered: Mapping[str, list[str]], gap: float = RANK_GAP) -> dict[str, list[dict[str, Any]]]:
    """Per model, the hallucinated answers the seed places at least `gap` higher among the faithful than ours."""
    out: dict[str, list[dict[str, Any]]] = {}
    for model, group in by_model(rows).items():
        listed = []
        for row in group:
            if not int(row["label"]):
                continue
            mine = rank_among_faithful(row, group, lambda r: ours[r["id"]])
            theirs = rank_among_faithful(row, group, lambda r: seed[r["id"]]["score"])
            if theirs - mine >= gap:
                s = seed[row["id"]]
                listed.append({"id": row["id"], "task": task_of(row), "ours": round(mine, 2), "seed": round(theirs, 2),
                               "seed_signals": [k for k, f in SIGNALS.items() if f(s) > 0.5],
                               "seed_contradiction": s["contradiction"], "our_triggered": triggered.get(row["id"], [])})
        out[model] = listed
    return out


def compare(rows: Sequence[Row], ours: Mapping[str, float], seed: Mapping[str, Row],
            triggered: Mapping[str, list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scope, tasks in SCOPES.items():
        part = [r for r in rows if task_of(r) in tasks]
        quiet = [r for r in part if not triggered.get(r["id"])]
        out[scope] = {
            "rows": len(part), "hallucinated": sum(int(r["label"]) for r in part),
            "ours": within_model(part, lambda r: ours[r["id"]]),
            "seed": within_model(part, lambda r: seed[r["id"]]["score"]),
            "signals": {name: {"all": signal_rates(part, seed, f), "none_of_ours_triggered": signal_rates(quiet, seed, f),
                               "added_to_ours": added_to_ours(part, ours, seed, f)} for name, f in SIGNALS.items()},
            "seed_ranks_higher": seed_ranks_higher(part, ours, seed, triggered),
        }
    return out


def report(run: Mapping[str, Any]) -> None:
    for scope, part in run["scopes"].items():
        print(f"== {scope}: {part['rows']} rows, {part['hallucinated']} hallucinated")
        print(f"   within-model AUC, macro: ours {part['ours']['macro']}  seed {part['seed']['macro']}")
        for model, value in part["ours"]["by_model"].items():
            print(f"     {model:22s} ours {value}  seed {part['seed']['by_model'][model]}")
        print("   seed signal: share of hallucinated / faithful answers (all | none of ours triggered); "
              "ours + w * signal, within-model macro")
        for name, sig in part["signals"].items():
            a, q = sig["all"], sig["none_of_ours_triggered"]
            added = "  ".join(f"{w}: {v}" for w, v in sig["added_to_ours"].items())
            print(f"     {name:24s} {a['hallucinated']} / {a['faithful']} | {q['hallucinated']} / {q['faithful']}   {added}")
        for model, listed in part["seed_ranks_higher"].items():
            for item in listed:
                print(f"     seed ranks higher ({model}): {item['id']} {item['task']} rank ours {item['ours']} seed "
                      f"{item['seed']}; seed {item['seed_signals']} {item['seed_contradiction'][:70]!r}; "
                      f"ours {item['our_triggered']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=Path, required=True, help="folder holding the seed's hallucination_detector.py")
    parser.add_argument("--seed-spacy", action="store_true", help="the seed pointed at our spaCy weights")
    parser.add_argument("--dump", type=Path, required=True, help="bench/trust.py --dump output (our held-out verdicts)")
    parser.add_argument("--label", default="current", help="key under which this run is stored")
    add_data_option(parser)
    args = parser.parse_args()
    if not (args.seed / "hallucination_detector.py").exists():
        raise SystemExit(f"{args.seed}/hallucination_detector.py not found")
    ours, triggered = our_scores(args.dump)
    rows = [r for name in FILES for r in split_rows(read_rows(name))[0]]
    missing = [r["id"] for r in rows if r["id"] not in ours]
    if missing:
        raise SystemExit(f"{len(missing)} development rows have no held-out verdict in {args.dump} (e.g. {missing[0]})")
    seed = judge_with_seed(rows, args.seed, args.seed_spacy)
    run = {"machine": machine(), "ner": "spacy" if args.seed_spacy else "regex",
           "scopes": compare(rows, ours, seed, triggered)}
    path = store_run("seed_trust", args.label, run)
    report(run)
    print(f"wrote {path} [{args.label}]")


if __name__ == "__main__":
    main()
