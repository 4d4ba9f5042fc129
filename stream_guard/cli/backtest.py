"""`stream-guard backtest`: judge recorded answers with a candidate configuration; report against live verdicts
and labels (stream_guard/ops/backtest.py does the work; this reads the arguments and wires the sources).

    stream-guard backtest --file answers.jsonl [--labels labels.jsonl] [--live verdicts.jsonl] --out DIR
    stream-guard backtest --topic rag.answers --from 2026-11-15T00:00:00Z --to 2026-11-22T00:00:00Z \\
                          --broker HOST:PORT --config candidate.toml --out DIR

A topic is read through the streaming edge (stream_guard.agents.replay), imported only when --topic is given.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import orjson

from stream_guard.config.detector import PRESETS
from stream_guard.config.load import build_config
from stream_guard.engine.pool import count_lines, jobs_for, parse_jobs
from stream_guard.errors import InputError
from stream_guard.ops.backtest import INTERRUPTED, run_backtest
from stream_guard.ops.sources import (Decision, Position, RecordedSource, UsageError, file_inputs, file_records,
                                      live_decisions, parse_bound)
from stream_guard.wire.labels import load_labels


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
    p.add_argument("--wait", action="store_true", help="topic only: keep trying to reach the broker (default: exit 1 "
                                                       "after connect_timeout_s, 5 s)")
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


def _labels_from(values: Sequence[str], topic_reader: RecordedSource | None) -> dict[str, int]:
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


def _live_from(args: argparse.Namespace, topic_reader: RecordedSource | None
               ) -> tuple[Mapping[str, Decision] | None, str | None]:
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
    if args.file and (args.start or args.end):
        raise UsageError("--from/--to select a range of a topic; with --file, give the file you want judged")
    config = build_config(args.config, args.preset, args.ner, env=os.environ)
    if not args.json_only:
        from stream_guard.ops.backtest_report import require_plotting

        require_plotting()  # fail before judging anything, not after
    reader = _topic_source(args) if args.topic else None
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
            raise InputError(f"cannot read {args.file}: no such file")
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
        raise InputError(f"read failed: {exc}") from None
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


def _topic_source(args: argparse.Namespace) -> RecordedSource:
    """The streaming edge's reader of recorded topics (needs the `stream` extra)."""
    try:
        from stream_guard.agents.replay import TopicSource
    except ImportError as exc:
        raise UsageError(f"--topic needs the `stream` extra ({exc})") from None
    return TopicSource.from_args(args)


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
