"""Sentences of an answer that arrives in pieces, and the check each one gets against the context."""

from __future__ import annotations

import random

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.incremental import SentenceBuffer, check_sentences, decode_header, open_stream
from stream_guard.engine.pipeline import Guard
from stream_guard.text.sentences import split_sentences
from stream_guard.wire.events import EventError

ANSWERS = [
    "Thanks for reaching out! Refunds are accepted within 14 days. Contact Dr. Liu at Acme Corp. for details.",
    "It costs $49.99 today. He lives in the U.S. Thereafter he moved... really? Yes!",
    "Steps:\n1. Open settings.\n2. Click reset.\n\nDone. The link expires after 24 hours.",
    "Based on the passages, here is how: 1. Place the box. 2. Remove the block and wait 24 hours. 3. Smoke it.",
    "No punctuation at all in this one",
]


def _feed(answer: str, cuts: list[int]) -> tuple[SentenceBuffer, list]:
    buffer, pieces, start = SentenceBuffer(), [], 0
    for cut in sorted(cuts) + [len(answer)]:
        pieces += buffer.feed(answer[start:cut])
        start = cut
    return buffer, pieces + buffer.finish()


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("seed", range(5))
def test_sentences_released_in_pieces_are_the_sentences_of_the_whole_answer(answer: str, seed: int) -> None:
    rng = random.Random(seed)
    buffer, pieces = _feed(answer, [rng.randrange(len(answer)) for _ in range(len(answer) // 4)])
    assert [p.sentence for p in pieces] == split_sentences(answer)
    assert "".join(p.raw for p in pieces) == answer == buffer.answer
    assert [p.end for p in pieces] == [sum(len(q.raw) for q in pieces[:i + 1]) for i in range(len(pieces))]
    assert [p.index for p in pieces] == list(range(len(pieces)))


@given(st.lists(st.sampled_from(["Yes.", "No!", "Dr.", "Liu", "1.", "2.", "$4.", "99", "U.S.", "The", "the", "\n",
                                 " ", "  ", "end?", "a)", "b)"]), max_size=30), st.randoms())
def test_pieces_always_join_to_the_answer(words: list[str], rng: random.Random) -> None:
    answer = " ".join(words)
    if not answer.strip():
        return  # nothing to release: the decoder refuses a blank answer
    _, pieces = _feed(answer, [rng.randrange(len(answer)) for _ in range(5)])
    assert "".join(p.raw for p in pieces) == answer


def test_a_sentence_is_complete_only_once_the_next_word_is_whole() -> None:
    buffer = SentenceBuffer()
    assert buffer.feed("Call Dr.") == [] and buffer.feed(" Li") == []
    assert buffer.feed("u today. The") == []  # "The" may still become "Thereafter"
    (piece,) = buffer.feed(" office")
    assert piece.sentence == "Call Dr. Liu today." and piece.raw == "Call Dr. Liu today. "


def test_a_list_marker_waits_for_its_item() -> None:
    buffer = SentenceBuffer()
    pieces = buffer.feed("Do this: 1. Open it. ") + buffer.feed("2. Close it. Then") + buffer.finish()
    assert all(p.sentence not in ("1.", "2.") for p in pieces)
    assert "1. Open it." in [p.sentence for p in pieces]


HEADER = orjson.dumps({
    "event_id": "s1", "tenant": "support", "question": "How do I get a refund for my order?",
    "context": ["Refunds are accepted within 14 days of purchase with the original receipt. Refunds go back to "
                "the original payment method within 5 business days.",
                "Store credit is offered after 14 days. Items must be unused and in their original packaging."]})


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard(DetectorConfig(ner="regex"), quality_latency_ms=0.0)


def test_each_sentence_is_released_repaired_or_withheld_against_the_context(guard: Guard) -> None:
    answer = ("Thanks for reaching out! Refunds are accepted within 14 days of purchase with the original receipt. "
              "The refund goes back to your original payment method within 30 business days. Our CEO Dr. Hans "
              "Gruber at Nakatomi Corp. approves every refund personally.")
    assert open_stream(guard, "t1", HEADER) is None
    _, pieces = _feed(answer, [])
    out = check_sentences(guard, "t1", HEADER, pieces)
    assert [o.status for o in out[:2]] == ["released", "released"]
    assert out[1].text == pieces[1].raw
    assert out[2].status == "repaired" and "5 business days" in out[2].text and "30" in (out[2].original or "")
    assert "contradiction" in (out[2].reason or "") and out[2].strategy == "contradiction_patch"
    assert out[3].status == "withheld" and out[3].text == "" and "Hans Gruber" in (out[3].reason or "")
    assert [o.end for o in out] == [p.end for p in pieces]


def test_a_stream_whose_first_line_breaks_the_contract_says_where(guard: Guard) -> None:
    assert open_stream(guard, "t2", b'{"event_id": "x", "context": 3}') == {
        "field": "context", "reason": "must be a list of chunks or a string, got int"}
    with pytest.raises(EventError, match="answer: must not be in the first line"):
        decode_header(b'{"event_id": "x", "answer": "a"}', guard.config.limits)
    assert open_stream(guard, "t3", b"[1]")["field"] == "$"  # type: ignore[index]
