"""Read a topic range for a backtest: answers to replay, live verdicts and labels to compare with.

`TopicSource` is the streaming edge's implementation of the core's `RecordedSource` (stream_guard/ops/sources.py).

A replay is a bystander. It assigns itself the topic's partitions (no consumer group: it never takes
partitions from a worker, never commits an offset) and it only reads. It reads up to the end each partition
had when it started, so it ends even while traffic goes on.

Time ranges do not rely on the broker's offset-by-timestamp lookup: some brokers (the embedded one) answer
0 for any time. The lookup only says where to start reading; every record's own timestamp decides whether
it is in the range, and a partition is read to its end, because producers may set timestamps out of order.

Partitions are merged by record timestamp (then partition), never reordering a partition: events keyed by
question hash (one question, one partition) keep their exact order, and unkeyed events come back in the
order they were produced, as far as the timestamps tell.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterator, Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError, UnsupportedVersionError
from aiokafka.structs import ConsumerRecord

from stream_guard.agents.clients import OpenEnd, reach_broker, topic_partitions
from stream_guard.agents.security import client_options
from stream_guard.errors import BrokerError
from stream_guard.ops.sources import Bound, Decision, Position, UsageError, live_decisions, task_type_of
from stream_guard.wire.events import EventError
from stream_guard.wire.labels import decode_label
from stream_guard.config.load import load
from stream_guard.config.stream import StreamSettings

TOPIC_WAIT_S = 10.0
# Records buffered per partition before it is paused (the merge waits on the slowest partition).
PAUSE_ABOVE = 2000
RESUME_BELOW = 500


@dataclass(frozen=True)
class ReplayPlan:
    """Which records to read: [start, stop) offsets per partition, and a time window on top when asked."""

    topic: str
    ranges: Mapping[int, tuple[int, int]]
    start_ms: int | None = None
    stop_ms: int | None = None
    # Partitions read "to the end": their stop is the end offset the broker reported when the replay started,
    # which some brokers under-report (the embedded one gives the last batch's base offset + 1). Those are
    # read on past it until drained or until a record newer than `planned_at_ms`.
    open_end: frozenset[int] = frozenset()
    planned_at_ms: int = 0

    @property
    def total(self) -> int | None:
        """Records to read; unknown (None) when timestamps filter them."""
        if self.start_ms is not None or self.stop_ms is not None:
            return None
        return sum(max(0, stop - start) for start, stop in self.ranges.values())

    def describe(self) -> dict[str, Any]:
        return {"kind": "topic", "topic": self.topic, "from_ms": self.start_ms, "to_ms": self.stop_ms,
                "partitions": {str(p): list(r) for p, r in sorted(self.ranges.items())}}

    def wanted(self, record: ConsumerRecord) -> bool:
        stamp = record.timestamp
        return ((self.start_ms is None or stamp >= self.start_ms)
                and (self.stop_ms is None or stamp < self.stop_ms))


def _consumer(settings: StreamSettings) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=settings.broker, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
        fetch_max_wait_ms=100, max_partition_fetch_bytes=settings.max_message_bytes,
        fetch_max_bytes=max(settings.max_message_bytes, 52428800), **client_options(settings))


async def _partitions(consumer: AIOKafkaConsumer, topic: str, broker: str) -> list[TopicPartition]:
    try:
        return await topic_partitions(consumer, [topic], TOPIC_WAIT_S)
    except TimeoutError:
        raise BrokerError(f"topic {topic} not found on {broker}") from None


async def _time_hints(consumer: AIOKafkaConsumer, tps: list[TopicPartition], ms: int) -> dict[TopicPartition, int]:
    """Where the broker says records at or after `ms` start; where it cannot say, the beginning."""
    try:
        found = await consumer.offsets_for_times({tp: ms for tp in tps})
    except (UnsupportedVersionError, KafkaError):
        return {}
    return {tp: hit.offset for tp, hit in found.items() if hit is not None}


async def plan_range(settings: StreamSettings, topic: str, start: Bound | None,
                     end: Bound | None) -> ReplayPlan:
    planned_at = int(time.time() * 1000)
    consumer = _consumer(settings)
    await consumer.start()
    try:
        tps = await _partitions(consumer, topic, str(settings.broker))
        first = await consumer.beginning_offsets(tps)
        last = await consumer.end_offsets(tps)
        hints = await _time_hints(consumer, tps, start.time_ms) if start and start.time_ms is not None else {}
    finally:
        await consumer.stop()
    ranges: dict[int, tuple[int, int]] = {}
    open_end: set[int] = set()
    for tp in tps:
        begin, stop = first[tp], last[tp]
        if start is not None and start.time_ms is None:
            wanted = start.offset_for(tp.partition)
            begin = max(begin, wanted) if wanted is not None else stop  # not named: nothing from it
        elif start is not None:
            begin = max(begin, min(hints.get(tp, begin), stop))
        limit = end.offset_for(tp.partition) if end is not None and end.time_ms is None else None
        if limit is not None:
            stop = min(stop, limit)
        elif begin <= stop:
            open_end.add(tp.partition)
        ranges[tp.partition] = (begin, max(begin, stop))
    return ReplayPlan(topic, ranges, start.time_ms if start else None, end.time_ms if end else None,
                      frozenset(open_end), planned_at)


async def read_range(settings: StreamSettings, plan: ReplayPlan,
                     emit: Callable[[ConsumerRecord], Awaitable[bool]]) -> None:
    """Every wanted record of the plan, merged across partitions; stops early when `emit` returns False."""
    todo = {p: r for p, r in plan.ranges.items() if r[0] < r[1] or p in plan.open_end}
    if not todo:
        return
    consumer = _consumer(settings)
    await consumer.start()
    try:
        tps = {p: TopicPartition(plan.topic, p) for p in todo}
        consumer.assign(list(tps.values()))
        for p, (start, _) in todo.items():
            consumer.seek(tps[p], start)
        buffers: dict[int, deque[ConsumerRecord]] = {p: deque() for p in todo}
        active = set(todo)
        paused: set[int] = set()
        ends = {p: OpenEnd(todo[p][1], plan.planned_at_ms) for p in plan.open_end if p in todo}
        while True:
            # Emit while every partition still being read has a record waiting: only then is the earliest known.
            while not any(p in active and not buffers[p] for p in buffers):
                heads = [p for p in buffers if buffers[p]]
                if not heads:
                    break
                p = min(heads, key=lambda q: (buffers[q][0].timestamp, q))
                if not await emit(buffers[p].popleft()):
                    return
            if not active and not any(buffers.values()):
                return
            batches = await consumer.getmany(timeout_ms=500)
            for p in list(active):
                records = batches.get(tps[p], [])
                stop = todo[p][1]
                if p in ends:
                    # Past the reported end: take what was there before the replay started (clients.OpenEnd). A
                    # paused partition's empty fetches say nothing about its end.
                    if p in paused and not records:
                        continue
                    records, ended = ends[p].take(records, await consumer.position(tps[p]))
                    buffers[p].extend(r for r in records if plan.wanted(r))
                else:
                    buffers[p].extend(r for r in records if r.offset < stop and plan.wanted(r))
                    ended = await consumer.position(tps[p]) >= stop
                if ended:
                    active.discard(p)
                    consumer.pause(tps[p])
            for p in active:
                if p not in paused and len(buffers[p]) > PAUSE_ABOVE:
                    consumer.pause(tps[p])
                    paused.add(p)
                elif p in paused and len(buffers[p]) < RESUME_BELOW:
                    consumer.resume(tps[p])
                    paused.discard(p)
    finally:
        await consumer.stop()


_DONE = object()


def _records(settings: StreamSettings, plan: ReplayPlan) -> Iterator[ConsumerRecord]:
    """`read_range` in a thread with its own event loop, as a plain iterator (the judging loop is
    synchronous)."""
    handoff: queue.Queue[Any] = queue.Queue(maxsize=4096)
    stop = threading.Event()

    async def emit(record: ConsumerRecord) -> bool:
        while not stop.is_set():
            try:
                handoff.put(record, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def target() -> None:
        try:
            asyncio.run(read_range(settings, plan, emit))
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread, which raises it
            handoff.put(exc)
        finally:
            handoff.put(_DONE)

    thread = threading.Thread(target=target, name="stream-guard-replay", daemon=True)
    thread.start()
    try:
        while (item := handoff.get()) is not _DONE:
            if isinstance(item, BaseException):
                if isinstance(item, (BrokerError, UsageError)):
                    raise item
                raise BrokerError(f"reading {plan.topic} from {settings.broker} failed: {item}") from item
            yield item
    finally:
        stop.set()
        thread.join(timeout=10)


class TopicSource:
    """The backtest's view of a broker (ops.sources.RecordedSource): plan and read the answers range, read live
    verdicts and labels."""

    def __init__(self, settings: StreamSettings) -> None:
        self.settings = settings

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "TopicSource":
        settings = load(getattr(args, "config", None), os.environ, stream={"broker": getattr(args, "broker", None)}).stream
        if not settings.broker:
            raise UsageError("no broker: pass --broker HOST:PORT or set STREAM_GUARD_BROKER")
        asyncio.run(reach_broker(settings.broker, settings.connect_timeout_s, wait=bool(getattr(args, "wait", False)),
                                 options=client_options(settings)))
        return cls(settings)

    @property
    def verdicts_topic(self) -> str:
        return self.settings.topics.verdicts

    def _run(self, coro: Awaitable[Any]) -> Any:
        try:
            return asyncio.run(coro)  # type: ignore[arg-type]
        except (BrokerError, UsageError):
            raise
        except (KafkaError, OSError) as exc:
            raise BrokerError(f"cannot read from {self.settings.broker}: {exc}") from None

    def plan(self, topic: str, start: Bound | None, end: Bound | None) -> ReplayPlan:
        return self._run(plan_range(self.settings, topic, start, end))

    def inputs(self, plan: ReplayPlan) -> Iterator[tuple[Position, bytes]]:
        for record in _records(self.settings, plan):
            value = record.value or b""
            yield Position(f"{record.topic}/{record.partition}@{record.offset}", task_type_of(value)), value

    def _values(self, topic: str) -> Iterator[bytes]:
        plan = self.plan(topic, None, None)
        for record in _records(self.settings, plan):
            if record.value:
                yield record.value

    def live(self, topic: str, required: bool = True) -> dict[str, Decision] | None:
        """The verdicts on `topic`; None when it does not exist and nobody asked for it by name."""
        try:
            return live_decisions(self._values(topic))
        except BrokerError:
            if required:
                raise
            return None

    def labels(self, topic: str) -> dict[str, int]:
        """event_id -> label from a labels topic; records that are not labels are skipped; a later one wins."""
        out: dict[str, int] = {}
        for value in self._values(topic):
            try:
                label = decode_label(value)
            except EventError:
                continue
            out[label.event_id] = label.label
        return out
