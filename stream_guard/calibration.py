"""Calibrate: choose flag_threshold (and, where labels are enough, the scoring weights) from labelled answers.

    stream-guard calibrate --labels ../shared/data/ragtruth_dev.jsonl --keep 0.90 --out calibrated.toml
    stream-guard calibrate --events answers.jsonl --labels graded.jsonl --keep 0.95 --out calibrated.toml

The goal is the one a platform team states: deliver at least `--keep` of the faithful answers unchanged, and
catch as many hallucinated ones as possible under that constraint. A faithful answer is delivered unchanged
when it is not flagged and its quality score routes it to accept (quality.py: at or above
fallback_threshold, for an unflagged answer); so the threshold is the lowest `flag_threshold` that keeps
the wanted share of the faithful answers, everything above it being caught.

Where both classes have MIN_PER_CLASS_FOR_WEIGHTS labels, the weights of the soft grounding evidence are
refitted too (L2 logistic regression over the scoring model's declared features), and kept only when they
rank better than the current ones out of sample. Every figure printed is cross-validated by group: rows of
one source document (RAGTruth's meta.source_id), else of one question, never sit on both sides of a fold.
Last, the chosen configuration is run for real (the full guard, healing and routing) on the labelled answers,
so the printed faithful-kept share is what `backtest` will report on the same data.

The part that knows the scoring model's shape is `Model` below (features, hard signals, how a score is
formed, which weights it writes); the rest only sees examples, scores and labels.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import orjson

from stream_guard.config import PRESETS, DetectorConfig, build_config, preset
from stream_guard.evaluation import LabelledDecision, decision_metrics, roc_auc
from stream_guard.events import EventError, parse_event
from stream_guard.inspection import Inspection
from stream_guard.labels import load_labels
from stream_guard.parallel import REPLAY_QUALITY_LATENCY_MS, parse_jobs
from stream_guard.quality import QualityScore
from stream_guard.scoring import GROUNDING_FEATURES, SignalWeights, grounding_features, hallucination_score, \
    signal_probabilities
from stream_guard.text import normalize_question

MIN_PER_CLASS = 20
MIN_PER_CLASS_FOR_WEIGHTS = 60  # about ten per fitted weight, per class
FOLDS = 5
KEEP_TARGETS = (0.80, 0.85, 0.90, 0.95, 0.98)


class CalibrationError(Exception):
    """What was asked cannot be calibrated (too few labels, unreadable input): exit 2 with this message."""


# --- the scoring model (the only part that knows scoring.py's shape) ---------------------------------------


class Model:
    """hallucination_score = noisy-OR(hard signals, logistic(bias + w . grounding features)).

    The hard signals keep their configured probabilities; `coef` = (bias, one weight per feature in
    GROUNDING_FEATURES order) is what calibration fits."""

    features = GROUNDING_FEATURES

    @staticmethod
    def parts(report: Any, weights: SignalWeights) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(hard signal probabilities, grounding features) of one report."""
        cbu = "confident_but_unfaithful" in report.triggered
        signals = signal_probabilities(report.checks, cbu, weights)
        signals.pop("weak_grounding", None)
        return tuple(signals.values()), tuple(float(x) for x in grounding_features(report.checks))

    @staticmethod
    def coef_of(weights: SignalWeights) -> tuple[float, ...]:
        return (weights.grounding_bias, *(getattr(weights, f"grounding_{name}") for name in GROUNDING_FEATURES))

    @staticmethod
    def score(hard: Sequence[float], features: Sequence[float], coef: Sequence[float]) -> float:
        signals = {f"hard{i}": p for i, p in enumerate(hard)}
        if any(features):
            x = coef[0] + sum(w * v for w, v in zip(coef[1:], features))
            signals["grounding"] = 1.0 / (1.0 + math.exp(-x))
        return hallucination_score(signals)

    @staticmethod
    def weights_table(coef: Sequence[float]) -> dict[str, float]:
        return {"grounding_bias": round(coef[0], 4),
                **{f"grounding_{name}": round(w, 4) for name, w in zip(GROUNDING_FEATURES, coef[1:])}}

    @staticmethod
    def fit(features: Sequence[Sequence[float]], labels: Sequence[int], l2: float = 1.0) -> tuple[float, ...]:
        """L2-regularised logistic regression (Newton's method); the bias is not shrunk."""
        import numpy as np

        x = np.hstack([np.ones((len(features), 1)), np.asarray(features, dtype=float)])
        y = np.asarray(labels, dtype=float)
        w = np.zeros(x.shape[1])
        reg = l2 * np.eye(x.shape[1])
        reg[0, 0] = 0.0
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
            gradient = x.T @ (p - y) + reg @ w
            hessian = x.T @ (x * (p * (1 - p))[:, None]) + reg
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if float(np.max(np.abs(step))) < 1e-8:
                break
        return tuple(float(v) for v in w)


