"""Answers' observations gathered per tenant: one record per tenant per flush on `<app>-monitor-by-tenant`.

The judging side sent one record per answer to the monitor's topic: a produce, a fetched record and a Faust
event per answer (issue 16: the worker's CPU per event). Now it gathers each tenant's observation records for
`monitor.flush_ms` and sends them as one group record,

    {"type": "answers", "v": 1, "tenant": "acme", "records": [<observation record>, ...]}

whose inner records are exactly the single records of before (observation.Observation.to_record, plus review
material for a sampled candidate), so the ledger applies them unchanged, and counts each answer once by its
event_id however often a group is redelivered. A monitor reads both shapes (`records_of`): single records
from a worker of an earlier version, or one with `monitor.flush_ms = 0`, are applied as they always were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import orjson

GROUP_TYPE = "answers"
GROUP_VERSION = 1  # a later version may add fields; "records" keeps this meaning
_HEAD = b'{"type":' + orjson.dumps(GROUP_TYPE) + b',"v":' + str(GROUP_VERSION).encode() + b',"tenant":'


def group_record(tenant: str, records: list[bytes]) -> bytes:
    """One tenant's records (each a JSON object, already encoded) as one group record. Joined as bytes: each
    record was encoded once, where it was observed, and is not decoded again here."""
    return _HEAD + orjson.dumps(tenant) + b',"records":[' + b",".join(records) + b"]}"


def records_of(record: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    """The records a by-tenant record carries, in order, and how many of its parts were unreadable: a group's
    inner records, or the record itself (a single answer, a grade)."""
    if record.get("type") != GROUP_TYPE:
        return [record], 0
    inner = record.get("records")
    if not isinstance(inner, list):
        return [], 1
    readable = [r for r in inner if isinstance(r, Mapping)]
    return readable, len(inner) - len(readable)


@dataclass
class TenantGroups:
    """Records gathered per tenant until the next flush, with their size: a flush's records for all tenants
    stay under `max_bytes` in all (so does each group record), except that one record larger than that goes
    alone."""

    max_bytes: int
    _records: dict[str, list[bytes]] = field(default_factory=dict)
    _bytes: int = 0

    def fits(self, record: bytes) -> bool:
        """Whether `record` can join what is gathered (an empty gathering takes any record)."""
        return not self._records or self._bytes + len(record) <= self.max_bytes

    def add(self, tenant: str, record: bytes) -> None:
        self._records.setdefault(tenant, []).append(record)
        self._bytes += len(record) + 1

    def take(self) -> list[tuple[str, bytes]]:
        """Every tenant's group record (tenant, value), in the order tenants first came; gathers afresh."""
        out = [(tenant, group_record(tenant, records)) for tenant, records in self._records.items()]
        self._records, self._bytes = {}, 0
        return out
