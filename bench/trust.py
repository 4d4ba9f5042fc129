"""Trust figures (issue 15, "Measure"): what users get from `stream-guard check` as shipped, on development rows,
in sample and grouped cross-validated.

    .venv/bin/python bench/trust.py [--label NAME] [--seeds 7 11 13] [--folds 5] [--penalties 1 3 10 30]
    .venv/bin/python bench/trust.py --dump /tmp/oof.jsonl      # also write every held-out verdict, to read misses
    .venv/bin/python bench/trust.py --locked --label locked   # the lead, once, at the end of a round

Everything is judged by the installed `stream-guard check` command in a subprocess (spaCy NER, default settings
unless a fold's model and threshold are given), reading its JSON verdicts. Rows are the development rows of
../shared/data (`_data.split_rows`): the locked slice is never judged, printed or stored, except with `--locked`.

Figures, per task type (QA, Summary, Data2txt) and overall, on ragtruth_dev + ragtruth_d2t_dev:

- faithful kept: label 0 routed accept with the original answer delivered;
- hallucinated caught: label 1 not delivered unchanged;
- caught at 90% kept: how well the score ranks, whatever threshold ships: label 1 scoring at or above the
  threshold below which 90% of the faithful answers of the same column score (each task its own; "all" one
  threshold for the pooled rows; in cross-validation over the pooled out-of-fold scores). At the shipped
  threshold it equals "caught" whenever every unflagged answer is delivered unchanged;
- changed readable: changed answers passing the project's readability test (heal/readability.py prose_problems:
  prose, no dump the original did not have); "strict" is the whole test every repair must pass (repair_problems:
  also first person or quotes spliced in, stacked notes, crawl artefacts, broken lists) on repairs;
- flags explained: flagged verdicts whose `triggered` names a deciding check (anything but drift) and whose
  every hallucinated statement carries evidence (a source sentence and value for a contradiction; what no
  source mentions otherwise); and "silent": routed away from accept, or changed, with `flagged: false`;
- ROC AUC of `hallucination_score`, overall, per task and within each generating model (`meta.model`; per model
  and macro-averaged), since a product runs one model;
- placement upper bound (cross-validation only): the most caught with kept >= 0.90 when the held-out answers'
  fold thresholds are shifted (in logit) by one shift for every task, or by one per task with every task keeping
  >= 0.85; chosen on the held-out scores themselves, so optimistic: what placing the operating point per task type
  could reach at best;
- with --penalties: the score model's L2 penalty swept (each refitted per fold as calibrate does, and one chosen
  inside each training fold by an inner grouped CV), by the shortcut over the never-flagging run, no further judging;
- CPU: user + system seconds of the `check` child per event, and the same minus start-up (a one-event run, times
  the number of judge processes the run used).

Uncertainty (bench/_uncertainty.py): every share of answers (kept, caught, readable, strict, flags explained) is
printed and stored with its count and the count it is a share of, and a Wilson 95% interval (`<share>_wilson95`;
for a mean over seeds, of the mean counts). Answers are treated as independent there, which they are not (six
models answer each source), so the Wilson interval is narrower than the truth. Caught at 90% kept and ROC AUC get
a grouped bootstrap 95% interval (`caught_at_90_kept_bootstrap95`, `auc_bootstrap95`: --draws resamples of whole
sources, seeded; in cross-validation the mean over seeds of each resample's figure). bench/trust_slices.py reads a
--dump to say how far a slice the size of the locked one falls from the cross-validated figures by chance.

summedits_dev and halueval_qa_dev are judged at the shipped defaults (kept, caught, AUC, caught at 90% kept in
sample).

Grouped cross-validation. Folds are `score_model.group_folds` over `_data.group_key` (a RAGTruth document or
question never on both sides), repeated for each `--seeds` value. On the training folds the score model is
refitted and the threshold chosen exactly as `stream-guard calibrate` does (calibration.Fitting.rule: score_model.fit,
then choose_threshold over the answers a never-flagging run delivers unchanged, both at the in-sample keep share
whose inner grouped CV over the training folds keeps 0.90 of held-out answers: Fitting.in_sample_keep), from one run of
`check` with flag_threshold = 1.0 over all development rows (what the model reads does not depend on the
threshold). The held-out fold's verdicts are then not derived but judged again: `check` runs on the held-out rows
with a config naming that fold's model file and threshold, so kept, caught, repairs, readability and flag reasons
are what a user of that configuration would get. Two consistency figures are reported: the largest difference
between a held-out verdict's score and the fold model's score of the same answer (should be ~0), and how often
the shortcut "kept = unflagged at the fold threshold and delivered unchanged by the never-flagging run" agrees
with the real routing. Each seed's figures are computed over all held-out folds pooled; the table shows the mean
over seeds (the JSON also has min and max).

--locked: the model and threshold are fitted on all development rows the same way, and the locked rows are
judged with them and as shipped. Only the lead runs this, once, at the end of a round.

Results are merged into bench/results/trust.json under --label. With --dump FILE, every development answer's held-out
verdict in each seed is also written (JSONL, `held_out_row`): what was missed or flagged, beside the labelled spans,
for reading the causes (never with --locked: the locked slice is not inspected).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Sequence

import msgspec
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import (  # noqa: E402
    Example,
    add_data_option,
    Fitting,
    choose_threshold,
    chunks_of,
    group_key,
    judge,
    machine,
    read_rows,
    prose_problems,
    repair_problems,
    roc_auc,
    score_model,
    scores_of,
    split_rows,
    store_run,
)
from _uncertainty import grouped_bootstrap, wilson  # noqa: E402

TARGETS = ("ragtruth_dev", "ragtruth_d2t_dev")
OTHERS = ("summedits_dev", "halueval_qa_dev")
# Short extractive answers whose labels the shipped model's short-answer offset is placed on (development rows,
# grouped by item): cross-validated with the targets, and reported cross-validated (--without-short leaves them out).
SHORT = ("halueval_qa_dev",)
TASKS = ("QA", "Summary", "Data2txt")
KEEP = 0.90
DECIDES_NOTHING = frozenset({"drift"})
# What an unsupported statement's evidence says when it names what no source mentions.
_ABSENCE = re.compile(r"nowhere|none of|no source|missing|says nothing|leaves \S+ empty|gives no|match(?:es)? no|"
                      r"has \S+ = |covers \d+ of", re.I)
# What a citation mismatch's evidence says about the chunks: which were retrieved, or which one supports the claim.
_CHUNKS = re.compile(r"retrieved chunks? (?:are|is)|none of the \d+ retrieved|chunk '[^']+' supports|no retrieved chunk|covers only", re.I)


# --- per-verdict outcomes ------------------------------------------------------------------------------------


def task_of(row: dict[str, Any]) -> str:
    return str(row.get("task_type") or "all").split("/")[0]


def model_of(row: dict[str, Any]) -> str:
    return str((row.get("meta") or {}).get("model") or "unknown")


def has_evidence(statement: dict[str, Any]) -> bool:
    evidence = str(statement.get("evidence") or "").strip()
    if statement.get("type") == "contradiction":
        return bool(statement.get("source")) and bool(statement.get("source_value") or evidence)
    if statement.get("type") == "citation_mismatch":
        # A citation's evidence is the marker it cites and what the retrieved chunks are (or which one supports it).
        return bool(evidence) and "cites" in evidence and bool(_CHUNKS.search(evidence))
    return bool(evidence) and bool(_ABSENCE.search(evidence))


def flag_reason(verdict: dict[str, Any]) -> str:
    """'explained', or why a flagged verdict is not: no deciding check, no statement, a statement without
    evidence."""
    if not set(verdict.get("triggered") or ()) - DECIDES_NOTHING:
        return "no_deciding_check"
    statements = verdict.get("hallucinated_statements") or []
    if not statements:
        return "no_statement"
    if not all(has_evidence(s) for s in statements):
        return "statement_without_evidence"
    return "explained"


def outcome(row: dict[str, Any], verdict: dict[str, Any]) -> Counter[str]:
    """The counts one judged answer adds (shares are taken over summed counts)."""
    c: Counter[str] = Counter()
    delivered = verdict.get("delivered_answer", "")
    unchanged = delivered == row["answer"]
    if row["label"]:
        c.update(hallucinated=1, caught=not unchanged)
    else:
        c.update(faithful=1, kept=unchanged and verdict.get("routing") == "accept")
    if not unchanged:
        texts, ids = chunks_of(row)
        readable = not prose_problems(delivered, row["answer"], texts, ids)
        repaired = verdict.get("routing") == "healed_accept"
        strict = repair_problems(delivered, row["answer"], texts, ids) if repaired else ()
        c.update(changed=1, readable=readable, strict_readable=readable and not strict)
        c.update(f"reading:{p}" for p in strict)
    if verdict.get("flagged"):
        reason = flag_reason(verdict)
        c.update({"flagged": 1, "explained": reason == "explained", f"unexplained:{reason}": reason != "explained"})
    elif verdict.get("routing") != "accept" or not unchanged:
        # Routed away or changed without a flag: explained only by the verdict's reason (verdict v3).
        code = (verdict.get("reason") or {}).get("code")
        c.update({"unflagged_routed": 1, f"unflagged:{code or 'no_reason'}": 1, "silent": code is None})
    return c


# Each share: (the count, the count it is a share of).
SHARES = {"faithful_kept": ("kept", "faithful"), "hallucinated_caught": ("caught", "hallucinated"),
          "changed_readable": ("readable", "changed"), "changed_readable_strict": ("strict_readable", "changed"),
          "flags_explained": ("explained", "flagged")}


def interval(successes: float, n: float) -> list[float] | None:
    """The Wilson 95% interval of a share, as stored (4 places)."""
    bounds = wilson(successes, n)
    return [round(b, 4) for b in bounds] if bounds else None


def shares(c: Counter[str]) -> dict[str, Any]:
    """Each share beside its count and Wilson 95% interval (`<share>_wilson95`); the counts it is taken over."""
    out: dict[str, Any] = {"faithful": c["faithful"], "hallucinated": c["hallucinated"], "changed": c["changed"],
                           "flagged": c["flagged"]}
    for name, (part, whole) in SHARES.items():
        out[part] = c[part]
        out[name] = round(c[part] / c[whole], 4) if c[whole] else None
        out[f"{name}_wilson95"] = interval(c[part], c[whole])
    out["unflagged_routed"], out["silent"] = c["unflagged_routed"], c["silent"]
    out["details"] = {k: v for k, v in sorted(c.items()) if ":" in k}
    return out


def figures(rows: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task type and overall: the user outcomes, and the share caught at 90% kept."""
    by: dict[str, Counter[str]] = defaultdict(Counter)
    for row, verdict in zip(rows, verdicts):
        c = outcome(row, verdict)
        by[task_of(row)] += c
        by["all"] += c
    out = {}
    for task, counts in sorted(by.items()):
        idx = [i for i, r in enumerate(rows) if task in ("all", task_of(r))]
        out[task] = {**shares(counts), "caught_at_90_kept": caught_at_keep(
            [int(rows[i]["label"]) for i in idx], [float(verdicts[i]["hallucination_score"]) for i in idx])}
    return out


