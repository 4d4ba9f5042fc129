"""A backtest report as people read it: PNG plots (matplotlib, Agg) and one self-contained HTML page.

The page embeds its plots as data URIs and carries its own style: no script, no external asset, readable
from a file, an e-mail attachment or a CI artifact. Needs the `report` extra (matplotlib, numpy).
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any, Mapping, Sequence

from stream_guard.ops.backtest import ROUTES, Backtest
from stream_guard.ops.sources import UsageError
from stream_guard.ops.evaluation import pr_curve, roc_curve

MAX_DIFFERENCE_ROWS = 200
MAX_CURVE_GROUPS = 6


def require_plotting() -> None:
    """Fail early, with the fix, when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"report.html and its plots need the `report` extra ({exc.name} is not installed): "
                         "pip install 'stream-guard[report]', or pass --json-only") from None


def _figure(width: float = 6.4, height: float = 4.0) -> Any:
    from matplotlib.figure import Figure  # the object API: no pyplot state, renders with Agg

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _save(fig: Any, out_dir: Path, name: str) -> str:
    fig.savefig(out_dir / name, format="png")
    return name


def _routing_plot(backtest: Backtest, out_dir: Path) -> str:
    fig = _figure(6.4, 3.2)
    ax = fig.add_subplot()
    names = list(ROUTES) + sorted(k for k in backtest.routing if k not in ROUTES)
    counts = [backtest.routing.get(n, 0) for n in names]
    bars = ax.bar(names, counts, color=["#2e7d32", "#1565c0", "#ef6c00", "#c62828"][: len(names)] or None)
    ax.bar_label(bars)
    ax.set_ylabel("events")
    ax.set_title("Routing of the candidate")
    return _save(fig, out_dir, "routing.png")


def _latency_plot(backtest: Backtest, out_dir: Path) -> str:
    fig = _figure(6.4, 3.2)
    ax = fig.add_subplot()
    ax.hist(backtest.latencies, bins=40, color="#455a64")
    ax.set_xlabel("judging time per event (ms, this run)")
    ax.set_ylabel("events")
    ax.set_title("Latency per event")
    return _save(fig, out_dir, "latency.png")


def _score_plot(backtest: Backtest, out_dir: Path) -> str:
    import numpy as np

    fig = _figure()
    ax = fig.add_subplot()
    bins = np.linspace(0.0, 1.0, 26)
    if backtest.labelled:
        faithful = [i.decision.score for i in backtest.labelled if not i.decision.label]
        hallucinated = [i.decision.score for i in backtest.labelled if i.decision.label]
        ax.hist(faithful, bins=bins, alpha=0.6, label=f"faithful (label 0, n={len(faithful)})", color="#2e7d32")
        ax.hist(hallucinated, bins=bins, alpha=0.6, label=f"hallucinated (label 1, n={len(hallucinated)})",
                color="#c62828")
        ax.legend()
        ax.set_title("hallucination_score by label")
    else:
        ax.hist(backtest.scores, bins=bins, color="#455a64")
        ax.set_title("hallucination_score (no labels)")
    ax.set_xlabel("hallucination_score")
    ax.set_ylabel("events")
    return _save(fig, out_dir, "scores.png")


def _groups(backtest: Backtest) -> list[tuple[str, list[float], list[int]]]:
    groups = [("all", [i.decision.score for i in backtest.labelled], [i.decision.label for i in backtest.labelled])]
    by_task: dict[str, tuple[list[float], list[int]]] = {}
    for item in backtest.labelled:
        scores, labels = by_task.setdefault(item.task_type or "(none)", ([], []))
        scores.append(item.decision.score)
        labels.append(item.decision.label)
    if len(by_task) > 1:
        groups += [(k, s, y) for k, (s, y) in sorted(by_task.items())][:MAX_CURVE_GROUPS]
    return groups


def _curve_plot(backtest: Backtest, out_dir: Path, kind: str) -> str | None:
    fig = _figure(5.2, 4.4)
    ax = fig.add_subplot()
    drawn = 0
    for name, scores, labels in _groups(backtest):
        points = roc_curve(scores, labels) if kind == "roc" else pr_curve(scores, labels)
        if not points:
            continue
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        width = 2.2 if name == "all" else 1.2
        ax.plot(xs, ys, drawstyle="steps-post" if kind == "pr" else "default", linewidth=width,
                label=f"{name} (n={len(labels)})")
        drawn += 1
    if not drawn:
        return None
    if kind == "roc":
        ax.plot([0, 1], [0, 1], linestyle=":", color="#9e9e9e")
        ax.set_xlabel("false positive rate (faithful answers flagged)")
        ax.set_ylabel("true positive rate (hallucinations flagged)")
        ax.set_title("ROC of hallucination_score")
    else:
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        ax.set_title("Precision-recall of hallucination_score")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right" if kind == "roc" else "lower left", fontsize="small")
    return _save(fig, out_dir, f"{kind}.png")


