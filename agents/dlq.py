"""`stream-guard replay-dlq`: re-submit dead letters after a fix (a producer corrected, a bug fixed, a budget
raised), so that they get verdicts.

A dead letter is the original record plus `sg-dlt-*` error headers (stream_guard/wire/deadletter.py); replaying
one sends its key, value and every other header, unchanged, to the answers topic (or `--topic`). Keyed records
go to the partition their key maps to, so an event keyed by question hash is judged where it lands.

Reading is by partition assignment, as a backtest reads (agents/replay.py): no consumer group, so nothing is
committed, no group of the live service is touched, and a run can be repeated; each run reads the range it
is given up to the end the dead-letter topic had when it started, and reports where the next run can start
(`next_from`). Dead letters without their value (too large to carry) and version-1 records that kept only
the head of their payload cannot be replayed: they are reported, not sent. Version-1 records that kept the
whole payload are replayed from it.

Output: one JSON line per dead letter sent (or, with --dry-run, that would be), then one summary line.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import orjson
from aiokafka.errors import KafkaError
from aiokafka.structs import ConsumerRecord

from stream_guard.agents.clients import start_producer
from stream_guard.agents.replay import plan_range, read_range
from stream_guard.agents.security import client_options
from stream_guard.agents.topics import producer_max_request_size
from stream_guard.errors import BrokerError, StreamGuardError, report
from stream_guard.ops.sources import Bound, UsageError, parse_bound
from stream_guard.wire.deadletter import Header, read_error, read_legacy, without_error_headers
from stream_guard.config.load import load
from stream_guard.config.relations import valid_topic
from stream_guard.config.stream import StreamSettings


@dataclass(frozen=True)
class Selection:
    """Which dead letters to replay: every condition given must hold."""

    stages: frozenset[str] = frozenset()
    fields: frozenset[str] = frozenset()
    failed_from_ms: int | None = None
    failed_to_ms: int | None = None

    def matches(self, stage: str, error_field: str, failed_at_ms: int) -> bool:
        return ((not self.stages or stage in self.stages)
                and (not self.fields or any(error_field == f or error_field.startswith((f + ".", f + "["))
                                            for f in self.fields))
                and (self.failed_from_ms is None or failed_at_ms >= self.failed_from_ms)
                and (self.failed_to_ms is None or failed_at_ms < self.failed_to_ms))


@dataclass(frozen=True)
class Replayable:
    """What goes back out, and what the dead letter said."""

    key: bytes | None
    value: bytes | None
    headers: list[Header]
    stage: str
    error_field: str
    reason: str
    failed_at_ms: int
    event_id: str | None
    original: str
    omitted: bool = False


def replayable(record: ConsumerRecord) -> Replayable | None:
    """The original record inside a dead letter (version 2: headers; version 1: its JSON), or None when the
    record is not a dead letter at all."""
    headers = [(name, value or b"") for name, value in (record.headers or ())]
    error = read_error(headers)
    key, value = record.key, record.value
    if error is None:
        legacy = read_legacy(record.value)
        if legacy is None:
            return None
        error, key, value, headers = legacy.error, legacy.key, legacy.value, []
    omitted = value is None or error.value_omitted is not None
    return Replayable(key, value, without_error_headers(headers), error.stage, error.field, error.reason,
                      error.failed_at, error.event_id,
                      f"{error.original_topic}/{error.original_partition}@{error.original_offset}", omitted)


@dataclass
class Report:
    dlq: str
    topic: str  # where the originals go (--topic, else the answers topic)
    dry_run: bool
    read: int = 0
    matched: int = 0
    replayable: int = 0  # matched and carrying their original value: sent, or with --dry-run what would be
    sent: int = 0
    not_dead_letters: int = 0
    not_replayable: int = 0
    by_stage: Counter[str] = field(default_factory=Counter)
    # Per dead-letter partition: the offset after the last record read (the next run's --from).
    next_offsets: dict[int, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"summary": True, "dlq": self.dlq, "topic": self.topic, "dry_run": self.dry_run, "read": self.read,
                "matched": self.matched, "replayable": self.replayable, "sent": self.sent, "not_dead_letters": self.not_dead_letters,
                "not_replayable": self.not_replayable, "by_stage": dict(sorted(self.by_stage.items())),
                "next_from": ",".join(f"{p}:{o}" for p, o in sorted(self.next_offsets.items())) or None}


async def replay_dead_letters(settings: StreamSettings, *, dlq: str, to: str, start: Bound | None,
                              end: Bound | None, selection: Selection, dry_run: bool, limit: int | None,
                              out: Any = None) -> Report:
    """Read `dlq` in [start, end), send every selected, replayable dead letter's original to `to`."""
    out = out or sys.stdout
    report = Report(dlq, to, dry_run)
    plan = await plan_range(settings, dlq, start, end)
    producer = None if dry_run else await start_producer(
        str(settings.broker), max_request_size=producer_max_request_size(settings), options=client_options(settings))
    pending: list[asyncio.Future[Any]] = []

    async def emit(record: ConsumerRecord) -> bool:
        report.read += 1
        report.next_offsets[record.partition] = record.offset + 1
        found = replayable(record)
        if found is None:
            report.not_dead_letters += 1
            return True
        if not selection.matches(found.stage, found.error_field, found.failed_at_ms):
            return True
        report.matched += 1
        line: dict[str, Any] = {"dlq": f"{record.topic}/{record.partition}@{record.offset}",
                                "original": found.original, "stage": found.stage, "field": found.error_field,
                                "reason": found.reason, "event_id": found.event_id}
        if found.omitted:
            report.not_replayable += 1
            line["skipped"] = "the dead letter does not carry the original value"
        else:
            report.replayable += 1
            report.by_stage[found.stage] += 1
            if producer is not None:
                pending.append(await producer.send(to, found.value, key=found.key, headers=found.headers or None))
                report.sent += 1
            line["sent_to" if producer is not None else "would_send_to"] = to
        out.write(orjson.dumps(line).decode() + "\n")
        return limit is None or report.matched < limit

    try:
        await read_range(settings, plan, emit)
        await asyncio.gather(*pending)
    finally:
        if producer is not None:
            await producer.stop()
    return report