def caught_at_keep(labels: Sequence[int], scores: Sequence[float]) -> float | None:
    """Share of label 1 at or above the threshold (choose_threshold's) keeping KEEP of label 0 below it."""
    if not 0 < sum(labels) < len(labels):
        return None
    examples = [Example(y, "", "", "", score_model.Observation({}), True) for y in labels]
    threshold = choose_threshold(scores, examples, KEEP)
    return round(sum(1 for y, s in zip(labels, scores) if y and s >= threshold) / sum(labels), 4)


def aucs(rows: Sequence[dict[str, Any]], scores: Sequence[float]) -> dict[str, Any]:
    """ROC AUC overall, per task, per generating model and macro-averaged over models (overall and within each
    model x task cell)."""
    labels = [int(r["label"]) for r in rows]

    def auc(idx: Sequence[int]) -> float | None:
        ys = [labels[i] for i in idx]
        return round(roc_auc([scores[i] for i in idx], ys), 4) if 0 < sum(ys) < len(ys) else None

    out: dict[str, Any] = {"all": auc(range(len(rows)))}
    for task in sorted({task_of(r) for r in rows}):
        out[task] = auc([i for i, r in enumerate(rows) if task_of(r) == task])
    models = sorted({model_of(r) for r in rows} - {"unknown"})
    if models:
        per = {m: auc([i for i, r in enumerate(rows) if model_of(r) == m]) for m in models}
        out["by_model"] = per
        known = [v for v in per.values() if v is not None]
        out["within_model_macro"] = round(statistics.mean(known), 4) if known else None
        cells = [auc([i for i, r in enumerate(rows) if model_of(r) == m and task_of(r) == t])
                 for m in models for t in TASKS]
        cells = [v for v in cells if v is not None]
        out["within_model_task_macro"] = round(statistics.mean(cells), 4) if cells else None
    return out


