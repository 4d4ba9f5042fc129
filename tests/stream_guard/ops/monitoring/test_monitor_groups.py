"""One record per tenant per flush on the by-tenant topic, and the single records of before still read."""

from __future__ import annotations

import orjson

from stream_guard.ops.monitoring.groups import GROUP_VERSION, TenantGroups, group_record, records_of
from stream_guard.ops.monitoring.observation import Observation


def _record(event_id: str, tenant: str = "acme") -> bytes:
    return orjson.dumps(Observation(tenant, event_id, 1_700_000_000_000, "q1", {"answers": 1}).to_record())


def test_a_group_carries_each_answer_record_unchanged_in_order() -> None:
    singles = [_record("e1"), _record("e2"), _record("e3")]
    group = orjson.loads(group_record("acme", singles))
    assert (group["type"], group["v"], group["tenant"]) == ("answers", GROUP_VERSION, "acme")
    records, unreadable = records_of(group)
    assert records == [orjson.loads(r) for r in singles] and unreadable == 0


def test_a_single_record_of_an_earlier_version_and_a_grade_are_read_as_themselves() -> None:
    single = orjson.loads(_record("e1"))
    grade = {"type": "grade", "tenant": "acme", "event_id": "e1", "label": 1}
    assert records_of(single) == ([single], 0)
    assert records_of(grade) == ([grade], 0)


def test_unreadable_parts_of_a_group_are_counted_and_the_rest_applied() -> None:
    assert records_of({"type": "answers", "tenant": "acme", "records": [{"event_id": "e1"}, 3, "x"]}) == (
        [{"event_id": "e1"}], 2)
    assert records_of({"type": "answers", "tenant": "acme", "records": "e1"}) == ([], 1)


def test_a_tenant_name_that_needs_escaping_survives_the_group() -> None:
    tenant = 'a"c\\me\u00e9'
    assert orjson.loads(group_record(tenant, [_record("e1", tenant)]))["tenant"] == tenant


def test_gathered_records_are_taken_one_group_per_tenant_in_arrival_order() -> None:
    groups = TenantGroups(max_bytes=10_000)
    for tenant, event_id in (("b", "1"), ("a", "2"), ("b", "3")):
        groups.add(tenant, _record(event_id, tenant))
    taken = groups.take()
    assert [t for t, _ in taken] == ["b", "a"]
    assert [r["event_id"] for r in records_of(orjson.loads(taken[0][1]))[0]] == ["1", "3"]
    assert groups.take() == []


def test_a_record_that_would_pass_the_bound_does_not_fit_unless_it_is_alone() -> None:
    record = _record("e1")
    groups = TenantGroups(max_bytes=2 * len(record))
    assert groups.fits(record)
    groups.add("acme", record)
    assert not groups.fits(record)  # with its separator, two records pass the bound
    groups.take()
    assert TenantGroups(max_bytes=10).fits(record)  # too large for any group: it goes alone
