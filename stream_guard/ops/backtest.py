"""Backtest: judge recorded answers with a candidate configuration, compare with live decisions and labels.

    stream-guard backtest --file answers.jsonl [--labels labels.jsonl] [--live verdicts.jsonl] --out DIR
    stream-guard backtest --topic rag.answers --from 2026-11-15T00:00:00Z --to 2026-11-22T00:00:00Z \
                          --broker HOST:PORT --config candidate.toml --out DIR

The answers are judged as `check` judges them (stream_guard.engine.pool: --jobs processes, drift history
rebuilt from the replayed events alone, per question in input order), so the same events give the same
verdicts from a file or from a topic. What comes out, in --out DIR:

- verdicts.jsonl: the candidate's verdict for every event, in input order;
- report.json: the shape in schemas/backtest-report.schema.json (REPORT_SCHEMA_VERSION), for a CI gate;
- report.html and the PNG plots it embeds (backtest_report.py; the `report` extra).

`Backtest` is the pure part: it takes judged events one at a time and assembles the report. Reading a
topic is the streaming edge's job (stream_guard.agents.replay), imported only when --topic is given.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping, Sequence

import orjson

from stream_guard.config.detector import PRESETS, DetectorConfig, build_config
from stream_guard.ops.evaluation import LabelledDecision, decision_metrics
from stream_guard.engine.judging import Judged
from stream_guard.wire.labels import load_labels
from stream_guard.engine.pool import JudgeProcessDied, Judges, count_lines, jobs_for, json_object, parse_jobs
from stream_guard.config.stream import check_environment

REPORT_SCHEMA_VERSION = 1
ROUTES = ("accept", "healed_accept", "fallback", "discard")
DELIVERED = frozenset({"accept", "healed_accept"})
EXAMPLES_PER_KIND = 5
MAX_ALERT_EXAMPLES = 20
MAX_ERROR_EXAMPLES = 20
UNKNOWN_GROUP = "(none)"
INTERRUPTED = 130  # the shell's code for "stopped by Ctrl-C"


class UsageError(Exception):
    """A problem with what was asked: exit 2 with this message."""


class SourceError(Exception):
    """The input could not be read: exit 1 with this message."""


# --- inputs -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Position:
    """Where one input came from ("line 12", "rag.answers/3@1402") and the task type it declares."""

    origin: str
    task_type: str | None = None


def task_type_of(payload: bytes) -> str | None:
    """`metadata.task_type`, else a top-level `task_type` (the labelled files in ../shared/data have one)."""
    obj = json_object(payload)
    if obj is None:
        return None
    metadata = obj.get("metadata")
    value = metadata.get("task_type") if isinstance(metadata, dict) else None
    value = value if value is not None else obj.get("task_type")
    return str(value) if isinstance(value, (str, int)) and str(value).strip() else None


def file_inputs(path: str | Path) -> Iterator[tuple[Position, bytes]]:
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                yield Position(f"line {number}", task_type_of(line)), line


@dataclass(frozen=True)
class Decision:
    """The part of a verdict a backtest compares: what was done, with what score."""

    routing: str
    hallucination_score: float
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        return {"routing": self.routing, "hallucination_score": self.hallucination_score, "flagged": self.flagged}


def decision_of(verdict: Mapping[str, Any]) -> Decision | None:
    routing, score = verdict.get("routing"), verdict.get("hallucination_score")
    if not isinstance(routing, str) or not isinstance(score, (int, float)) or isinstance(score, bool):
        return None
    return Decision(routing, float(score), bool(verdict.get("flagged")))


def live_decisions(records: Iterable[bytes]) -> dict[str, Decision]:
    """event_id -> the live decision, from verdict records (JSONL lines or topic values). At least once
    means an event may have two verdicts: the later wins. Records that are not verdicts are skipped."""
    out: dict[str, Decision] = {}
    for raw in records:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get("event_id") is not None and (d := decision_of(obj)) is not None:
            out[str(obj["event_id"])] = d
    return out


def file_records(path: str | Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        yield from (line for line in fh if line.strip())


@dataclass(frozen=True)
class Bound:
    """One end of a topic range: an offset for every partition, offsets per partition, or a time (epoch ms)."""

    offset: int | None = None
    per_partition: Mapping[int, int] | None = None
    time_ms: int | None = None

    def offset_for(self, partition: int) -> int | None:
        if self.per_partition is not None:
            return self.per_partition.get(partition)
        return self.offset


_PER_PARTITION = re.compile(r"^\d+:\d+(,\d+:\d+)*$")


def parse_bound(text: str, flag: str) -> Bound:
    """`123` (that offset in every partition), `0:120,1:98` (per partition) or an ISO-8601 time (UTC unless
    it says otherwise)."""
    text = text.strip()
    if text.isdigit():
        return Bound(offset=int(text))
    compact = text.replace(" ", "")
    if _PER_PARTITION.match(compact):
        return Bound(per_partition={int(p): int(o) for p, o in (pair.split(":") for pair in compact.split(","))})
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected an offset (123), offsets per partition (0:120,1:98) "
                         "or an ISO-8601 time (2026-11-22T10:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return Bound(time_ms=int(moment.timestamp() * 1000))


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
    judges = Judges(config, jobs=jobs)
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


# --- the command --------------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-guard backtest",
        description="Judge recorded answers with a candidate configuration; compare with live verdicts and "
                    "labels; write report.json, report.html and plots.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--file", help="AnswerEvent JSONL")
    src.add_argument("--topic", help="answers topic to replay (read by partition assignment, no group, no commit)")
    p.add_argument("--from", dest="start", help="topic only: first offset (N, or P:N,P:N per partition) or "
                                                "ISO-8601 time, inclusive")
    p.add_argument("--to", dest="end", help="topic only: offset or ISO-8601 time to stop before (exclusive)")
    p.add_argument("--broker", help="HOST:PORT[,HOST:PORT] (default: $STREAM_GUARD_BROKER)")
    p.add_argument("--config", help="candidate: TOML with a [detector] table ([stream] for broker settings)")
    p.add_argument("--preset", choices=sorted(PRESETS), help="candidate threshold preset")
    p.add_argument("--ner", choices=("spacy", "regex", "auto"), help="entity recognizer (default auto)")
    p.add_argument("--labels", action="append", default=[], metavar="PATH|TOPIC",
                   help="labels JSONL (event_id, label, grader?, note?), or a labels topic with --topic; repeatable; "
                        "they override labels inside the events")
    live = p.add_mutually_exclusive_group()
    live.add_argument("--live", metavar="PATH|TOPIC",
                      help="live verdicts to compare with: JSONL, or a topic "
                           "(default with --topic: the verdicts topic)")
    live.add_argument("--no-live", action="store_true", help="compare with nothing")
    p.add_argument("--out", default="backtest-report", help="report directory (default ./backtest-report)")
    p.add_argument("--jobs", "-j", type=parse_jobs, default=None,
                   help="judge in N processes (default: one per core, at most one per 1,000 events)")
    p.add_argument("--json-only", action="store_true", help="report.json and verdicts only (no matplotlib needed)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    return p


def _labels_from(values: Sequence[str], topic_reader: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        if Path(value).exists():
            try:
                out.update({k: v.label for k, v in load_labels(value).items()})
            except (OSError, ValueError) as exc:
                raise UsageError(f"labels {value}: {exc}") from None
        elif topic_reader is not None:
            out.update(topic_reader.labels(value))
        else:
            raise UsageError(f"labels {value}: no such file (a labels topic needs --topic and a broker)")
    return out


def _live_from(args: argparse.Namespace, topic_reader: Any) -> tuple[dict[str, Decision] | None, str | None]:
    if args.no_live:
        return None, None
    if args.live and Path(args.live).exists():
        return live_decisions(file_records(args.live)), args.live
    if topic_reader is not None:
        topic = args.live or topic_reader.verdicts_topic
        live = topic_reader.live(topic, required=bool(args.live))
        return live, (f"topic {topic}" if live is not None else None)
    if args.live:
        raise UsageError(f"live verdicts {args.live}: no such file (a verdicts topic needs --topic and a broker)")
    return None, None


def _progress(total: int | None, quiet: bool) -> Any:
    if quiet:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # the bar is a convenience; the `report` extra brings it
        return None
    return tqdm(total=total, unit="ev", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    try:
        return _main(args)
    except UsageError as exc:
        print(f"stream-guard backtest: {exc}", file=sys.stderr)
        return 2
    except SourceError as exc:
        print(f"stream-guard backtest: {exc}", file=sys.stderr)
        return 1


def _main(args: argparse.Namespace) -> int:
    if args.file and (args.start or args.end):
        raise UsageError("--from/--to select a range of a topic; with --file, give the file you want judged")
    try:
        check_environment(os.environ)
        config = build_config(args.config, args.preset, args.ner, env=os.environ)
    except (OSError, ValueError) as exc:
        raise UsageError(f"bad configuration: {exc}") from None
    if not args.json_only:
        from stream_guard.ops.backtest_report import require_plotting

        require_plotting()  # fail before judging anything, not after
    reader = None
    if args.topic:
        try:
            from stream_guard.agents.replay import TopicReader
        except ImportError as exc:
            raise UsageError(f"--topic needs the `stream` extra ({exc})") from None
        reader = TopicReader.from_args(args)
    labels = _labels_from(args.labels, reader)
    live, live_source = _live_from(args, reader)
    total: int | None
    if reader is not None:
        plan = reader.plan(args.topic, parse_bound(args.start, "--from") if args.start else None,
                           parse_bound(args.end, "--to") if args.end else None)
        inputs: Iterable[tuple[Position, bytes]] = reader.inputs(plan)
        total, source = plan.total, plan.describe()
    else:
        if not Path(args.file).is_file():
            raise SourceError(f"cannot read {args.file}: no such file")
        inputs, total = file_inputs(args.file), count_lines(args.file)
        source = {"kind": "file", "path": str(args.file)}
    source = {**source, "live": live_source, "labels": list(args.labels)}
    jobs = args.jobs or jobs_for(total)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    bar = _progress(total, args.quiet)
    try:
        with open(out_dir / "verdicts.jsonl", "wb") as verdicts:
            outcome = run_backtest(config, inputs, jobs=jobs, labels=labels, live=live, verdicts_out=verdicts,
                                   progress=bar)
    except OSError as exc:
        raise SourceError(f"read failed: {exc}") from None
    finally:
        if bar is not None:
            bar.close()
    plots = {}
    if not args.json_only:
        from stream_guard.ops.backtest_report import write_plots

        plots = write_plots(outcome.backtest, out_dir)
    report = outcome.backtest.report(source=source, config=config, jobs=jobs, partial=outcome.partial,
                                     stopped=outcome.stopped, plots=plots)
    (out_dir / "report.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    if not args.json_only:
        from stream_guard.ops.backtest_report import write_html

        write_html(report, out_dir)
    if not args.quiet:
        print(summary_text(report, out_dir), file=sys.stderr)
    if outcome.partial:
        return INTERRUPTED if outcome.stopped and "Ctrl-C" in outcome.stopped else 1
    return 0


def summary_text(report: Mapping[str, Any], out_dir: Path) -> str:
    routing = ", ".join(f"{k} {v}" for k, v in report["routing"].items() if v)
    lines = [f"{'PARTIAL ' if report['partial'] else ''}backtest of {report['events']} events "
             f"({routing or 'none'}; {report['errors']['total']} errors); report in {out_dir}"]
    if report.get("stopped"):
        lines.append(f"stopped early: {report['stopped']}")
    live = report.get("live")
    if live:
        kinds = ", ".join(f"{k} {v}" for k, v in live["by_kind"].items()) or "none"
        lines.append(f"against live: {live['changed']} of {live['compared']} decisions differ ({kinds})")
    overall = (report.get("metrics") or {}).get("overall")
    if overall:
        lines.append(f"labelled {overall['n']}: ROC AUC {overall['roc_auc']}, F1 {overall['f1']}, "
                     f"faithful kept {overall['faithful_kept']}, hallucinated caught {overall['hallucinated_caught']}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