def ranking_intervals(rows: Sequence[dict[str, Any]], score_sets: Sequence[Sequence[float]],
                      draws: int) -> dict[str, dict[str, list[float] | None]]:
    """Grouped bootstrap 95% intervals (sources resampled, seeded) of caught at 90% kept and ROC AUC, per task
    and overall: the mean over `score_sets` (one per fold seed in cross-validation) of each resample's figure."""
    labels = [int(r["label"]) for r in rows]
    groups = [group_key(r) for r in rows]
    out: dict[str, dict[str, list[float] | None]] = {}
    for column in [*sorted({task_of(r) for r in rows}), "all"]:
        idx = [i for i, r in enumerate(rows) if column in ("all", task_of(r))]

        def mean_of(figure: Any) -> Any:
            def statistic(picked: list[int]) -> float | None:
                ys = [labels[idx[j]] for j in picked]
                if not 0 < sum(ys) < len(ys):
                    return None
                return statistics.mean(figure(ys, [scores[idx[j]] for j in picked]) for scores in score_sets)
            bounds = grouped_bootstrap([groups[i] for i in idx], statistic, draws=draws, seed=len(idx))
            return [round(b, 4) for b in bounds] if bounds else None

        out[column] = {"caught_at_90_kept": mean_of(caught_at_keep),
                       "auc": mean_of(lambda ys, scores: roc_auc(scores, ys))}
    return out


def with_intervals(block: dict[str, Any], rows: Sequence[dict[str, Any]], score_sets: Sequence[Sequence[float]],
                   draws: int) -> dict[str, Any]:
    """A block of figures with the bootstrap intervals beside caught at 90% kept (in its outcomes) and AUC
    (`auc_bootstrap95`)."""
    found = ranking_intervals(rows, score_sets, draws) if draws else {}
    outcomes = {c: {**o, "caught_at_90_kept_bootstrap95": found.get(c, {}).get("caught_at_90_kept")}
                for c, o in block["outcomes"].items()}
    return {**block, "outcomes": outcomes, "auc_bootstrap95": {c: f["auc"] for c, f in found.items()}}


