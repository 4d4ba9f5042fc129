"""One line per verdict, alert, dead letter or metrics record, for a person watching `stream-guard up|tail`.

Pure: takes the JSON-ready dicts that travel on the topics and returns text. Works on records read back
from the topics, so it needs nothing but the wire format.
"""

from __future__ import annotations

from typing import Any, Mapping

_ROUTES = {
    "accept": ("✔", "ACCEPT"),
    "healed_accept": ("✚", "HEALED"),
    "fallback": ("↩", "FALLBACK"),
    "discard": ("✖", "DISCARD"),
}
_MAX_CHANGES = 3


def _short(text: Any, limit: int = 60) -> str:
    value = " ".join(str(text).split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _changes(verdict: Mapping[str, Any]) -> str:
    healing = verdict.get("healing") or {}
    shown = []
    for change in list(healing.get("changes") or []):
        if not isinstance(change, Mapping) or change.get("kind") not in ("replace", "billing", "drop_sentence"):
            continue
        before, after = change.get("before", ""), change.get("after", "")
        shown.append(f"'{_short(before, 30)}' → '{_short(after, 30)}'" if after else f"dropped '{_short(before, 40)}'")
        if len(shown) == _MAX_CHANGES:
            break
    if shown:
        return "  " + ", ".join(shown)
    strategy = healing.get("strategy")
    return f"  ({strategy})" if strategy and strategy not in ("none", "no_healing_needed") else ""


def verdict_line(verdict: Mapping[str, Any]) -> str:
    """e.g. `✚ HEALED    support  evt-1  score 0.62  risk critical→low  '30 days' → '14 days'`."""
    routing = str(verdict.get("routing", "?"))
    mark, label = _ROUTES.get(routing, ("?", routing.upper()))
    quality = verdict.get("quality") or {}
    score = quality.get("score")
    score_text = f"score {float(score):.2f}" if isinstance(score, (int, float)) else "score ?"
    risk, final = verdict.get("risk", "?"), verdict.get("final_risk") or verdict.get("risk", "?")
    risk_text = f"risk {risk}" if risk == final else f"risk {risk}→{final}"
    triggered = list(verdict.get("triggered") or [])
    flags = f"  [{', '.join(triggered)}]" if triggered else ""
    return (f"{mark} {label:<9} {_short(verdict.get('tenant', '?'), 16):<9} {_short(verdict.get('event_id', '?'), 24):<9} "
            f"{score_text}  {risk_text}{flags}{_changes(verdict) if routing != 'accept' else ''}")


def alert_line(alert: Mapping[str, Any]) -> str:
    """e.g. `⚠ ALERT critical  critical_risk  support evt-1: critical risk (contradiction) ...`."""
    return f"⚠ ALERT {alert.get('severity', '?'):<8} {alert.get('kind', '?'):<14} {_short(alert.get('summary', ''), 110)}"


def dead_letter_line(record: Mapping[str, Any]) -> str:
    """A dead letter as `deadletter.view` gives it, e.g.
    `☠ DLQ     decode   rag.answers[0]@7  answer: is required  (182 bytes)`."""
    where = (f"{record.get('original_topic', '?')}[{record.get('original_partition', '?')}]"
             f"@{record.get('original_offset', '?')}")
    size = record.get("value_bytes")
    omitted = record.get("value_omitted")
    size_text = f"  ({omitted} bytes, not carried)" if omitted else f"  ({size} bytes)" if size else ""
    return (f"☠ DLQ     {str(record.get('stage') or '?'):<8} {where}  "
            f"{_short(record.get('field', '?'), 24)}: {_short(record.get('reason', ''), 80)}{size_text}")


def metrics_line(record: Mapping[str, Any]) -> str:
    interval = record.get("interval") or {}
    recent = record.get("recent") or {}

    def q(section: Mapping[str, Any], measure: str, name: str) -> str:
        value = (section.get(measure) or {}).get(name)
        return f"{value:.1f}" if isinstance(value, (int, float)) else "-"

    lag = record.get("lag")
    return (f"⏱ METRICS {record.get('topic', '?')}[{record.get('partition', '?')}]  "
            f"{(interval.get('end_to_end_ms') or {}).get('count', 0)} ev  "
            f"e2e p50 {q(recent, 'end_to_end_ms', 'p50')} p99 {q(recent, 'end_to_end_ms', 'p99')} ms  "
            f"proc p99 {q(recent, 'processing_ms', 'p99')} ms  lag {lag if lag is not None else '-'}")


def line_for(kind: str, record: Mapping[str, Any]) -> str:
    """Dispatch on the stream a record came from: verdicts, alerts, dlq or metrics."""
    if kind == "verdicts":
        return verdict_line(record)
    if kind == "alerts":
        return alert_line(record)
    if kind == "dlq":
        return dead_letter_line(record)
    if kind == "metrics":
        return metrics_line(record)
    raise ValueError(f"unknown stream {kind!r}")
