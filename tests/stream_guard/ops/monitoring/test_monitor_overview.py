"""The all-tenants view: worst first, a page at a time, kept as tenants change, merged across workers."""

from __future__ import annotations

import gc
import random

import orjson

from stream_guard.ops.monitoring.ledger import TenantState
from stream_guard.ops.monitoring.overview import Overview, decode_cursor, encode_cursor, merge_pages, row_of


def state(severity: str | None = None, change: float | str | None = None) -> TenantState:
    alerts = [{"kind": "rate_shift", "severity": severity, "summary": "moved", "created_at_ms": 1}] if severity else []
    return TenantState(rates_day=20_000, alerts=alerts, rates={"refusal": {"value": 0.2, "change": change}})


def test_worst_first_alert_severity_then_the_largest_rise_then_the_name() -> None:
    overview = Overview()
    for tenant, s in [("calm", state()), ("risen", state(change=0.5)), ("new-rate", state(change="inf")),
                      ("warned", state("warning", 0.1)), ("critical", state("critical", -0.2)),
                      ("also-calm", state(change=-0.3)), ("high", state("high"))]:
        overview.put(row_of(tenant, s), partition=0)
    assert [r["tenant"] for r in overview.page(None, 10)] == ["critical", "high", "warned", "new-rate", "risen",
                                                            "also-calm", "calm"]  # no rise: by name


def test_pages_follow_one_another_and_a_changed_tenant_moves() -> None:
    overview = Overview()
    tenants = [f"t{i:05d}" for i in range(10_000)]
    rng = random.Random(7)
    for tenant in tenants:
        overview.put(row_of(tenant, state(change=rng.choice([None, 0.1, 0.2, 0.3]))), partition=rng.randrange(4))
    seen, after = [], None
    while page := overview.page(after, 1000):
        seen += [r["tenant"] for r in page]
        after = decode_cursor(encode_cursor(page[-1]["rank"]))  # as a URL carries it
    assert sorted(seen) == tenants and len(seen) == len(set(seen)) == len(overview) == 10_000
    overview.put(row_of("t09999", state("critical")), partition=1)
    assert overview.page(None, 1)[0]["tenant"] == "t09999" and len(overview) == 10_000
    kept = len(overview) - overview.keep_partitions({1, 2})
    assert kept == len(overview) and all(r["tenant"] for r in overview.page(None, 10_000))


def test_a_page_shows_each_row_as_the_tenants_state_gave_it_and_a_partition_leaving_takes_its_tenants() -> None:
    overview = Overview()
    rows = {t: row_of(t, state("high" if t == "b" else None, 0.25)) for t in ("a", "b", "c")}
    for i, (tenant, row) in enumerate(rows.items()):
        overview.put(row, partition=i % 2)
    assert overview.page(None, 10) == [orjson.loads(orjson.dumps(rows[t].to_dict())) for t in ("b", "a", "c")]
    assert overview.keep_partitions({0, 1, 5}) == 0
    assert overview.keep_partitions({0}) == 1 and [r["tenant"] for r in overview.page(None, 10)] == ["a", "c"]


def test_a_tenants_row_adds_no_object_the_garbage_collector_tracks() -> None:
    """A worker keeps one row per tenant it owns. Tracked, 100,000 tenants' rows made every full collection walk
    them, stopping the event loop for about a second every 15-20 s (issue 17)."""
    overview = Overview()
    overview.put(row_of("first", state("high", 0.5)), partition=0)
    gc.collect()
    before = len(gc.get_objects())
    for i in range(10_000):
        overview.put(row_of(f"t{i:05d}", state("critical" if i % 7 == 0 else None, i / 10_000)), partition=i % 4)
    assert len(overview.page(None, 100)) == 100
    gc.collect()
    assert len(gc.get_objects()) - before < 100


def test_only_new_keeps_a_newer_row() -> None:
    overview = Overview()
    overview.put(row_of("a", state("critical")), 0)
    overview.put(row_of("a", state()), 0, only_new=True)  # an index pass read the tenant before its update
    assert overview.page(None, 1)[0]["latest_alert"]["severity"] == "critical"


def test_a_cursor_from_a_url_is_read_or_ignored() -> None:
    assert decode_cursor(encode_cursor((-3, -0.5, "acme"))) == (-3, -0.5, "acme")
    for junk in (None, "", "!!!", encode_cursor(["x", 1, 2]).replace("W", "Z"), "A" * 2000):
        assert decode_cursor(junk) is None or isinstance(decode_cursor(junk), tuple)
    assert decode_cursor(encode_cursor([True, 0, "a"])) is None


def test_pages_of_several_workers_merge_worst_first() -> None:
    a = [{"tenant": "a1", "rank": [-3, 0.0, "a1"]}, {"tenant": "a2", "rank": [0, -0.1, "a2"]}]
    b = [{"tenant": "b1", "rank": [-1, 0.0, "b1"]}]
    rows, more = merge_pages([a, b], limit=2)
    assert [r["tenant"] for r in rows] == ["a1", "b1"] and more
    rows, more = merge_pages([a[:1], b], limit=3)
    assert [r["tenant"] for r in rows] == ["a1", "b1"] and not more
