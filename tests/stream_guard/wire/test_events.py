import base64

import orjson
import pytest
from hypothesis import given, strategies as st

from stream_guard.wire.events import (FIELDS, MAX_UNKNOWN_REPORTED, AnswerEvent, EventError, Limits, decode_event,
                                      parse_event, split_events)


def event(**overrides):
    base = {"event_id": "e1", "question": "How long?", "context": ["Returns within 14 days."], "answer": "14 days."}
    base.update(overrides)
    return base


def test_minimal_event_gets_defaults():
    parsed = parse_event({"event_id": "e1", "answer": "hi"})
    assert parsed == AnswerEvent(event_id="e1", answer="hi")
    assert parsed.tenant == "default" and parsed.question == "" and parsed.context == ()


def test_id_is_accepted_as_alias_for_event_id():
    assert parse_event({"id": "abc", "answer": "x"}).event_id == "abc"


def test_single_string_context_is_one_chunk_and_chunks_get_positional_ids():
    parsed = parse_event(event(context="only chunk"))
    assert [c.text for c in parsed.context] == ["only chunk"]
    assert parsed.context[0].id == "1"


def test_object_chunks_keep_id_and_source():
    parsed = parse_event(event(context=[{"id": "doc-7", "text": "t", "source": "kb://7"}, "plain"]))
    assert (parsed.context[0].id, parsed.context[0].source) == ("doc-7", "kb://7")
    assert parsed.context[1].id == "2"


@pytest.mark.parametrize(
    "payload, field, reason",
    [
        ({"answer": "x"}, "event_id", "required"),
        (event(answer=None), "answer", "required"),
        (event(answer=42), "answer", "must be a string, got int"),
        (event(context=[{"id": "a"}]), "context[0].text", "required"),
        (event(context=[1]), "context[0]", "must be a string or an object"),
        (event(context={"a": 1}), "context", "must be a list"),
        (event(tenant=["x"]), "tenant", "must be a string"),
        (event(label=3), "label", "must be 0 or 1"),
        (event(produced_at="yesterday"), "produced_at", "not ISO-8601"),
        (event(citations="1"), "citations", "must be a list"),
        (event(metadata=[1]), "metadata", "must be an object"),
        (event(context=[{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]), "context[1].id", "duplicates"),
    ],
)
def test_validation_errors_name_field_and_reason(payload, field, reason):
    with pytest.raises(EventError) as err:
        parse_event(payload)
    assert err.value.field == field
    assert reason in err.value.reason


def test_size_limits_reject_instead_of_truncating():
    with pytest.raises(EventError, match="answer: is 11 characters, over the limit of 10"):
        parse_event(event(answer="x" * 11), Limits(max_answer_chars=10))
    with pytest.raises(EventError, match="has 3 chunks, over the limit of 2"):
        parse_event(event(context=["a", "b", "c"]), Limits(max_chunks=2))
    with pytest.raises(EventError, match=r"context\[0\].text: is 6 characters"):
        parse_event(event(context=["abcdef"]), Limits(max_chunk_chars=5))


def test_produced_at_accepts_iso_and_epoch_ms():
    assert parse_event(event(produced_at="2026-01-01T00:00:00Z")).produced_at_ms == 1767225600000
    assert parse_event(event(produced_at=1767225600000)).produced_at_ms == 1767225600000


def test_decode_rejects_invalid_utf8_and_json_and_oversize():
    with pytest.raises(EventError, match="not valid UTF-8"):
        decode_event(b'{"event_id": "\xff"}')
    with pytest.raises(EventError, match="not valid JSON"):
        decode_event(b'{"event_id": ')
    with pytest.raises(EventError, match="over the limit"):
        decode_event(orjson.dumps(event(answer="x" * 5_000_000)))


def test_round_trip_through_to_dict():
    original = parse_event(event(citations=["1"], model="m", produced_at=5, label=1, metadata={"k": "v"}))
    assert parse_event(orjson.loads(orjson.dumps(original.to_dict()))) == original


@given(st.binary(max_size=300))
def test_decoding_arbitrary_bytes_only_ever_raises_event_error(raw):
    try:
        decode_event(raw)
    except EventError as exc:
        assert exc.field and exc.reason


@given(st.dictionaries(st.sampled_from(["event_id", "id", "answer", "context", "question", "tenant",
                                        "citations", "label", "produced_at", "metadata", "model"]),
                       st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                                    max_leaves=8)))
def test_parsing_arbitrary_objects_only_ever_raises_event_error(obj):
    try:
        parse_event(obj)
    except EventError:
        pass


# --- one contract for the worker and `check` (issue: hardening) ----------------------------------------------


@pytest.mark.parametrize("metadata", [[], False, 0, "", True, 1, "chat", [1]])
def test_metadata_that_is_not_an_object_is_refused_whatever_its_truthiness(metadata):
    with pytest.raises(EventError) as caught:
        parse_event(event(metadata=metadata))
    assert caught.value.field == "metadata" and "must be an object" in caught.value.reason


def test_absent_or_null_metadata_is_empty():
    assert parse_event(event()).metadata == {} and parse_event(event(metadata=None)).metadata == {}