# --- labelled examples --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    event_id: str
    label: int  # 1 = hallucinated
    group: str  # cross-validation group
    source: str  # the file it came from
    hard: tuple[float, ...]
    features: tuple[float, ...]
    # Delivered unchanged if not flagged: the unflagged answer's quality routes it to accept.
    keepable: bool


def _group_of(obj: Mapping[str, Any], source: str, event_id: str) -> str:
    meta = obj.get("meta") if isinstance(obj.get("meta"), Mapping) else {}
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    for holder in (meta, metadata):
        if holder.get("source_id") is not None:
            return f"{source}:source:{holder['source_id']}"
    question = normalize_question(str(obj.get("question") or ""))
    if question:
        return f"{source}:question:{question}"
    return f"{source}:event:{event_id}"


def _is_events_file(path: str) -> bool:
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise CalibrationError(f"{path}: first record is not JSON: {exc}") from None
                return isinstance(obj, dict) and "answer" in obj
    return False


def labelled_payloads(label_paths: Sequence[str], event_paths: Sequence[str]
                      ) -> Iterator[tuple[str, bytes, int, str]]:
    """(source file, event payload, label, group) for every labelled event. Files of events with `label`
    inside count by themselves; label files (event_id, label, ...) label the events of --events files."""
    separate: dict[str, int] = {}
    events_files = list(event_paths)
    for path in label_paths:
        if not Path(path).is_file():
            raise CalibrationError(f"{path}: no such file")
        if _is_events_file(path):
            events_files.append(path)
        else:
            try:
                separate.update({k: v.label for k, v in load_labels(path).items()})
            except ValueError as exc:
                raise CalibrationError(str(exc)) from None
    for path in dict.fromkeys(events_files):
        source = Path(path).stem
        with open(path, "rb") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = orjson.loads(line)
                    event = parse_event(obj)
                except (orjson.JSONDecodeError, EventError) as exc:
                    raise CalibrationError(f"{path}:{number}: {exc}") from None
                label = separate.get(event.event_id, event.label)
                if label is not None:
                    yield source, line, int(label), _group_of(obj, source, event.event_id)


def examples_from(config: DetectorConfig, rows: Sequence[tuple[str, bytes, int, str]], batch: int = 32
                  ) -> list[Example]:
    """Inspect every labelled answer once, in file order, with drift history threaded through as the guard
    would (answers the base configuration delivers unchanged join their question's history): drift moves both
    the score and the quality, so leaving it out would promise a faithful-kept share the guard does not give."""
    from stream_guard.detector import HallucinationDetector
    from stream_guard.history import MemoryHistory
    from stream_guard.pipeline import EVENT_TAG, event_tag, remember
    from stream_guard.text import question_hash

    detector = HallucinationDetector(config, history=MemoryHistory())
    histories: dict[str, list[Any]] = {}
    out: list[Example] = []
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        events = [parse_event(orjson.loads(payload)) for _, payload, _, _ in chunk]
        inspections = detector.with_entities(
            [Inspection.build(e.question, e.context, e.answer, e.citations, e.tenant) for e in events])
        for (source, _, label, group), event, inspection in zip(chunk, events, inspections):
            asked = bool(normalize_question(event.question))
            key = question_hash(event.tenant, event.question)
            report = detector.analyze(inspection, histories.get(key, []) if asked else ())
            quality = QualityScore.compute(report, None, config, latency_ms=REPLAY_QUALITY_LATENCY_MS)
            keepable = quality.score >= config.fallback_threshold
            hard, features = Model.parts(report, detector.weights)
            out.append(Example(event.event_id, label, group, source, hard, features, keepable=keepable))
            if asked and keepable and not report.flagged:
                record = {**detector.fingerprint(event.answer), EVENT_TAG: event_tag(event.event_id)}
                histories[key] = remember(histories.get(key, []), record, config.window_size)
    return out