def held_out_row(seed: int, row: dict[str, Any], verdict: dict[str, Any], threshold: float) -> dict[str, Any]:
    """One answer's held-out verdict as --dump writes it: its outcome, score and fold threshold, what the verdict
    names, and the labelled spans (RAGTruth's `meta.span_meta` texts and notes) to read the misses against."""
    c = outcome(row, verdict)
    spans = [{"text": m.get("text"), "note": m.get("note")} for m in (row.get("meta") or {}).get("span_meta") or ()
             if isinstance(m, dict)]
    return {"seed": seed, "id": row.get("id"), "task": task_of(row), "model": model_of(row), "label": int(row["label"]),
            "kept": bool(c["kept"]), "caught": bool(c["caught"]), "score": verdict.get("hallucination_score"),
            "threshold": threshold, "triggered": verdict.get("triggered") or [],
            "statements": [{k: s.get(k) for k in ("check", "kind", "statement", "evidence")}
                           for s in verdict.get("hallucinated_statements") or ()],
            "spans": spans}


# --- thresholds and folds ------------------------------------------------------------------------------------


def examples_of(rows: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]]) -> list[Example]:
    """What calibrate reads from a never-flagging run: the model's inputs, and whether the answer is delivered
    unchanged when not flagged."""
    return [Example(int(r["label"]), group_key(r), str(r.get("source")), task_of(r),
                    score_model.observation_from_verdict(v),
                    v.get("routing") == "accept" and v.get("delivered_answer") == r["answer"])
            for r, v in zip(rows, verdicts)]


def fitting(l2: float | None = None) -> Fitting:
    """calibrate's refit (choose_model with refit): the shipped model's signal probabilities, default l2 unless
    given."""
    signals = {**score_model.DEFAULT_SIGNALS, **score_model.DEFAULT_MODEL.signals}
    return Fitting(KEEP, False, signals) if l2 is None else Fitting(KEEP, False, signals, l2=l2)


@dataclasses.dataclass(frozen=True)
class Rule:
    model: Any  # score_model.ScoreModel, threshold set
    threshold: float


def fit_rule(train: Sequence[Example]) -> Rule:
    model, threshold = fitting().rule(train)
    return Rule(msgspec.structs.replace(model, threshold=threshold), threshold)


def judge_with(rule: Rule, rows: Sequence[dict[str, Any]], workdir: Path, name: str) -> list[dict[str, Any]]:
    """Verdicts of `check` run with the rule's model and threshold."""
    model_path = workdir / f"{name}.score_model.json"
    score_model.save_model(rule.model, str(model_path))
    config = workdir / f"{name}.toml"
    config.write_text(f"[detector]\nflag_threshold = {rule.threshold!r}\n"
                      f"score_model_path = {orjson.dumps(str(model_path)).decode()}\n", encoding="utf-8")
    return judge(rows, workdir, name, config=config)[0]


def never_flag(workdir: Path) -> Path:
    config = workdir / "never_flag.toml"
    config.write_text("[detector]\nflag_threshold = 1.0\n", encoding="utf-8")
    return config


def held_out(rule: Rule, rows: Sequence[dict[str, Any]], examples: Sequence[Example], workdir: Path,
             name: str) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Judge held-out rows with a rule; the verdicts and the two consistency counts."""
    verdicts = judge_with(rule, rows, workdir, name)
    expected = scores_of(examples, rule.model, False)
    gap = max((abs(float(v["hallucination_score"]) - s) for v, s in zip(verdicts, expected)), default=0.0)
    agree = sum((s < rule.threshold and e.keepable) == (v["routing"] == "accept" and v["delivered_answer"] == r["answer"])
                for r, v, e, s in zip(rows, verdicts, examples, expected))
    return verdicts, {"score_gap": gap, "shortcut_agrees": agree}


def shortcut_cv(examples: Sequence[Example], seed: int, folds: int,
                choose: Any) -> tuple[list[float], list[bool]]:
    """Out-of-fold scores and "kept" (unflagged and delivered unchanged by the never-flagging run) for a rule chosen
    per training fold by `choose(train) -> (model, threshold)`, with no further judging: the shortcut that
    cross_validate's consistency figure checks against the real routing."""
    fold = score_model.group_folds([e.group for e in examples], folds, seed)
    scores, kept = [0.0] * len(examples), [False] * len(examples)
    for k in range(folds):
        model, threshold = choose([e for e, f in zip(examples, fold) if f != k])
        held = [i for i, f in enumerate(fold) if f == k]
        for i, s in zip(held, scores_of([examples[i] for i in held], model, False)):
            scores[i], kept[i] = s, s < threshold and examples[i].keepable
    return scores, kept


