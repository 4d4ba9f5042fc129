"""Checks over Kafka: produce the event to the answers topic, await its verdict from the verdicts topic.

    async with KafkaGuardClient("broker:9092", on_timeout="deliver") as guard:
        result = await guard.check(event, timeout=0.5)

The event is keyed by its question hash (as `stream-guard produce` keys it), so a worker judges it where it
arrives. Its verdict is keyed by the same hash, so it lands on one partition of the verdicts topic, the one Kafka's
default partitioner gives that key: the client reads only that partition (and the dead-letter topic's partition
for the same key, where a worker sends an event it failed on), from its end as it was before the event was sent,
matching records by their `sg-event-id` header (`sg-dlt-event-id` on dead letters) without parsing them. One
reader per partition in use, started when first needed.

The event is checked by the same decoder the worker uses before it is sent: one that breaks the contract raises
EventError at once, with the field and reason its dead letter would carry, instead of timing out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from aiokafka.partitioner import DefaultPartitioner
from prometheus_client import CollectorRegistry

from stream_guard.client.result import GuardResult, Policy, event_bytes
from stream_guard.config.detector import Limits
from stream_guard.config.stream import TopicNames
from stream_guard.errors import BrokerError, InternalError
from stream_guard.text.questions import question_hash
from stream_guard.wire.deadletter import read_error
from stream_guard.wire.events import decode_event
from stream_guard.wire.headers import EVENT_ID
from stream_guard.wire.verdict import decode_verdict

log = logging.getLogger(__name__)
DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024


def partition_for(key: bytes, partitions: Sequence[int]) -> int:
    """The partition Kafka's default partitioner (Java's and aiokafka's alike) gives a record keyed `key`."""
    ordered = sorted(partitions)
    partition: int = DefaultPartitioner()(key, ordered, ordered)
    return partition


