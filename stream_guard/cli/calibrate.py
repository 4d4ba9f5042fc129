"""`stream-guard calibrate`: choose flag_threshold (and refit the score model, where labels are enough) from
labelled answers, print what was measured, write the [detector] TOML and its model (the method:
stream_guard/ops/calibration.py).

    stream-guard calibrate --labels ../shared/data/ragtruth_dev.jsonl --keep 0.90 --out calibrated.toml
    stream-guard calibrate --events answers.jsonl --labels graded.jsonl --keep 0.95 --out calibrated.toml
    stream-guard calibrate --labels ../shared/data/ragtruth_dev.jsonl ../shared/data/ragtruth_d2t_dev.jsonl \\
        --ner spacy --write-default          # the package's own model and flag_threshold (maintainers)
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import msgspec

from stream_guard.config.detector import PRESETS, DetectorConfig
from stream_guard.config.load import build_config
from stream_guard.engine.pool import parse_jobs
from stream_guard.ops.calibration import (FOLDS, KEEP_STEP, KEEP_TARGETS, MAX_KEEP_RAISE, MIN_PER_CLASS,
                                          MIN_PER_CLASS_TO_REFIT, VERIFY_ROUNDS, CalibrationError, Example, Labelled,
                                          choose_model, choose_threshold,
                                          config_toml, decisions, default_model_path, keep_counted, labelled_answers,
                                          model_file_for, observe, scores_of, verified_threshold)
from stream_guard.ops.evaluation import LabelledDecision, decision_metrics
from stream_guard.scoring.hallucination import model_for
from stream_guard.scoring.score_model import DEFAULT_L2
from stream_guard.config.score_model import ScoreModel, save_model


def _pct(value: float | None) -> str:
    return "  n/a" if value is None else f"{value * 100:5.1f}"


def operating_points(scores: Sequence[float], examples: Sequence[Example]) -> list[str]:
    """Per keep target, its threshold and what it does to the answers it is placed on (choose_threshold leaves
    short extractive answers out when there are others: counting them here showed "keep 0.90 -> kept 79%")."""
    counted = keep_counted(examples)
    placed_scores, placed = [scores[i] for i in counted], [examples[i] for i in counted]
    rows = [" keep target  threshold  faithful kept  hallucinated caught  precision  recall"]
    for target in KEEP_TARGETS:
        threshold = choose_threshold(scores, examples, target)
        m = decision_metrics(decisions(placed_scores, placed, threshold))
        rows.append(f"     {target:.2f}      {threshold:7.4f}      {_pct(m['faithful_kept'])}%"
                    f"            {_pct(m['hallucinated_caught'])}%       {_pct(m['precision'])}%  "
                    f"{_pct(m['recall'])}%")
    return rows


def fitted_on(rows: Sequence[Labelled], which: str, backend: str, keep: float, in_sample: float) -> str:
    """What a fitted model records about its labels: each file with the number of its answers used, which rows of
    the files these are when the caller says (a file name alone would claim the whole file), and how."""
    counts = Counter(row.source for row in rows)
    files = " + ".join(f"{source} ({n} answer{'' if n == 1 else 's'})" for source, n in counts.items())
    return (f"{files}{': ' + which if which else ''}; {len(rows)} labelled answers, NER {backend}, keep {keep:.2f} "
            f"of unseen answers (placed at {in_sample:.4f} of these), by stream-guard calibrate")


def _summary(name: str, m: Mapping[str, Any]) -> str:
    auc = f"{m['roc_auc']:.3f}" if m["roc_auc"] is not None else "n/a"
    return (f"  {name:<20} n {m['n']:>5}  ROC AUC {auc:<5}  F1 {_pct(m['f1'])}%  "
            f"faithful kept {_pct(m['faithful_kept'])}%  hallucinated caught {_pct(m['hallucinated_caught'])}%")


def _breakdown(examples: Sequence[Example], made: Sequence[LabelledDecision]) -> list[str]:
    """Overall, per source file and per task type."""
    lines = [_summary("all", decision_metrics(made))]
    for attribute in ("source", "task_type"):
        values = sorted({getattr(e, attribute) for e in examples})
        if len(values) > 1:
            lines += [_summary(value, decision_metrics([d for e, d in zip(examples, made)
                                                        if getattr(e, attribute) == value])) for value in values]
    return lines


def _weights(chosen: ScoreModel, current: ScoreModel) -> list[str]:
    rows = [(f"evidence {name}", w, dict(zip(current.evidence, current.weights)).get(name, 0.0))
            for name, w in zip(chosen.evidence, chosen.weights)]
    rows += [(f"offset {kind}", chosen.offsets[kind], current.offset(kind)) for kind in chosen.offsets]
    return [f"  {'':<32}{'chosen':>9}{'current':>9}"] + [f"  {name:<32}{a:+9.3f}{b:+9.3f}" for name, a, b in rows]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-guard calibrate",
        description="Choose flag_threshold (and refit the score model, where labels are enough) so that at least "
                    "--keep of the faithful labelled answers are delivered unchanged; writes a [detector] TOML "
                    "and the score model it was chosen for.")
    p.add_argument("--labels", nargs="+", required=True, metavar="PATH",
                   help="JSONL of events with `label` inside, or of labels (event_id, label) for --events")
    p.add_argument("--events", nargs="+", default=[], metavar="PATH", help="AnswerEvent JSONL labelled by --labels")
    p.add_argument("--keep", type=float, default=0.90,
                   help="share of unseen faithful answers to deliver unchanged, in (0, 1] (default 0.90): the "
                        "threshold is placed at the lowest share of the labelled faithful answers (from --keep up, in "
                        f"steps of {KEEP_STEP}, at most {MAX_KEEP_RAISE} above it) whose inner cross-validation by "
                        "group keeps --keep of held-out ones, since a threshold keeps about a point less of new "
                        "answers than of those it was placed on")
    p.add_argument("--out", help="TOML file to write; the score model goes beside it as <name>.score_model.json")
    p.add_argument("--write-default", action="store_true",
                   help="refit and write the package's shipped model (its threshold is the default flag_threshold); "
                        "for maintainers, on ../shared/data, with default settings")
    p.add_argument("--config", help="base configuration (TOML); its settings are carried into --out")
    p.add_argument("--preset", choices=sorted(PRESETS), help="base preset")
    p.add_argument("--ner", choices=("spacy", "regex", "auto"), help="entity recognizer (default auto)")
    p.add_argument("--rows", default="", metavar="TEXT",
                   help="which rows of the --labels files these are, recorded in the model's fitted_on beside each "
                        "file's count (e.g. \"development rows, locked slice excluded\")")
    p.add_argument("--fixed-model", action="store_true", help="choose the threshold only; keep the score model")
    p.add_argument("--l2", type=float, default=DEFAULT_L2, help=f"L2 penalty of a refit (default {DEFAULT_L2})")
    p.add_argument("--folds", type=int, default=FOLDS, help=f"cross-validation folds (default {FOLDS})")
    p.add_argument("--jobs", "-j", type=parse_jobs, default=None, help="judge processes (default one per core)")
    return p


def main(argv: Sequence[str]) -> int:
    return _main(parser().parse_args(list(argv)))


def _say(text: str = "") -> None:
    print(text, flush=True)


def _check_arguments(args: argparse.Namespace) -> None:
    if not 0.0 < args.keep <= 1.0:
        raise CalibrationError(f"--keep must be in (0, 1], got {args.keep}")
    if args.folds < 2:
        raise CalibrationError(f"--folds must be at least 2, got {args.folds}")
    if not args.out and not args.write_default:
        raise CalibrationError("say where to write: --out FILE.toml (or --write-default)")
    if args.write_default and (args.config or args.preset or args.fixed_model):
        raise CalibrationError("--write-default fits the shipped model for the default settings: it takes no "
                               "--config, --preset or --fixed-model")


def _check_counts(rows: Sequence[Labelled], folds: int) -> None:
    hallucinated = sum(row.label for row in rows)
    faithful = len(rows) - hallucinated
    if faithful < MIN_PER_CLASS or hallucinated < MIN_PER_CLASS:
        raise CalibrationError(
            f"too few labels to calibrate: {faithful} faithful and {hallucinated} hallucinated answers; at least "
            f"{MIN_PER_CLASS} of each are needed (and {MIN_PER_CLASS_TO_REFIT} of each to refit the score model)")
    groups = {row.group for row in rows}
    if len(groups) < folds:
        raise CalibrationError(f"{len(groups)} independent groups (source documents or questions) cannot fill "
                               f"{folds} cross-validation folds")


def _main(args: argparse.Namespace) -> int:
    _check_arguments(args)
    config = build_config(args.config, args.preset, args.ner, env=os.environ)
    rows = labelled_answers(args.labels, args.events)
    _check_counts(rows, args.folds)
    hallucinated = sum(row.label for row in rows)
    sources = list(dict.fromkeys(row.source for row in rows))
    _say(f"{len(rows)} labelled answers ({hallucinated} hallucinated, {len(rows) - hallucinated} faithful) in "
         f"{len({row.group for row in rows})} groups from {', '.join(sources)}")
    examples, backend = observe(config, rows, args.jobs)
    _say(f"judged with {backend} NER; {sum(e.keepable for e in examples if not e.label)} of "
         f"{len(rows) - hallucinated} faithful answers are delivered unchanged when not flagged")

    current = model_for(config.score_model_path)
    choice = choose_model(examples, current, args.keep, folds=args.folds, l2=args.l2,
                          refit="always" if args.write_default else "never" if args.fixed_model else "compare",
                          drift_counts=config.drift_decides, sources=sources)
    for line in choice.notes:
        _say(line)
    refitted = choice.fitting.model is None
    fitting = choice.fitting.in_sample(examples)
    _say(f"\nkeep >= {args.keep:.2f} of unseen faithful answers: placed at {fitting.keep:.4f} of the labelled ones "
         f"(the lowest share whose inner {FOLDS}-fold CV by group keeps {args.keep:.2f} of held-out ones)")
    model, _ = fitting.fit(examples, fitted_on=fitted_on(rows, args.rows, backend, args.keep, fitting.keep))
    scores = scores_of(examples, model, config.drift_decides)
    _say(f"\nCross-validated ({args.folds} folds by group; threshold{' and model' if refitted else ''} chosen on "
         f"the other folds), keep >= {args.keep:.2f}:")
    _say_lines(_breakdown(examples, choice.made))
    _say("\nOperating points of the chosen model's scores (in-sample, on the answers a threshold is placed on: "
         "short extractive answers, which have their own offset, left out when there are others):")
    _say_lines(operating_points(scores, examples))
    if refitted:
        _say("\nRefitted weights:")
        _say_lines(_weights(model, current))

    _say("\nVerifying through the full guard (healing and routing, as backtest runs it)...")
    threshold, verified = _verify(config, model, rows, args.jobs, scores, examples, fitting.keep)
    model = msgspec.structs.replace(model, threshold=threshold)
    _say(f"\nChosen: flag_threshold = {threshold}, score model "
         f"{'refitted' if refitted else 'kept (' + (current.fitted_on or 'current') + ')'}")
    _say("Full guard on the labelled answers the threshold is chosen for (in-sample; short extractive answers, which "
         "have their own offset, left out when there are others):")
    _say_lines([_summary(name, m) for name, m in [("all", verified["overall"]),
                                                  *sorted(verified["by_task_type"].items())]])
    kept = verified["overall"]["faithful_kept"] or 0.0
    if kept < fitting.keep:
        _say(f"warning: the full guard keeps {_pct(kept)}% of the faithful answers, short of {_pct(fitting.keep)}%: "
             + ("the rest route to fallback whatever the threshold" if threshold >= 1.0 else
                f"raising the threshold {VERIFY_ROUNDS} times did not get there"))

    if args.write_default:
        save_model(model, str(default_model_path()))
        _say(f"\nwritten the shipped model to {default_model_path()} (its threshold, {threshold}, is the default "
             f"flag_threshold)")
    if args.out:
        cv = decision_metrics(choice.made)
        in_sample = not refitted and any(s in current.fitted_sources() for s in sources)
        comments = [f"Written by `stream-guard calibrate` on {datetime.now(timezone.utc):%Y-%m-%d}: keep >= "
                    f"{args.keep:.2f} of faithful answers delivered unchanged.",
                    f"Labels: {', '.join(args.labels + args.events)} ({hallucinated} hallucinated, "
                    f"{len(rows) - hallucinated} faithful).",
                    f"Cross-validated by group: ROC AUC {cv['roc_auc']}, faithful kept {_pct(cv['faithful_kept'])}%, "
                    f"hallucinated caught {_pct(cv['hallucinated_caught'])}%"
                    + (" (the model's weights were fitted on these labels)." if in_sample else ".")]
        _write_config(args.out, config.with_overrides(flag_threshold=threshold), args.preset, model, comments)
    return 0


def _say_lines(lines: Sequence[str]) -> None:
    for line in lines:
        _say(line)


def _write_config(out: str, config: DetectorConfig, base_preset: str | None, model: ScoreModel,
                  comments: Sequence[str]) -> None:
    model_file = model_file_for(out)
    save_model(model, str(model_file))
    Path(out).write_text(config_toml(config, base_preset, model_file.name, comments), encoding="utf-8")
    build_config(out, None, None)  # what we wrote must load
    _say(f"\nwritten to {out} (score model: {model_file})")


def _verify(config: DetectorConfig, model: ScoreModel, rows: Sequence[Labelled], jobs: int | None,
            scores: Sequence[float], examples: Sequence[Example], keep: float) -> tuple[float, dict[str, Any]]:
    """verified_threshold with `model` in use: written to a scratch file, since judge processes load the
    model a config names."""
    with tempfile.TemporaryDirectory(prefix="stream-guard-calibrate-") as tmp:
        path = Path(tmp) / "model.json"
        save_model(model, str(path))
        with_model = config.with_overrides(score_model_path=str(path))
        return verified_threshold(with_model, rows, jobs, scores, examples, keep, _say)
