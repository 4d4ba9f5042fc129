"""The review loop's records: what a grader gets for one sampled answer, and how a grade finds its tenant.

A review item carries everything needed to grade the answer without looking anything up: the question, the
retrieved context (each chunk cut at a share of `max_context_chars`, and saying so), the answer the user got
and the one the model wrote, and what the checks found. Grades come back as labels (`labels.py`:
event_id, label 1 = wrong / 0 = right, grader, note). The labels side keeps, per sampled event_id, the
tenant and week it was sampled for; a grade is joined to that and sent on to the tenant's monitor.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import orjson

from stream_guard.wire.events import Chunk
from stream_guard.wire.labels import Label
from stream_guard.ops.monitoring.windows import week_label

# Of the review record (its `sg-schema-version` header); 1 is the first versioned shape, with produced_at_ms.
REVIEW_VERSION = 1
MAX_FINDINGS = 20
MAX_CHANGES = 10


def _cut_context(context: Sequence[Chunk], budget: int) -> list[dict[str, Any]]:
    share = budget // max(1, len(context))
    out = []
    for chunk in context:
        item = chunk.to_dict()
        if len(chunk.text) > share:
            item["text"] = chunk.text[:share]
            item["truncated_from_chars"] = len(chunk.text)
        out.append(item)
    return out


def review_item(verdict: Mapping[str, Any], context: Sequence[Chunk], week: int,
                max_context_chars: int) -> dict[str, Any]:
    """The grader's record of one answer (its verdict in `to_dict()` form and its event's context)."""
    healing = verdict.get("healing") if isinstance(verdict.get("healing"), Mapping) else {}
    findings = verdict.get("hallucinated_statements")
    checks = verdict.get("checks") if isinstance(verdict.get("checks"), Mapping) else {}
    return {
        "event_id": verdict.get("event_id"),
        "tenant": verdict.get("tenant"),
        "week": week_label(week),
        "produced_at_ms": verdict.get("produced_at_ms"),
        "question": verdict.get("question", ""),
        "context": _cut_context(context, max_context_chars),
        "delivered_answer": verdict.get("delivered_answer"),
        "original_answer": verdict.get("original_answer"),
        "routing": verdict.get("routing"),
        "risk": verdict.get("risk"),
        "hallucination_score": verdict.get("hallucination_score"),
        "findings": list(findings)[:MAX_FINDINGS] if isinstance(findings, list) else [],
        "healing": {"strategy": healing.get("strategy"), "changes": list(healing.get("changes") or [])[:MAX_CHANGES]},
        "checks": {name: {"score": c.get("score"), "flagged": c.get("flagged")}
                   for name, c in checks.items() if isinstance(c, Mapping)},
        "label_meaning": {"1": "wrong: the delivered answer says something the context does not support",
                          "0": "right"},
    }


def sampled_record(tenant: str, week: int, event_id: str) -> bytes:
    """Tells the labels side that `event_id` is in `tenant`'s review sample of `week`."""
    return orjson.dumps({"type": "sampled", "tenant": tenant, "week": week, "event_id": event_id})


def label_record(label: Label) -> bytes:
    return orjson.dumps({"type": "label", **label.to_dict()})


def grade_record(tenant: str, week: int, label: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "grade", "tenant": tenant, "week": week,
            **{k: label[k] for k in ("event_id", "label", "grader", "note") if k in label}}


def join(index: bytes | None, record: Mapping[str, Any]) -> tuple[bytes | None, dict[str, Any] | None]:
    """One record of the labels side against what the index holds for its event_id.

    Returns (the index's new value, or None to leave it; the grade to send to the tenant's monitor, if any).
    A label for an event not (yet) sampled is kept as pending: it joins if the sample record comes later."""
    known = orjson.loads(index) if index else {}
    if record.get("type") == "sampled":
        entry = {"tenant": record["tenant"], "week": record["week"]}
        pending = known.get("pending")
        grade = grade_record(entry["tenant"], entry["week"], pending) if pending else None
        return orjson.dumps(entry), grade
    label = {k: record[k] for k in ("event_id", "label", "grader", "note") if k in record}
    if "tenant" in known:
        return None, grade_record(known["tenant"], int(known["week"]), label)
    return orjson.dumps({"pending": label}), None
