"""Alerts as webhook bodies (`stream-guard alerts --format`): Alertmanager's v2 API, a Slack incoming webhook, or
the alert record itself. Pure: a decoded alert (schemas/alert.v1.schema.json) in, bytes out.

Each carries what an on-call person needs to act: the tenant, the kind and severity, the summary, the measured
value against its baseline, a few example event ids, the question, and a link to the tenant's dashboard page.
The evidence of an alert depends on its kind (engine/alerts.py, ops/alerting.py, ops/monitoring/rules.py); the
figures are read from whichever of its known names the alert carries, and a link the alert carries itself wins
over the one built from `[alerts] dashboard_url`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import orjson

from stream_guard.ops.monitoring.dashboard import tenant_path

MAX_EXAMPLES = 5
# Where each figure sits in an alert's evidence, by kind of alert: the first name present is used.
VALUE_KEYS = ("value", "p99_ms", "hallucination_score", "score")
BASELINE_KEYS = ("baseline", "budget_ms", "threshold")
EXAMPLE_KEYS = ("example_event_ids", "examples", "event_ids")
LINK_KEYS = ("dashboard_url", "dashboard", "link")
_SLACK_COLOURS = {"critical": "#b00020", "high": "#e65100", "warning": "#f9a825"}


@dataclass(frozen=True)
class Facts:
    """What an alert says, flat."""

    alert_id: str
    kind: str
    severity: str
    summary: str
    tenant: str | None
    question: str | None
    value: Any
    baseline: Any
    examples: tuple[str, ...]
    link: str | None
    created_at_ms: int


def _first(mapping: Mapping[str, Any], keys: Sequence[str]) -> Any:
    return next((mapping[key] for key in keys if mapping.get(key) is not None), None)


def _examples(alert: Mapping[str, Any], evidence: Mapping[str, Any]) -> tuple[str, ...]:
    found = _first(alert, EXAMPLE_KEYS) or _first(evidence, EXAMPLE_KEYS)
    items = [found] if isinstance(found, (str, int)) else list(found) if isinstance(found, (list, tuple)) else []
    ids = [str(item[0] if isinstance(item, (list, tuple)) and item else item) for item in items]
    if not ids and alert.get("event_id"):
        ids = [str(alert["event_id"])]
    return tuple(ids[:MAX_EXAMPLES])


def facts(alert: Mapping[str, Any], dashboard_url: str = "") -> Facts:
    evidence = alert.get("evidence") if isinstance(alert.get("evidence"), Mapping) else {}
    drift = evidence.get("drift") if isinstance(evidence.get("drift"), Mapping) else {}
    tenant = alert.get("tenant")
    link = _first(alert, LINK_KEYS) or _first(evidence, LINK_KEYS)
    if link is None and dashboard_url and tenant:
        link = dashboard_url.rstrip("/") + tenant_path(str(tenant))
    question = alert.get("question") or evidence.get("question") or alert.get("question_hash")
    return Facts(
        alert_id=str(alert.get("alert_id", "")), kind=str(alert.get("kind", "alert")),
        severity=str(alert.get("severity", "warning")), summary=str(alert.get("summary", "")),
        tenant=str(tenant) if tenant else None, question=str(question) if question else None,
        value=_first(evidence, VALUE_KEYS) if _first(evidence, VALUE_KEYS) is not None else drift.get("score"),
        baseline=_first(evidence, BASELINE_KEYS), examples=_examples(alert, evidence), link=link,
        created_at_ms=int(alert.get("created_at_ms") or 0))


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def alertmanager(f: Facts) -> list[dict[str, Any]]:
    """POST /api/v2/alerts of Alertmanager: a list of alerts, labels and annotations as strings. No endsAt:
    Alertmanager resolves it after its resolve_timeout, as these alerts are events rather than states."""
    labels = {"alertname": f"stream_guard_{f.kind}", "severity": f.severity, "kind": f.kind,
              "alert_id": f.alert_id, "service": "stream-guard"}
    if f.tenant:
        labels["tenant"] = f.tenant
    annotations = {"summary": f.summary}
    for name, value in (("value", f.value), ("baseline", f.baseline), ("question", f.question),
                        ("example_event_ids", ", ".join(f.examples) or None), ("dashboard", f.link)):
        if value is not None:
            annotations[name] = _text(value)
    out: dict[str, Any] = {"labels": labels, "annotations": annotations}
    if f.created_at_ms:
        out["startsAt"] = _iso(f.created_at_ms)
    if f.link:
        out["generatorURL"] = f.link
    return [out]


def slack(f: Facts) -> dict[str, Any]:
    """A Slack incoming webhook message: `text` for notifications, an attachment with the figures."""
    fields = [{"title": title, "value": _text(value), "short": short} for title, value, short in (
        ("Tenant", f.tenant, True), ("Kind", f.kind, True), ("Value", f.value, True), ("Baseline", f.baseline, True),
        ("Question", f.question, False), ("Example events", ", ".join(f.examples) or None, False))
        if value is not None]
    attachment: dict[str, Any] = {"color": _SLACK_COLOURS.get(f.severity, "#607d8b"), "title": f.summary,
                                  "fields": fields, "footer": f"stream-guard alert {f.alert_id}"}
    if f.link:
        attachment["title_link"] = f.link
    if f.created_at_ms:
        attachment["ts"] = f.created_at_ms // 1000
    link = f" <{f.link}|dashboard>" if f.link else ""
    return {"text": f"[{f.severity}] {f.summary}{link}", "attachments": [attachment]}


def body(raw: bytes, fmt: str, dashboard_url: str = "") -> bytes:
    """The webhook body for one alert record as it is on the alerts topic. Raises ValueError when the record is
    not a JSON object (it cannot be formatted: a dead letter)."""
    alert = orjson.loads(raw)
    if not isinstance(alert, dict):
        raise ValueError(f"an alert must be a JSON object, got {type(alert).__name__}")
    if fmt == "json":
        return raw
    found = facts(alert, dashboard_url)
    return orjson.dumps(alertmanager(found) if fmt == "alertmanager" else slack(found))
