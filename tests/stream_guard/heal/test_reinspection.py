"""A repair's re-inspection re-checks only the sentences the repair changed (the event's memo, shared through
`Inspection.with_answer`, holds what each kept sentence was found to be): its report must be the report a fresh
inspection of the repaired answer gives, whatever the repair kept, dropped, reordered or changed."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from labelled_data import labelled
from verdicts import without_timings

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.detector import HallucinationDetector
from stream_guard.text.inspection import Inspection
from stream_guard.text.sentences import split_sentences


@lru_cache(maxsize=1)
def events() -> list[dict[str, Any]]:
    """Labelled events whose answers have at least two sentences (the shipped sample from a fresh clone)."""
    out = []
    for name in ("ragtruth_dev", "ragtruth_d2t_dev"):
        for line in labelled(name).read_bytes().splitlines()[:120]:
            event = orjson.loads(line)
            if len(split_sentences(event["answer"])) >= 2:
                out.append(event)
    return out


@lru_cache(maxsize=1)
def detector() -> HallucinationDetector:
    return HallucinationDetector(DetectorConfig(ner="regex", db_path=":memory:", log_flagged=False))


_NUMBER_RE = re.compile(r"\d+")
# What a repair does to a sentence it keeps but changes: a figure, a negation, a word the context lacks.
_EDITS = (
    lambda s: _NUMBER_RE.sub(lambda m: str(int(m.group()) + 7), s, count=1),
    lambda s: re.sub(r"\b(is|are|was|were|can|will)\b", r"\1 not", s, count=1),
    lambda s: s.rstrip(".") + " in Paris since 1999.",
)


def report_of(inspection: Inspection) -> dict[str, Any]:
    return without_timings(detector().analyze(inspection).to_dict())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_reinspection_equals_a_fresh_inspection(data: st.DataObject) -> None:
    event = data.draw(st.sampled_from(events()))
    sentences = split_sentences(event["answer"])
    kept = data.draw(st.lists(st.sampled_from(range(len(sentences))), min_size=1, max_size=len(sentences) + 1))
    repair = [sentences[i] for i in kept]
    for position, edit in data.draw(st.lists(st.tuples(st.integers(0, len(repair) - 1), st.sampled_from(_EDITS)),
                                             max_size=2)):
        repair[position] = edit(repair[position])
    text = " ".join(repair)
    original = Inspection.build(event["question"], event["context"], event["answer"])
    report_of(original)  # the event's own inspection: fills the memo its repairs share
    incremental = report_of(original.with_answer(text))
    assert incremental == report_of(Inspection.build(event["question"], event["context"], text))
    # and again, once the memo holds the repair's sentences too
    assert report_of(original.with_answer(text)) == incremental
