"""The monitoring pages: one tenant's numbers as data (`tenant_view`, also served as JSON) and as HTML.

Server-rendered, self-contained HTML: inline CSS, inline SVG charts, no script, no external asset, so the
page works under a Content-Security-Policy of `default-src 'none'`. Every value that came from an event
(tenant names, alert summaries, event ids) is HTML-escaped.
"""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from stream_guard.ops.monitoring.charts import Reference, Series, line_chart
from stream_guard.ops.monitoring.ledger import Sample, TenantState
from stream_guard.config.monitor import RuleSettings
from stream_guard.ops.monitoring.windows import (RATE_TITLES, RATES, DayCounts, Windows, day_label, total,
                                             week_label)

CHART_RATES = ("refusal", "citation_mismatch", "flagged", "healed", "fallback", "discard", "drift")


def _pct(value: Any) -> str:
    return "–" if not isinstance(value, (int, float)) else f"{value * 100:.1f}%"


def _change(value: Any) -> str:
    if value == "inf":
        return "new"
    return "–" if not isinstance(value, (int, float)) else f"{value * 100:+.0f}%"


def tenant_view(tenant: str, state: TenantState, days: Mapping[int, DayCounts], samples: Mapping[int, Sample],
                rules: RuleSettings, retention_days: int) -> dict[str, Any]:
    """Everything the tenant's page shows, as plain data (the JSON API returns exactly this)."""
    last = state.watermark_day
    daily: list[dict[str, Any]] = []
    latency: dict[str, Any] = {"count": 0}
    if last is not None:
        # The days the tenant has: from its first (within the retention), so that the charts' axis spans the
        # data shown rather than the whole retention.
        first = max(last - retention_days + 1, state.first_day if state.first_day is not None else last)
        for day in range(first, last + 1):
            counts = days.get(day, DayCounts())
            h = counts.histogram()
            daily.append({"day": day_label(day), "answers": counts.answers,
                          "rates": {name: counts.rate(name) for name in RATES},
                          "latency_p50_ms": h.quantile(0.5), "latency_p95_ms": h.quantile(0.95)})
        through = state.rates_day if state.rates_day is not None else last
        latency = total(days, *Windows(through, rules.trailing_days, rules.baseline_days).trailing).histogram().summary()
    windows = Windows(state.rates_day, rules.trailing_days, rules.baseline_days) if state.rates_day is not None else None
    return {
        "tenant": tenant,
        "event_time": (datetime.fromtimestamp(state.watermark_ms / 1000, timezone.utc).isoformat(timespec="seconds")
                       if state.watermark_ms is not None else None),
        "as_of_day": day_label(state.rates_day) if state.rates_day is not None else None,
        "trailing_window": [day_label(d) for d in windows.trailing] if windows else None,
        "baseline_window": [day_label(d) for d in windows.baseline] if windows else None,
        "rates": {name: {"title": RATE_TITLES[name], **state.rates.get(name, {})} for name in RATES},
        "days": daily,
        "latency_ms": latency,
        "alerts": list(state.alerts),
        "reviews": [{"week": week_label(week), "sampled": len(s.members.members), "sent": s.emitted,
                     "graded": len(s.grades), "wrong": len(s.wrong), "wrong_event_ids": s.wrong[:10],
                     "over_limit": len(s.grades) >= rules.review_min_graded and len(s.wrong) > rules.review_max_wrong}
                    for week, s in sorted(samples.items(), reverse=True)],
        "not_counted": {k.removeprefix("skipped_"): v for k, v in state.counters.items()},
    }


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fff}
header{background:#12263f;color:#fff;padding:10px 20px;display:flex;justify-content:space-between;align-items:center}
header form{margin:0} header button{background:none;border:1px solid #fff;color:#fff;padding:3px 10px;cursor:pointer}
main{padding:16px 20px;max-width:1400px} h1{font-size:20px;margin:0} h2{font-size:16px;margin:24px 0 8px}
table{border-collapse:collapse;margin:4px 0 12px} td,th{border-bottom:1px solid #e5e5e5;padding:4px 10px;text-align:left}
th{background:#f5f5f7;font-weight:600} td.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:12px} figure{margin:0;border:1px solid #e5e5e5;padding:6px}
figcaption{font-weight:600;font-size:13px} .up{color:#b91c1c} .down{color:#15803d} .muted{color:#666}
.sev-critical{color:#b91c1c;font-weight:600} .sev-high{color:#c2410c;font-weight:600} .sev-warning{color:#a16207}
form.login{max-width:360px;margin:60px auto;display:flex;flex-direction:column;gap:10px}
form.login input{padding:6px;font:inherit} form.login button{padding:6px;font:inherit}
"""


def page(title: str, body: str, signed_in: bool = False) -> str:
    logout = ('<form method="post" action="/monitor/logout"><button type="submit">Sign out</button></form>'
              if signed_in else "")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="referrer" content="same-origin"><style>{_CSS}</style></head>'
            f'<body><header><h1>{escape(title)}</h1>{logout}</header><main>{body}</main></body></html>')


def login_page(message: str = "") -> str:
    note = f'<p role="alert">{escape(message)}</p>' if message else ""
    body = (f'<form class="login" method="post" action="/monitor/login">{note}'
            '<label for="token">Access token</label>'
            '<input id="token" name="token" type="password" autocomplete="off" required>'
            '<button type="submit">Sign in</button></form>')
    return page("stream-guard monitoring", body)


def setup_page() -> str:
    """What the dashboard shows while no access token is configured: how to configure one."""
    body = ("<p>No access token is configured for this dashboard, so nobody can sign in yet.</p>"
            "<ol><li>Make a token and its hash: <code>python -m stream_guard.ops.monitoring.tokens new</code></li>"
            "<li>Configure the hash (never the token) for the operator, who sees every tenant: "
            "<code>operator_token_sha256 = \"&lt;hash&gt;\"</code> in <code>[monitor]</code> of the worker's "
            "<code>--config</code> file, or <code>STREAM_GUARD_MONITOR_OPERATOR_TOKEN_SHA256</code>; a tenant's "
            "under <code>[monitor.tenants.&lt;name&gt;]</code> as <code>token_sha256</code>.</li>"
            "<li>Restart the worker and sign in here with the token.</li></ol>"
            "<p class=\"muted\">deploy/OPERATIONS.md, &ldquo;Dashboard&rdquo;, says more.</p>")
    return page("stream-guard monitoring: set up access", body)


def message_page(title: str, text: str) -> str:
    return page(title, f"<p>{escape(text)}</p><p><a href=\"/monitor/login\">Sign in</a></p>")


def _rates_table(view: Mapping[str, Any]) -> str:
    rows = []
    for name in CHART_RATES:
        rate = view["rates"][name]
        change = rate.get("change")
        direction = "up" if change == "inf" or (isinstance(change, (int, float)) and change > 0) else "down"
        rows.append(
            f"<tr data-rate=\"{name}\"><td>{escape(rate['title'])}</td><td class=n>{_pct(rate.get('value'))}</td>"
            f"<td class=n>{rate.get('numerator', 0)} / {rate.get('denominator', 0)}</td>"
            f"<td class=n>{_pct(rate.get('baseline'))}</td><td class=\"n {direction}\">{_change(change)}</td></tr>")
    trailing, baseline = view["trailing_window"], view["baseline_window"]
    caption = (f"trailing {trailing[0]} – {trailing[1]} against the baseline {baseline[0]} – {baseline[1]}"
               if trailing and baseline else "no day has closed yet")
    return (f'<p class="muted">Rates as of the last closed day ({escape(view["as_of_day"] or "none")}): '
            f"{escape(caption)}.</p><table id=\"rates\"><tr><th>rate</th><th>trailing</th><th>count</th>"
            f"<th>baseline</th><th>change</th></tr>{''.join(rows)}</table>")


def _charts(view: Mapping[str, Any]) -> str:
    daily = view["days"]
    labels = [d["day"] for d in daily]
    index = {label: i for i, label in enumerate(labels)}
    figures = []
    for name in CHART_RATES:
        rate = view["rates"][name]
        references = []
        if view["baseline_window"] and isinstance(rate.get("baseline"), (int, float)):
            first, last = (index.get(d) for d in view["baseline_window"])
            first = 0 if first is None else first
            if last is not None:
                references.append(Reference("baseline", rate["baseline"], first, last))
        if view["trailing_window"] and isinstance(rate.get("value"), (int, float)):
            first, last = (index.get(d) for d in view["trailing_window"])
            if first is not None and last is not None:
                references.append(Reference("trailing", rate["value"], first, last, dashed=False))
        series = [Series("daily", [d["rates"].get(name) for d in daily])]
        svg = line_chart(rate["title"], labels, series, references, fmt=lambda v: f"{v * 100:.1f}%",
                         chart_id=f"chart-{name}")
        figures.append(f"<figure><figcaption>{escape(rate['title'])}</figcaption>{svg}</figure>")
    latency = [Series("p50", [d["latency_p50_ms"] for d in daily]), Series("p95", [d["latency_p95_ms"] for d in daily])]
    svg = line_chart("check latency per answer (ms)", labels, latency, fmt=lambda v: f"{v:.0f} ms",
                     chart_id="chart-latency")
    figures.append(f"<figure><figcaption>check latency per answer</figcaption>{svg}</figure>")
    volume = line_chart("answers per day", labels, [Series("answers", [d["answers"] or None for d in daily])],
                        fmt=lambda v: f"{v:.0f}", chart_id="chart-answers")
    figures.append(f"<figure><figcaption>answers per day</figcaption>{volume}</figure>")
    return f'<div class="charts">{"".join(figures)}</div>'


def _table(table_id: str, empty: str, headers: Sequence[str], rows: Sequence[str]) -> str:
    if not rows:
        return f'<p class="muted" id="{table_id}">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f'<table id="{table_id}"><tr>{head}</tr>{"".join(rows)}</table>'


def _day_of_ms(ms: Any) -> str:
    return datetime.fromtimestamp(int(ms or 0) / 1000, timezone.utc).date().isoformat()


def _alerts(alerts: Sequence[Mapping[str, Any]]) -> str:
    rows = [f"<tr><td>{_day_of_ms(a.get('created_at_ms'))}</td>"
            f"<td class=\"sev-{escape(str(a.get('severity')))}\">{escape(str(a.get('severity')))}</td>"
            f"<td>{escape(str(a.get('kind')))}</td><td>{escape(str(a.get('summary')))}</td>"
            f"<td>{escape(', '.join(map(str, (a.get('evidence') or {}).get('examples') or [])))}</td></tr>"
            for a in alerts]
    return _table("alerts", "No alerts.", ("day", "severity", "rule", "what moved", "examples"), rows)


def _reviews(reviews: Sequence[Mapping[str, Any]]) -> str:
    rows = [f"<tr><td>{escape(r['week'])}</td><td class=n>{r['sampled']}</td>"
            f"<td>{'sent' if r['sent'] else 'collecting'}</td><td class=n>{r['graded']}</td>"
            f"<td class=\"n{' up' if r['over_limit'] else ''}\">{r['wrong']}</td>"
            f"<td>{escape(', '.join(r['wrong_event_ids']))}</td></tr>" for r in reviews]
    return _table("reviews", "No review sample yet.", ("week", "sampled", "sample", "graded", "wrong", "wrong answers"),
                  rows)


def tenant_page(view: Mapping[str, Any]) -> str:
    latency = view["latency_ms"]
    latency_text = (f"p50 {latency.get('p50', 0):.1f} ms, p95 {latency.get('p95', 0):.1f} ms, "
                    f"max {latency.get('max', 0):.1f} ms over {latency['count']} answers"
                    if latency.get("count") else "no answers in the trailing window")
    not_counted = ", ".join(f"{k}: {v}" for k, v in sorted(view["not_counted"].items())) or "none"
    body = (f'<p class="muted">Event time reached {escape(view["event_time"] or "–")} (UTC). '
            f"Answers not counted: {escape(not_counted)}.</p>"
            f"<h2>Rates against their baselines</h2>{_rates_table(view)}"
            f"<h2>Daily</h2>{_charts(view)}"
            f"<h2>Latency (trailing window)</h2><p id=\"latency\">{escape(latency_text)}</p>"
            f"<h2>Recent alerts</h2>{_alerts(view['alerts'])}"
            f"<h2>Weekly review samples</h2>{_reviews(view['reviews'])}")
    return page(f"Monitoring: {view['tenant']}", body, signed_in=True)


def tenant_path(tenant: str) -> str:
    return "/monitor/t/" + quote(tenant, safe="")


def operator_page(listing: Mapping[str, Any]) -> str:
    """A page of all tenants, worst first (the operator's view, ops/monitoring/overview.py): the headline rates
    and the latest alert, how many tenants there are, and a link to the next page."""
    rows: Sequence[Mapping[str, Any]] = listing["tenants"]
    header = "".join(f"<th>{escape(RATE_TITLES[name])}</th>" for name in CHART_RATES)
    body_rows = []
    for row in rows:
        cells = "".join(f"<td class=n>{_pct(row['rates'][name].get('value'))} "
                        f"<span class=muted>({_change(row['rates'][name].get('change'))})</span></td>"
                        for name in CHART_RATES)
        alert = row.get("latest_alert") or {}
        severity = escape(str(alert.get("severity") or ""))
        body_rows.append(f"<tr><td><a href=\"{escape(tenant_path(row['tenant']))}\">{escape(row['tenant'])}</a></td>"
                         f"<td>{escape(row['as_of_day'] or '–')}</td>{cells}"
                         f"<td class=\"sev-{severity}\">{severity}</td><td>{escape(str(alert.get('summary') or ''))}</td>"
                         "</tr>")
    total = listing.get("total", len(rows))
    note = (f'<p class="muted" id="tenant-count">{total} tenant(s), worst first: the most severe latest alert, then the '
            f"largest rise against its baseline. {len(rows)} on this page."
            + ("" if listing.get("complete", True) else " Some partitions are still being read: more to come.")
            + "</p>")
    more = (f'<p><a id="next-page" href="/monitor/all?after={quote(listing["next"], safe="")}">Next page</a> · '
            '<a href="/monitor/all">First page</a></p>' if listing.get("next") else "")
    table = (f'<table id="tenants"><tr><th>tenant</th><th>as of</th>{header}<th>severity</th><th>latest alert</th>'
             f"</tr>{''.join(body_rows)}</table>")
    return page("Monitoring: all tenants", note + table + more if rows else "<p>No tenant has been seen yet.</p>",
                signed_in=True)
