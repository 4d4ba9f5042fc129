"""A tenant's books: count observations into days, close days in event time, evaluate the rules, keep and
emit the weekly review sample, join grades, drop what is past the retention.

Pure given a `Store` to read from: `apply(store, tenant, records, settings, now_ms)` returns every write and
every message it implies (`Changes`) and performs none, so the streaming side can send the messages, wait
for the broker, and only then write the state (at least once: a crash in between replays the records, and
the seen-set, the closed-day mark and the sent alert ids make the replay a no-op).

Tables (keys built here, values JSON):
- DAYS:  [tenant, day] -> DayCounts
- SEEN:  "<day:08d>\\0" [tenant, event_id] -> b"1", one per counted answer, so a redelivered or replayed
         answer counts once. Day first, so a partition's expired records are one leading key range.
- STATE: "t"[tenant] -> TenantState; "s"[tenant, week] -> the week's sample; "i"[tenant, week, event_id] ->
         a sampled answer's review item.

Event time: each tenant's watermark is the latest event time it has seen. Day D closes once the watermark,
and the horizon (how far every judging partition has got, progress.py), pass the end of D plus `lateness`;
its rules are then evaluated once, on the windows ending with D. A late
answer still counts in its own day (the dashboard and later windows see it) but does not re-open a closed
day. A week's sample is emitted when the week's last day closes. Days older than the retention are dropped,
and answers for them are not counted.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Protocol

import orjson

from stream_guard.wire.alert import Alert
from stream_guard.ops.monitoring.observation import Observation
from stream_guard.ops.monitoring.review import sampled_record
from stream_guard.ops.monitoring.rules import evaluate_day, review_failures
from stream_guard.ops.monitoring.sampling import BottomK, sample_score
from stream_guard.config.monitor import MonitorSettings
from stream_guard.ops.monitoring.windows import (DayCounts, Windows, day_of, retention_cutoff, week_days, week_of)

DAYS, SEEN, STATE = "days", "seen", "state"
MAX_CLOSE_PER_BATCH = 400  # bounded work per batch even after a long silence


class Store(Protocol):
    def get(self, table: str, key: bytes) -> bytes | None: ...


def day_key(tenant: str, day: int) -> bytes:
    return orjson.dumps([tenant, day])


def seen_key(day: int, tenant: str, event_id: str) -> bytes:
    return f"{day:08d}".encode() + b"\0" + orjson.dumps([tenant, event_id])


def seen_day(key: bytes) -> tuple[int, str] | None:
    """(day, tenant) of a SEEN key; None for anything else."""
    try:
        prefix, rest = key.split(b"\0", 1)
        return int(prefix), str(orjson.loads(rest)[0])
    except (ValueError, IndexError, TypeError, orjson.JSONDecodeError):
        return None


def expired_seen(keys: Iterable[bytes], first_days: Mapping[str, int]) -> Iterator[bytes]:
    """The SEEN keys (in key order, so by day) older than their tenant's first kept day. Stops at the first
    key that every tenant still keeps; a tenant without state keeps its keys."""
    if not first_days:
        return
    newest_cutoff = max(first_days.values())
    for key in keys:
        parsed = seen_day(key)
        if parsed is None:
            continue
        day, tenant = parsed
        if day >= newest_cutoff:
            return
        if day < first_days.get(tenant, day):
            yield key


def state_key(tenant: str) -> bytes:
    return b"t" + orjson.dumps([tenant])


def sample_key(tenant: str, week: int) -> bytes:
    return b"s" + orjson.dumps([tenant, week])


def item_key(tenant: str, week: int, event_id: str) -> bytes:
    return b"i" + orjson.dumps([tenant, week, event_id])


def _loads(raw: bytes | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class Sample:
    """One tenant-week's review sample: members, whether it was sent, and the grades that came back."""

    members: BottomK
    emitted: bool = False
    grades: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def wrong(self) -> list[str]:
        return sorted(e for e, g in self.grades.items() if g.get("label") == 1)

    def to_json(self) -> bytes:
        return orjson.dumps({"size": self.members.size, "members": [list(m) for m in self.members.members],
                             "emitted": self.emitted, "grades": self.grades})

    @classmethod
    def load(cls, raw: bytes | None, size: int) -> "Sample":
        data = _loads(raw)
        members = tuple(sorted((int(s), str(e)) for s, e in data.get("members", [])))
        grades = data.get("grades")
        emitted = bool(data.get("emitted"))
        # A sent sample keeps its members even if the configured size shrank since.
        kept = members if emitted else members[:size]
        return cls(BottomK(size, kept), emitted, dict(grades) if isinstance(grades, dict) else {})


