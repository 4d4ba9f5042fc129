"""The score model as configuration: the file `stream-guard calibrate` writes beside the [detector] TOML it
writes (and, with --write-default, the shipped stream_guard/models/score_model.json), naming the evidence and
hard signals the hallucination score combines and the weights and flag threshold fitted for them.

What the features are and how the score is computed and fitted: stream_guard/scoring/score_model.py. The file
is read through this Struct (msgspec), so a broken one is refused with the field and the reason when the
configuration naming it is loaded, not when the first event is judged.
"""

from __future__ import annotations

import math
import re
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import msgspec
import orjson

# One label file in `fitted_on`: its name, then its count of answers (the list opens the text, joined by " + ").
_FITTED_FILE = re.compile(r"(?:^| \+ )(.+?) \(\d+ answers?\)")

# Evidence: how much of the answer the context does not support. Every one is 0 for an answer whose every claim
# is stated by a single source sentence, and its weight is kept at or above 0, so more evidence never lowers
# the score. All are computed from check details the verdict carries, so a live report and a verdict line give
# the same numbers.
EVIDENCE: tuple[str, ...] = (
    "ungrounded_fraction",  # 1 - faithfulness score: share of claims the context does not support
    "novel_fraction",  # share of the answer's content stems absent from the context and the question
    "weakest_claim",  # 1 - coverage of the worst claim by its best single context sentence
    # log(1 + novel content stems) of an answer to a question or a record: long fabrications add up. Not for
    # summaries, whose count grows with their length (novel_fraction carries their novelty).
    "novel_count_answers",
    "unsupported_figures",  # quantities and numbers the context does not state, capped at 4
    "field_conflicts",  # claims saying the opposite of a yes-no field of a structured record, capped at 4
    "schedule_conflicts",  # times and days a record's opening hours do not have, capped at 4
    "empty_fields",  # claims stating what a record leaves empty (null) or has no field for, capped at 4
    "mean_weakness",  # 1 - mean coverage of the claims by their best context sentence
    "structured_novel",  # record x novel_fraction
    "summary_novel",  # summary (no question, no record) x novel_fraction
    "structured_ungrounded",  # record x ungrounded_fraction
    # Count quantifiers ("many", "several", "most") of the claims that no source or question uses, capped at 4: a
    # count the source does not state ("many reviewers praise" where the record lists two reviews), which the
    # measures above miss ("most" is a stop word, "several" a generic word) or count as one reworded word ("many").
    "unstated_quantifiers",
)

# Not features: what tells one model's style from another's (how many claims, how long, how assertive). Within
# the answers of one model they separate little, and a score they could raise would flag an answer for how its
# model writes, not for anything it says. Letting them scale the evidence instead (exp(v . style) x evidence)
# was measured and did no better than the evidence alone (grouped CV on the development rows: docs in README).

# The shape of the task, inferred from the event (scoring/score_model.py: task_kind): each kind has its own
# offset, placed so that one threshold keeps the same share of faithful answers in each.
KINDS: tuple[str, ...] = ("summary", "question", "short", "record")

# Hard signals and the probability each alone means "hallucinated" (measured precision, seed table).
SIGNALS: tuple[str, ...] = (
    "contradiction",
    "record_conflict",
    "fabricated_entity",
    "fabricated_citation",
    "wrong_chunk_citation",
    "confident_but_unfaithful",
    "irrelevant_context",
    "drift",
)

MODEL_VERSION = 2


