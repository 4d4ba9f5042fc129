"""Create the service's topics before the workers start, with the configured partition counts.

Done with the Kafka admin API rather than left to Faust or to broker auto-creation, so that the partition
counts are ours (the re-keyed topic and the table changelogs must match for co-partitioning) and so that
`up`, `tail` and the tests can attach to output topics before the first message is sent. Existing topics
are left alone: partition counts of a live topic are an operator's decision (see deploy/OPERATIONS.md).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, KafkaError
from aiokafka.partitioner import murmur2

from stream_guard.agents.security import client_options
from stream_guard.wire.deadletter import HEADROOM_BYTES
from stream_guard.config.stream import StreamSettings

log = logging.getLogger(__name__)
TOPIC_ALREADY_EXISTS = 36


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    max_message_bytes: int | None = None
    retention_ms: int | None = None

    def configs(self) -> dict[str, str]:
        out = {"max.message.bytes": str(self.max_message_bytes)} if self.max_message_bytes else {}
        if self.retention_ms is not None:
            out.update(internal_topic_configs(self.retention_ms))
        return out

    def new_topic(self) -> NewTopic:
        return NewTopic(self.name, self.partitions, self.replication_factor, topic_configs=self.configs())


def internal_topic_configs(retention_ms: int) -> dict[str, str]:
    """An internal topic's records are needed until they are processed: delete them after `retention_ms`.
    Kafka deletes whole segments only, and rolls a segment after a week by default, so segments roll at least
    hourly (or at the retention, if shorter) for the retention to mean what it says."""
    return {"cleanup.policy": "delete", "retention.ms": str(retention_ms),
            "segment.ms": str(min(retention_ms, 3600 * 1000))}


def producer_max_request_size(settings: StreamSettings) -> int:
    """Room for the largest input the consumer takes plus the headers of its dead letter or re-keyed copy."""
    return settings.max_message_bytes + HEADROOM_BYTES


def key_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner (Java's and aiokafka's alike) gives a keyed message. The
    service sends to the re-keyed topic with this partition explicitly, so that whether an input message is
    already where its question's state lives is one computation, whichever client produced it."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def topic_specs(settings: StreamSettings) -> list[TopicSpec]:
    rf = settings.replication_factor
    big = settings.max_message_bytes  # inputs must take the oversized payloads we are to dead-letter
    carried = producer_max_request_size(settings)  # ... and their dead letters and re-keyed copies, with headers
    t = settings.topics
    return [
        TopicSpec(t.answers, settings.answers_partitions, rf, big),
        TopicSpec(settings.by_question_topic, settings.partitions, rf, carried, settings.repartition_retention_ms),
        TopicSpec(t.dlq, settings.output_partitions, rf, carried),
        *(TopicSpec(name, settings.output_partitions, rf) for name in (t.verdicts, t.alerts, t.metrics)),
        *(TopicSpec(name, settings.output_partitions, rf) for name in (t.review, t.labels)),
    ]


async def _admin(bootstrap: str, timeout: float, options: Mapping[str, Any]) -> AIOKafkaAdminClient:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000, **options)
        try:
            await admin.start()
            return admin
        except (KafkaConnectionError, KafkaError, OSError) as exc:
            await admin.close()
            if asyncio.get_running_loop().time() > deadline:
                raise ConnectionError(f"broker {bootstrap} not reachable: {exc}") from exc
            await asyncio.sleep(0.5)


async def ensure_topics(settings: StreamSettings, timeout: float = 60.0,
                        specs: Sequence[TopicSpec] | None = None) -> list[str]:
    """Create missing topics (the service's, or `specs`); returns the names created. Raises if the broker refuses
    one for another reason."""
    assert settings.broker, "a broker address is required"
    admin = await _admin(settings.broker, timeout, client_options(settings))
    try:
        existing = set(await admin.list_topics())
        missing = [spec for spec in (topic_specs(settings) if specs is None else specs) if spec.name not in existing]
        if not missing:
            return []
        response = await admin.create_topics([spec.new_topic() for spec in missing])
        created = []
        for topic, code, message in _errors(response):
            if code == 0:
                created.append(topic)
            elif code != TOPIC_ALREADY_EXISTS:  # another worker won the race: fine
                raise RuntimeError(f"cannot create topic {topic}: error {code} {message or ''}".strip())
        if created:
            log.info("created topics: %s", ", ".join(created))
        return created
    finally:
        await admin.close()


def _errors(response: object) -> list[tuple[str, int, str | None]]:
    out = []
    for item in getattr(response, "topic_errors", []):
        topic, code = item[0], item[1]
        message = item[2] if len(item) > 2 else None
        out.append((topic, int(code), message))
    return out