def _differences_plot(backtest: Backtest, out_dir: Path) -> str | None:
    summary = backtest.live_summary()
    if not summary or not summary["by_kind"]:
        return None
    kinds = sorted(summary["by_kind"].items(), key=lambda kv: -kv[1])
    fig = _figure(6.4, max(2.0, 0.45 * len(kinds) + 1.0))
    ax = fig.add_subplot()
    bars = ax.barh([k for k, _ in kinds][::-1], [v for _, v in kinds][::-1], color="#6a1b9a")
    ax.bar_label(bars)
    ax.set_xlabel("decisions")
    ax.set_title("Decisions that differ from live, by kind")
    return _save(fig, out_dir, "differences.png")


def write_plots(backtest: Backtest, out_dir: Path) -> dict[str, str]:
    """Write the PNGs that apply to this run; returns name -> file name (relative to `out_dir`)."""
    require_plotting()
    out_dir.mkdir(parents=True, exist_ok=True)
    plots: dict[str, str | None] = {"routing": _routing_plot(backtest, out_dir)}
    if backtest.latencies:
        plots["latency"] = _latency_plot(backtest, out_dir)
        plots["scores"] = _score_plot(backtest, out_dir)
    if backtest.labelled:
        plots["roc"] = _curve_plot(backtest, out_dir, "roc")
        plots["pr"] = _curve_plot(backtest, out_dir, "pr")
    plots["differences"] = _differences_plot(backtest, out_dir)
    return {k: v for k, v in plots.items() if v}


# --- the page -----------------------------------------------------------------------------------------------