class ScoreModel(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The score model as data. `weights` align with `evidence` (each >= 0); `offsets` holds one offset per task
    kind; `signals` maps hard-signal names to their probabilities (`drift` is used only where drift is
    configured to count, as in stream_guard.compat); `threshold` is the flag_threshold chosen for this model (the
    default one, for the shipped model)."""

    evidence: tuple[str, ...]
    weights: tuple[float, ...]
    offsets: dict[str, float]
    signals: dict[str, float]
    threshold: float = 0.40
    keep_rate: float = 0.90
    l2: float = 1.0
    balanced: bool = True
    fitted_on: str = ""
    version: int = MODEL_VERSION

    def __post_init__(self) -> None:
        if len(self.evidence) != len(self.weights):
            raise ValueError(f"score model: {len(self.evidence)} evidence features but {len(self.weights)} weights")
        for name, known, names in (("evidence feature", EVIDENCE, self.evidence), ("task kind", KINDS, self.offsets),
                                   ("signal", SIGNALS, self.signals)):
            unknown = sorted(set(names) - set(known))
            if unknown:
                raise ValueError(f"score model: unknown {name}(s) {', '.join(unknown)}")
        negative = [name for name, w in zip(self.evidence, self.weights) if w < 0]
        if negative:
            raise ValueError(f"score model: evidence weights must be >= 0 (more evidence never lowers the score): "
                             f"{', '.join(negative)}")
        if not self.offsets:
            raise ValueError("score model: offsets must name at least one task kind")

    def fitted_sources(self) -> frozenset[str]:
        """The label files the weights were fitted on, as `fitted_on` names them ("ragtruth_dev (307 answers) +
        ..."; cli/calibrate.py writes it). Whole names only: a file called "labelled" is not one of them because
        the text also says "2021 labelled answers"."""
        return frozenset(_FITTED_FILE.findall(self.fitted_on))

    def offset(self, kind: str) -> float:
        """The offset of a task kind; a kind the model was not fitted for takes the nearest one it has."""
        for candidate in (kind, *_NEAREST.get(kind, ())):
            if candidate in self.offsets:
                return self.offsets[candidate]
        return next(iter(self.offsets.values()))

    def logit(self, values: Mapping[str, float], kind: str) -> float:
        """offset(kind) + weights . evidence: nothing but the evidence moves it, and only upwards."""
        return self.offset(kind) + sum(w * values.get(name, 0.0) for name, w in zip(self.evidence, self.weights))

    def grounding_probability(self, values: Mapping[str, float], kind: str) -> float:
        """The soft evidence, in (0, 1): the logistic curve over `logit`."""
        return _sigmoid(self.logit(values, kind))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "evidence": list(self.evidence),
            "weights": [round(w, 6) for w in self.weights],
            "offsets": {k: round(v, 6) for k, v in self.offsets.items()},
            "signals": {k: round(v, 6) for k, v in self.signals.items()},
            "threshold": self.threshold,
            "keep_rate": self.keep_rate,
            "l2": self.l2,
            "balanced": self.balanced,
            "fitted_on": self.fitted_on,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ScoreModel":
        if "features" in data and "evidence" not in data:
            raise ValueError("score model: written by a stream-guard before model version 2 (features and an "
                             "intercept); refit it with `stream-guard calibrate`")
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise ValueError(f"score model: {exc}") from None


# Where a kind without its own offset borrows one: a short answer is an answer to a question.
_NEAREST: Mapping[str, tuple[str, ...]] = {"short": ("question",), "record": ("question",),
                                           "question": ("summary",), "summary": ("question",)}


def load_model(path: str) -> ScoreModel:
    with open(path, "rb") as fh:
        return ScoreModel.from_dict(orjson.loads(fh.read()))


def save_model(model: ScoreModel, path: str) -> None:
    with open(path, "wb") as fh:
        fh.write(orjson.dumps(model.to_dict(), option=orjson.OPT_INDENT_2))


def _sigmoid(x: float) -> float:
    if x < -60:
        return 0.0
    return 1.0 / (1.0 + math.exp(-x))


# The shipped model: `stream-guard calibrate --write-default` on the development rows of ../shared/data (the
# README names the command).
DEFAULT_MODEL_FILE = "score_model.json"


def shipped_model_path() -> Path:
    """The shipped model's file in this installation (the source tree, for the editable install)."""
    return Path(str((resources.files("stream_guard") / "models" / DEFAULT_MODEL_FILE)))


def _shipped_model() -> ScoreModel:
    raw = (resources.files("stream_guard") / "models" / DEFAULT_MODEL_FILE).read_bytes()
    return ScoreModel.from_dict(orjson.loads(raw))


DEFAULT_MODEL = _shipped_model()