@dataclass
class TenantState:
    watermark_ms: int | None = None
    closed_through: int | None = None  # the last day whose rules were evaluated
    first_day: int | None = None  # the oldest day that may have counts
    open_weeks: list[int] = field(default_factory=list)  # weeks whose sample is not sent yet
    episodes: dict[str, Any] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)  # alert_id -> the day it is about
    alerts: list[dict[str, Any]] = field(default_factory=list)  # the most recent, newest first
    rates: dict[str, Any] = field(default_factory=dict)  # the last closed day's windows, for pages and metrics
    rates_day: int | None = None
    counters: dict[str, int] = field(default_factory=dict)  # answers not counted, by reason

    def to_json(self) -> bytes:
        return orjson.dumps(self.__dict__)

    @classmethod
    def load(cls, raw: bytes | None) -> "TenantState":
        data = _loads(raw)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    @property
    def watermark_day(self) -> int | None:
        return None if self.watermark_ms is None else day_of(self.watermark_ms)


@dataclass
class Changes:
    """Everything one `apply` decided: table writes (None deletes) and messages to send."""

    puts: dict[tuple[str, bytes], bytes | None] = field(default_factory=dict)
    alerts: list[Alert] = field(default_factory=list)
    reviews: list[bytes] = field(default_factory=list)
    sampled: list[tuple[str, bytes]] = field(default_factory=list)  # (event_id, record) for the labels side
    counters: Counter[str] = field(default_factory=Counter)


class _Books:
    """Reads through the pending writes of one apply, so later records see earlier ones."""

    def __init__(self, store: Store, changes: Changes) -> None:
        self.store = store
        self.changes = changes

    def get(self, table: str, key: bytes) -> bytes | None:
        if (table, key) in self.changes.puts:
            return self.changes.puts[(table, key)]
        return self.store.get(table, key)

    def put(self, table: str, key: bytes, value: bytes | None) -> None:
        self.changes.puts[(table, key)] = value


def load_days(store: Store, tenant: str, first: int, last: int) -> dict[int, DayCounts]:
    out = {}
    for day in range(first, last + 1):
        raw = store.get(DAYS, day_key(tenant, day))
        if raw:
            out[day] = DayCounts.from_dict(_loads(raw))
    return out


def apply(store: Store, tenant: str, records: Iterable[Mapping[str, Any]], settings: MonitorSettings,
          now_ms: int, horizon_ms: float = math.inf) -> Changes:
    """Apply one batch of a tenant's records (answers and grades, in arrival order; may be empty), then close
    the days that the tenant's event time and `horizon_ms` (progress.py: how far every judging partition
    has got) have both passed."""
    changes = Changes()
    books = _Books(store, changes)
    state = TenantState.load(books.get(STATE, state_key(tenant)))
    added: dict[int, DayCounts] = {}
    for record in records:
        if record.get("type") == "grade":
            _grade(books, tenant, state, record, settings, changes)
        else:
            _answer(books, tenant, state, Observation.from_record(record), record.get("review"), settings, now_ms,
                    added, changes)
    for day, counts in added.items():
        key = day_key(tenant, day)
        books.put(DAYS, key, orjson.dumps(DayCounts.from_dict(_loads(books.get(DAYS, key))).plus(counts).to_dict()))
    _close_days(books, tenant, state, settings, changes, horizon_ms)
    _prune(books, tenant, state, settings)
    for reason, n in changes.counters.items():
        if reason.startswith("skipped_"):
            state.counters[reason] = state.counters.get(reason, 0) + n
    books.put(STATE, state_key(tenant), state.to_json())
    return changes


def _answer(books: _Books, tenant: str, state: TenantState, obs: Observation, review: Any,
            settings: MonitorSettings, now_ms: int, added: dict[int, DayCounts], changes: Changes) -> None:
    if obs.at_ms is None or obs.at_ms < 0:
        changes.counters["skipped_no_time"] += 1
        return
    if obs.at_ms > now_ms + settings.max_future_ms:
        changes.counters["skipped_future"] += 1
        return
    day = day_of(obs.at_ms)
    if state.watermark_day is not None and day < retention_cutoff(state.watermark_day, settings.retention_days):
        changes.counters["skipped_past_retention"] += 1
        return
    key = seen_key(day, tenant, obs.event_id)
    if books.get(SEEN, key):
        changes.counters["duplicate"] += 1
        return
    books.put(SEEN, key, b"1")
    added[day] = added[day].plus(obs.day_counts()) if day in added else obs.day_counts()
    changes.counters["counted"] += 1
    if state.closed_through is not None and day <= state.closed_through:
        changes.counters["late"] += 1
    state.watermark_ms = obs.at_ms if state.watermark_ms is None else max(state.watermark_ms, obs.at_ms)
    state.first_day = day if state.first_day is None else min(state.first_day, day)
    if isinstance(review, Mapping):
        _offer(books, tenant, state, week_of(day), obs.event_id, review, settings, changes)


def _offer(books: _Books, tenant: str, state: TenantState, week: int, event_id: str, review: Mapping[str, Any],
           settings: MonitorSettings, changes: Changes) -> None:
    size = settings.sample_size_for(tenant)
    key = sample_key(tenant, week)
    sample = Sample.load(books.get(STATE, key), size)
    if sample.emitted:
        changes.counters["late_for_sample"] += 1
        return
    members, admitted, evicted = sample.members.offer(sample_score(settings.review_salt, tenant, week, event_id),
                                                      event_id)
    if not admitted:
        return
    sample.members = members
    books.put(STATE, item_key(tenant, week, event_id), orjson.dumps(review))
    if evicted is not None:
        books.put(STATE, item_key(tenant, week, evicted), None)
    books.put(STATE, key, sample.to_json())
    if week not in state.open_weeks:
        state.open_weeks = sorted({*state.open_weeks, week})


