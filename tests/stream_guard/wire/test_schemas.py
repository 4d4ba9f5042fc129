"""The published JSON Schemas: generated from the code, committed, and true of what the guard emits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import msgspec
import orjson

from stream_guard.wire.metrics_summary import LatencyStats
import pytest

from stream_guard.ops.alerting import LatencyBudgetMonitor
from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.deadletter import Source, error_headers, without_value
from stream_guard.wire.events import EventError, decode_event
from stream_guard.engine.judging import judge_payloads
from stream_guard.ops.latency import LatencyRegistry
from stream_guard.engine.pipeline import Guard
from stream_guard.wire.schemas import PUBLISHED, by_name, main, schema, stale
from stream_guard.wire.verdict import decode_verdict
from labelled_data import DATA, SAMPLE, labelled

REPO = Path(__file__).resolve().parents[3]
SCHEMAS = REPO / "schemas"


def validator(name: str, strict: bool = True) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(by_name(name), strict=strict),
                                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def test_the_committed_schema_files_are_what_the_code_generates():
    assert stale(SCHEMAS) == [], "run `make schemas` (python -m stream_guard.wire.schemas) and commit schemas/"
    for published in PUBLISHED:
        document = json.loads((SCHEMAS / published.filename).read_text())
        jsonschema.Draft202012Validator.check_schema(document)
        assert document["$id"].endswith(published.filename)


def test_check_mode_names_a_file_that_differs(tmp_path, capsys):
    shutil.copytree(SCHEMAS, tmp_path / "schemas")
    assert main(["--check", "--out", str(tmp_path / "schemas")]) == 0
    target = tmp_path / "schemas" / "verdict.v3.schema.json"
    target.write_text(target.read_text().replace('"flagged"', '"flaged"'))
    assert main(["--check", "--out", str(tmp_path / "schemas")]) == 1
    assert "verdict.v3.schema.json differs" in capsys.readouterr().err
    assert main(["--out", str(tmp_path / "schemas")]) == 0 and stale(tmp_path / "schemas") == []


@pytest.fixture(scope="module")
def judged():
    guard = Guard(DetectorConfig(ner="regex", log_flagged=False))
    lines = [line for line in (REPO / "stream_guard" / "samples" / "demo.jsonl").read_bytes().splitlines()
             if line.strip()]
    lines += labelled("ragtruth_dev").read_bytes().splitlines()[:60]
    lines += labelled("ragtruth_d2t_dev").read_bytes().splitlines()[:30]
    return judge_payloads(guard, lines, {}, now_ms=1_700_000_000_000).items


def test_every_verdict_and_alert_validates_against_the_strict_schemas(judged):
    verdicts, alerts = validator("verdict"), validator("alert")
    seen_alert_kinds = set()
    for item in judged:
        if item.verdict is None:
            continue
        body = orjson.loads(item.verdict)
        verdicts.validate(body)
        assert decode_verdict(item.verdict).to_json() == item.verdict  # the Struct reads back what it wrote
        for alert in item.alerts:
            alerts.validate(orjson.loads(alert.to_json()))
            seen_alert_kinds.add(alert.kind)
    assert sum(item.ok for item in judged) >= 14 and "critical_risk" in seen_alert_kinds


def test_an_undeclared_details_key_fails_the_strict_schema_but_not_the_published_one(judged):
    body = orjson.loads(next(item.verdict for item in judged if item.verdict))
    body["checks"]["faithfulness"]["details"]["new_feature"] = 0.5
    assert not validator("verdict", strict=True).is_valid(body)
    assert validator("verdict", strict=False).is_valid(body)
    body["checks"]["faithfulness"]["unknown_field"] = 1  # outside details everything is closed
    assert not validator("verdict", strict=False).is_valid(body)


def test_verdict_v3_uses_epoch_millisecond_names_and_always_carries_its_provenance_and_reason(judged):
    body = orjson.loads(next(item.verdict for item in judged if item.verdict))
    assert body["version"] == 3 and "produced_at" not in body
    assert {"model", "produced_at_ms", "label", "metadata", "reason"} <= set(body)


def test_the_previous_verdict_schema_stays_for_the_consumers_still_reading_it():
    assert (SCHEMAS / "verdict.v2.schema.json").exists()


def test_latency_alerts_and_metrics_summaries_validate():
    alert = LatencyBudgetMonitor(10.0, min_samples=1).check("rag.answers", 0, LatencyStats(5, 20.0, 40.0, 50.0, 60.0, 25.0),
                                                            now_ms=1_000, worker="w", window_s=60.0,
                                                            ignored={"too_old": 1})
    assert alert is not None
    validator("alert").validate(orjson.loads(alert.to_json()))
    registry = LatencyRegistry()
    registry.observe("rag.answers", 0, 2.0, 12.0, "accept")
    registry.observe("guard-answers-repartition", 1, 2.0, None, "discard")
    registry.set_lag("rag.answers", 0, 3)
    for summary in registry.summaries(worker="w", at_ms=5, interval_s=10.0):
        validator("metrics-summary").validate(orjson.loads(summary.to_json()))


def _header_object(headers):
    return {name: value.decode("utf-8") for name, value in headers}


def test_dead_letter_error_headers_validate():
    source = Source("rag.answers", 1, 7, 1_700_000_000_000)
    checker = validator("dead-letter")
    for error in (
        error_headers(stage="decode", error_field="answer", reason="is required", source=source, failed_at_ms=9),
        error_headers(stage="timeout", error_field="$", reason="over", source=source, failed_at_ms=9, cost_ms=300.0,
                      event_id="e1", worker="w"),
        without_value(b"x" * 100, error_headers(stage="judge", error_field="$", reason="bug", source=source,
                                                failed_at_ms=9, exception_class="builtins.KeyError")),
    ):
        checker.validate({**_header_object(error.to_headers()), "traceparent": "00-...", "other": "kept"})
    assert not checker.is_valid({"sg-dlt-stage": "decode"})  # the required error headers are missing


# --- the event contract: the schema agrees with the decoder --------------------------------------------------

GOOD = [
    {"event_id": "e1", "answer": "Yes."},
    {"event_id": "e", "answer": ""},  # judged: nothing to deliver (fallback, with the reason)
    {"event_id": "e", "answer": "   "},
    {"id": 7, "answer": "Yes.", "context": "one chunk", "produced_at": 1_700_000_000_000},
    {"event_id": "e2", "tenant": "acme", "question": "Q?", "answer": "A.", "citations": ["c1", 2, {"id": "c1"}],
     "context": ["plain", {"id": "c1", "text": "t", "source": "kb://1"}, {"text": "no id"}],
     "model": "m", "produced_at": "2026-11-22T10:15:00Z", "label": 1, "metadata": {"a": [1, {"b": None}]},
     "extra": "ignored"},
    {"event_id": "e3", "answer": "A.", "label": True, "metadata": None, "tenant": None},
]
BAD_TYPES = [
    {"answer": "no id"},
    {"event_id": None, "answer": "null id"},
    {"event_id": "e", "answer": 5},
    {"event_id": "e", "answer": "a", "context": 5},
    {"event_id": "e", "answer": "a", "context": [{"id": "x"}]},
    {"event_id": "e", "answer": "a", "context": [{"text": 3}]},
    {"event_id": "e", "answer": "a", "citations": "c1"},
    {"event_id": "e", "answer": "a", "citations": [True]},
    {"event_id": "e", "answer": "a", "produced_at": True},
    {"event_id": "e", "answer": "a", "produced_at": -1},
    {"event_id": "e", "answer": "a", "label": 2},
    {"event_id": "e", "answer": "a", "metadata": []},
    {"event_id": "e", "answer": "a", "model": 3},
    {"event_id": "e", "answer": "a" * 20_001},
    {"event_id": "e", "answer": "a", "context": ["c"] * 51},
    {"event_id": "", "answer": "a"},
    [{"event_id": "e", "answer": "a"}],
]


@pytest.mark.parametrize("event", GOOD)
def test_events_the_decoder_accepts_the_schema_accepts(event):
    decode_event(orjson.dumps(event))
    validator("answer-event").validate(event)


@pytest.mark.parametrize("event", BAD_TYPES)
def test_events_the_schema_refuses_the_decoder_refuses(event):
    assert not validator("answer-event").is_valid(event)
    with pytest.raises(EventError):
        decode_event(orjson.dumps(event))


def test_every_labelled_event_validates():
    checker = validator("answer-event")
    for path in [SAMPLE, *sorted(DATA.glob("*.jsonl"))]:
        for line in path.read_bytes().splitlines()[:300]:
            if line.strip():
                decode_event(line)
                checker.validate(orjson.loads(line))


def test_a_verdict_that_breaks_its_shape_is_refused_when_read_back(judged):
    body = orjson.loads(next(item.verdict for item in judged if item.verdict))
    body["routing"] = "maybe"
    with pytest.raises(msgspec.ValidationError, match="routing"):
        decode_verdict(orjson.dumps(body))