# --- choosing -----------------------------------------------------------------------------------------------


def choose_threshold(scores: Sequence[float], examples: Sequence[Example], keep: float) -> float:
    """The lowest flag_threshold that delivers at least `keep` of the faithful answers unchanged (those
    `keepable` and scoring below it); halfway to the next score, so a near tie is not decided by rounding.
    1.0 (flag only a certain hallucination) when even that cannot keep enough."""
    faithful = [(s, e.keepable) for s, e in zip(scores, examples) if not e.label]
    needed = math.ceil(keep * len(faithful) - 1e-9)
    keepable = sorted(s for s, ok in faithful if ok)
    if needed <= 0:
        return round(min(scores, default=0.0), 4)
    if needed > len(keepable):
        return 1.0
    edge = keepable[needed - 1]
    above = [s for s in scores if s > edge]
    threshold = math.ceil(((edge + min(above)) / 2 if above else edge + 1e-4) * 10_000) / 10_000
    return min(1.0, threshold if threshold > edge else edge + 1e-4)


def decisions(scores: Sequence[float], examples: Sequence[Example], threshold: float) -> list[LabelledDecision]:
    out = []
    for score, example in zip(scores, examples):
        flagged = score >= threshold
        unchanged = not flagged and example.keepable
        out.append(LabelledDecision(score=score, flagged=flagged, label=example.label,
                                    accepted_unchanged=unchanged, delivered_unchanged=unchanged))
    return out


def fold_of(group: str, folds: int) -> int:
    return int.from_bytes(hashlib.blake2b(group.encode(), digest_size=4).digest(), "big") % folds


@dataclass(frozen=True)
class Fitted:
    coef: tuple[float, ...]
    threshold: float


def fit_rule(examples: Sequence[Example], keep: float, coef: Sequence[float] | None) -> Fitted:
    """Threshold (and, with coef None, weights) from `examples`."""
    if coef is None:
        coef = Model.fit([e.features for e in examples], [e.label for e in examples])
    scores = [Model.score(e.hard, e.features, coef) for e in examples]
    return Fitted(tuple(coef), choose_threshold(scores, examples, keep))


def cross_validate(examples: Sequence[Example], keep: float, coef: Sequence[float] | None, folds: int
                   ) -> tuple[list[float], list[LabelledDecision]]:
    """Out-of-fold scores and decisions, in example order, folds by group; with coef None the weights are
    refitted per fold."""
    scores = [0.0] * len(examples)
    made: list[LabelledDecision | None] = [None] * len(examples)
    assignment = [fold_of(e.group, folds) for e in examples]
    for k in range(folds):
        train = [e for e, f in zip(examples, assignment) if f != k]
        held = [i for i, f in enumerate(assignment) if f == k]
        if not held or not train:
            continue
        rule = fit_rule(train, keep, coef)
        held_scores = [Model.score(examples[i].hard, examples[i].features, rule.coef) for i in held]
        for i, score, decision in zip(held, held_scores, decisions(held_scores, [examples[i] for i in held],
                                                                    rule.threshold)):
            scores[i], made[i] = score, decision
    if any(d is None for d in made):  # pragma: no cover - every example is in exactly one fold
        raise CalibrationError("a fold had nothing to train on")
    return scores, [d for d in made if d is not None]


# --- output -------------------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return orjson.dumps(str(value)).decode()  # a JSON string is a valid TOML basic string