def test_metadata_nested_too_deep_for_the_verdict_is_refused_at_the_door():
    # 300 levels: orjson reads it, but could not write it back into the verdict.
    with pytest.raises(EventError, match="metadata: is nested more than 32 levels deep"):
        decode_event(b'{"event_id": "d", "answer": "a", "metadata": ' + b'{"a": ' * 300 + b"1" + b"}" * 300 + b"}")
    parse_event(event(metadata=_nest(31)))  # within the limit
    with pytest.raises(EventError):
        parse_event(event(metadata=_nest(33)))


def _nest(levels):
    value = 1
    for _ in range(levels - 1):
        value = [value]
    return {"k": value}


@pytest.mark.parametrize("answer", ["", "   ", "\n\t"])
def test_an_empty_answer_is_an_event_to_judge_not_an_error(answer):
    # Nothing to deliver is itself a verdict (fallback, with the reason: tests/stream_guard/engine/test_pipeline.py).
    assert parse_event(event(answer=answer)).answer == answer


def test_a_missing_or_non_string_answer_is_still_refused():
    body = event()
    del body["answer"]
    with pytest.raises(EventError, match="answer: is required"):
        parse_event(body)
    with pytest.raises(EventError, match="answer: must be a string"):
        parse_event(event(answer=5))


def test_a_utf8_bom_before_the_json_is_ignored():
    raw = orjson.dumps(event())
    assert decode_event(b"\xef\xbb\xbf" + raw) == decode_event(raw)


@pytest.mark.parametrize(("raw", "reason"), [
    (None, "tombstone"), (b"", "payload is empty"), (b"  \n", "payload is empty"), (123, "must be bytes")])
def test_no_payload_at_all_is_an_event_error_never_a_type_error(raw, reason):
    with pytest.raises(EventError, match=reason):
        decode_event(raw)


def test_the_payload_limit_counts_the_bytes_as_they_arrive():
    limits = Limits(max_event_bytes=100)
    with pytest.raises(EventError, match="over the limit of 100"):
        decode_event(orjson.dumps(event(answer="x" * 200)), limits)
    with pytest.raises(EventError, match="over the limit of 100"):
        decode_event(orjson.dumps(event(answer="x" * 200)).decode(), limits)


@pytest.mark.parametrize(("stray", "meant"), [("contexts", "context"), ("citation", "citations"),
                                              ("Question", "question"), ("tenant_id", "tenant"),
                                              ("produced", "produced_at")])
def test_a_misspelt_field_is_reported_with_the_field_it_meant(stray, meant):
    payload = event()
    payload[stray] = payload.pop(meant, "x")
    assert parse_event(payload).unknown_fields == (stray,)
    with pytest.raises(EventError) as refused:
        parse_event(payload, Limits(strict_fields=True))
    assert refused.value.field == stray
    assert refused.value.reason == f"is not a field of the event contract; did you mean `{meant}`?"


def test_a_required_field_misspelt_says_so():
    payload = event()
    payload["answers"] = payload.pop("answer")
    for limits in (Limits(), Limits(strict_fields=True)):
        with pytest.raises(EventError) as refused:
            parse_event(payload, limits)
        assert str(refused.value) == "answer: is required; the event has `answers`: a misspelling?"


def test_a_stray_field_nothing_like_a_known_one_lists_the_fields_and_many_are_reported_boundedly():
    with pytest.raises(EventError) as refused:
        parse_event(event(zzz=1), Limits(strict_fields=True))
    assert refused.value.reason == f"is not a field of the event contract (the fields are {', '.join(FIELDS)})"
    many = parse_event(event(**{f"x{i}": i for i in range(20)}))
    assert many.unknown_fields == tuple(f"x{i}" for i in range(MAX_UNKNOWN_REPORTED))
    assert parse_event(event()).unknown_fields == () and "unknown_fields" not in parse_event(event()).to_dict()


def test_a_file_of_events_is_read_as_jsonl_a_json_array_or_one_object_and_says_which():
    one, two = event(event_id="a"), event(event_id="b")
    pretty = orjson.dumps([one, two], option=orjson.OPT_INDENT_2)
    assert split_events(pretty) == ("a JSON array", [orjson.dumps(one), orjson.dumps(two)])
    assert split_events(orjson.dumps([one, two])) == ("a JSON array", [orjson.dumps(one), orjson.dumps(two)])
    assert split_events(orjson.dumps(one, option=orjson.OPT_INDENT_2)) == ("a JSON object", [orjson.dumps(one)])
    jsonl = orjson.dumps(one) + b"\r\n\n" + b'{"broken' + b"\n" + orjson.dumps(two) + b"\n"
    assert split_events(jsonl) == ("JSONL", [orjson.dumps(one), b'{"broken', orjson.dumps(two)])
    assert split_events(b"\xef\xbb\xbf" + orjson.dumps(one) + b"\n") == ("JSONL", [orjson.dumps(one)])
    # A file that starts like an array but is not one whole is read line by line (its bad lines dead-lettered).
    assert split_events(b"[1,\n" + orjson.dumps(one)) == ("JSONL", [b"[1,", orjson.dumps(one)])
