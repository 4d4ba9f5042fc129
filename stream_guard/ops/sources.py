"""Where recorded answers come from for a backtest or a calibration, and the interface a topic reader implements.

A file is read here. A topic is read by the streaming edge (stream_guard.agents.replay.TopicSource), which
implements `RecordedSource`; the core never imports the edge: the command line builds the source and hands it
to the backtest (stream_guard/cli/backtest.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Protocol

import orjson

from stream_guard.engine.pool import json_object
from stream_guard.errors import ConfigurationError


class UsageError(ConfigurationError):
    """What was asked of a command cannot be done (a range, a flag, a missing extra): exit 2 with this message."""


@dataclass(frozen=True)
class Position:
    """Where one input came from ("line 12", "rag.answers/3@1402") and the task type it declares."""

    origin: str
    task_type: str | None = None


def task_type_of(payload: bytes) -> str | None:
    """`metadata.task_type`, else a top-level `task_type` (the labelled files in ../shared/data have one)."""
    obj = json_object(payload)
    if obj is None:
        return None
    metadata = obj.get("metadata")
    value = metadata.get("task_type") if isinstance(metadata, dict) else None
    value = value if value is not None else obj.get("task_type")
    return str(value) if isinstance(value, (str, int)) and str(value).strip() else None


def file_inputs(path: str | Path) -> Iterator[tuple[Position, bytes]]:
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                yield Position(f"line {number}", task_type_of(line)), line


def file_records(path: str | Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        yield from (line for line in fh if line.strip())


@dataclass(frozen=True)
class Bound:
    """One end of a topic range: an offset for every partition, offsets per partition, or a time (epoch ms)."""

    offset: int | None = None
    per_partition: Mapping[int, int] | None = None
    time_ms: int | None = None

    def offset_for(self, partition: int) -> int | None:
        if self.per_partition is not None:
            return self.per_partition.get(partition)
        return self.offset


_PER_PARTITION = re.compile(r"^\d+:\d+(,\d+:\d+)*$")


def parse_bound(text: str, flag: str) -> Bound:
    """`123` (that offset in every partition), `0:120,1:98` (per partition) or an ISO-8601 time (UTC unless
    it says otherwise)."""
    text = text.strip()
    if text.isdigit():
        return Bound(offset=int(text))
    compact = text.replace(" ", "")
    if _PER_PARTITION.match(compact):
        return Bound(per_partition={int(p): int(o) for p, o in (pair.split(":") for pair in compact.split(","))})
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected an offset (123), offsets per partition (0:120,1:98) "
                         "or an ISO-8601 time (2026-11-22T10:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return Bound(time_ms=int(moment.timestamp() * 1000))


class RangePlan(Protocol):
    """A planned read of a topic range: how many records (None when timestamps filter them), and a description
    for the report."""

    @property
    def total(self) -> int | None: ...

    def describe(self) -> dict[str, Any]: ...


class RecordedSource(Protocol):
    """Recorded traffic on a broker: the answers in a range, the live verdicts, the graders' labels."""

    @property
    def verdicts_topic(self) -> str: ...

    def plan(self, topic: str, start: Bound | None, end: Bound | None) -> RangePlan: ...

    def inputs(self, plan: Any) -> Iterator[tuple[Position, bytes]]: ...

    def live(self, topic: str, required: bool = True) -> Mapping[str, Decision] | None: ...

    def labels(self, topic: str) -> dict[str, int]: ...


@dataclass(frozen=True)
class Decision:
    """The part of a verdict a backtest compares: what was done, with what score."""

    routing: str
    hallucination_score: float
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        return {"routing": self.routing, "hallucination_score": self.hallucination_score, "flagged": self.flagged}


def decision_of(verdict: Mapping[str, Any]) -> Decision | None:
    routing, score = verdict.get("routing"), verdict.get("hallucination_score")
    if not isinstance(routing, str) or not isinstance(score, (int, float)) or isinstance(score, bool):
        return None
    return Decision(routing, float(score), bool(verdict.get("flagged")))


def live_decisions(records: Iterable[bytes]) -> dict[str, Decision]:
    """event_id -> the live decision, from verdict records (JSONL lines or topic values). At least once
    means an event may have two verdicts: the later wins. Records that are not verdicts are skipped."""
    out: dict[str, Decision] = {}
    for raw in records:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get("event_id") is not None and (d := decision_of(obj)) is not None:
            out[str(obj["event_id"])] = d
    return out
