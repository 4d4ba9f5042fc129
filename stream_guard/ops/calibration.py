"""Calibrate: choose flag_threshold (and, where labels are enough, refit the score model) from labelled answers.
The command, its output and the files it writes: stream_guard/cli/calibrate.py.

The goal is the one a platform team states: deliver at least `--keep` of the faithful answers unchanged
(routed accept, the original answer delivered) and catch as many hallucinated ones as possible under that
constraint. An unflagged answer is never repaired, so it is delivered unchanged exactly when its quality
routes it to accept ("keepable"); the threshold is the lowest `flag_threshold` below which the wanted share
of the faithful answers is keepable, everything at or above it being caught.

`--keep` is read as a user reads it: the share of faithful answers kept among those the threshold was *not*
placed on. A threshold placed to keep 0.90 of its own labelled answers keeps about a point less of new ones,
so the fit is placed at a higher in-sample share: the lowest, from `--keep` up in steps of KEEP_STEP, whose
inner cross-validation by group over the same labelled answers keeps `--keep` of the held-out faithful
answers (Fitting.in_sample_keep; fixed folds, so a rerun is the same fit; at most MAX_KEEP_RAISE above).

Every labelled answer goes through the full guard once, in parallel (stream_guard/engine/pool.py), with a
configuration that flags nothing: its verdict gives what the score model reads (score_model.observation_
from_verdict) and whether it is keepable. Scores for any model and threshold follow from those, so refits and
cross-validation cost no further judging. Where both classes have MIN_PER_CLASS_TO_REFIT labels the score
model is refitted (score_model.fit) and kept only when it ranks better than the current one out of sample.
Every figure printed is cross-validated by group: answers about one source document (meta.source_id), else
one question, never sit on both sides of a fold. Last, the chosen configuration runs through the full guard
again (what `backtest` measures, healing and routing included), and the threshold is raised until that run,
not the score alone, delivers the share asked for.

The output is a [detector] TOML with `flag_threshold` and `score_model_path` naming the model JSON written
beside it (a threshold means something only with the model it was chosen for), or, with --write-default,
the package's shipped model (stream_guard/models/score_model.json), whose `threshold` is the default
`flag_threshold`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import msgspec
import orjson

from stream_guard.scoring import score_model
from stream_guard.ops.backtest import run_backtest
from stream_guard.ops.sources import Position, task_type_of
from stream_guard.config.detector import DetectorConfig, preset
from stream_guard.errors import ConfigurationError
from stream_guard.ops.evaluation import LabelledDecision, roc_auc
from stream_guard.wire.events import EventError, parse_event
from stream_guard.wire.labels import load_labels
from stream_guard.engine.pool import Pool
from stream_guard.config.score_model import ScoreModel, shipped_model_path
from stream_guard.scoring.score_model import SHORT, Observation

MIN_PER_CLASS = 20
# Below this, five folds hold too few answers of a class to tell two models apart; the out-of-sample
# comparison, not this number, decides whether a refit is kept.
MIN_PER_CLASS_TO_REFIT = 60
FOLDS = 5
KEEP_TARGETS = (0.80, 0.85, 0.90, 0.95, 0.98)
# score_model.fit places each refit's operating point here; the chosen flag_threshold then moves from it only
# as far as hard signals and unkeepable answers require. Fixed, so a rerun on the same labels is the same fit.
FIT_ANCHOR = 0.40
# Full-guard runs allowed to raise the threshold when the score alone promised more than the guard delivers.
VERIFY_ROUNDS = 4
UNKNOWN_TASK = "unknown"
# `--keep` is the share of *unseen* faithful answers to keep. A threshold placed to keep a share of the answers it
# is fitted on keeps about a point less of new ones (in-sample to held-out gap), so the fit is placed at the
# lowest in-sample share, in steps of KEEP_STEP from --keep and at most MAX_KEEP_RAISE above it, whose inner
# grouped CV over the same labelled answers (FOLDS folds, fold seed INNER_SEED: a rerun is the same fit) keeps
# --keep of the held-out faithful answers.
KEEP_STEP = 0.0025
MAX_KEEP_RAISE = 0.05
INNER_SEED = 7


class CalibrationError(ConfigurationError):
    """What was asked cannot be calibrated (too few labels, unreadable input): exit 2 with this message."""


# --- labelled answers ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Labelled:
    """One labelled answer as read: its event payload, its label (1 = hallucinated) and where it belongs."""

    event_id: str
    payload: bytes
    label: int
    group: str  # cross-validation group
    source: str  # the file it came from
    task_type: str


@dataclass(frozen=True)
class Example:
    """One labelled answer as judged: what the score model reads, and whether it is delivered unchanged
    when not flagged."""

    label: int
    group: str
    source: str
    task_type: str
    observation: Observation
    keepable: bool


def group_of(obj: Mapping[str, Any]) -> str:
    """The unit that never sits on both sides of a cross-validation fold: the source document (meta.source_id
    or metadata.source_id), else the question, else the context (a summary's document), within the dataset the
    row names (`source`). The one definition: calibrate's folds, the benchmarks' folds and the benchmarks'
    locked slice (bench/_data.py: is_locked hashes this string, so it must not change) all use it."""
    source = obj.get("source")
    for key in ("meta", "metadata"):
        holder = obj.get(key)
        if isinstance(holder, Mapping) and holder.get("source_id"):
            return f"{source}:{holder['source_id']}"
    basis = obj.get("question") or orjson.dumps(obj.get("context")).decode()
    return f"{source}:{hashlib.blake2b(str(basis).encode(), digest_size=8).hexdigest()}"


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


def labelled_answers(label_paths: Sequence[str], event_paths: Sequence[str]) -> list[Labelled]:
    """Every labelled event. Files of events with `label` inside count by themselves; label files
    (event_id, label, ...) label the events of --events files, and win over labels inside them."""
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
    return [row for path in dict.fromkeys(events_files) for row in _read_events(path, separate)]


def _read_events(path: str, separate: Mapping[str, int]) -> Iterator[Labelled]:
    if not Path(path).is_file():
        raise CalibrationError(f"{path}: no such file")
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
                yield Labelled(event.event_id, line.rstrip(b"\r\n"), int(label), group_of(obj), source,
                               task_type_of(line) or UNKNOWN_TASK)


def observe(config: DetectorConfig, rows: Sequence[Labelled], jobs: int | None) -> tuple[list[Example], str]:
    """Judge every labelled answer through the full guard, flagging nothing, and read its example from the
    verdict. Returns the examples in input order and the entity recognizer that judged them."""
    # The highest threshold a config may hold: a noisy-OR of probabilities below 1 never reaches it.
    never_flag = config.with_overrides(flag_threshold=1.0)
    examples: list[Example | None] = [None] * len(rows)
    with Pool(never_flag, jobs=jobs) as judges:
        backend = judges.wait_ready().ner_backend
        for i, judged in judges.judge((i, row.payload) for i, row in enumerate(rows)):
            row = rows[i]
            if judged.verdict is None:
                raise CalibrationError(f"{row.source}: event {row.event_id} was not judged ({judged.error_stage}: "
                                       f"{judged.error_field}: {judged.error_reason})")
            verdict = orjson.loads(judged.verdict)
            keepable = verdict["routing"] == "accept" and verdict["delivered_answer"] == verdict["original_answer"]
            examples[i] = Example(row.label, row.group, row.source, row.task_type,
                                  score_model.observation_from_verdict(verdict), keepable)
    return [e for e in examples if e is not None], backend


# --- choosing -----------------------------------------------------------------------------------------------


def scores_of(examples: Sequence[Example], model: ScoreModel, drift_counts: bool) -> list[float]:
    return [score_model.score(e.observation, model, drift_counts=drift_counts) for e in examples]


def keep_counted(examples: Sequence[Example]) -> list[int]:
    """The answers a keep share is counted over: all but the short extractive ones, when there are others
    (why: choose_threshold)."""
    if any(e.observation.kind != SHORT for e in examples):
        return [i for i, e in enumerate(examples) if e.observation.kind != SHORT]
    return list(range(len(examples)))


def choose_threshold(scores: Sequence[float], examples: Sequence[Example], keep: float, extra: int = 0) -> float:
    """The lowest flag_threshold that delivers at least `keep` of the faithful answers unchanged (those
    keepable and scoring below it), keeping `extra` more on top; halfway to the next score, so a near tie is
    not decided by rounding. 1.0 (flag only a certain hallucination) when even that cannot keep enough.

    Short extractive answers are left out when there are others: their offset is placed for them (score_model.
    _place_offsets), and most of them copy their source and score nothing, so counting them would let the
    threshold fall until the long answers keep far less than `keep`."""
    pairs = [(scores[i], examples[i]) for i in keep_counted(examples)]
    faithful = [(s, e.keepable) for s, e in pairs if not e.label]
    needed = math.ceil(keep * len(faithful) - 1e-9) + extra
    keepable = sorted(s for s, ok in faithful if ok)
    if needed <= 0:
        return round(min(scores, default=0.0), 4)
    if needed > len(keepable):
        return 1.0
    edge = keepable[needed - 1]
    above = [s for s, _ in pairs if s > edge]
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


@dataclass(frozen=True)
class Fitting:
    """How a rule is made from labelled examples: refit the model (`model` None) or keep `model`. `keep` is the
    share of unseen faithful answers to keep (in_sample_keep); `held_out` False takes it as the share of the
    examples themselves (what the inner cross-validation fits)."""

    keep: float
    drift_counts: bool
    signals: Mapping[str, float]
    model: ScoreModel | None = None
    l2: float = score_model.DEFAULT_L2
    held_out: bool = True

    def rule(self, examples: Sequence[Example], fitted_on: str = "") -> tuple[ScoreModel, float]:
        """(model, threshold) from `examples`, placed at in_sample_keep(examples)."""
        return self.in_sample(examples).fit(examples, fitted_on)

    def in_sample(self, examples: Sequence[Example]) -> Fitting:
        """This fitting with `keep` the in-sample share that keeps `keep` of unseen answers."""
        return replace(self, keep=self.in_sample_keep(examples), held_out=False)

    def in_sample_keep(self, examples: Sequence[Example]) -> float:
        """The lowest in-sample keep share, from `keep` up in steps of KEEP_STEP (at most MAX_KEEP_RAISE above
        it, and never above 1), at which an inner grouped cross-validation over `examples` keeps at least `keep`
        of the held-out faithful answers; `keep` itself when `held_out` is off or the groups cannot fill the
        folds. Searching, rather than adding the gap measured at `keep` once, checks the share it returns: the
        gap measured on inner training folds (64% of the answers) overshoots."""
        if not self.held_out:
            return self.keep
        fold = score_model.group_folds([e.group for e in examples], FOLDS, INNER_SEED)
        if len(set(fold)) < FOLDS:
            return self.keep
        share = self.keep
        for step in range(round(MAX_KEEP_RAISE / KEEP_STEP) + 1):
            share = min(1.0, round(self.keep + step * KEEP_STEP, 6))
            # At 1.0 nothing higher is left to try: no inner cross-validation is run for it.
            if share >= 1.0:
                break
            if replace(self, keep=share, held_out=False).held_out_kept(examples, fold) >= self.keep - 1e-9:
                break
        return share

    def held_out_kept(self, examples: Sequence[Example], fold: Sequence[int]) -> float:
        """The share of faithful answers (keep_counted) kept out of fold: keepable and scoring below the
        threshold this fitting makes from the other folds."""
        counted = set(keep_counted(examples))
        kept = faithful = 0
        for k in sorted(set(fold)):
            model, threshold = self.fit([e for e, f in zip(examples, fold) if f != k])
            held = [e for i, (e, f) in enumerate(zip(examples, fold)) if f == k and i in counted and not e.label]
            for example, score in zip(held, scores_of(held, model, self.drift_counts)):
                faithful += 1
                kept += score < threshold and example.keepable
        return kept / faithful if faithful else 1.0

    def fit(self, examples: Sequence[Example], fitted_on: str = "") -> tuple[ScoreModel, float]:
        """(model, threshold) keeping `keep` of `examples`' own faithful answers."""
        model = self.model
        if model is None:
            model = score_model.fit([e.observation for e in examples], [e.label for e in examples],
                                    l2=self.l2, keep_rate=self.keep, threshold=FIT_ANCHOR,
                                    signals=self.signals, fitted_on=fitted_on)
        return model, choose_threshold(scores_of(examples, model, self.drift_counts), examples, self.keep)

    def cross_validate(self, examples: Sequence[Example], folds: int) -> tuple[list[float], list[LabelledDecision]]:
        """Out-of-fold scores and decisions, in example order, folds by group: the threshold (and a refitted
        model) chosen on the other folds."""
        fold = score_model.group_folds([e.group for e in examples], folds)
        scores = [0.0] * len(examples)
        made: list[LabelledDecision | None] = [None] * len(examples)
        for k in range(folds):
            train = [e for e, f in zip(examples, fold) if f != k]
            held = [i for i, f in enumerate(fold) if f == k]
            if not held or not train:
                continue
            model, threshold = self.rule(train)
            held_examples = [examples[i] for i in held]
            held_scores = scores_of(held_examples, model, self.drift_counts)
            for i, score, decision in zip(held, held_scores, decisions(held_scores, held_examples, threshold)):
                scores[i], made[i] = score, decision
        if any(d is None for d in made):  # pragma: no cover - every example is in exactly one fold
            raise CalibrationError("a fold had nothing to train on")
        return scores, [d for d in made if d is not None]


@dataclass(frozen=True)
class ModelChoice:
    """The fitting chosen, its out-of-fold scores and decisions, and what to tell the user about the choice."""

    fitting: Fitting
    scores: list[float]
    made: list[LabelledDecision]
    notes: list[str]


def choose_model(examples: Sequence[Example], current: ScoreModel, keep: float, *, refit: str, folds: int,
                 l2: float = score_model.DEFAULT_L2, drift_counts: bool = False,
                 sources: Sequence[str] = ()) -> ModelChoice:
    """Keep `current` or refit it. `refit`: "never", "always", or "compare" (refit where both classes have
    MIN_PER_CLASS_TO_REFIT labels, kept only when its cross-validated ROC AUC beats the current model's)."""
    labels = [e.label for e in examples]
    keeping = Fitting(keep, drift_counts, current.signals, model=current)
    # A refit keeps the current model's signal probabilities and takes the default for a signal it predates.
    refitting = Fitting(keep, drift_counts, {**score_model.DEFAULT_SIGNALS, **current.signals}, l2=l2)
    enough = min(len(labels) - sum(labels), sum(labels)) >= MIN_PER_CLASS_TO_REFIT
    numpy = importlib.util.find_spec("numpy") is not None
    if refit == "always":
        if not enough:
            raise CalibrationError(f"refitting the model needs {MIN_PER_CLASS_TO_REFIT} labels of each class")
        if not numpy:
            raise CalibrationError("refitting the model needs numpy: pip install 'stream-guard[report]'")
        scores, made = refitting.cross_validate(examples, folds)
        return ModelChoice(refitting, scores, made,
                           [f"\nrefitted model: ROC AUC {roc_auc(scores, labels):.4f} ({folds}-fold, by group)"])
    scores, made = keeping.cross_validate(examples, folds)
    seen = [s for s in sources if s in current.fitted_sources()]
    notes = [f"\ncurrent model ({current.fitted_on or 'unnamed'}): ROC AUC {roc_auc(scores, labels):.4f} "
             f"({folds}-fold by group, threshold only"
             + (f"; its weights were fitted on {', '.join(seen)}, so this is in-sample for them)" if seen else ")")]
    if refit == "never":
        return ModelChoice(keeping, scores, made, notes)
    if not enough or not numpy:
        why = f"{MIN_PER_CLASS_TO_REFIT} labels of each class" if not enough else "numpy (the report extra)"
        return ModelChoice(keeping, scores, made, notes + [f"model kept: refitting needs {why}"])
    refit_scores, refit_made = refitting.cross_validate(examples, folds)
    better = roc_auc(refit_scores, labels) > roc_auc(scores, labels)
    notes.append(f"refitted model: ROC AUC {roc_auc(refit_scores, labels):.4f} ({folds}-fold, by group): "
                 f"{'kept' if better else 'not better, current model kept'}")
    return ModelChoice(refitting, refit_scores, refit_made, notes) if better else ModelChoice(keeping, scores, made,
                                                                                               notes)


# --- verifying through the full guard -----------------------------------------------------------------------


def guard_metrics(config: DetectorConfig, rows: Sequence[Labelled], jobs: int | None) -> dict[str, Any]:
    """The label metrics `backtest` reports for `config` on these answers (overall and per task type)."""
    inputs = [(Position(f"{row.source} #{i + 1}", row.task_type), row.payload) for i, row in enumerate(rows)]
    outcome = run_backtest(config, inputs, jobs=jobs or 0, labels={row.event_id: row.label for row in rows},
                           live=None)
    if outcome.partial:
        raise CalibrationError(f"the full-guard run stopped early: {outcome.stopped}")
    metrics = outcome.backtest.label_metrics()
    if metrics is None:  # pragma: no cover - every row is labelled
        raise CalibrationError("the full-guard run produced no labelled verdicts")
    return metrics


def verified_threshold(config: DetectorConfig, rows: Sequence[Labelled], jobs: int | None,
                       scores: Sequence[float], examples: Sequence[Example], keep: float,
                       say: Callable[[str], None]) -> tuple[float, dict[str, Any]]:
    """The chosen threshold, raised until the full guard (not only the score) keeps `keep` of the faithful
    answers, and that run's metrics. Both runs judge the same answers; they differ when drift counts or a
    score sits within rounding of the threshold. Like the choice itself (choose_threshold), this is about the
    answers that are not short extractive ones, when there are any."""
    chosen = keep_counted(examples)
    rows, scores, examples = [rows[i] for i in chosen], [scores[i] for i in chosen], [examples[i] for i in chosen]
    faithful = sum(1 for e in examples if not e.label)
    needed = math.ceil(keep * faithful - 1e-9)
    extra = 0
    threshold = choose_threshold(scores, examples, keep)
    for _ in range(VERIFY_ROUNDS):
        metrics = guard_metrics(config.with_overrides(flag_threshold=threshold), rows, jobs)
        kept = round((metrics["overall"]["faithful_kept"] or 0.0) * faithful)
        if kept >= needed or threshold >= 1.0:
            return threshold, metrics
        extra += needed - kept
        raised = choose_threshold(scores, examples, keep, extra)
        say(f"  the full guard kept {kept} of {faithful} faithful answers at {threshold}, {needed} needed: "
            f"raising the threshold to {raised}")
        threshold = raised
    return threshold, metrics


# --- output -------------------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return orjson.dumps(str(value)).decode()  # a JSON string is a valid TOML basic string


def config_toml(config: DetectorConfig, base_preset: str | None, model_file: str, comments: Sequence[str]) -> str:
    """A [detector] table that reproduces `config`: the preset, every setting that differs from it, the
    threshold and the score model file (relative to the TOML, as config loading resolves it)."""
    reference = preset(base_preset) if base_preset else DetectorConfig()
    lines = [f"# {c}" for c in comments] + ["", "[detector]"]
    if base_preset:
        lines.append(f"preset = {_toml_value(base_preset)}")
    skip = {"db_path", "log_flagged", "limits", "flag_threshold", "score_model_path"}
    for f in msgspec.structs.fields(DetectorConfig):
        value = getattr(config, f.name)
        if f.name not in skip and value != getattr(reference, f.name):
            lines.append(f"{f.name} = {_toml_value(value)}")
    lines.append(f"flag_threshold = {config.flag_threshold!r}")
    lines.append(f"score_model_path = {_toml_value(model_file)}")
    if config.limits != reference.limits:
        lines += ["", "[detector.limits]"] + [
            f"{f.name} = {_toml_value(getattr(config.limits, f.name))}" for f in msgspec.structs.fields(config.limits)
            if getattr(config.limits, f.name) != getattr(reference.limits, f.name)]
    return "\n".join(lines) + "\n"


def default_model_path() -> Path:
    """The shipped model's file in this installation (the source tree, for the editable install)."""
    return shipped_model_path()


# --- the command --------------------------------------------------------------------------------------------


def model_file_for(toml_path: str | Path) -> Path:
    """Where the model of a calibrated TOML goes: beside it, `<name>.score_model.json`."""
    return Path(toml_path).with_suffix(".score_model.json")


