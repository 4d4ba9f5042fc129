"""The shipped hallucination-score model, as data. Written by bench/fit_score_model.py; see calibration.py."""

from stream_guard.calibration import ScoreModel

DEFAULT_MODEL = ScoreModel.from_dict(
    {
        "features": ["ungrounded_fraction"],
        "weights": [4.0],
        "intercept": -3.0,
        "signals": {"contradiction": 0.92, "fabricated_entity": 0.8, "fabricated_citation": 0.85,
                    "wrong_chunk_citation": 0.6, "confident_but_unfaithful": 0.7, "irrelevant_context": 0.35,
                    "drift": 0.3},
    }
)
