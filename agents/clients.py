"""Plain aiokafka clients for the command line: publish JSONL, read topics back without a consumer group.

`tail`, `up` and the tests read by manual partition assignment, never by joining a group: a group join
waits for the session timeout on some brokers, and a reader must not take partitions from anybody.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterable, Mapping, Sequence

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaError
from aiokafka.structs import ConsumerRecord

from stream_guard.errors import BrokerError

from stream_guard.text.questions import question_hash

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
log = logging.getLogger(__name__)
WAIT_REPORT_S = 10.0


@contextlib.contextmanager
def _quiet_aiokafka() -> Any:
    """aiokafka logs every failed bootstrap at ERROR; the probe reports the outcome itself, once."""
    logger = logging.getLogger("aiokafka")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


async def _bootstrap_once(broker: str, timeout_s: float, options: Mapping[str, Any]) -> None:
    client = AIOKafkaClient(bootstrap_servers=broker, request_timeout_ms=max(1, int(timeout_s * 1000)), **options)
    try:
        await asyncio.wait_for(client.bootstrap(), timeout_s)
    finally:
        await client.close()


async def reach_broker(broker: str, timeout_s: float, *, wait: bool = False,
                       options: Mapping[str, Any] | None = None) -> None:
    """Return once a bootstrap server answers. Without `wait`, give up after `timeout_s` with a BrokerError that
    names the addresses tried and the last failure (exit 1); with it, keep trying, saying so every ten seconds.
    Every command that needs the broker calls this first, so that a wrong address fails in seconds rather than
    retrying forever in a client's background loop."""
    started = loop_time = time.monotonic()
    deadline = started + timeout_s
    attempts, last = 0, "no answer"
    with _quiet_aiokafka():
        while True:
            attempts += 1
            try:
                await _bootstrap_once(broker, max(0.5, min(timeout_s, deadline - time.monotonic())) if not wait
                                      else timeout_s, options or {})
                if attempts > 1:
                    log.warning("broker %s answered after %.1f s", broker, time.monotonic() - started)
                return
            except (KafkaError, OSError, asyncio.TimeoutError) as exc:
                last = await _diagnose(broker, exc)
            now = time.monotonic()
            if not wait and now >= deadline:
                raise BrokerError(f"cannot reach the broker at {broker} (tried for {timeout_s:g} s, {attempts} "
                                  f"attempt(s); last: {last}). Is it running, and is that its address? Pass --wait "
                                  "to keep trying, or set STREAM_GUARD_CONNECT_TIMEOUT_S")
            if wait and now - loop_time >= WAIT_REPORT_S:
                loop_time = now
                log.warning("still waiting for the broker at %s (%.0f s, last: %s)", broker, now - started, last)
            await asyncio.sleep(0.5)


async def _diagnose(broker: str, exc: BaseException) -> str:
    """Why the first bootstrap server did not answer, in plain words: aiokafka says only "Unable to bootstrap"."""
    host, _, port = broker.split(",")[0].rpartition(":")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 2.0)
    except asyncio.TimeoutError:
        return f"{host}:{port} did not answer (connection timed out)"
    except ConnectionRefusedError:
        return f"{host}:{port} refused the connection (nothing listens there)"
    except OSError as error:
        return f"{host}:{port}: {error.strerror or error}"
    writer.close()
    text = str(exc) or type(exc).__name__  # it accepts connections, but not as a Kafka broker would
    return f"{host}:{port} accepts connections but did not answer as a Kafka broker ({text[:160]})"


def partition_key(line: bytes) -> bytes | None:
    """Key an input line by its question hash when it parses, so one question's events keep their order
    through the answers topic (drift depends on it); a line that does not parse goes unkeyed."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    tenant, question = obj.get("tenant") or "default", obj.get("question") or ""
    if not isinstance(tenant, str) or not isinstance(question, str):
        return None
    return question_hash(tenant.strip() or "default", question).encode()


async def start_producer(broker: str, max_request_size: int = DEFAULT_MAX_MESSAGE_BYTES, linger_ms: int = 0,
                         options: Mapping[str, Any] | None = None) -> AIOKafkaProducer:
    """`options`: security settings (agents.security.client_options)."""
    # acks=all, no idempotence: the embedded broker refuses idempotent producers and the service is
    # at-least-once by design.
    producer = AIOKafkaProducer(bootstrap_servers=broker, acks="all", max_request_size=max_request_size,
                                linger_ms=linger_ms, enable_idempotence=False, **(options or {}))
    try:
        await producer.start()
    except BaseException:
        await producer.stop()
        raise
    return producer


async def topic_partitions(consumer: AIOKafkaConsumer, topics: Iterable[str], timeout: float = 30.0
                           ) -> list[TopicPartition]:
    """Partitions of each topic, waiting for topics that a worker is about to create."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    wanted = list(topics)
    while True:
        await consumer.topics()  # refreshes metadata
        found = {t: consumer.partitions_for_topic(t) for t in wanted}
        missing = [t for t, parts in found.items() if not parts]
        if not missing:
            return [TopicPartition(t, p) for t in wanted for p in sorted(found[t] or ())]
        if loop.time() > deadline:
            raise TimeoutError(f"topic(s) not found: {', '.join(missing)}")
        await asyncio.sleep(0.3)