@dataclass
class _Reader:
    """One partition read from its end: its consumer and task, and when it is positioned."""

    consumer: AIOKafkaConsumer | None = None
    task: asyncio.Task[None] | None = None
    ready: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class KafkaGuardClient:
    """Async client that checks through the streaming service. `options`: aiokafka security settings
    (stream_guard.agents.security.client_options gives the worker's). `fetch_max_wait_ms`: how long a read waits
    at the broker; short, because some brokers (the embedded one) answer at the end of the wait."""

    def __init__(self, broker: str, *, topics: TopicNames | None = None, on_timeout: str = "deliver",
                 fallback_message: str | None = None, registry: CollectorRegistry | None = None,
                 limits: Limits | None = None, timeout: float = 1.0, fetch_max_wait_ms: int = 10,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, options: Mapping[str, Any] | None = None
                 ) -> None:
        self.broker = broker
        self.topics = topics or TopicNames()
        self.policy = Policy("kafka", on_timeout, fallback_message, registry)
        self.limits = limits or Limits()
        self.timeout = timeout
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.max_message_bytes = max_message_bytes
        self.options = dict(options or {})
        self._producer: AIOKafkaProducer | None = None
        self._partitions: dict[str, list[int]] = {}
        self._readers: dict[tuple[str, int], _Reader] = {}
        self._waiting: dict[str, list[asyncio.Future[tuple[str, Any]]]] = {}

    @property
    def registry(self) -> CollectorRegistry:
        return self.policy.registry

    async def start(self) -> "KafkaGuardClient":
        if self._producer is not None:
            return self
        # acks=all, no idempotence: the embedded broker refuses idempotent producers (as `produce`).
        producer = AIOKafkaProducer(bootstrap_servers=self.broker, acks="all", enable_idempotence=False, linger_ms=0,
                                    max_request_size=self.max_message_bytes, **self.options)
        try:
            await producer.start()
            for topic in (self.topics.verdicts, self.topics.dlq):
                parts = await producer.partitions_for(topic)
                if not parts:
                    raise BrokerError(f"topic {topic} not found at {self.broker}: start a worker (it creates it)")
                self._partitions[topic] = sorted(parts)
        except (KafkaError, OSError) as exc:
            await producer.stop()
            raise BrokerError(f"cannot reach the broker at {self.broker}: {exc}") from None
        except BaseException:
            await producer.stop()
            raise
        self._producer = producer
        return self

    async def close(self) -> None:
        for reader in self._readers.values():
            if reader.task is not None:
                reader.task.cancel()
            if reader.consumer is not None:
                with contextlib.suppress(Exception):
                    await reader.consumer.stop()
        self._readers.clear()
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None

    async def __aenter__(self) -> "KafkaGuardClient":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def partition(self, topic: str, key: bytes) -> int:
        """The partition of `topic` a record keyed `key` goes to."""
        return partition_for(key, self._partitions[topic])

    async def check(self, event: Mapping[str, Any] | bytes | Any, timeout: float | None = None) -> GuardResult:
        """The verdict on one event, or the policy's result when none came within `timeout` seconds (the
        broker unreachable, no worker, a worker that failed on the event)."""
        if self._producer is None:
            raise InternalError("KafkaGuardClient is not started: use `async with KafkaGuardClient(...)`")
        payload = event_bytes(event)
        answer = decode_event(payload, self.limits)  # EventError now, rather than a dead letter and a timeout
        key = question_hash(answer.tenant, answer.question).encode()
        outcome = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(answer.event_id, [])
        waiting.append(outcome)
        try:
            async with asyncio.timeout(self.timeout if timeout is None else timeout):
                await asyncio.gather(*(self._watch(topic, self.partition(topic, key))
                                       for topic in (self.topics.verdicts, self.topics.dlq)))
                await self._producer.send_and_wait(self.topics.answers, payload, key=key)
                kind, value = await outcome
        except (TimeoutError, KafkaError, OSError) as exc:
            reason = ("no verdict in time" if isinstance(exc, TimeoutError)
                      else f"the broker failed: {type(exc).__name__}: {exc}")
            return self.policy.unanswered(answer.answer, reason)
        finally:
            waiting.remove(outcome)
            if not waiting:
                self._waiting.pop(answer.event_id, None)
        if kind == "verdict":
            return self.policy.checked(decode_verdict(value))
        return self.policy.unanswered(answer.answer, f"the worker failed on the event: {value}")

    async def _watch(self, topic: str, partition: int) -> None:
        """Read `topic`'s `partition` from now on (started once; later callers wait for it to be positioned)."""
        reader = self._readers.get((topic, partition))
        if reader is None:
            reader = self._readers[(topic, partition)] = _Reader()
            reader.task = asyncio.ensure_future(self._read(topic, partition, reader))
        await asyncio.shield(reader.ready)

    async def _read(self, topic: str, partition: int, reader: _Reader) -> None:
        tp = TopicPartition(topic, partition)
        try:
            consumer = reader.consumer = AIOKafkaConsumer(
                bootstrap_servers=self.broker, group_id=None, enable_auto_commit=False,
                fetch_max_wait_ms=self.fetch_max_wait_ms, max_partition_fetch_bytes=self.max_message_bytes,
                **self.options)
            await consumer.start()
            consumer.assign([tp])
            await consumer.seek_to_end(tp)
            await consumer.position(tp)  # resolved now: "from the end" means before anything sent next
        except BaseException as exc:
            self._readers.pop((topic, partition), None)
            if not reader.ready.done():
                reader.ready.set_exception(BrokerError(f"cannot read {topic}[{partition}]: {exc}"))
            raise
        reader.ready.set_result(None)
        dead_letters = topic == self.topics.dlq
        try:
            while True:
                batches = await consumer.getmany(tp, timeout_ms=1000)
                for record in batches.get(tp, ()):
                    self._arrived(record, dead_letters)
        except (KafkaError, OSError) as exc:  # the next check starts a new reader; waiting ones get their policy
            log.warning("reading %s[%d] failed (%s); a new reader starts with the next check", topic, partition, exc)
            self._readers.pop((topic, partition), None)
            with contextlib.suppress(Exception):
                await consumer.stop()

    def _arrived(self, record: Any, dead_letter: bool) -> None:
        headers = [(name, value or b"") for name, value in record.headers or ()]
        if dead_letter:
            error = read_error(headers)
            event_id = error.event_id if error is not None else None
            found: tuple[str, Any] = ("dead_letter", f"{error.stage}: {error.reason}" if error is not None else "")
        else:
            raw = dict(headers).get(EVENT_ID)
            event_id = raw.decode("utf-8", "replace") if raw is not None else None
            found = ("verdict", record.value)
        for outcome in self._waiting.get(event_id, ()) if event_id is not None else ():
            if not outcome.done():
                outcome.set_result(found)
