"""One worker against a real broker: verdicts, routing, alerts and their dedupe, dead letters, metrics, CLI.

The tests share one worker (module scope) and tell their events apart by event_id; each waits for its own
records on the output topics.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import orjson
import pytest

from in_process import stream_guard
from stream_guard.agents.cli import demo_events_path
from stream_guard.agents.topics import ensure_topics
from stream_guard.config.load import build_config
from stream_guard.wire.events import EventError, decode_event
from stream_guard.engine.pipeline import Guard
from stream_guard.text.questions import question_hash

from streamkit import REPO, Names, Worker, event, produce, read_json, read_records, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def guarded(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Names, Worker]]:
    names = Names(kafka_bootstrap)
    asyncio.run(ensure_topics(names.settings()))
    tmp = tmp_path_factory.mktemp("guarded")
    # A budget nobody meets, so the latency alert path runs too.
    worker = Worker(names, tmp / "data", tmp / "worker.log", name="w1",
                    extra_env={"STREAM_GUARD_LATENCY_BUDGET_MS": "0.001", "STREAM_GUARD_LATENCY_MIN_SAMPLES": "3"})
    worker.start().wait_ready()
    yield names, worker
    assert worker.stop() == 0, worker.log_tail()


def by_event(records: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [r for r in records if str(r.get("event_id", "")).startswith(prefix)]


def offline_routing(lines: list[bytes]) -> dict[str, str]:
    """What `stream-guard check` decides for the same events in the same order: the streaming path must agree."""
    guard = Guard(build_config(None, None, "regex"))
    histories: dict[str, list[Any]] = {}
    out = {}
    for line in lines:
        try:
            answer = decode_event(line)
        except EventError:
            continue
        key = question_hash(answer.tenant, answer.question)
        (verdict,), updated = guard.evaluate_batch([answer], {key: histories.get(key, [])})
        histories.update(updated)
        out[verdict.event_id] = verdict.routing
    return out


def cli(names: Names, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **names.env()}
    return subprocess.run([sys.executable, "-m", "stream_guard.agents", *args, "--broker", names.broker], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_every_event_gets_exactly_one_verdict_with_the_offline_routing(guarded: tuple[Names, Worker]) -> None:
    names, worker = guarded
    path = demo_events_path()
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    expected = offline_routing(lines)
    assert len(expected) >= 12 and len(set(expected.values())) >= 3  # accept, healed_accept, discard at least

    produced = cli(names, "produce", str(path))
    assert produced.returncode == 0, produced.stderr
    assert f"sent {len(lines)} events" in produced.stdout

    verdicts = wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "demo-")) >= len(expected))
    time.sleep(1.0)  # anything extra (a duplicate) would arrive now
    mine = by_event(read_json(names, names.topics.verdicts, until=10**9, timeout=1.0), "demo-")
    assert sorted(v["event_id"] for v in mine) == sorted(expected)  # exactly N, no duplicates
    assert {v["event_id"]: v["routing"] for v in mine} == expected
    for v in mine:
        assert v["question_hash"] == question_hash(v["tenant"], v["question"])

    # The two bad demo lines went to the dead-letter topic, not into a verdict.
    dead = wait_for(names, names.topics.dlq, lambda rs: len([r for r in rs if "demo-bad" in
                                                              str(r.get("value"))]) >= 2)
    reasons = {r["field"] for r in dead if "demo-bad" in str(r.get("value"))}
    assert reasons == {"$", "answer"}

    tail = cli(names, "tail", "verdicts", "--from-beginning", "--max", str(len(verdicts)), "--format", "pretty")
    assert tail.returncode == 0, tail.stderr
    shown = tail.stdout.splitlines()
    assert len(shown) == len(verdicts)
    # A repair is shown as what changed: a value patched in place (demo-03) or the rewrite from the sources.
    assert any(line.startswith("✚ HEALED") and "'$10' → '$120'" in line for line in shown)
    assert any(line.startswith("✚ HEALED") and "(grounding_rewrite)" in line for line in shown)
    assert any(line.startswith("✔ ACCEPT") for line in shown)


def test_a_pretty_printed_json_array_is_produced_as_events_and_a_misspelt_field_is_counted(
        guarded: tuple[Names, Worker], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    names, worker = guarded
    grounded = orjson.loads(event("arr-1", "How long do refunds take?", ["Refunds take 5 business days."],
                                  "Refunds take 5 business days."))
    misspelt = {**grounded, "event_id": "arr-2", "contexts": grounded["context"]}
    del misspelt["context"]
    path = tmp_path / "events.json"
    path.write_bytes(orjson.dumps([grounded, misspelt], option=orjson.OPT_INDENT_2))

    # `produce` through its entry function in this process (the test above runs it as a real process).
    for name, value in names.env().items():
        monkeypatch.setenv(name, value)
    produced = stream_guard(capsys, "produce", str(path), "--broker", names.broker)
    assert produced.returncode == 0, produced.stderr
    assert f"read 2 events from {path} (a JSON array)" in produced.stdout and "sent 2 events" in produced.stdout
    verdicts = wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "arr-")) >= 2)
    routing = {v["event_id"]: v["routing"] for v in by_event(verdicts, "arr-")}
    assert routing["arr-1"] == "accept" and routing["arr-2"] != "accept"  # judged without its context
    deadline = time.monotonic() + 30
    while not (counted := worker.series("stream_guard_unknown_fields_total", field="contexts")):
        assert time.monotonic() < deadline, worker.log_tail()
        time.sleep(0.5)
    assert counted[0][1] >= 1
    assert "'contexts': it is not a field of the event contract; did you mean `context`?" in worker.log_path.read_text()


SKU_Q = "What is the price of SKU-441?"
SKU_CTX = ["SKU-441 (wireless headset) is priced at $49.99.", "Free shipping applies to orders over $35."]


def test_state_follows_the_question_however_the_producer_keyed_its_events(guarded: tuple[Names, Worker]) -> None:
    """Keyed by question hash: judged where it lands. Unkeyed, keyed by something else, or keyed by another
    question's hash: re-keyed first. Either way one question's events meet the same drift history."""
    names, _ = guarded
    right = question_hash("keys", SKU_Q).encode()
    consistent = ["SKU-441 costs $49.99.", "The wireless headset SKU-441 is priced at $49.99.",
                  "SKU-441 is $49.99.", "SKU-441 costs $49.99."]
    keys = [None, b"user-17", question_hash("keys", "Who ships SKU-441?").encode(), right]
    produce(names, [event(f"rk-{i}", SKU_Q, SKU_CTX, a, tenant="keys") for i, a in enumerate(consistent)],
            keys=keys)
    verdicts = wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "rk-")) >= 4)
    assert not any(v["checks"]["drift"]["flagged"] for v in by_event(verdicts, "rk-"))

    produce(names, [event("rk-drift", SKU_Q, SKU_CTX, "SKU-441 now costs $39.99 after the spring discount.",
                          tenant="keys")], keys=[right])
    verdicts = wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "rk-drift")) >= 1)
    [drifted] = by_event(verdicts, "rk-drift")
    assert drifted["checks"]["drift"]["flagged"], drifted["checks"]["drift"]

    # Only the events that needed it took the extra hop through the re-keyed topic.
    copies = read_json(names, names.settings().by_question_topic, until=10**9, timeout=2.0)
    assert sorted(c["event_id"] for c in by_event(copies, "rk-")) == ["rk-0", "rk-1", "rk-2"]


def test_contradiction_alerts_once_even_when_replayed(guarded: tuple[Names, Worker]) -> None:
    names, worker = guarded
    payload = event("cx-1", "What is the refund window for headphones?",
                    ["Headphones can be returned within 14 days of delivery."],
                    "Headphones can be returned within 30 days of delivery.")
    produce(names, [payload])
    wait_for(names, names.topics.alerts, lambda rs: len(by_event(rs, "cx-1")) >= 1)
    [verdict] = wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "cx-1")) >= 1) and \
        by_event(read_json(names, names.topics.verdicts, until=10**9, timeout=1.0), "cx-1")
    assert verdict["risk"] == "critical" and "contradiction" in verdict["triggered"]

    produce(names, [payload])  # the producer retried, or someone replayed the topic
    wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "cx-1")) >= 2)
    time.sleep(1.5)
    alerts = by_event(read_json(names, names.topics.alerts, until=10**9, timeout=1.0), "cx-1")
    assert [a["kind"] for a in alerts] == ["critical_risk"]
    alert = alerts[0]
    assert alert["severity"] == "critical" and alert["tenant"] == "support"
    assert alert["question_hash"] == verdict["question_hash"] and alert["alert_id"]
    assert alert["evidence"]["statements"] and "summary" in alert
    assert 'stream_guard_alerts_suppressed_total{kind="critical_risk"}' in worker.metrics()


def test_bad_messages_are_dead_lettered_and_the_worker_keeps_going(guarded: tuple[Names, Worker]) -> None:
    names, worker = guarded
    bad = {
        "malformed": b'{"event_id": "bad-json", "answer": ',
        "missing": orjson.dumps({"event_id": "bad-missing", "question": "q?"}),
        "wrong-type": orjson.dumps({"event_id": "bad-type", "answer": 42}),
        "huge": orjson.dumps({"event_id": "bad-huge", "answer": "word " * 1_000_000}),  # 5 MB
        "utf8": b'{"event_id": "bad-utf8", "answer": "caf\xe9"}',
        "not-object": b'["an", "array"]',
    }
    good = event("after-bad", "How do I reset my password?",
                 ["Open Settings, choose Security and click Reset password."],
                 "Open Settings, choose Security and click Reset password.")
    produce(names, [*bad.values(), good])

    wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "after-bad")) == 1)
    assert worker.proc is not None and worker.proc.poll() is None

    def original(record: dict[str, Any]) -> bytes:
        text = str(record.get("value", ""))
        return base64.b64decode(text) if record.get("value_encoding") == "base64" else text.encode()

    # This test's own dead letters, by their exact original bytes: the module's other tests dead-letter payloads
    # of their own ("demo-bad-1"), which a looser match counted in place of the 5 MB one still on its way.
    def mine(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        sent = set(bad.values())
        return [r for r in records if r["original_topic"] == names.topics.answers and original(r) in sent]

    dead = wait_for(names, names.topics.dlq, lambda rs: {original(r) for r in mine(rs)} == set(bad.values()))
    by_reason = {r["reason"]: r for r in mine(dead)}
    reasons = " | ".join(by_reason)
    assert "not valid JSON" in reasons
    assert "is required" in reasons
    assert "must be a string, got int" in reasons
    assert "over the limit of" in reasons
    assert "not valid UTF-8" in reasons
    assert "must be a JSON object" in reasons
    # The original value, whole: the 5 MB answer too (no cut, no wrapping), the bytes that were not UTF-8 too.
    huge = next(r for reason, r in by_reason.items() if "bytes, over the limit" in reason)
    assert huge["value_bytes"] == len(bad["huge"]) and huge["value"] == bad["huge"].decode()
    utf8 = next(r for reason, r in by_reason.items() if "UTF-8" in reason)
    assert utf8["value_encoding"] == "base64" and base64.b64decode(utf8["value"]) == bad["utf8"]
    for record in mine(dead):
        assert record["stage"] == "decode" and record["worker"] == "w1"
        assert {"original_partition", "original_offset", "original_timestamp_ms", "failed_at_ms"} <= set(record)


def test_metrics_are_served_and_published_and_the_budget_alert_fires_once(guarded: tuple[Names, Worker]) -> None:
    names, worker = guarded
    parser = pytest.importorskip("prometheus_client.parser")
    produce(names, [event(f"m-{i}", f"Question number {i}?", ["Context sentence."], "Context sentence.")
                    for i in range(12)])
    wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "m-")) == 12)
    time.sleep(2.5)  # two metrics intervals

    status, _ = worker.get("/healthz")
    assert status == 200
    # prometheus_client's own parser reads the whole page; the latencies are real histograms.
    families = {f.name: f for f in parser.text_string_to_metric_families(worker.metrics())}
    for name in ("stream_guard_processing_seconds", "stream_guard_end_to_end_seconds",
                 "stream_guard_hallucination_score"):
        family = families[name]
        assert family.type == "histogram", name
        buckets = [s for s in family.samples if s.name.endswith("_bucket")]
        assert buckets and any(s.labels["le"] == "+Inf" for s in buckets)
    e2e = families["stream_guard_end_to_end_seconds"]
    assert sum(s.value for s in e2e.samples if s.name.endswith("_count")) >= 12
    assert {"topic", "partition"} <= set(e2e.samples[0].labels)
    score_count = next(s for s in families["stream_guard_hallucination_score"].samples if s.name.endswith("_count"))
    assert score_count.value >= 12
    routed = {s.labels["routing"] for s in families["stream_guard_verdicts"].samples}
    assert "accept" in routed
    assert "stream_guard_latency_recent_seconds" not in families  # no gauges with a quantile label
    lag_topics = {s.labels["topic"] for s in families["stream_guard_consumer_lag"].samples}
    assert lag_topics == {names.topics.answers, names.settings().by_question_topic}
    # Build, process and Python; Kafka as Faust and aiokafka see it; the judge child's own process figures.
    [build] = families["stream_guard_build_info"].samples
    assert build.labels["version"] and build.labels["faust_streaming"] == "0.15.3" and build.value == 1
    for name in ("process_cpu_seconds", "process_resident_memory_bytes", "python_info", "python_gc_objects_collected",
                 "stream_guard_judge_process_cpu_seconds", "stream_guard_kafka_rebalances",
                 "stream_guard_kafka_commit_seconds", "stream_guard_kafka_send_errors", "stream_guard_checks_flagged",
                 "stream_guard_dead_letters", "stream_guard_judge_replaced", "stream_guard_rocksdb_memory_bytes",
                 "stream_guard_rocksdb_memory_limit_bytes"):
        assert name in families, name
    assert next(s for s in families["stream_guard_kafka_rebalances"].samples).value >= 1
    # The tables' RocksDB memory: the histories just written sit in memtables, held to the configured budgets.
    settings = names.settings()
    rocksdb = {s.labels["kind"]: s.value for s in families["stream_guard_rocksdb_memory_bytes"].samples}
    budget = {s.labels["kind"]: s.value for s in families["stream_guard_rocksdb_memory_limit_bytes"].samples}
    assert budget == {"block_cache": settings.rocksdb_block_cache_bytes, "memtables": settings.rocksdb_memtable_bytes}
    assert rocksdb["memtables"] > 0 and 0 <= rocksdb["block_cache"] <= budget["block_cache"]
    commits = next(s for s in families["stream_guard_kafka_commit_seconds"].samples if s.name.endswith("_count"))
    assert commits.value >= 1

    summaries = read_json(names, names.topics.metrics, until=10**9, timeout=2.0)
    assert summaries and all(s["kind"] == "partition_latency" and s["version"] == 2 for s in summaries)
    assert any(s["recent"]["end_to_end_ms"].get("p99") for s in summaries)

    latency = [a for a in read_json(names, names.topics.alerts, until=10**9, timeout=1.0)
               if a["kind"] == "latency_budget"]
    assert latency, "the 0.001 ms budget must have been breached"
    per_partition = [a["evidence"]["partition"] for a in latency]
    assert len(per_partition) == len(set(per_partition))  # once per breach, not once per interval


TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_the_trace_context_comes_back_on_the_verdict_and_alert_by_either_path(guarded: tuple[Names, Worker]) -> None:
    """An event keyed by its question hash is judged where it lands; an unkeyed one goes through the re-keyed
    topic first. Either way its traceparent and tracestate come back on its verdict and alerts, with what the
    record is and which event it is about."""
    names, _ = guarded
    question = "What is the refund window for earbuds?"
    context = ["Earbuds can be returned within 14 days of delivery."]
    traces = {"tr-keyed": TRACE, "tr-rekeyed": TRACE.replace("00f067aa", "11f067aa")}
    payloads = [event(eid, question, context, "Earbuds can be returned within 30 days of delivery.",
                      tenant=f"trace-{eid}") for eid in traces]
    keys = [question_hash("trace-tr-keyed", question).encode(), None]
    headers = [[("traceparent", traces[eid].encode()), ("tracestate", b"vendor=abc"), ("app", b"rag-7")]
               for eid in traces]
    produce(names, payloads, keys=keys, headers=headers)
    wait_for(names, names.topics.alerts, lambda rs: len(by_event(rs, "tr-")) >= 2)
    for topic in (names.topics.verdicts, names.topics.alerts):
        records = [r for r in read_records(names, topic, until=10**9, timeout=2.0)
                   if orjson.loads(r.value).get("event_id") in traces]
        assert len(records) == 2, topic
        for record in records:
            body = orjson.loads(record.value)
            got = dict(record.headers)
            assert got["traceparent"] == traces[body["event_id"]].encode()
            assert got["tracestate"] == b"vendor=abc"
            assert got["sg-event-id"] == body["event_id"].encode()
            assert got["content-type"] == b"application/json"
            assert got["sg-schema-version"] == str(body["version"]).encode()
    # The unkeyed one really took the hop, and its copy kept the producer's headers.
    copies = [r for r in read_records(names, names.settings().by_question_topic, until=10**9, timeout=2.0)
              if b"tr-rekeyed" in r.value]
    assert copies and dict(copies[0].headers)["traceparent"] == traces["tr-rekeyed"].encode()
    assert dict(copies[0].headers)["app"] == b"rag-7"


def test_an_invalid_traceparent_is_not_passed_on(guarded: tuple[Names, Worker]) -> None:
    names, _ = guarded
    produce(names, [event("tr-bad", "Is the lounge open on Sundays?", ["The lounge is open every day."],
                          "The lounge is open every day.")],
            headers=[[("traceparent", b"00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
                      ("tracestate", b"vendor=abc")]])
    wait_for(names, names.topics.verdicts, lambda rs: len(by_event(rs, "tr-bad")) >= 1)
    [record] = [r for r in read_records(names, names.topics.verdicts, until=10**9, timeout=2.0)
                if b'"tr-bad"' in r.value]
    assert "traceparent" not in dict(record.headers) and "tracestate" not in dict(record.headers)