def _grade(books: _Books, tenant: str, state: TenantState, record: Mapping[str, Any], settings: MonitorSettings,
           changes: Changes) -> None:
    week, event_id = record.get("week"), record.get("event_id")
    if not isinstance(week, int) or not isinstance(event_id, str):
        changes.counters["grade_unreadable"] += 1
        return
    size = settings.sample_size_for(tenant)
    sample = Sample.load(books.get(STATE, sample_key(tenant, week)), size)
    if event_id not in sample.members.event_ids:
        changes.counters["grade_not_in_sample"] += 1
        return
    sample.grades[event_id] = {k: record[k] for k in ("label", "grader", "note") if record.get(k) is not None}
    books.put(STATE, sample_key(tenant, week), sample.to_json())
    changes.counters["graded"] += 1
    before = books.get(STATE, sample_key(tenant, week - 1))
    previous = Sample.load(before, size) if before else None
    alert = review_failures(tenant, week, len(sample.grades), sample.wrong, settings.rules_for(tenant),
                            (len(previous.grades), len(previous.wrong)) if previous and previous.grades else None)
    if alert is not None:
        _send(state, alert, week_days(week)[1], settings, changes)


def _send(state: TenantState, alert: Alert, day: int, settings: MonitorSettings, changes: Changes) -> None:
    if alert.alert_id in state.sent:
        changes.counters["alert_suppressed"] += 1
        return
    state.sent[alert.alert_id] = day
    state.alerts = [alert.to_dict(), *state.alerts][:settings.alerts_kept]
    changes.alerts.append(alert)


def closable_through(watermark_ms: int, lateness_ms: int) -> int:
    """The last day a watermark closes: day D closes once the watermark reaches its end plus the lateness."""
    return day_of(watermark_ms - lateness_ms) - 1


def _close_days(books: _Books, tenant: str, state: TenantState, settings: MonitorSettings,
                changes: Changes, horizon_ms: float) -> None:
    if state.watermark_ms is None or state.first_day is None or horizon_ms == -math.inf:
        return
    last = closable_through(int(min(state.watermark_ms, horizon_ms)), settings.lateness_ms)
    first = state.first_day if state.closed_through is None else state.closed_through + 1
    first = max(first, last - min(settings.retention_days, MAX_CLOSE_PER_BATCH) + 1)
    if first > last:
        return
    rules = settings.rules_for(tenant)
    days = load_days(books, tenant, Windows(first, rules.trailing_days, rules.baseline_days).first_day, last)
    for day in range(first, last + 1):
        evaluation = evaluate_day(tenant, day, days, state.episodes, rules)
        state.episodes = dict(evaluation.episodes)
        for alert in evaluation.alerts:
            _send(state, alert, day, settings, changes)
        state.rates = {name: window.to_dict() for name, window in evaluation.rates.items()}
        state.rates_day = day
    state.closed_through = last
    for week in list(state.open_weeks):
        if week_days(week)[1] <= last:
            _emit_sample(books, tenant, week, settings, changes)
            state.open_weeks.remove(week)


def _emit_sample(books: _Books, tenant: str, week: int, settings: MonitorSettings, changes: Changes) -> None:
    key = sample_key(tenant, week)
    sample = Sample.load(books.get(STATE, key), settings.sample_size_for(tenant))
    if sample.emitted:
        return
    for event_id in sample.members.event_ids:
        item = books.get(STATE, item_key(tenant, week, event_id))
        if item:
            changes.reviews.append(item)
            changes.sampled.append((event_id, sampled_record(tenant, week, event_id)))
    sample.emitted = True
    books.put(STATE, key, sample.to_json())
    changes.counters["samples_emitted"] += 1


def _prune(books: _Books, tenant: str, state: TenantState, settings: MonitorSettings) -> None:
    """Drop days, samples and alert ids older than the retention (SEEN records go in a sweep: see agents)."""
    if state.watermark_day is None or state.first_day is None:
        return
    cutoff = retention_cutoff(state.watermark_day, settings.retention_days)
    if state.first_day >= cutoff:
        return
    for day in range(max(state.first_day, cutoff - settings.retention_days), cutoff):
        books.put(DAYS, day_key(tenant, day), None)
    for week in range(week_of(state.first_day), week_of(cutoff)):
        if week_days(week)[1] < cutoff:
            key = sample_key(tenant, week)
            raw = books.get(STATE, key)
            if raw:
                for event_id in Sample.load(raw, settings.sample_size_for(tenant)).members.event_ids:
                    books.put(STATE, item_key(tenant, week, event_id), None)
                books.put(STATE, key, None)
    state.first_day = cutoff
    state.sent = {k: d for k, d in state.sent.items() if d >= cutoff}
    state.open_weeks = [w for w in state.open_weeks if week_days(w)[1] >= cutoff]
