import orjson
import pytest

from stream_guard.wire.events import EventError
from stream_guard.wire.labels import Label, decode_label, load_labels, read_labels


def test_a_grade_round_trips_with_its_grader_and_note():
    label = decode_label(b'{"event_id": "e1", "label": 1, "grader": "ana", "note": "wrong refund window"}')
    assert label == Label("e1", 1, "ana", "wrong refund window")
    assert decode_label(orjson.dumps(label.to_dict())) == label


@pytest.mark.parametrize(
    "raw, field, reason",
    [
        (b'{"label": 1}', "event_id", "is required"),
        (b'{"event_id": "e", "label": 2}', "label", "must be 0 (faithful) or 1 (hallucinated), got 2"),
        (b'{"event_id": "e", "label": true}', "label", "must be 0 (faithful) or 1 (hallucinated), got True"),
        (b'{"event_id": "e", "label": 0, "grader": 7}', "grader", "must be a string, got int"),
        (b'[1]', "$", "a label must be a JSON object, got list"),
    ],
)
def test_bad_labels_name_the_field_and_the_reason(raw, field, reason):
    with pytest.raises(EventError) as caught:
        decode_label(raw)
    assert (caught.value.field, caught.value.reason) == (field, reason)


def test_a_file_keeps_the_latest_grade_per_event_and_reports_bad_lines_by_number(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b'{"event_id": "a", "label": 0}\n\n{"event_id": "a", "label": 1}\n{"event_id": "b"}\n')
    items = list(read_labels(path))
    assert [n for n, _ in items] == [1, 3, 4]
    assert isinstance(items[2][1], EventError) and items[2][1].field == "label"
    with pytest.raises(ValueError, match=r"labels.jsonl:4: label: is required"):
        load_labels(path)
    path.write_bytes(b'{"event_id": "a", "label": 0}\n{"event_id": "a", "label": 1}\n')
    assert load_labels(path) == {"a": Label("a", 1)}
