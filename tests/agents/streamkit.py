"""Helpers for the broker tests (fixtures in conftest.py): private topics, worker processes, reading back.

Every test gets its own app id and topics (a random prefix), so tests sharing the session broker never see
each other's messages or consumer groups. Workers are real `python -m stream_guard.agents worker` processes: stopping
them with SIGTERM exercises the clean shutdown (leave the group, flush, close RocksDB) and SIGKILL the crash.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import jsonschema
import orjson
from processes import terminate
from prometheus_client.parser import text_string_to_metric_families

from stream_guard.agents.clients import Reader, partition_key, read_all, start_producer
from stream_guard.agents.embedded_broker import die_with_parent, free_port
from stream_guard.agents.topics import TopicSpec, ensure_topics
from stream_guard.wire.deadletter import view as dead_letter_view
from stream_guard.wire.schemas import by_name, schema
from stream_guard.config.load import load
from stream_guard.config.stream import StreamSettings, TopicNames

REPO = Path(__file__).resolve().parents[2]
# Short group timeouts: a group join waits up to half the session timeout on the embedded broker, and a worker
# killed without leaving its group holds its partitions for the whole of it. 6 s (as `stream-guard up` uses)
# still leaves four heartbeats for a worker slowed down by a busy machine.
# Fetches wait 100 ms, not the default 25 (a latency setting): the embedded broker answers an empty fetch at the
# end of its wait, so an idle worker polls 40 times a second and the test workers mostly wait. Idle CPU of a worker
# and its embedded broker, 20 s after ready: 25 ms 0.088 + 0.17 CPU s per second; 100 ms 0.034 + 0.080. The
# tests wait on verdicts in seconds, so the extra 75 ms a hop is nothing to them.
TEST_ENV = {
    "STREAM_GUARD_SESSION_TIMEOUT_S": "6",
    "STREAM_GUARD_HEARTBEAT_INTERVAL_S": "1.5",
    "STREAM_GUARD_METRICS_INTERVAL_S": "1",
    "STREAM_GUARD_COMMIT_INTERVAL_S": "0.5",
    "STREAM_GUARD_FETCH_MAX_WAIT_MS": "100",
}


@dataclass
class Names:
    """A test's private app id and topics, passed to workers through the STREAM_GUARD_* environment."""

    broker: str
    prefix: str = field(default_factory=lambda: f"t{uuid.uuid4().hex[:8]}")
    partitions: int = 4

    @property
    def app_id(self) -> str:
        return f"{self.prefix}-guard"

    def settings(self) -> StreamSettings:
        return load(env=self.env(), stream={"broker": self.broker}).stream

    @property
    def topics(self) -> TopicNames:
        return self.settings().topics

    def env(self) -> dict[str, str]:
        return {
            **TEST_ENV,
            "STREAM_GUARD_APP_ID": self.app_id,
            "STREAM_GUARD_PARTITIONS": str(self.partitions),
            "STREAM_GUARD_ANSWERS_PARTITIONS": str(self.partitions),
            "STREAM_GUARD_OUTPUT_PARTITIONS": "2",
            **{f"STREAM_GUARD_TOPIC_{name.upper()}": f"{self.prefix}.{name}"
               for name in ("answers", "verdicts", "alerts", "dlq", "metrics", "review", "labels")},
        }


