"""Dead letters a stock tool can replay: the original record with the error in headers, and `replay-dlq`
sending it back after a fix, until it gets its verdict. Also: the worker's whole output as JSON."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any, Iterator

import orjson
import pytest

from stream_guard.agents.topics import ensure_topics
from stream_guard.text.questions import question_hash

from streamkit import REPO, Names, Worker, event, produce, read_json, read_records, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]

TRACE = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
QUESTION = "What does the premium plan include?"
CONTEXT = [f"Section {i}. The premium plan includes priority support, a dedicated account manager and "
           f"quarterly reviews; clause {i} covers renewals, refunds and the service level of region {i}. " * 6
           for i in range(40)]


def replay(names: Names, *args: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "stream_guard", "replay-dlq", "--broker", names.broker, *args],
                          cwd=REPO, env={**os.environ, **names.env()}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [orjson.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert lines and lines[-1].get("summary")
    return lines[:-1], lines[-1]


LONG_ANSWER = event("rp-long", QUESTION, ["The premium plan includes priority support."],
                    "The premium plan includes priority support, a dedicated account manager, quarterly "
                    "business reviews and early access to new features.")
SLOW = event("rp-slow", QUESTION, CONTEXT, "The premium plan includes priority support.", tenant="slow")
KEYED = event("kd-1", QUESTION, CONTEXT, "The premium plan includes priority support.", tenant="slow")
KEYED_KEY = question_hash("slow", QUESTION).encode()


@pytest.fixture(scope="module")
def strict(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Names, Worker]]:
    """One worker configured too tightly (answers over 120 characters refused, 1 ms of CPU per event), shared by
    this module's dead-letter tests: each tells its events apart by event_id. The replay test stops it and
    starts the fixed worker on its data directory."""
    names = Names(kafka_bootstrap)
    asyncio.run(ensure_topics(names.settings()))
    tmp = tmp_path_factory.mktemp("strict")
    worker = Worker(names, tmp / "data-strict", tmp / "strict.log", name="strict", extra_env={
        "STREAM_GUARD_LIMITS_MAX_ANSWER_CHARS": "120", "STREAM_GUARD_EVENT_BUDGET_MS": "1"}).start().wait_ready()
    # Keyed by something else than the question hash: refused at intake (rp-long), or re-keyed and stopped
    # over its budget on the internal topic (rp-slow). Keyed by its question hash: judged where it lands and
    # stopped over its budget there (kd-1). Either way the dead letter is the original record.
    produce(names, [LONG_ANSWER, SLOW, KEYED], keys=[b"user-9", b"session-3", KEYED_KEY],
            headers=[[("traceparent", TRACE), ("app", b"rag-7")], [("app", b"rag-8")], None])
    yield names, worker
    if worker.proc is not None and worker.proc.poll() is None:
        assert worker.stop() == 0, worker.log_tail()


def dead_letters_of(names: Names, worker: Worker, predicate: Any) -> list[dict[str, Any]]:
    """The dead-letter topic once `predicate` holds; on a time-out, the strict worker's log says why."""
    try:
        return wait_for(names, names.topics.dlq, predicate, timeout=90)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- the strict worker's log ---\n{worker.log_tail()}") from None


def test_a_keyed_event_judged_where_it_lands_keeps_its_key_in_its_dead_letter(strict: tuple[Names, Worker]) -> None:
    names, worker = strict
    dead_letters = dead_letters_of(names, worker, lambda rs: any(r.get("event_id") == "kd-1" for r in rs))
    [dead] = [r for r in dead_letters if r.get("event_id") == "kd-1"]
    assert dead["stage"] == "timeout" and dead["key"] == KEYED_KEY.decode()
    assert dead["original_topic"] == names.topics.answers


