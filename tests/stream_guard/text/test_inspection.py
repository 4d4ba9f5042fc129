"""Inspection copies: `with_answer` and `with_entities` build what `dataclasses.replace` builds, and carry over
only the views that still hold."""

from __future__ import annotations

import dataclasses

import pytest

from stream_guard.text.inspection import CONTEXT_VIEWS, Entity, Inspection

_CASES = [
    ("What is the refund window?", ["Refunds are accepted within 14 days of purchase."],
     "You can return any item within 30 days of purchase for a full refund."),
    ("Is there parking?", ['{"name": "Cafe Uno", "parking": "no", "wifi": "free"}', "Reviews praise the coffee."],
     "Cafe Uno has free parking and free wifi."),
    ("", [], "An answer with no question and no context."),
]

_ANSWER_VIEWS = ("answer_markup", "answer_sentences", "answer_sentence_spans")


def _fields(inspection: Inspection) -> dict[str, object]:
    return {f.name: getattr(inspection, f.name) for f in dataclasses.fields(inspection)}


@pytest.mark.parametrize("question, context, answer", _CASES)
def test_with_answer_is_replace_with_the_context_views_and_the_memo(question, context, answer) -> None:
    entities = (Entity("Cafe Uno", "ORG", 0, 8),)
    original = Inspection.build(question, context, answer, citations=("1",), tenant="t", answer_entities=entities)
    original.analysed()
    for name in _ANSWER_VIEWS:
        getattr(original, name)
    original.memo[("kept", 1)] = "value"

    copy = original.with_answer("A repaired answer. It keeps one sentence.")
    expected = dataclasses.replace(original, answer="A repaired answer. It keeps one sentence.", answer_entities=None)
    assert type(copy) is Inspection
    assert _fields(copy) == _fields(expected)
    assert copy == expected
    assert copy.memo is original.memo  # the re-inspections of one event share it
    for name in (*CONTEXT_VIEWS, "context"):
        if name in original.__dict__:
            assert copy.__dict__[name] is original.__dict__[name]
    assert "context" in copy.__dict__
    for name in _ANSWER_VIEWS:  # read again for the new answer, never the old answer's
        assert name not in copy.__dict__
    assert copy.answer_sentences == expected.answer_sentences
    assert copy.answer_markup == expected.answer_markup
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.answer = "changed"  # type: ignore[misc]


@pytest.mark.parametrize("question, context, answer", _CASES)
def test_with_entities_is_replace_keeping_every_view(question, context, answer) -> None:
    original = Inspection.build(question, context, answer)
    original.analysed()
    sentences = original.answer_sentences
    entities = (Entity("Cafe Uno", "ORG"),)

    copy = original.with_entities(entities)
    assert _fields(copy) == _fields(dataclasses.replace(original, answer_entities=entities))
    assert copy.answer_entities == entities and original.answer_entities is None
    assert copy.memo is original.memo
    assert copy.__dict__["answer_sentences"] is sentences
    assert copy.context is original.context