_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1b1b1b;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6rem 0}td,th{border:1px solid #ddd;padding:.25rem .55rem;text-align:right}
th{background:#f5f5f5}td.l,th.l{text-align:left}.muted{color:#666}
.banner{background:#fff3e0;border:2px solid #ef6c00;padding:.6rem 1rem;font-weight:600}
.plots{display:flex;flex-wrap:wrap;gap:1rem}.plots figure{margin:0}
img{max-width:100%;height:auto;border:1px solid #eee}code{background:#f5f5f5;padding:0 .2rem}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _num(value: Any) -> str:
    if value is None:
        return '<span class="muted">n/a</span>'
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:.0f}"
    return _e(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1) -> str:
    head = "".join(f'<th class="{"l" if i < left else ""}">{_e(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{cell}</td>' for i, cell in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _image(out_dir: Path, name: str, caption: str) -> str:
    data = base64.b64encode((out_dir / name).read_bytes()).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_e(caption)}" data-plot="{_e(name)}">'
            f"<figcaption class=\"muted\">{_e(caption)}</figcaption></figure>")


_METRIC_COLUMNS = ("n", "hallucinated", "faithful", "roc_auc", "precision", "recall", "f1", "faithful_kept",
                   "hallucinated_caught")


def _metrics_table(groups: Mapping[str, Mapping[str, Any]], first: str) -> str:
    rows = []
    for name, m in groups.items():
        par = m.get("precision_at_recall") or {}
        rows.append([_e(name)] + [_num(m.get(c)) for c in _METRIC_COLUMNS] + [_num(par.get(k)) for k in sorted(par)])
    keys = sorted(next(iter(groups.values())).get("precision_at_recall") or {}) if groups else []
    return _table([first, *_METRIC_COLUMNS, *(f"P@R {k}" for k in keys)], rows)


def _label_section(report: Mapping[str, Any]) -> str:
    metrics = report.get("metrics")
    if not metrics:
        return ("<h2>Against labels</h2><p class=\"muted\">No labelled events: label metrics are left out. "
                "Pass <code>--labels FILE</code> or replay events that carry <code>label</code>.</p>")
    parts = ["<h2>Against labels</h2>",
             "<p class=\"muted\">label 1 = hallucinated. precision / recall / F1 are of <code>flagged</code>; "
             "ROC AUC and P@R (precision at recall) of <code>hallucination_score</code>; faithful kept: faithful "
             "answers routed accept and delivered unchanged; hallucinated caught: hallucinated answers not "
             "delivered unchanged.</p>",
             _metrics_table({"overall": metrics["overall"]}, "")]
    if metrics.get("by_task_type"):
        parts += ["<h3>By task type</h3>", _metrics_table(metrics["by_task_type"], "task type")]
    if metrics.get("by_tenant"):
        parts += ["<h3>By tenant</h3>", _metrics_table(metrics["by_tenant"], "tenant")]
    return "".join(parts)


def _live_section(report: Mapping[str, Any]) -> str:
    live = report.get("live")
    if not live:
        return "<h2>Against live verdicts</h2><p class=\"muted\">No live verdicts to compare with.</p>"
    where = _e(report["source"].get("live"))
    parts = [f"<h2>Against live verdicts</h2><p>{live['changed']} of {live['compared']} decisions differ "
             f"({live['without_live_verdict']} events had no live verdict; source {where}).</p>"]
    if live["by_kind"]:
        parts.append(_table(["kind", "decisions"], [[_e(k), _num(v)] for k, v in live["by_kind"].items()]))
        diffs = report.get("differences") or []
        rows = [[_e(d["event_id"]), _e(d["tenant"]), _e(d["kind"]), _e(d["live"]["routing"]),
                 _num(d["live"]["hallucination_score"]), _e(d["candidate"]["routing"]),
                 _num(d["candidate"]["hallucination_score"])] for d in diffs[:MAX_DIFFERENCE_ROWS]]
        more = len(diffs) - len(rows)
        parts.append(_table(["event_id", "tenant", "kind", "live routing", "live score", "candidate routing",
                             "candidate score"], rows, left=4))
        if more > 0:
            parts.append(f"<p class=\"muted\">{more} more in report.json.</p>")
    return "".join(parts)


def render_html(report: Mapping[str, Any], out_dir: Path) -> str:
    source = report["source"]
    where = source.get("path") or source.get("topic")
    banner = (f'<p class="banner">PARTIAL REPORT: {_e(report.get("stopped") or "stopped early")}. '
              f'{report["events"]} events were judged before it stopped; the figures cover those only.</p>'
              if report["partial"] else "")
    routing = _table(["routing", "events"], [[_e(k), _num(v)] for k, v in report["routing"].items()])
    alerts = report["alerts"]
    alert_rows = [[_e(k), _num(v)] for k, v in alerts["by_kind"].items()]
    lat = report["latency_ms"]
    latency = _table(["", "mean", "p50", "p95", "p99", "max"],
                     [["ms", *(_num(lat[k]) for k in ("mean", "p50", "p95", "p99", "max"))]])
    errors = report["errors"]
    error_rows = [[_e(x["origin"]), _e(x["stage"]), _e(x["field"]), _e(x["reason"])] for x in errors["examples"]]
    captions = {"routing": "Routing of the candidate", "scores": "hallucination_score by label",
                "roc": "ROC curve", "pr": "Precision-recall curve", "latency": "Judging time per event",
                "differences": "Differences from live, by kind"}
    plots = "".join(_image(out_dir, name, captions.get(key, key)) for key, name in report.get("plots", {}).items())
    candidate = ", ".join(f"{k} = {v}" for k, v in report["candidate"].items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>stream-guard backtest: {_e(where)}</title><style>{_STYLE}</style></head><body>
<h1>Backtest of {_e(where)}</h1>
<p class="muted">{_e(report['generated_by'])}, {_e(report['generated_at'])}, {report['jobs']} process(es);
report.json schema version {report['schema_version']}</p>
{banner}
<p><strong>{report['events']}</strong> events judged ({report['inputs']} inputs, {errors['total']} could not be
judged); {report['flagged']} flagged; {alerts['total']} alerts would fire.</p>
<p class="muted">Candidate: {_e(candidate)}</p>
<h2>Routing</h2>{routing}
<h2>Alerts that would fire</h2>{_table(["kind", "alerts"], alert_rows) if alert_rows else '<p class="muted">None.</p>'}
<h2>Latency per event</h2>{latency}<p class="muted">Measured on the machine that ran the backtest; it does not
change decisions (replays score latency as within budget).</p>
{_live_section(report)}
{_label_section(report)}
<h2>Plots</h2><div class="plots">{plots}</div>
{('<h2>Inputs that could not be judged</h2>' + _table(['origin', 'stage', 'field', 'reason'], error_rows, left=4))
 if error_rows else ''}
</body></html>
"""


def write_html(report: Mapping[str, Any], out_dir: Path) -> Path:
    path = out_dir / "report.html"
    path.write_text(render_html(report, out_dir), encoding="utf-8")
    return path
