"""The score model as configuration: the file `stream-guard calibrate` writes beside the [detector] TOML it
writes (and, with --write-default, the shipped stream_guard/models/score_model.json), naming the features and
hard signals the hallucination score combines and the weights and flag threshold fitted for them.

What the features are and how the score is computed and fitted: stream_guard/scoring/score_model.py. The file
is read through this Struct (msgspec), so a broken one is refused with the field and the reason when the
configuration naming it is loaded, not when the first event is judged.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import msgspec
import orjson

# Soft features, in the order of ScoreModel.weights. Every one is computed from check details that the
# verdict carries, so the same numbers come from a live report and from a verdict line.
FEATURES: tuple[str, ...] = (
    "ungrounded_fraction",  # 1 - faithfulness score: share of claims the context does not support
    "novel_fraction",  # share of the answer's content stems absent from the context
    "weakest_claim",  # 1 - coverage of the worst claim by its best single context sentence
    # log(1 + novel content stems) of an answer to a question or a record: long fabrications add up. Not for
    # summaries, whose count grows with their length (grouped CV on RAGTruth: summary AUC 0.650 with it for
    # every task, 0.674 without it for summaries; novel_fraction carries their novelty).
    "novel_count_answers",
    "unsupported_figures",  # quantities and numbers the context does not state, capped at 4
    "field_conflicts",  # claims saying the opposite of a yes-no field of a structured record, capped at 4
    "schedule_conflicts",  # times and days a record's opening hours do not have, capped at 4
    "empty_fields",  # claims stating what a record leaves empty (null) or has no field for, capped at 4
    "mean_weakness",  # 1 - mean coverage of the claims by their best context sentence
    "claims",  # log(1 + claims)
    "structured",  # 1 when the context holds a structured record (data-to-text)
    "has_question",  # 1 when there is a question (QA) rather than none (summaries)
    "structured_novel",  # structured x novel_fraction
    "summary_novel",  # no question and no record (a summary) x novel_fraction
    "confidence",  # assertiveness of the wording (confidence check score)
    "structured_claims",  # structured x claims
    "structured_ungrounded",  # structured x ungrounded_fraction
)


# Features that models fitted by earlier versions may name; still computed, no longer fitted by default.
RETIRED_FEATURES: tuple[str, ...] = ("novel_count",)  # log(1 + novel content stems), summaries included


# Features that measure how weakly the answer is supported: their weights are kept at or above zero, so
# the score never falls when the grounding gets worse (the others describe the task and the wording).
MONOTONE: frozenset[str] = frozenset(FEATURES + RETIRED_FEATURES) - {"claims", "structured", "has_question", "confidence",
                                                   "structured_claims"}


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


class ScoreModel(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The score model as data. `weights` align with `features`; `signals` maps hard-signal names to their
    probabilities (`drift` is used only where drift is configured to count, as in stream_guard.compat);
    `threshold` is the flag_threshold chosen for this model (the default one, for the shipped model)."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    signals: dict[str, float]
    threshold: float = 0.40
    keep_rate: float = 0.90
    l2: float = 1.0
    balanced: bool = True
    fitted_on: str = ""

    def __post_init__(self) -> None:
        if len(self.features) != len(self.weights):
            raise ValueError(f"score model: {len(self.features)} features but {len(self.weights)} weights")
        unknown = sorted(set(self.features) - set(FEATURES) - set(RETIRED_FEATURES))
        if unknown:
            raise ValueError(f"score model: unknown feature(s) {', '.join(unknown)}")
        bad = sorted(set(self.signals) - set(SIGNALS))
        if bad:
            raise ValueError(f"score model: unknown signal(s) {', '.join(bad)}")

    def grounding_probability(self, values: Mapping[str, float]) -> float:
        """The soft evidence, in (0, 1): the logistic curve over the features."""
        z = self.intercept + sum(w * values.get(name, 0.0) for name, w in zip(self.features, self.weights))
        return _sigmoid(z)

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "weights": [round(w, 6) for w in self.weights],
            "intercept": round(self.intercept, 6),
            "signals": {k: round(v, 6) for k, v in self.signals.items()},
            "threshold": self.threshold,
            "keep_rate": self.keep_rate,
            "l2": self.l2,
            "balanced": self.balanced,
            "fitted_on": self.fitted_on,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ScoreModel":
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise ValueError(f"score model: {exc}") from None


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


# The shipped model: `stream-guard calibrate --write-default` on ../shared/data (the README names the command).
DEFAULT_MODEL_FILE = "score_model.json"


def shipped_model_path() -> Path:
    """The shipped model's file in this installation (the source tree, for the editable install)."""
    return Path(str(resources.files("stream_guard").joinpath("models", DEFAULT_MODEL_FILE)))


def _shipped_model() -> ScoreModel:
    raw = resources.files("stream_guard").joinpath("models", DEFAULT_MODEL_FILE).read_bytes()
    return ScoreModel.from_dict(orjson.loads(raw))


DEFAULT_MODEL = _shipped_model()
