import json
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
    metrics.update("acme", Snapshot(week, base, 1_700_000_000_000, review=(30, 4)))
    metrics.update("beta", Snapshot(week, base, 1_700_000_000_000))
    metrics.update("gamma", Snapshot(week, base, 1_800_000_000_000, review=(10, 1)))
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
    metrics.owned = lambda tenant: tenant != "acme"
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


def test_in_the_background_a_scrape_reports_the_last_grouping_which_comes_a_slice_at_a_time():
    metrics = TenantMetrics(["acme"], background=True)
    week = DayCounts(answers=10, claims=10, refused=1)
    for i in range(2500):
        metrics.update(f"t{i}", Snapshot(week, week, 1_700_000_000_000))
    assert "stream_guard_tenant_rate{" not in metrics.text()  # nothing grouped yet: a scrape does not group
    steps = sum(1 for _ in metrics.regroup(slice_size=1000))
    assert steps == 2  # yields to the caller between slices
    samples = dict(_samples(metrics.text()))
    assert samples[("stream_guard_tenant_rate_denominator", (("rate", "refusal"), ("tenant", "other"),
                                                             ("window", "trailing")))] == 25_000
    metrics.update("t0", Snapshot(DayCounts(answers=10, claims=10, refused=10), week, 1_700_000_000_000))
    assert samples == dict(_samples(metrics.text()))  # the last grouping until the next one
    list(metrics.regroup(owned=lambda tenant: tenant != "t1"))
    rate = dict(_samples(metrics.text()))[("stream_guard_tenant_rate", (("rate", "refusal"), ("tenant", "other"),
                                                                         ("window", "trailing")))]
    assert rate == (2498 + 10) / 24_990


def test_snapshots_of_tenants_whose_partitions_moved_away_are_forgotten_so_memory_stays_bounded():
    """A worker keeps snapshots only of the tenants it owns: across rebalances they would otherwise grow towards
    every tenant of the fleet (issue 17: flat memory)."""
    metrics = TenantMetrics([], background=True)
    week = DayCounts(answers=10, claims=10, refused=1)
    for rebalance in range(20):  # each rebalance hands this worker a different tenth of 10,000 tenants
        mine = {f"t{i}" for i in range(rebalance % 10, 10_000, 10)}
        for tenant in mine:
            metrics.update(tenant, Snapshot(week, week, 1_700_000_000_000))
        list(metrics.regroup(owned=lambda tenant: tenant in mine))
        assert set(metrics.snapshots) == mine
    assert len(metrics.snapshots) == 1000


def test_while_ownership_is_unsettled_snapshots_are_kept():
    metrics = _metrics()
    list(metrics.regroup(owned=lambda tenant: False, forget=False))
    assert set(metrics.snapshots) == {"acme", "beta", "gamma"}
    assert metrics.groups == {}