@dataclass
class Worker:
    names: Names
    data_dir: Path
    log_path: Path
    name: str = "w"
    ner: str = "regex"
    extra_env: dict[str, str] = field(default_factory=dict)
    config: Path | None = None
    web_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "Worker":
        env = {**os.environ, **self.names.env(), **self.extra_env}
        cmd = [sys.executable, "-m", "stream_guard.agents", "worker", "--broker", self.names.broker,
               "--data-dir", str(self.data_dir), "--web-port", str(self.web_port), "--ner", self.ner,
               "--name", self.name, "--loglevel", "info"]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        return self

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}{path}", timeout=2) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def ready(self) -> bool:
        try:
            status, body = self.get("/readyz")
        except OSError:
            return False
        return status == 200 and bool(orjson.loads(body).get("ready"))

    def wait_ready(self, timeout: float = 180.0) -> "Worker":  # a start-up beside other test files can be slow
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} exited {self.proc.returncode}:\n{self.log_tail()}")
            if self.ready():
                return self
            time.sleep(0.25)
        raise AssertionError(f"worker {self.name} not ready in {timeout}s:\n{self.log_tail()}")

    def metrics(self) -> str:
        return self.get("/metrics")[1].decode()

    def series(self, sample: str, **labels: str) -> list[tuple[dict[str, str], float]]:
        """The samples named `sample` (`..._total`, `..._sum`, a gauge's name) whose labels include `labels`,
        read with prometheus_client's own parser (label order on the page is not ours to rely on)."""
        return [(s.labels, s.value) for family in text_string_to_metric_families(self.metrics())
                for s in family.samples if s.name == sample and labels.items() <= s.labels.items()]

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM: Faust leaves the group, flushes the producer and closes RocksDB."""
        assert self.proc is not None
        code = terminate(self.proc, timeout, f"worker {self.name}", self.log_tail)
        self._log.close()
        return code

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._log.close()

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


@dataclass
class ScriptWorker(Worker):
    """A worker run by a Python script (`python -c SCRIPT worker ...`) that patches something first."""

    script: str = ""

    def start(self) -> "ScriptWorker":
        env = {**os.environ, **self.names.env(), **self.extra_env}
        cmd = [sys.executable, "-c", self.script, "worker", "--broker", self.names.broker, "--data-dir",
               str(self.data_dir), "--web-port", str(self.web_port), "--ner", self.ner, "--name", self.name,
               "--loglevel", "info"]
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        return self


def new_worker(names: Names, tmp_path: Path, registry: list[Worker], name: str, *, data_dir: str | None = None,
               **kwargs: Any) -> Worker:
    worker = Worker(names, tmp_path / (data_dir or f"data-{name}"), tmp_path / f"{name}.log", name=name, **kwargs)
    registry.append(worker)
    return worker.start()


def event(event_id: str, question: str, context: list[str], answer: str, tenant: str = "support",
          **extra: Any) -> bytes:
    return orjson.dumps({"event_id": event_id, "tenant": tenant, "question": question, "context": context,
                         "answer": answer, **extra})


async def create_topic(broker: str, topic: str, partitions: int = 1) -> None:
    """A plain topic for a test, created as the service creates its own (agents/topics.ensure_topics)."""
    await ensure_topics(StreamSettings(broker=broker), specs=[TopicSpec(topic, partitions, 1)])


async def _produce(broker: str, topic: str, payloads: Sequence[bytes | None], pace_s: float,
                   keys: Sequence[bytes | None] | None,
                   headers: Sequence[list[tuple[str, bytes]] | None] | None = None,
                   timestamps: Sequence[int | None] | None = None) -> None:
    producer = await start_producer(broker)
    try:
        pending = []
        for i, payload in enumerate(payloads):
            key = partition_key(payload or b"") if keys is None else keys[i]
            pending.append(await producer.send(topic, payload, key=key, headers=headers[i] if headers else None,
                                               timestamp_ms=timestamps[i] if timestamps else None))
            if pace_s:
                await asyncio.sleep(pace_s)
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


def produce(names: Names, payloads: Sequence[bytes | None], pace_s: float = 0.0,
            keys: Sequence[bytes | None] | None = None,
            headers: Sequence[list[tuple[str, bytes]] | None] | None = None,
            timestamps: Sequence[int | None] | None = None) -> None:
    """Publish to the answers topic, keyed by question hash as `stream-guard produce` does, or by `keys`
    (a None payload is a tombstone), with the Kafka timestamps given (None: the producer's clock)."""
    asyncio.run(_produce(names.broker, names.topics.answers, payloads, pace_s, keys, headers, timestamps))


def read_records(names: Names, topic: str, until: int, timeout: float = 60.0) -> list[Any]:
    """Records of `topic` from the beginning, as read (key, value, headers), until `until` arrived or `timeout`
    seconds passed without a new one (agents/clients.py: read_all).

    Every verdict, alert, metrics summary and dead letter read here is validated against its published
    schema (verdicts strictly: an undeclared details key fails), so every broker test checks what it reads."""
    records = asyncio.run(read_all(names.broker, [topic], until, timeout))
    check_published(names, topic, records)
    return records


def read_json(names: Names, topic: str, until: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Records of `topic` from the beginning, decoded, until `until` arrived or `timeout` passed. Dead letters
    come as `stream_guard.wire.deadletter.view` gives them (error fields, original key, value and headers)."""
    return _decoded(names, topic, read_records(names, topic, until, timeout))


def _decoded(names: Names, topic: str, records: Sequence[Any]) -> list[dict[str, Any]]:
    if topic == names.topics.dlq:
        return [dead_letter_view(r.key, r.value, [(n, v or b"") for n, v in r.headers or ()]) for r in records]
    return [orjson.loads(r.value) for r in records]


@functools.lru_cache(maxsize=None)
def _validator(schema_name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(by_name(schema_name), strict=True))


_VALIDATED: set[bytes] = set()


def check_published(names: Names, topic: str, records: Sequence[Any]) -> None:
    """Validate records of a published topic against their schema (each distinct record once)."""
    kinds = {names.topics.verdicts: "verdict", names.topics.alerts: "alert", names.topics.metrics: "metrics-summary",
             names.topics.dlq: "dead-letter"}
    kind = kinds.get(topic)
    if kind is None:
        return
    for record in records:
        headers = [(n, v or b"") for n, v in record.headers or ()]
        digest = hashlib.blake2b(repr((record.value, headers)).encode(), digest_size=16).digest()
        if digest in _VALIDATED:
            continue
        if kind == "dead-letter":
            instance: Any = {n: v.decode("utf-8") for n, v in headers}
        else:
            instance = orjson.loads(record.value)
            assert (headers and dict(headers).get("content-type") == b"application/json"
                    and dict(headers).get("sg-schema") == kind.encode()), (topic, headers)
        errors = sorted(_validator(kind).iter_errors(instance), key=lambda e: list(e.absolute_path))
        assert not errors, f"{topic} record breaks the {kind} schema at {list(errors[0].absolute_path)}: " \
                           f"{errors[0].message[:300]}"
        _VALIDATED.add(digest)


def wait_for(names: Names, topic: str, predicate: Any, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Read `topic` from the beginning until `predicate(records)` holds for the records read so far; returns
    them (asserts on timeout). One reader for the whole wait: re-reading a topic of thousands of verdicts from
    the beginning on every try would take longer than the records take to arrive."""
    return asyncio.run(_wait_for(names, topic, predicate, timeout))


async def _wait_for(names: Names, topic: str, predicate: Any, timeout: float) -> list[dict[str, Any]]:
    reader = await Reader(names.broker, [topic], from_beginning=True).start()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    records: list[dict[str, Any]] = []
    try:
        while True:
            batch = await reader.poll(min(0.5, max(0.01, deadline - loop.time())))
            check_published(names, topic, batch)
            records += _decoded(names, topic, batch)
            if predicate(records):
                return records
            if loop.time() >= deadline:
                raise AssertionError(f"timed out on {topic}: {len(records)} records")
    finally:
        await reader.stop()