def penalty_sweep(examples: Sequence[Example], targets: int, seeds: Sequence[int], folds: int,
                  penalties: Sequence[float]) -> dict[str, Any]:
    """For each L2 penalty of the refit, and for the penalty chosen inside each training fold by an inner grouped
    CV (the one whose out-of-fold scores catch most at 90% kept, "nested"): kept, caught and caught at 90% kept on
    the target rows and kept and caught on the short-answer rows, mean over seeds, by the shortcut."""
    def figures_for(choose: Any) -> dict[str, float]:
        per_seed = []
        for seed in seeds:
            scores, kept = shortcut_cv(examples, seed, folds, choose)
            labels = [e.label for e in examples]
            def share(idx: Sequence[int], label: int) -> float:
                picked = [i for i in idx if labels[i] == label]
                hits = sum(kept[i] == (label == 0) for i in picked)
                return hits / len(picked) if picked else float("nan")
            mine, theirs = range(targets), range(targets, len(examples))
            per_seed.append({"kept": share(mine, 0), "caught": share(mine, 1),
                             "caught_at_90_kept": caught_at_keep(labels[:targets], scores[:targets]) or 0.0,
                             "short_kept": share(theirs, 0), "short_caught": share(theirs, 1)})
        return {k: round(statistics.mean(p[k] for p in per_seed), 4) for k in per_seed[0]}

    def inner_best(train: Sequence[Example]) -> tuple[Any, float]:
        long = [i for i, e in enumerate(train) if e.observation.kind != "short"]
        def ranking(l2: float) -> float:
            scores, _ = shortcut_cv(train, 101, folds, fitting(l2).rule)
            return caught_at_keep([train[i].label for i in long], [scores[i] for i in long]) or 0.0
        return fitting(max(penalties, key=ranking)).rule(train)

    out = {str(l2): figures_for(fitting(l2).rule) for l2 in penalties}
    out["nested"] = figures_for(inner_best)
    return out


def cross_validate(rows: list[dict[str, Any]], workdir: Path, seeds: Sequence[int], folds: int,
                   short: Sequence[dict[str, Any]] = (), penalties: Sequence[float] = (),
                   dump: list[dict[str, Any]] | None = None, draws: int = 0) -> dict[str, Any]:
    """Grouped CV over the target rows and, when given, the short-answer rows the shipped model is also fitted on
    (their figures reported apart, under "short"). Each target row's held-out verdict is appended to `dump` when
    given (`held_out_row`). The summaries carry `draws`-resample bootstrap intervals of the seed-mean caught at
    90% kept and AUC."""
    everything = list(rows) + list(short)
    base, _ = judge(everything, workdir, "never_flag", config=never_flag(workdir))
    examples = examples_of(everything, base)
    groups = [e.group for e in examples]
    runs, score_sets, short_sets = [], [], []
    for seed in seeds:
        fold = score_model.group_folds(groups, folds, seed)
        verdicts: list[dict[str, Any]] = [{}] * len(everything)
        thresholds = [0.0] * len(everything)
        gap, agree = 0.0, 0
        for k in range(folds):
            held = [i for i, f in enumerate(fold) if f == k]
            rule = fit_rule([e for e, f in zip(examples, fold) if f != k])
            judged, consistency = held_out(rule, [everything[i] for i in held], [examples[i] for i in held], workdir,
                                           f"seed{seed}_fold{k}")
            gap, agree = max(gap, consistency["score_gap"]), agree + int(consistency["shortcut_agrees"])
            for i, v in zip(held, judged):
                verdicts[i], thresholds[i] = v, rule.threshold
        mine = verdicts[:len(rows)]
        score_sets.append([float(v["hallucination_score"]) for v in mine])
        short_sets.append([float(v["hallucination_score"]) for v in verdicts[len(rows):]])
        if dump is not None:
            dump.extend(held_out_row(seed, r, v, t) for r, v, t in zip(rows, mine, thresholds))
        run = {"seed": seed, "outcomes": figures(rows, mine),
               "placement": placement(rows, [float(v["hallucination_score"]) for v in mine],
                                      [thresholds[i] for i in range(len(rows))],
                                      [e.keepable for e in examples[:len(rows)]]),
               "auc": aucs(rows, [float(v["hallucination_score"]) for v in mine]),
               "score_gap": round(gap, 5), "shortcut_agreement": round(agree / len(everything), 4)}
        if short:
            theirs = verdicts[len(rows):]
            run["short"] = {"outcomes": figures(short, theirs),
                            "auc": aucs(short, [float(v["hallucination_score"]) for v in theirs])}
        runs.append(run)
    out = {"seeds": list(seeds), "folds": folds, "runs": runs,
           "summary": with_intervals(summarize(runs), rows, score_sets, draws)}
    if penalties:
        out["penalties"] = penalty_sweep(examples, len(rows), seeds, folds, penalties)
    if short:
        out["short_summary"] = with_intervals(summarize([r["short"] for r in runs]), short, short_sets, draws)
    return out


# Shifts of the flag threshold, in logit, that `placement` tries per task type.
_SHIFTS = [round(0.1 * k, 1) for k in range(-15, 16)]
_FLOOR = 0.85


