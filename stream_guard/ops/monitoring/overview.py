"""The operator's all-tenants view: one small row per tenant, worst first, a page at a time.

Pure. The worker keeps an `Overview` of the tenants whose books it owns, updated as each tenant's batch is
applied (and rebuilt, a slice at a time, for partitions it takes over), so a page is a binary search and a
slice, never a pass over every tenant's days: with 100,000 tenants a page costs what it costs with ten, and
the health endpoints keep answering while one is served.

Worst first: the most severe latest alert (critical, high, warning, none), then the largest rise of any rate
against its baseline, then the tenant's name. A page ends with a cursor (the last row's rank), so the next one
starts after it, on one worker or merged across several (`merge_pages`).

A row is kept as its JSON, beside its rank, in a Struct the garbage collector does not track (`gc=False`): a
worker keeps one per tenant it owns, and as objects (a dataclass, its dicts of rates and alert) 100,000 tenants'
rows were hundreds of thousands of tracked objects that every full collection walked, stopping the event loop
for about a second every 15-20 s (issue 17). A page decodes its rows only.
"""

from __future__ import annotations

import base64
import bisect
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import msgspec
import orjson

from stream_guard.ops.monitoring.ledger import TenantState
from stream_guard.ops.monitoring.windows import RATES, day_label

SEVERITY_RANK = {"critical": 3, "high": 2, "warning": 1}
# A rate that appeared from nothing ("inf" change) ranks above any finite rise.
NEW_RATE_RISE = 1e9
Rank = tuple[int, float, str]


@dataclass(frozen=True)
class TenantRow:
    tenant: str
    rank: Rank
    as_of_day: str | None
    rates: Mapping[str, Mapping[str, Any]]  # name -> value, change
    latest_alert: Mapping[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "rank": list(self.rank), "as_of_day": self.as_of_day,
                "rates": dict(self.rates), "latest_alert": self.latest_alert}


def _rise(change: Any) -> float:
    if change == "inf":
        return NEW_RATE_RISE
    if isinstance(change, (int, float)) and not isinstance(change, bool) and math.isfinite(change):
        return float(change)
    return 0.0


def row_of(tenant: str, state: TenantState) -> TenantRow:
    """A tenant's row from its state alone (no days read)."""
    rates = {name: {"value": (state.rates.get(name) or {}).get("value"),
                    "change": (state.rates.get(name) or {}).get("change")} for name in RATES}
    latest = state.alerts[0] if state.alerts else None
    alert = ({k: latest.get(k) for k in ("kind", "severity", "summary", "created_at_ms")}
             if isinstance(latest, Mapping) else None)
    severity = SEVERITY_RANK.get(str(alert.get("severity")), 0) if alert else 0
    rise = max((_rise(r["change"]) for r in rates.values()), default=0.0)
    rank: Rank = (-severity, -rise, tenant)
    as_of = day_label(state.rates_day) if state.rates_day is not None else None
    return TenantRow(tenant, rank, as_of, rates, alert)


class _Kept(msgspec.Struct, frozen=True, gc=False):
    rank: Rank
    row: bytes  # TenantRow.to_dict() as JSON
    partition: int


class Overview:
    """The tenants of this worker's partitions, kept sorted by rank as they change."""

    def __init__(self) -> None:
        self._ranks: list[Rank] = []
        self._rows: dict[str, _Kept] = {}
        self._per_partition: Counter[int] = Counter()

    def __len__(self) -> int:
        return len(self._rows)

    def put(self, row: TenantRow, partition: int, *, only_new: bool = False) -> None:
        """Add or replace a tenant's row (`only_new`: keep a row already there, newer than the caller's)."""
        old = self._rows.get(row.tenant)
        if old is not None:
            if only_new:
                return
            self._remove(row.tenant)
        rank = (row.rank[0], float(row.rank[1]), row.rank[2])
        bisect.insort(self._ranks, rank)
        self._rows[row.tenant] = _Kept(rank, orjson.dumps(row.to_dict()), partition)
        self._per_partition[partition] += 1

    def keep_partitions(self, partitions: Iterable[int]) -> int:
        """Forget the tenants of partitions this worker no longer owns; returns how many (no pass over the
        tenants when none of their partitions left)."""
        keep = set(partitions)
        if all(partition in keep for partition in self._per_partition):
            return 0
        gone = [tenant for tenant, kept in self._rows.items() if kept.partition not in keep]
        for tenant in gone:
            self._remove(tenant)
        return len(gone)

    def page(self, after: Rank | None, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` rows (as TenantRow.to_dict() gives them), worst first, starting after the row ranked
        `after`."""
        start = 0 if after is None else bisect.bisect_right(self._ranks, after)
        return [orjson.loads(self._rows[rank[2]].row) for rank in self._ranks[start:start + limit]]

    def _remove(self, tenant: str) -> None:
        kept = self._rows.pop(tenant)
        self._remove_rank(kept.rank)
        self._per_partition[kept.partition] -= 1
        if not self._per_partition[kept.partition]:
            del self._per_partition[kept.partition]

    def _remove_rank(self, rank: Rank) -> None:
        i = bisect.bisect_left(self._ranks, rank)
        if i < len(self._ranks) and self._ranks[i] == rank:
            del self._ranks[i]


def encode_cursor(rank: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(rank))).decode().rstrip("=")


def decode_cursor(text: str | None) -> Rank | None:
    """A cursor from a URL; None for none or anything unreadable (the first page)."""
    if not text or len(text) > 1024:
        return None
    try:
        value = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None
    if (isinstance(value, list) and len(value) == 3 and isinstance(value[0], int) and not isinstance(value[0], bool)
            and isinstance(value[1], (int, float)) and not isinstance(value[1], bool) and isinstance(value[2], str)):
        return (value[0], float(value[1]), value[2])
    return None


def merge_pages(pages: Iterable[Sequence[Mapping[str, Any]]], limit: int) -> tuple[list[Mapping[str, Any]], bool]:
    """Rows of several workers' pages (each worst first, after the same cursor) merged worst first: the first
    `limit`, and whether any row was left over (there is a next page)."""
    pages = [list(page) for page in pages]
    rows = sorted((row for page in pages for row in page), key=lambda r: tuple(r["rank"]))
    return rows[:limit], len(rows) > limit or any(len(page) >= limit for page in pages)
