import gc
import json
import random
import re
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from stream_guard.ops.monitoring.metrics import Snapshot, TenantMetrics
from stream_guard.ops.monitoring.windows import DayCounts

DEPLOY = Path(__file__).resolve().parents[4] / "deploy"
METRIC_RE = re.compile(r"\bstream_guard_[a-z_]+\b")


def _samples(text):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _metrics() -> TenantMetrics:
    metrics = TenantMetrics(["acme"])
    week = DayCounts(answers=100, claims=300, refused=30, citations=50, mismatched=5, flagged=10, latency={300: 100})
    base = DayCounts(answers=400, claims=1200, refused=60, citations=200, mismatched=2, flagged=40)
    metrics.update("acme", Snapshot.of(week, base, 1_700_000_000_000, review=(30, 4)), partition=1)
    metrics.update("beta", Snapshot.of(week, base, 1_700_000_000_000))
    metrics.update("gamma", Snapshot.of(week, base, 1_800_000_000_000, review=(10, 1)))
    metrics.counted("zeta", "counted", 3)
    metrics.alerted("acme", "rate_shift", "high")
    return metrics


def test_tenant_labels_are_the_configured_tenants_plus_other_with_the_rest_summed():
    samples = _samples(_metrics().text())
    tenants = {dict(labels).get("tenant") for _, labels in samples}
    assert tenants == {"acme", "other"}
    rate = dict(samples)
    assert rate[("stream_guard_tenant_rate", (("rate", "refusal"), ("tenant", "acme"), ("window", "trailing")))] == 0.1
    assert rate[("stream_guard_tenant_rate", (("rate", "refusal"), ("tenant", "acme"), ("window", "baseline")))] == 0.05
    assert rate[("stream_guard_tenant_rate_denominator", (("rate", "refusal"), ("tenant", "other"),
                                                          ("window", "trailing")))] == 600  # beta + gamma
    assert rate[("stream_guard_tenant_event_time_seconds", (("tenant", "other"),))] == 1_800_000_000
    assert rate[("stream_guard_tenant_review_wrong", (("tenant", "other"),))] == 1
    assert rate[("stream_guard_tenant_answers_total", (("outcome", "counted"), ("tenant", "other")))] == 3
    assert rate[("stream_guard_tenant_alerts_total", (("rule", "rate_shift"), ("severity", "high"),
                                                      ("tenant", "acme")))] == 1


def test_a_worker_reports_only_the_tenants_it_owns_now():
    metrics = _metrics()
    list(metrics.keep_partitions({0}))  # acme's partition moved to another worker
    assert "acme" not in {dict(l).get("tenant") for (n, l) in _samples(metrics.text()) if n == "stream_guard_tenant_rate"}


def _known_metrics() -> set[str]:
    return {name for name, _ in _samples(_metrics().text())}


def test_the_prometheus_rules_parse_and_use_only_metrics_the_worker_serves():
    doc = yaml.safe_load((DEPLOY / "prometheus" / "stream-guard-rules.yaml").read_text())
    # The tenant group; the platform group is checked against the worker's own metrics in tests/agents/test_deploy.py.
    rules = [rule for group in doc["groups"] if group["name"] == "stream-guard-tenants" for rule in group["rules"]]
    assert {r["alert"] for r in rules} >= {"StreamGuardTenantRateShift", "StreamGuardCitationMismatchWarning",
                                           "StreamGuardCitationMismatchCritical", "StreamGuardReviewFailures"}
    known = _known_metrics()
    for rule in rules:
        assert rule["labels"]["severity"] in ("warning", "high", "critical") and rule["annotations"]["summary"]
        used = set(METRIC_RE.findall(rule["expr"]))
        assert used and used <= known, (rule["alert"], used - known)
        assert rule["expr"].count("(") == rule["expr"].count(")")
        if "for" in rule:
            assert re.fullmatch(r"\d+[smhd]", rule["for"])
    thresholds = {r["alert"]: r["expr"] for r in rules}
    assert "> 0.30" in thresholds["StreamGuardTenantRateShift"]
    assert "> 0.04" in thresholds["StreamGuardCitationMismatchWarning"]
    assert "> 0.08" in thresholds["StreamGuardCitationMismatchCritical"]
    assert "> 3" in thresholds["StreamGuardReviewFailures"]


def test_the_grafana_dashboard_parses_is_templated_by_tenant_and_queries_served_metrics():
    dashboard = json.loads((DEPLOY / "grafana" / "stream-guard-tenants.json").read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert "label_values(stream_guard_tenant_rate, tenant)" in variables["tenant"]["definition"]
    known = _known_metrics()
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) >= 6
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used = set(METRIC_RE.findall(target["expr"]))
            assert used and used <= known, (panel["title"], used - known)
            assert 'tenant="$tenant"' in target["expr"]
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24


def _from_scratch(metrics: TenantMetrics, snapshots: dict[str, tuple[DayCounts, DayCounts, int | None]],
                  owned: set[str]) -> dict[str, tuple]:
    """What the gauges must show, summed afresh with DayCounts.plus (the windows' own sum)."""
    out: dict[str, list] = {}
    for tenant, (trailing, baseline, mark) in snapshots.items():
        if tenant in owned:
            label = out.setdefault(metrics.label(tenant), [DayCounts(), DayCounts(), None])
            label[0], label[1] = label[0].plus(trailing), label[1].plus(baseline)
            if mark is not None:
                label[2] = max(label[2] or mark, mark)
    return {name: (t.to_dict() | {"examples": {}}, b.to_dict() | {"examples": {}}, m) for name, (t, b, m) in out.items()}