def placement(rows: Sequence[dict[str, Any]], scores: Sequence[float], thresholds: Sequence[float],
              keepable: Sequence[bool]) -> dict[str, Any]:
    """What placing the operating point per task type could reach on these out-of-fold scores (an upper bound:
    the shifts are chosen on the rows they are judged on). Each held-out answer is flagged when the logit of its
    score is at least its fold threshold's plus a shift: one shift for every task ("uniform"), or one per task with
    every task keeping at least _FLOOR ("per_task"); kept = unflagged and delivered unchanged by the never-flagging
    run (the shortcut, which agrees with the real routing). Reports the most caught with overall kept >= KEEP."""
    def logit(p: float) -> float:
        p = min(max(p, 1e-9), 1 - 1e-9)
        return math.log(p / (1 - p))

    curves: dict[str, list[tuple[int, int, int, int]]] = {}
    for task in TASKS:
        idx = [i for i, r in enumerate(rows) if task_of(r) == task]
        if not idx:
            continue
        curve = []
        for d in _SHIFTS:
            ok = [logit(scores[i]) < logit(thresholds[i]) + d and keepable[i] for i in idx]
            curve.append((sum(o for o, i in zip(ok, idx) if not rows[i]["label"]),
                          sum(not o for o, i in zip(ok, idx) if rows[i]["label"]),
                          sum(1 for i in idx if not rows[i]["label"]), sum(1 for i in idx if rows[i]["label"])))
        curves[task] = curve
    tasks = list(curves)
    faithful = sum(curves[t][0][2] for t in tasks)
    hallucinated = sum(curves[t][0][3] for t in tasks)

    def figures_of(choice: Sequence[int]) -> dict[str, Any]:
        points = [curves[t][j] for t, j in zip(tasks, choice)]
        return {"shifts": {t: _SHIFTS[j] for t, j in zip(tasks, choice)},
                "kept": round(sum(p[0] for p in points) / faithful, 4),
                "caught": round(sum(p[1] for p in points) / hallucinated, 4),
                "by_task": {t: {"kept": round(p[0] / p[2], 4), "caught": round(p[1] / p[3], 4)}
                            for t, p in zip(tasks, points)}}

    def best(choices: Any, floor: float) -> dict[str, Any] | None:
        found = None
        for choice in choices:
            points = [curves[t][j] for t, j in zip(tasks, choice)]
            if sum(p[0] for p in points) < KEEP * faithful or any(p[0] < floor * p[2] for p in points):
                continue
            caught = sum(p[1] for p in points)
            if found is None or caught > found[0]:
                found = (caught, choice)
        return figures_of(found[1]) if found else None

    every = range(len(_SHIFTS))
    return {"uniform": best(([j] * len(tasks) for j in every), 0.0),
            "per_task": best(itertools.product(every, repeat=len(tasks)), _FLOOR)}