def test_a_dead_letter_is_the_original_record_and_replaying_it_after_a_fix_gets_a_verdict(
        strict: tuple[Names, Worker], workers: list[Worker]) -> None:
    names, strict_worker = strict
    long_answer, slow = LONG_ANSWER, SLOW

    def by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {eid: r for r in records for eid in ("rp-long", "rp-slow", "kd-1") if f'"{eid}"' in str(r.get("value"))}

    by_id = by_id(dead_letters_of(names, strict_worker, lambda rs: len(by_id(rs)) == 3))
    assert by_id["rp-long"]["stage"] == "decode" and by_id["rp-long"]["field"] == "answer"
    assert by_id["rp-slow"]["stage"] == "timeout" and float(by_id["rp-slow"]["cost_ms"]) > 1
    records = {r.value: r for r in read_records(names, names.topics.dlq, until=10**9, timeout=2.0)}
    for payload, key, app in ((long_answer, b"user-9", b"rag-7"), (slow, b"session-3", b"rag-8")):
        record = records[payload]  # the value, byte for byte: no JSON wrapping, no base64
        assert record.key == key  # the producer's key, also for the one re-keyed before it failed
        originals = [(n, v) for n, v in record.headers if not n.startswith("sg-dlt-")]
        assert ("app", app) in originals and not any(n.startswith("sg-src-") for n, _ in originals)
        error = dict(record.headers)
        assert error["sg-dlt-original-topic"] == names.topics.answers.encode()
    assert ("traceparent", TRACE) in records[long_answer].headers
    assert strict_worker.stop() == 0

    # The fix: default limits and budget. The dead letters are replayed, and judged this time.
    fixed = Worker(names, strict_worker.data_dir, strict_worker.log_path.with_name("fixed.log"), name="fixed",
                   extra_env={"STREAM_GUARD_LOG_FORMAT": "json"})
    workers.append(fixed)
    fixed.start().wait_ready()
    shown, summary = replay(names, "--stage", "decode,timeout", "--dry-run")
    assert summary["dry_run"] and summary["sent"] == 0 and summary["replayable"] >= 3
    assert summary["topic"] == names.topics.answers and {s["would_send_to"] for s in shown} == {names.topics.answers}
    # rp-long, rp-slow and kd-1 (the keyed one of the test above)
    assert len(shown) == 3 and {s["stage"] for s in shown} == {"decode", "timeout"}
    assert not [v for v in read_json(names, names.topics.verdicts, until=10**9, timeout=2.0)
                if v["event_id"].startswith("rp-")]

    sent, summary = replay(names, "--stage", "decode", "--field", "answer")  # only the refused answer first
    assert [(s["stage"], s["field"]) for s in sent] == [("decode", "answer")] and summary["sent"] == 1
    assert sent[0]["sent_to"] == summary["topic"] == names.topics.answers
    assert summary["next_from"]
    _, summary = replay(names, "--stage", "timeout")
    assert summary["sent"] == 2  # rp-slow and kd-1
    verdicts = wait_for(names, names.topics.verdicts,
                        lambda rs: {v["event_id"] for v in rs} >= {"rp-long", "rp-slow", "kd-1"}, timeout=90)
    assert {v["event_id"]: v["routing"] for v in verdicts if v["event_id"].startswith("rp-")}.keys() == \
        {"rp-long", "rp-slow"}
    # The replayed records are the originals again: key, value, headers, and no error headers.
    resent = [r for r in read_records(names, names.topics.answers, until=10**9, timeout=2.0)
              if r.value == long_answer]
    assert len(resent) == 2 and resent[1].key == b"user-9"
    assert list(resent[1].headers) == [("traceparent", TRACE), ("app", b"rag-7")]
    verdict = next(r for r in read_records(names, names.topics.verdicts, until=10**9, timeout=2.0)
                   if b'"rp-long"' in r.value)
    assert dict(verdict.headers)["traceparent"] == TRACE  # the trace continues through the replay

    # --log-format json: every line the worker wrote is one JSON object, Faust's and aiokafka's included.
    assert fixed.stop() == 0
    lines = [line for line in fixed.log_path.read_text().splitlines() if line.strip()]
    parsed = [orjson.loads(line) for line in lines]
    loggers = {p["logger"].split(".")[0] for p in parsed}
    assert {"faust", "stream_guard"} <= loggers, loggers
    assert any("NER regex" in p["msg"] and p.get("ner") == "regex" for p in parsed)


def test_the_re_keyed_topic_and_the_dead_letter_topic_are_created_for_what_they_carry(names: Names) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def configs(topic: str) -> dict[str, str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=names.broker)
        await admin.start()
        try:
            [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            return {entry[0]: entry[1] for resource in response.resources for entry in resource[4]}
        finally:
            await admin.close()

    settings = names.settings()
    repartition = asyncio.run(configs(settings.by_question_topic))
    assert settings.by_question_topic.endswith("-answers-repartition")
    if "retention.ms" not in repartition:
        pytest.skip("this broker does not describe topic configs")
    assert repartition["retention.ms"] == str(settings.repartition_retention_ms)
    assert repartition["cleanup.policy"] == "delete"
    dlq = asyncio.run(configs(settings.topics.dlq))
    assert int(dlq["max.message.bytes"]) > settings.max_message_bytes
