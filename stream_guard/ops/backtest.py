"""Backtest: judge recorded answers with a candidate configuration, compare with live decisions and labels.

The answers are judged as `check` judges them (stream_guard.engine.pool: --jobs processes, drift history
rebuilt from the replayed events alone, per question in input order), so the same events give the same
verdicts from a file or from a topic (ops/sources.py). What comes out (stream_guard/cli/backtest.py writes it):

- verdicts.jsonl: the candidate's verdict for every event, in input order;
- report.json: the shape in schemas/backtest-report.schema.json (REPORT_SCHEMA_VERSION), for a CI gate;
- report.html and the PNG plots it embeds (backtest_report.py; the `report` extra).

`Backtest` is the pure part: it takes judged events one at a time and assembles the report.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any, Iterable, Mapping, Sequence

import orjson

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.judging import Judged
from stream_guard.engine.pool import JudgeProcessDied, Pool
from stream_guard.ops.evaluation import LabelledDecision, decision_metrics
from stream_guard.ops.sources import Decision, Position, decision_of

REPORT_SCHEMA_VERSION = 1
ROUTES = ("accept", "healed_accept", "fallback", "discard")
DELIVERED = frozenset({"accept", "healed_accept"})
EXAMPLES_PER_KIND = 5
MAX_ALERT_EXAMPLES = 20
MAX_ERROR_EXAMPLES = 20
UNKNOWN_GROUP = "(none)"
INTERRUPTED = 130  # the shell's code for "stopped by Ctrl-C"


# --- the accumulator ----------------------------------------------------------------------------------------


@dataclass
class _Labelled:
    decision: LabelledDecision
    tenant: str
    task_type: str | None


@dataclass
class Backtest:
    """Judged events in, the report out. `labels` (event_id -> 0/1) override labels inside the events;
    `live` (event_id -> Decision) is what the running service decided, None when there is nothing to compare."""

    labels: Mapping[str, int] = field(default_factory=dict)
    live: Mapping[str, Decision] | None = None
    events: int = 0
    inputs: int = 0
    routing: Counter[str] = field(default_factory=Counter)
    flagged: int = 0
    alert_kinds: Counter[str] = field(default_factory=Counter)
    alert_examples: list[dict[str, Any]] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    error_examples: list[dict[str, Any]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    labelled: list[_Labelled] = field(default_factory=list)
    differences: list[dict[str, Any]] = field(default_factory=list)
    compared: int = 0
    missing_live: int = 0

    def add(self, position: Position, judged: Judged) -> dict[str, Any] | None:
        """Account for one judged input; returns its verdict (decoded) or None when it has none."""
        self.inputs += 1
        if judged.verdict is None:
            stage = judged.error_stage or "judge"
            self.errors[stage] += 1
            if len(self.error_examples) < MAX_ERROR_EXAMPLES:
                self.error_examples.append({"origin": position.origin, "event_id": judged.event_id, "stage": stage,
                                            "field": judged.error_field, "reason": judged.error_reason})
            return None
        verdict = orjson.loads(judged.verdict)
        self.events += 1
        routing = str(verdict.get("routing"))
        self.routing[routing] += 1
        self.flagged += bool(verdict.get("flagged"))
        score = float(verdict.get("hallucination_score") or 0.0)
        self.scores.append(score)
        self.latencies.append(float(verdict.get("latency_ms") or 0.0))
        for alert in judged.alerts:
            self.alert_kinds[alert.kind] += 1
            if len(self.alert_examples) < MAX_ALERT_EXAMPLES:
                self.alert_examples.append({k: v for k, v in alert.to_dict().items() if k != "created_at_ms"})
        event_id = str(verdict.get("event_id"))
        label = self.labels.get(event_id, verdict.get("label"))
        if label in (0, 1):
            unchanged = verdict.get("delivered_answer") == verdict.get("original_answer")
            self.labelled.append(_Labelled(
                LabelledDecision(score=score, flagged=bool(verdict.get("flagged")), label=int(label),
                                 accepted_unchanged=routing == "accept" and unchanged,
                                 delivered_unchanged=routing in DELIVERED and unchanged),
                tenant=str(verdict.get("tenant", "default")), task_type=position.task_type))
        if self.live is not None:
            self._compare(event_id, str(verdict.get("tenant", "default")), verdict)
        return verdict

    def _compare(self, event_id: str, tenant: str, verdict: Mapping[str, Any]) -> None:
        live = self.live.get(event_id) if self.live is not None else None
        candidate = decision_of(verdict)
        if live is None or candidate is None:
            self.missing_live += 1
            return
        self.compared += 1
        kind = difference_kind(live, candidate)
        if kind is not None:
            self.differences.append({"event_id": event_id, "tenant": tenant, "kind": kind,
                                     "live": live.to_dict(), "candidate": candidate.to_dict()})

    # --- the report ---

    def label_metrics(self) -> dict[str, Any] | None:
        if not self.labelled:
            return None
        by_task: dict[str, list[LabelledDecision]] = {}
        by_tenant: dict[str, list[LabelledDecision]] = {}
        for item in self.labelled:
            by_task.setdefault(item.task_type or UNKNOWN_GROUP, []).append(item.decision)
            by_tenant.setdefault(item.tenant, []).append(item.decision)
        return {
            "overall": decision_metrics([item.decision for item in self.labelled]),
            "by_task_type": {k: decision_metrics(v) for k, v in sorted(by_task.items())},
            "by_tenant": {k: decision_metrics(v) for k, v in sorted(by_tenant.items())},
        }

    def live_summary(self) -> dict[str, Any] | None:
        if self.live is None:
            return None
        kinds = Counter(d["kind"] for d in self.differences)
        examples: dict[str, list[dict[str, Any]]] = {}
        for d in self.differences:
            bucket = examples.setdefault(d["kind"], [])
            if len(bucket) < EXAMPLES_PER_KIND:
                bucket.append(d)
        return {"compared": self.compared, "without_live_verdict": self.missing_live,
                "changed": len(self.differences), "by_kind": dict(sorted(kinds.items())), "examples": examples}

    def report(self, *, source: Mapping[str, Any], config: DetectorConfig, jobs: int, partial: bool = False,
               stopped: str | None = None, generated_at: str | None = None,
               plots: Mapping[str, str] | None = None) -> dict[str, Any]:
        from stream_guard import __version__

        out: dict[str, Any] = {
            "schema_version": REPORT_SCHEMA_VERSION,
            "generated_by": f"stream-guard {__version__}",
            "generated_at": generated_at or datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "partial": partial,
            "stopped": stopped,
            "source": dict(source),
            "candidate": _config_summary(config),
            "jobs": jobs,
            "inputs": self.inputs,
            "events": self.events,
            "errors": {"total": sum(self.errors.values()), "by_stage": dict(sorted(self.errors.items())),
                       "examples": self.error_examples},
            "routing": {route: self.routing.get(route, 0) for route in ROUTES}
                       | {k: v for k, v in sorted(self.routing.items()) if k not in ROUTES},
            "flagged": self.flagged,
            "alerts": {"total": sum(self.alert_kinds.values()), "by_kind": dict(sorted(self.alert_kinds.items())),
                       "examples": self.alert_examples},
            "latency_ms": latency_summary(self.latencies),
            "live": self.live_summary(),
            "differences": self.differences if self.live is not None else [],
            "labels": {"labelled": len(self.labelled),
                       "hallucinated": sum(i.decision.label for i in self.labelled),
                       "faithful": sum(1 - i.decision.label for i in self.labelled)},
            "plots": dict(plots or {}),
        }
        metrics = self.label_metrics()
        if metrics is not None:
            out["metrics"] = metrics
        return out


def difference_kind(live: Decision, candidate: Decision) -> str | None:
    """"accept->fallback" when the routing changed; "unflagged->flagged" (or back) when only the flag did;
    None when the decision is the same (a score that moved without changing anything is not a difference)."""
    if live.routing != candidate.routing:
        return f"{live.routing}->{candidate.routing}"
    if live.flagged != candidate.flagged:
        return "unflagged->flagged" if candidate.flagged else "flagged->unflagged"
    return None


def _config_summary(config: DetectorConfig) -> dict[str, Any]:
    skip = {"fallback_message", "decline_message", "db_path", "log_flagged", "limits"}
    return {k: v for k, v in config.to_dict().items() if k not in skip}


def _nearest_rank(ordered: Sequence[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100.0 * len(ordered)) - 1))]


def latency_summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """Count, mean and nearest-rank percentiles of the per-event judging time (measured, so per run)."""
    if not values:
        return {"count": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    ordered = sorted(values)
    return {"count": len(ordered), "mean": round(sum(ordered) / len(ordered), 3),
            **{f"p{q}": round(_nearest_rank(ordered, q), 3) for q in (50, 95, 99)}, "max": round(ordered[-1], 3)}


# --- running ------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    backtest: Backtest
    partial: bool = False
    stopped: str | None = None


def run_backtest(config: DetectorConfig, inputs: Iterable[tuple[Position, bytes]], *, jobs: int,
                 labels: Mapping[str, int], live: Mapping[str, Decision] | None,
                 verdicts_out: IO[bytes] | None = None, progress: Any = None) -> Outcome:
    """Judge `inputs` and account for them; Ctrl-C or a dead judge process ends the run early with what was
    judged so far, marked partial."""
    backtest = Backtest(labels=labels, live=live)
    outcome = Outcome(backtest)
    judges = Pool(config, jobs=jobs)
    try:
        judges.wait_ready()
        if progress is not None:
            progress.reset(total=progress.total)  # events/s and ETA from here, not from the model loading
        for position, judged in judges.judge(inputs):
            backtest.add(position, judged)
            if verdicts_out is not None and judged.verdict is not None:
                verdicts_out.write(judged.verdict + b"\n")
            if progress is not None:
                progress.update(1)
    except KeyboardInterrupt:
        outcome.partial, outcome.stopped = True, "interrupted (Ctrl-C)"
    except JudgeProcessDied as exc:
        outcome.partial, outcome.stopped = True, str(exc)
    finally:
        judges.close()
    return outcome
