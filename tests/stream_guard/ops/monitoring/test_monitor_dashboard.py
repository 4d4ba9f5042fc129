import re

from stream_guard.ops.monitoring.dashboard import login_page, operator_page, tenant_page, tenant_path, tenant_view
from stream_guard.ops.monitoring.overview import row_of
from stream_guard.ops.monitoring.ledger import Sample, TenantState
from stream_guard.ops.monitoring.rules import evaluate_day
from stream_guard.ops.monitoring.sampling import BottomK
from stream_guard.config.monitor import RuleSettings
from stream_guard.ops.monitoring.windows import DAY_MS, DayCounts, single

EVIL = '<script>alert("x")</script>'


def _state_and_days(tenant=EVIL, first_day=100):
    days = {d: DayCounts(answers=20, claims=60, refused=6, citations=20, flagged=2, healed=2, accept=18,
                         latency={300: 20}) for d in range(first_day, 160)}
    days[159] = days[159].plus(single({"answers": 1, "refused": 1, "claims": 1}, f"ev{EVIL}", 12.0))
    evaluation = evaluate_day(tenant, 159, days, {}, RuleSettings())
    state = TenantState(watermark_ms=159 * DAY_MS + 5 * 3_600_000, closed_through=159, first_day=first_day,
                        rates_day=159, rates={k: v.to_dict() for k, v in evaluation.rates.items()},
                        alerts=[{"kind": "rate_shift", "severity": "high", "summary": f"moved {EVIL}",
                                 "created_at_ms": 160 * DAY_MS, "evidence": {"examples": [EVIL]}}])
    return state, days


def _view(tenant=EVIL, first_day=100):
    state, days = _state_and_days(tenant, first_day)
    sample = Sample(BottomK(3, ((1, "a"), (2, "b"), (3, "c"))), True, {"a": {"label": 1}, "b": {"label": 0}})
    return tenant_view(tenant, state, days, {22: sample}, RuleSettings(), 60)


def test_the_view_holds_rates_against_baselines_daily_series_latency_alerts_and_reviews():
    view = _view("acme")
    assert view["rates"]["refusal"]["value"] == round(43 / 421, 6) and view["rates"]["refusal"]["baseline"] == 0.1
    assert len(view["days"]) == 60 and view["days"][-1]["answers"] == 21
    assert view["latency_ms"]["count"] == 141 and view["reviews"][0]["wrong"] == 1
    assert view["trailing_window"][1] == view["as_of_day"]


def test_every_value_from_the_traffic_is_escaped_and_nothing_is_loaded_from_elsewhere():
    html = tenant_page(_view())
    assert EVIL not in html and "&lt;script&gt;" in html
    assert "<script" not in html.lower()
    assert not re.search(r"(src|href)=\"(https?:)?//", html) and "@import" not in html
    assert html.count("<svg") == 9 and html.count("polyline") >= 9
    overview = operator_page({"tenants": [row_of(EVIL, _state_and_days()[0]).to_dict()], "total": 1,
                              "next": "abc", "complete": True})
    assert EVIL not in overview and tenant_path(EVIL) in overview.replace("&amp;", "&").replace("&quot;", '"')
    assert 'id="next-page" href="/monitor/all?after=abc"' in overview and "1 tenant(s), worst first" in overview
    assert "<script" not in login_page("bad <b>").lower() and "bad &lt;b&gt;" in login_page("bad <b>")


def test_the_daily_axis_spans_the_days_the_tenant_has_not_the_whole_retention():
    view = _view("young", first_day=139)  # 21 days of data, 60 days retained
    assert len(view["days"]) == 21 and view["days"][0]["answers"] == 20
    html = tenant_page(view)
    labels = re.findall(r'<text class="x-label" x="([0-9.]+)" y="[0-9]+" text-anchor="(\w+)"', html)
    # Per chart: the first day starts at the axis, the middle one is centred, the last ends at the axis.
    assert [anchor for _, anchor in labels[:3]] == ["start", "middle", "end"]
    assert float(labels[0][0]) == 52.0 and float(labels[2][0]) == 628.0  # the plot's left and right edges


def test_tenant_paths_encode_the_name():
    assert tenant_path("a/b c") == "/monitor/t/a%2Fb%20c"
