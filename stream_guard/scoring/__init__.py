"""Scoring: how likely an answer is hallucinated, and how deliverable it is.

    hallucination.py  hallucination_score, risk and type from the checks' results
    score_model.py    the score model's features, scoring and fitting (the model as data: config/score_model.py)
    quality.py        QualityScore and the routing it implies
"""
