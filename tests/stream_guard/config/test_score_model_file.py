"""config/score_model.py: what a score model file says about the labels it was fitted on."""

from __future__ import annotations

import msgspec

from stream_guard.cli.calibrate import fitted_on
from stream_guard.config.score_model import DEFAULT_MODEL
from stream_guard.ops.calibration import Labelled


def _rows(source: str, n: int) -> list[Labelled]:
    return [Labelled(f"{source}-{i}", b"{}", i % 2, f"g{i}", source, "QA") for i in range(n)]


def test_the_shipped_model_names_the_files_its_weights_were_fitted_on_and_no_other() -> None:
    assert DEFAULT_MODEL.fitted_sources() == {"ragtruth_dev", "ragtruth_d2t_dev", "halueval_qa_dev"}
    # The shipped sample is stream_guard/samples/labelled.jsonl; the model's text says "2021 labelled answers",
    # which once made calibrate call the sample in-sample.
    assert "labelled" not in DEFAULT_MODEL.fitted_sources()


def test_the_files_calibrate_records_are_the_files_read_back() -> None:
    text = fitted_on(_rows("support desk", 1) + _rows("policies", 3), "development rows", "regex", 0.9, 0.91)
    model = msgspec.structs.replace(DEFAULT_MODEL, fitted_on=text)
    assert model.fitted_sources() == {"support desk", "policies"}