@dataclass
class OpenEnd:
    """Reading one partition "to its end" without trusting the broker's end offset alone: the embedded broker
    lists the newest batch's first offset + 1 after multi-record batches, so a read that stopped there would stop
    short. The end is confirmed instead by what the reads see: past the listed end, records written before the
    read started are still taken; the partition ends at the first record written after the read started (not
    taken), or once two fetches in a row come back empty with the position at or past the listed end."""

    listed_end: int
    started_ms: int
    idle_fetches: int = 0

    def take(self, records: Sequence[ConsumerRecord], position: int) -> tuple[list[ConsumerRecord], bool]:
        """The records of one fetch to keep, and whether the partition has ended."""
        newer = next((i for i, r in enumerate(records) if r.offset >= self.listed_end and r.timestamp > self.started_ms),
                     None)
        if newer is not None:
            return list(records[:newer]), True
        self.idle_fetches = 0 if records else self.idle_fetches + 1
        return list(records), self.idle_fetches >= 2 and position >= self.listed_end


@dataclass
class Reader:
    """Reads whole topics by manual assignment, from the beginning or from their current end."""

    broker: str
    topics: Sequence[str]
    from_beginning: bool = False
    max_fetch_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    options: Mapping[str, Any] | None = None  # security settings (agents.security.client_options)
    consumer: AIOKafkaConsumer | None = None

    async def start(self, timeout: float = 30.0) -> "Reader":
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.broker, group_id=None, enable_auto_commit=False,
            auto_offset_reset="earliest", fetch_max_wait_ms=100, max_partition_fetch_bytes=self.max_fetch_bytes,
            fetch_max_bytes=max(self.max_fetch_bytes, 52428800), **(self.options or {}),
        )
        try:
            await self.consumer.start()
            tps = await topic_partitions(self.consumer, self.topics, timeout)
        except BaseException:
            await self.stop()
            raise
        self.consumer.assign(tps)
        if self.from_beginning:
            await self.consumer.seek_to_beginning(*tps)
        else:
            await self.consumer.seek_to_end(*tps)
        for tp in tps:  # resolve positions now, so "from the end" means before anything we send next
            await self.consumer.position(tp)
        return self

    async def records(self) -> AsyncIterator[ConsumerRecord]:
        """Every record, forever (stop by breaking out)."""
        while True:
            for record in await self.poll(1.0):
                yield record

    async def poll(self, timeout: float) -> list[ConsumerRecord]:
        """What arrived within `timeout` seconds (possibly nothing), in partition order."""
        assert self.consumer is not None, "start() first"
        batches = await self.consumer.getmany(timeout_ms=int(timeout * 1000))
        return [record for tp in sorted(batches) for record in batches[tp]]

    async def stop(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()
            self.consumer = None


async def read_all(broker: str, topics: Sequence[str], until: int, timeout: float,
                   most: float = 120.0) -> list[ConsumerRecord]:
    """Everything on `topics` from the beginning (tests, bench): until `until` records, or until `timeout` seconds
    pass without a new one. A read that keeps bringing records goes on (for at most `most` seconds): on a loaded
    machine a fixed window ended inside a topic of a few hundred records. The end offset cannot say when to stop:
    the embedded broker under-reports it on batches of several records."""
    reader = await Reader(broker, topics, from_beginning=True).start()
    loop = asyncio.get_running_loop()
    last = loop.time() + most
    quiet = loop.time() + timeout
    out: list[ConsumerRecord] = []
    try:
        while len(out) < until and loop.time() < min(quiet, last):
            batch = await reader.poll(min(0.5, max(0.01, min(quiet, last) - loop.time())))
            if batch:
                out.extend(batch)
                quiet = loop.time() + timeout
    finally:
        await reader.stop()
    return out