def summarize(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean, min and max over seeds of every numeric figure."""
    def walk(values: Sequence[Any]) -> Any:
        first = values[0]
        if isinstance(first, dict):
            return {k: walk([v.get(k) for v in values]) for k in first if k != "details"}
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not numbers:
            return None
        return {"mean": round(statistics.mean(numbers), 4), "min": min(numbers), "max": max(numbers)}

    outcomes = walk([r["outcomes"] for r in runs])
    for column in outcomes.values():
        for name, (part, whole) in SHARES.items():
            # The interval of the mean over seeds: the mean count over the mean count it is a share of.
            k, n = column[part], column[whole]
            column[f"{name}_wilson95"] = interval(k["mean"], n["mean"]) if k and n else None
    return {"outcomes": outcomes, "auc": walk([r["auc"] for r in runs])}


# --- the shipped build ---------------------------------------------------------------------------------------


def as_shipped(name: str, rows: list[dict[str, Any]], workdir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    verdicts, cost = judge(rows, workdir, name)
    _, startup = judge(rows[:1], workdir, f"{name}_one")
    n, startup_cpu = len(rows), startup["cpu_s"] * cost["processes"]
    cpu = {"events": n, "processes": cost["processes"], "ner": cost["ner"], "cpu_s": round(cost["cpu_s"], 3),
           "wall_s": round(cost["wall_s"], 3), "cpu_ms_per_event": round(cost["cpu_s"] * 1000 / n, 3),
           "startup_cpu_s": round(startup["cpu_s"], 3),
           "cpu_ms_per_event_minus_startup": round((cost["cpu_s"] - startup_cpu) * 1000 / n, 3)}
    return verdicts, cpu


def shipped_figures(rows: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]], draws: int) -> dict[str, Any]:
    """Figures of the shipped build on these rows (its weights were fitted on all of ragtruth_dev and
    ragtruth_d2t_dev, so for those files they are in sample), with their intervals."""
    scores = [float(v["hallucination_score"]) for v in verdicts]
    return with_intervals({"outcomes": figures(rows, verdicts), "auc": aucs(rows, scores)}, rows, [scores], draws)


def development_rows(name: str, locked: bool) -> list[dict[str, Any]]:
    dev, held = split_rows(read_rows(name))
    return held if locked else dev


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="current", help="key under which this run is stored")
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 11, 13], help="fold seeds (default 7 11 13)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--locked", action="store_true", help="judge the locked slice (the lead, once, at the end)")
    parser.add_argument("--without-short", action="store_true",
                        help="leave the short-answer rows (halueval) out of the fitting")
    parser.add_argument("--penalties", type=float, nargs="*", default=[],
                        help="also sweep these L2 penalties of the refit (and one chosen per fold by an inner CV), "
                             "by the shortcut over the never-flagging run")
    parser.add_argument("--dump", type=Path, help="also write every development answer's held-out verdict per seed "
                        "to this JSONL file (not with --locked)")
    parser.add_argument("--draws", type=int, default=1000, help="grouped bootstrap resamples for the intervals "
                        "of caught at 90%% kept and AUC (default 1000; 0: none)")
    add_data_option(parser)
    args = parser.parse_args()
    if args.dump and args.locked:
        parser.error("--dump writes held-out development verdicts; the locked slice is not inspected")
    dumped: list[dict[str, Any]] | None = [] if args.dump else None
    started = time.perf_counter()
    run: dict[str, Any] = {"rows": "locked" if args.locked else "development", "machine": machine(),
                           "datasets": {}}
    with tempfile.TemporaryDirectory(prefix="trust-") as tmp:
        workdir = Path(tmp)
        targets: list[dict[str, Any]] = []
        target_verdicts: list[dict[str, Any]] = []
        for name in TARGETS + OTHERS:
            rows = development_rows(name, args.locked)
            verdicts, cpu = as_shipped(name, rows, workdir)
            run["datasets"][name] = {"cpu": cpu, "shipped": shipped_figures(rows, verdicts, args.draws)}
            if name in TARGETS:
                targets += rows
                target_verdicts += verdicts
        run["targets"] = {"shipped": shipped_figures(targets, target_verdicts, args.draws)}
        short_names = () if args.without_short else SHORT
        if args.locked:
            dev = [r for name in TARGETS + short_names for r in development_rows(name, False)]
            base, _ = judge(dev, workdir, "never_flag", config=never_flag(workdir))
            rule = fit_rule(examples_of(dev, base))
            verdicts = judge_with(rule, targets, workdir, "locked_refit")
            run["targets"]["fitted_on_development"] = {**shipped_figures(targets, verdicts, args.draws),
                                                       "threshold": rule.threshold}
        else:
            short = [r for name in short_names for r in development_rows(name, False)]
            run["targets"]["cv"] = cross_validate(targets, workdir, args.seeds, args.folds, short, args.penalties,
                                                  dumped, args.draws)
    run["seconds"] = round(time.perf_counter() - started, 1)
    path = store_run("trust", args.label, run)
    if args.dump and dumped is not None:
        args.dump.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in dumped))
        print(f"wrote {len(dumped)} held-out verdicts to {args.dump}")
    report(run)
    print(f"wrote {path} [{args.label}] in {run['seconds']} s")


# --- the table -----------------------------------------------------------------------------------------------

_ROWS = (("kept", "faithful_kept"), ("caught", "hallucinated_caught"), ("caught@90", "caught_at_90_kept"),
         ("readable", "changed_readable"), ("strict", "changed_readable_strict"), ("explained", "flags_explained"))


def _f(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("mean")
    return "    -" if value is None else f"{value:5.3f}" if isinstance(value, float) else f"{value:5d}"


def _count(value: Any) -> str:
    """A count, or a mean count over seeds to one place."""
    value = value.get("mean") if isinstance(value, dict) else value
    return f"{value:g}" if isinstance(value, int) or float(value).is_integer() else f"{value:.1f}"


def _cell(outcomes: dict[str, Any], key: str) -> str:
    """A share with its count (part/whole) and 95% interval: Wilson for shares of answers, the grouped bootstrap
    for caught at 90% kept."""
    value = outcomes.get(key)
    if isinstance(value, dict):
        value = value.get("mean")
    if value is None:
        return "-"
    if key in SHARES:
        part, whole = SHARES[key]
        counts, bounds = f"{_count(outcomes[part])}/{_count(outcomes[whole])}", outcomes.get(f"{key}_wilson95")
    else:  # caught at 90% kept: a share of the hallucinated answers
        whole = outcomes["hallucinated"]
        whole = whole.get("mean") if isinstance(whole, dict) else whole
        counts, bounds = f"{_count(round(value * whole, 1))}/{_count(whole)}", outcomes.get(f"{key}_bootstrap95")
    return f"{value:.3f} {counts} {_bounds(bounds)}"


def _bounds(bounds: Sequence[float] | None) -> str:
    return f"{bounds[0]:.2f}-{bounds[1]:.2f}" if bounds else ""


def report(run: dict[str, Any]) -> None:
    t = run["targets"]
    columns = [c for c in (*TASKS, "all") if c in t["shipped"]["outcomes"]]
    blocks = [("shipped (in sample)", t["shipped"])]
    if "cv" in t:
        blocks.append((f"grouped CV, mean of {len(t['cv']['seeds'])} seeds", t["cv"]["summary"]))
    if "fitted_on_development" in t:
        blocks.append(("refit on dev, judged here", t["fitted_on_development"]))
    print(f"== ragtruth_dev + ragtruth_d2t_dev ({run['rows']} rows)")
    print("   share (part/whole, 95% interval: Wilson; caught@90 and AUC: grouped bootstrap of sources)")
    print(f"   {'':<12}" + "".join(f"{c:>28}" for c in columns))
    for title, block in blocks:
        print(f"   -- {title}")
        for label, key in _ROWS:
            print(f"   {label:<12}" + "".join(f"{_cell(block['outcomes'][c], key):>28}" for c in columns))
        print(f"   {'ROC AUC':<12}" + "".join(
            f"{_f(block['auc'].get(c)) + ' ' + _bounds(block.get('auc_bootstrap95', {}).get(c)):>28}" for c in columns))
        print(f"   {'AUC model×task':<12}{_f(block['auc'].get('within_model_task_macro')):>8} macro over (model, task) cells")
        print(f"   {'AUC in model':<12}{_f(block['auc'].get('within_model_macro')):>10} macro; "
              + ", ".join(f"{m.split('-instruct')[0].replace('-chat', '')} {_f(v).strip()}"
                          for m, v in block["auc"].get("by_model", {}).items()))
        silent = block["outcomes"]["all"].get("silent")
        routed = block["outcomes"]["all"].get("unflagged_routed")
        print(f"   {'flagged':<12}{_f(block['outcomes']['all']['flagged']):>10}   unflagged but not accepted unchanged "
              f"{_f(routed).strip()}, of which without a reason (silent) {_f(silent).strip()}")
    if "cv" in t:
        print("   consistency per seed: max score gap "
              + ", ".join(str(r["score_gap"]) for r in t["cv"]["runs"]) + "; shortcut agreement "
              + ", ".join(str(r["shortcut_agreement"]) for r in t["cv"]["runs"]))
    if "cv" in t:
        for name in ("uniform", "per_task"):
            got = [r["placement"][name] for r in t["cv"]["runs"] if r["placement"][name]]
            if got:
                print(f"   placement upper bound, {name:<8} (kept >= {KEEP}{', every task >= ' + str(_FLOOR) if name == 'per_task' else ''}):"
                      f" kept {statistics.mean(g['kept'] for g in got):.3f}, caught {statistics.mean(g['caught'] for g in got):.3f}"
                      f" (seeds: " + "; ".join(f"{g['kept']:.3f}/{g['caught']:.3f} at " + " ".join(
                          f"{k[:3]}{v:+.1f}" for k, v in g["shifts"].items()) for g in got) + ")")
    for name, f in t.get("cv", {}).get("penalties", {}).items():
        print(f"   L2 penalty {name:<7} kept {f['kept']:.3f}, caught {f['caught']:.3f}, caught@90 "
              f"{f['caught_at_90_kept']:.3f}; short answers kept {f['short_kept']:.3f}, caught {f['short_caught']:.3f}")
    if "short_summary" in t.get("cv", {}):
        o, a = t["cv"]["short_summary"]["outcomes"]["all"], t["cv"]["short_summary"]["auc"]
        o, a = t["cv"]["short_summary"], t["cv"]["short_summary"]["outcomes"]["all"]
        print(f"   short answers ({', '.join(SHORT)}), grouped CV: kept {_cell(a, 'faithful_kept')}, caught "
              f"{_cell(a, 'hallucinated_caught')}, caught@90 {_cell(a, 'caught_at_90_kept')}, AUC "
              f"{_f(o['auc'].get('all')).strip()} {_bounds(o.get('auc_bootstrap95', {}).get('all'))}, explained "
              f"{_cell(a, 'flags_explained')}, strict readable {_cell(a, 'changed_readable_strict')}")
    print(f"== shipped defaults{'':<11}{'rows':>5}{'kept':>24}{'caught':>24}{'c@90':>24}{'AUC':>16}{'ms/ev':>8}"
          f"{'-start':>8}")
    for name, d in run["datasets"].items():
        o, cpu = d["shipped"]["outcomes"]["all"], d["cpu"]
        auc = f"{_f(d['shipped']['auc']['all'])} {_bounds(d['shipped'].get('auc_bootstrap95', {}).get('all'))}"
        print(f"   {name:<26}{o['faithful'] + o['hallucinated']:>5}{_cell(o, 'faithful_kept'):>24}"
              f"{_cell(o, 'hallucinated_caught'):>24}{_cell(o, 'caught_at_90_kept'):>24}{auc:>16}"
              f"{cpu['cpu_ms_per_event']:>8.2f}{cpu['cpu_ms_per_event_minus_startup']:>8.2f}")

if __name__ == "__main__":
    main()
