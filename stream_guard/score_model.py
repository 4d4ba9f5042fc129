"""The shipped hallucination-score model, as data. Written by bench/fit_score_model.py: refit with
`.venv/bin/python bench/fit_score_model.py --write` (or `stream_guard.calibration.fit`); see
calibration.py for the features and how the intercept is placed."""

from stream_guard.calibration import ScoreModel

DEFAULT_MODEL = ScoreModel.from_dict(
{
    "features": [
        "ungrounded_fraction",
        "novel_fraction",
        "weakest_claim",
        "novel_count",
        "unsupported_figures",
        "field_conflicts",
        "schedule_conflicts",
        "empty_fields",
        "mean_weakness",
        "claims",
        "structured",
        "has_question",
        "structured_novel",
        "summary_novel",
        "confidence",
        "structured_claims",
        "structured_ungrounded"
    ],
    "weights": [
        0.989543,
        0.879207,
        1.398536,
        0.768768,
        0.60367,
        2.258882,
        1.222029,
        0.0,
        1.255412,
        0.19243,
        0.295704,
        0.259956,
        0.477841,
        0.0,
        -0.437557,
        -0.895364,
        1.27055
    ],
    "intercept": -5.04821,
    "signals": {
        "contradiction": 0.92,
        "fabricated_entity": 0.8,
        "fabricated_citation": 0.85,
        "wrong_chunk_citation": 0.6,
        "confident_but_unfaithful": 0.7,
        "irrelevant_context": 0.35,
        "drift": 0.3
    },
    "threshold": 0.4,
    "keep_rate": 0.9,
    "l2": 1.0,
    "balanced": True,
    "fitted_on": "ragtruth_dev+ragtruth_d2t_dev, 571 rows, NER spacy"
}
)