def config_toml(config: DetectorConfig, base_preset: str | None, threshold: float,
                weights: Mapping[str, float] | None, comments: Sequence[str]) -> str:
    """A [detector] table that reproduces `config` with the calibrated values: the preset, every setting
    that differs from it, the threshold and the weights."""
    reference = preset(base_preset) if base_preset else DetectorConfig()
    lines = [f"# {c}" for c in comments] + ["", "[detector]"]
    if base_preset:
        lines.append(f"preset = {_toml_value(base_preset)}")
    skip = {"db_path", "log_flagged", "limits", "weights", "flag_threshold"}
    for f in dataclasses.fields(DetectorConfig):
        value = getattr(config, f.name)
        if f.name not in skip and value != getattr(reference, f.name):
            lines.append(f"{f.name} = {_toml_value(value)}")
    lines.append(f"flag_threshold = {threshold!r}")
    if config.limits != reference.limits:
        lines += ["", "[detector.limits]"] + [
            f"{f.name} = {_toml_value(getattr(config.limits, f.name))}" for f in dataclasses.fields(config.limits)
            if getattr(config.limits, f.name) != getattr(reference.limits, f.name)]
    table = {**config.weights, **(weights or {})}
    if table:
        lines += ["", "[detector.weights]"] + [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "  n/a" if value is None else f"{value * 100:5.1f}"


def operating_points(scores: Sequence[float], examples: Sequence[Example]) -> list[str]:
    rows = [" keep target  threshold  faithful kept  hallucinated caught  precision  recall"]
    for target in KEEP_TARGETS:
        threshold = choose_threshold(scores, examples, target)
        m = decision_metrics(decisions(scores, examples, threshold))
        rows.append(f"     {target:.2f}      {threshold:7.4f}      {_pct(m['faithful_kept'])}%"
                    f"            {_pct(m['hallucinated_caught'])}%       {_pct(m['precision'])}%  "
                    f"{_pct(m['recall'])}%")
    return rows


def _summary(name: str, m: Mapping[str, Any]) -> str:
    return (f"  {name:<24} n {m['n']:>5}  ROC AUC {m['roc_auc'] if m['roc_auc'] is not None else 'n/a':<6}  "
            f"F1 {_pct(m['f1'])}%  faithful kept {_pct(m['faithful_kept'])}%  "
            f"hallucinated caught {_pct(m['hallucinated_caught'])}%")


# --- the command --------------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-guard calibrate",
        description="Choose flag_threshold (and the scoring weights, where labels are enough) so that at least "
                    "--keep of the faithful labelled answers are delivered unchanged; writes a [detector] TOML.")
    p.add_argument("--labels", nargs="+", required=True, metavar="PATH",
                   help="JSONL of events with `label` inside, or of labels (event_id, label) for --events")
    p.add_argument("--events", nargs="+", default=[], metavar="PATH", help="AnswerEvent JSONL labelled by --labels")
    p.add_argument("--keep", type=float, default=0.90,
                   help="share of faithful answers to deliver unchanged, in (0, 1] (default 0.90)")
    p.add_argument("--out", required=True, help="TOML file to write")
    p.add_argument("--config", help="base configuration (TOML); its settings are carried into --out")
    p.add_argument("--preset", choices=sorted(PRESETS), help="base preset")
    p.add_argument("--ner", choices=("spacy", "regex", "auto"), help="entity recognizer (default auto)")
    p.add_argument("--fixed-weights", action="store_true", help="choose the threshold only; keep the weights")
    p.add_argument("--folds", type=int, default=FOLDS, help=f"cross-validation folds (default {FOLDS})")
    p.add_argument("--jobs", "-j", type=parse_jobs, default=None, help="processes for the final check run")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    try:
        return _main(args)
    except CalibrationError as exc:
        print(f"stream-guard calibrate: {exc}", file=sys.stderr)
        return 2


def _say(text: str = "") -> None:
    print(text, flush=True)