def _shown(metrics: TenantMetrics) -> dict[str, tuple]:
    return {name: (g.trailing.to_dict(), g.baseline.to_dict(), g.watermark_ms) for name, g in metrics.groups.items()}


def test_the_sums_kept_as_tenants_change_are_the_sums_taken_afresh():
    """Replaced snapshots, partitions moving away and back (maxima included: the tenant holding one goes lower
    or away), checked after every step against DayCounts.plus over the snapshots owned at that moment."""
    rng = random.Random(17)
    metrics = TenantMetrics(["acme", "t3"])
    tenants = ["acme"] + [f"t{i}" for i in range(40)]
    partition = {t: rng.randrange(4) for t in tenants}
    snapshots: dict[str, tuple[DayCounts, DayCounts, int | None]] = {}
    owned_partitions = {0, 1, 2, 3}
    for step in range(400):
        if step % 25 == 24:
            owned_partitions = set(rng.sample(range(4), rng.randrange(1, 5)))
            forget = rng.random() < 0.5
            list(metrics.keep_partitions(owned_partitions, forget=forget, slice_size=3))
            if forget:
                snapshots = {t: v for t, v in snapshots.items() if partition[t] in owned_partitions}
        else:
            tenant = rng.choice(tenants)
            windows = [DayCounts(answers=rng.randrange(50), claims=rng.randrange(1, 90), refused=rng.randrange(9),
                                 latency={rng.randrange(280, 320): rng.randrange(1, 5)},
                                 latency_sum_us=rng.randrange(10_000), latency_max_ms=float(rng.randrange(1, 999)))
                       for _ in range(2)]
            mark = rng.choice([None, 1_700_000_000_000 + rng.randrange(10**9)])
            metrics.update(tenant, Snapshot.of(windows[0], windows[1], mark), partition[tenant])
            snapshots[tenant] = (windows[0], windows[1], mark)
        owned = {t for t in snapshots if partition[t] in owned_partitions}
        assert _shown(metrics) == _from_scratch(metrics, snapshots, owned), step
    assert set(metrics.snapshots) == set(snapshots)


def test_a_scrape_costs_no_pass_over_the_tenants_and_moving_partitions_comes_a_slice_at_a_time():
    metrics = TenantMetrics(["acme"])
    week = DayCounts(answers=10, claims=10, refused=1)
    for i in range(2500):
        metrics.update(f"t{i}", Snapshot.of(week, week, 1_700_000_000_000), partition=i % 2)
    samples = dict(_samples(metrics.text()))
    assert samples[("stream_guard_tenant_rate_denominator", (("rate", "refusal"), ("tenant", "other"),
                                                             ("window", "trailing")))] == 25_000
    assert sum(1 for _ in metrics.keep_partitions({0, 1}, slice_size=100)) == 0  # nothing moved: no pass
    steps = sum(1 for _ in metrics.keep_partitions({0}, slice_size=100))
    assert steps == 25  # partition 1's 1,250 tenants out of the sums and forgotten, yielding between slices
    assert len(metrics.snapshots) == 1250
    rate = dict(_samples(metrics.text()))[("stream_guard_tenant_rate_denominator", (("rate", "refusal"),
                                           ("tenant", "other"), ("window", "trailing")))]
    assert rate == 12_500


def test_snapshots_of_tenants_whose_partitions_moved_away_are_forgotten_so_memory_stays_bounded():
    """A worker keeps snapshots only of the tenants it owns: across rebalances they would otherwise grow towards
    every tenant of the fleet (issue 17: flat memory)."""
    metrics = TenantMetrics([])
    week = DayCounts(answers=10, claims=10, refused=1)
    for rebalance in range(20):  # each rebalance hands this worker a different tenth of 10,000 tenants
        mine = {f"t{i}" for i in range(rebalance % 10, 10_000, 10)}
        for tenant in mine:
            metrics.update(tenant, Snapshot.of(week, week, 1_700_000_000_000), partition=rebalance % 10)
        list(metrics.keep_partitions({rebalance % 10}))
        assert set(metrics.snapshots) == mine
    assert len(metrics.snapshots) == 1000


def test_while_ownership_is_unsettled_snapshots_are_kept():
    metrics = _metrics()
    list(metrics.keep_partitions(set(), forget=False))
    assert set(metrics.snapshots) == {"acme", "beta", "gamma"}
    assert metrics.groups == {}
    list(metrics.keep_partitions({0, 1}))  # the partitions came back: their tenants count again
    assert metrics.groups["other"].watermark_ms == 1_800_000_000_000 and metrics.groups["acme"].review == (30, 4)


def test_a_tenants_snapshot_adds_no_object_the_garbage_collector_tracks():
    """A worker keeps one snapshot per tenant it owns. Tracked, 100,000 tenants' made every full collection walk
    them, stopping the event loop for about a second every 15-20 s (issue 17)."""
    metrics = TenantMetrics([])
    week = DayCounts(answers=10, claims=10, refused=1, latency={300: 2}, latency_max_ms=12.0)
    metrics.update("t-first", Snapshot.of(week, week, 1_700_000_000_000), partition=0)
    gc.collect()
    before = len(gc.get_objects())
    for i in range(10_000):
        metrics.update(f"t{i}", Snapshot.of(week, week, 1_700_000_000_000 + i), partition=i % 4)
    metrics.text()
    gc.collect()
    assert len(gc.get_objects()) - before < 100