def _settings(args: argparse.Namespace) -> StreamSettings:
    return load(args.config, os.environ, stream={"broker": args.broker}).stream


def _csv(values: Sequence[str] | None) -> frozenset[str]:
    return frozenset(v.strip() for value in values or () for v in value.split(",") if v.strip())


def cmd_replay_dlq(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="stream-guard replay-dlq",
        description="Re-submit dead letters (the original key, value and headers, without the sg-dlt-* error "
                    "headers) to the answers topic. Reads by assignment: no consumer group, nothing committed.")
    parser.add_argument("--broker", help="HOST:PORT[,HOST:PORT] (default: $STREAM_GUARD_BROKER)")
    parser.add_argument("--config", help="TOML file with a [stream] table (topic names, security)")
    # --topic, as in `produce`; `--from`/`--to` name a range, as in `backtest`. `--to TOPIC` (the old spelling of
    # --topic) and `--to-offset` keep working for scripts that use them, with a warning.
    parser.add_argument("--topic", help="topic to send to (default: the answers topic)")
    parser.add_argument("--dlq", help="dead-letter topic to read (default: the configured one)")
    parser.add_argument("--stage", action="append", help="only these stages (decode, intake, judge, timeout, "
                                                         "label); repeat or comma-separate")
    parser.add_argument("--field", action="append", help="only errors on this field (answer, context, ...: "
                                                         "context matches context[2].text); repeatable")
    parser.add_argument("--from", dest="start", help="dead-letter offset (123), offsets per partition (0:120,1:98) "
                                                     "or ISO-8601 time to start at (inclusive)")
    parser.add_argument("--to", dest="end", help="the same, where to stop (exclusive); a topic name here is the "
                                                 "deprecated spelling of --topic")
    parser.add_argument("--to-offset", dest="old_end", help="deprecated: --to")
    parser.add_argument("--failed-since", help="only dead letters written at or after this ISO-8601 time")
    parser.add_argument("--failed-before", help="only dead letters written before this ISO-8601 time")
    parser.add_argument("--max", type=int, help="stop after N matching dead letters")
    parser.add_argument("--dry-run", action="store_true", help="list what would be sent, send nothing")
    args = parser.parse_args(argv)
    try:
        return _replay(args)
    except StreamGuardError as exc:
        return report(exc, "stream-guard replay-dlq")


def range_end(to: str | None, to_offset: str | None) -> tuple[Bound | None, str | None]:
    """(where the range ends, a destination topic given the old way) from `--to` and the deprecated `--to-offset`.
    `--to` once named the destination topic: a value that is no offset or time but is a topic name is read so,
    with a warning (a topic name never holds ':', so only an all-digit topic name would be taken for an offset)."""
    if to_offset:
        print("stream-guard replay-dlq: --to-offset is deprecated, use --to", file=sys.stderr)
    text = to or to_offset
    if not text:
        return None, None
    try:
        return parse_bound(text, "--to"), None
    except UsageError:
        if to is None or not valid_topic(to):
            raise
    print(f"stream-guard replay-dlq: --to {to} is deprecated for the destination topic, use --topic {to} "
          "(--to ends the range, as in backtest)", file=sys.stderr)
    return None, to


def _replay(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if not settings.broker:
        raise UsageError("no broker: pass --broker HOST:PORT or set STREAM_GUARD_BROKER")
    since = parse_bound(args.failed_since, "--failed-since") if args.failed_since else None
    before = parse_bound(args.failed_before, "--failed-before") if args.failed_before else None
    if (since and since.time_ms is None) or (before and before.time_ms is None):
        raise UsageError("--failed-since and --failed-before take ISO-8601 times")
    selection = Selection(_csv(args.stage), _csv(args.field), since.time_ms if since else None,
                          before.time_ms if before else None)
    start = parse_bound(args.start, "--from") if args.start else None
    end, old_topic = range_end(args.end, args.old_end)
    dlq, to = args.dlq or settings.topics.dlq, args.topic or old_topic or settings.topics.answers
    try:
        summary = asyncio.run(replay_dead_letters(settings, dlq=dlq, to=to, start=start, end=end,
                                                  selection=selection, dry_run=args.dry_run, limit=args.max))
    except (KafkaError, OSError) as exc:
        raise BrokerError(str(exc)) from None
    print(orjson.dumps(summary.summary()).decode(), flush=True)
    return 0