def _main(args: argparse.Namespace) -> int:
    if not 0.0 < args.keep <= 1.0:
        raise CalibrationError(f"--keep must be in (0, 1], got {args.keep}")
    if args.folds < 2:
        raise CalibrationError(f"--folds must be at least 2, got {args.folds}")
    try:
        config = build_config(args.config, args.preset, args.ner)
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"bad configuration: {exc}") from None
    rows = list(labelled_payloads(args.labels, args.events))
    hallucinated = sum(label for _, _, label, _ in rows)
    faithful = len(rows) - hallucinated
    if faithful < MIN_PER_CLASS or hallucinated < MIN_PER_CLASS:
        raise CalibrationError(
            f"too few labels to calibrate: {faithful} faithful and {hallucinated} hallucinated answers; at least "
            f"{MIN_PER_CLASS} of each are needed (and {MIN_PER_CLASS_FOR_WEIGHTS} of each to refit the weights)")
    groups = {group for _, _, _, group in rows}
    if len(groups) < args.folds:
        raise CalibrationError(f"{len(groups)} independent groups (source documents or questions) cannot fill "
                               f"{args.folds} cross-validation folds")
    _say(f"{len(rows)} labelled answers ({hallucinated} hallucinated, {faithful} faithful) in {len(groups)} groups "
         f"from {', '.join(sorted({s for s, _, _, _ in rows}))}")
    examples = examples_from(config, rows)
    current = Model.coef_of(dataclasses.replace(SignalWeights(), **config.weights))
    refit = not args.fixed_weights and min(faithful, hallucinated) >= MIN_PER_CLASS_FOR_WEIGHTS
    labels = [e.label for e in examples]

    cv_current, made_current = cross_validate(examples, args.keep, current, args.folds)
    auc_current = roc_auc(cv_current, labels)
    choice, cv_scores, made = current, cv_current, made_current
    _say(f"\ncurrent weights: ROC AUC {auc_current:.4f} ({args.folds}-fold, by group)")
    if refit:
        cv_fitted, made_fitted = cross_validate(examples, args.keep, None, args.folds)
        auc_fitted = roc_auc(cv_fitted, labels)
        better = auc_fitted > auc_current
        _say(f"refitted weights: ROC AUC {auc_fitted:.4f} ({args.folds}-fold, by group): "
             f"{'kept' if better else 'not better, current weights kept'}")
        if better:
            choice, cv_scores, made = None, cv_fitted, made_fitted
    elif not args.fixed_weights:
        _say(f"weights kept: refitting needs {MIN_PER_CLASS_FOR_WEIGHTS} labels of each class")
    rule = fit_rule(examples, args.keep, choice)
    final_scores = [Model.score(e.hard, e.features, rule.coef) for e in examples]

    _say(f"\nCross-validated ({args.folds} folds by group; threshold{' and weights' if choice is None else ''} "
         f"chosen on the other folds), keep >= {args.keep:.2f}:")
    _say(_summary("all", decision_metrics(made)))
    for source in sorted({e.source for e in examples}):
        _say(_summary(source, decision_metrics([d for e, d in zip(examples, made) if e.source == source])))
    _say("\nOperating points of the chosen scores (in-sample, all labelled answers):")
    for line in operating_points(final_scores, examples):
        _say(line)

    weights = Model.weights_table(rule.coef) if choice is None else None
    final = config.with_overrides(flag_threshold=rule.threshold,
                                  weights={**config.weights, **(weights or {})})
    actual = _check_run(final, rows, args.jobs)
    _say(f"\nChosen: flag_threshold = {rule.threshold}"
         + (f", weights refitted ({', '.join(f'{k} {v}' for k, v in weights.items())})" if weights else ""))
    if actual is not None:
        _say(f"Full guard on the labelled answers (in-sample, with healing and routing): faithful kept "
             f"{_pct(actual['faithful_kept'])}% (target {args.keep * 100:.1f}%), hallucinated caught "
             f"{_pct(actual['hallucinated_caught'])}%")
    base_preset = args.preset
    comments = [f"Written by `stream-guard calibrate` on {datetime.now(timezone.utc):%Y-%m-%d}: keep >= "
                f"{args.keep:.2f} of faithful answers delivered unchanged.",
                f"Labels: {', '.join(args.labels + args.events)} ({hallucinated} hallucinated, {faithful} faithful).",
                f"Cross-validated by group: faithful kept {_pct(decision_metrics(made)['faithful_kept'])}%, "
                f"hallucinated caught {_pct(decision_metrics(made)['hallucinated_caught'])}%."]
    text = config_toml(final, base_preset, rule.threshold, weights, comments)
    Path(args.out).write_text(text, encoding="utf-8")
    build_config(args.out, None, None)  # what we wrote must load
    _say(f"\nwritten to {args.out}")
    return 0


def _check_run(config: DetectorConfig, rows: Sequence[tuple[str, bytes, int, str]], jobs: int | None
               ) -> Mapping[str, Any] | None:
    """The chosen configuration through the full guard (what backtest measures), labels joined by event id."""
    from stream_guard.backtest import Position, run_backtest

    labels: dict[str, int] = {}
    inputs: list[tuple[Position, bytes]] = []
    for i, (source, payload, label, _) in enumerate(rows):
        event_id = parse_event(orjson.loads(payload)).event_id
        labels[event_id] = label
        inputs.append((Position(f"{source} #{i + 1}"), payload))
    outcome = run_backtest(config, inputs, jobs=jobs or 0, labels=labels, live=None)
    metrics = outcome.backtest.label_metrics()
    return None if metrics is None else metrics["overall"]

