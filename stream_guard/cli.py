"""`stream-guard` command line. `check` is pure and offline; the streaming commands live in agents/."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from typing import IO, Iterator, Mapping, Sequence

import orjson

from stream_guard.budget import CpuBudget
from stream_guard.config import PRESETS, build_config
from stream_guard.history import HistoryStore, MemoryHistory, SQLiteHistory
from stream_guard.judging import dump_history, judge_payloads, load_history
from stream_guard.pipeline import Guard
from stream_guard.settings import check_environment

STREAMING_COMMANDS = ("worker", "up", "produce", "tail")
BATCH_SIZE = 32


def _check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stream-guard check",
        description="Judge AnswerEvent JSONL offline: one verdict JSON line per input line, in order.",
    )
    parser.add_argument("path", nargs="?", default="-", help="JSONL file of AnswerEvents, or - for stdin")
    parser.add_argument("--config", help="TOML file with a [detector] table")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="threshold preset (seed domain table)")
    parser.add_argument("--ner", choices=("spacy", "regex", "auto"), help="entity recognizer (default auto)")
    parser.add_argument("--drift-db", help="SQLite file that keeps drift history across runs")
    parser.add_argument("--output", "-o", default="-", help="where to write verdicts (default stdout)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    return parser


def _numbered_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line.rstrip(b"\r\n")  # what `produce` sends: the line without its ending


class _StoredHistories(Mapping[str, "bytes | None"]):
    """A history store seen as judge_payloads wants it: question hash -> the stored history as bytes."""

    def __init__(self, store: HistoryStore) -> None:
        self._store = store

    def __getitem__(self, key: str) -> bytes | None:
        items = self._store.get(key)
        return dump_history(items) if items else None

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _judge_lines(guard: Guard, store: HistoryStore, lines: Sequence[tuple[int, bytes]], budget: CpuBudget
                 ) -> list[dict[str, object] | bytes]:
    """The worker's own judge (judging.judge_payloads) over numbered lines: verdict JSON, or an error object
    with the line number. A failure outside it (a bug) costs the lines it was on, never the run."""
    try:
        judged = judge_payloads(guard, [line for _, line in lines], _StoredHistories(store), now_ms(),
                                budget=budget)
    except Exception as exc:  # judge_payloads keeps each event's failure to itself; this is a bug around it
        if len(lines) > 1:
            return [out for one in lines for out in _judge_lines(guard, store, [one], budget)]
        return [{"line": lines[0][0], "error": f"$: the judge failed: {type(exc).__name__}: {exc}",
                 "field": "$", "reason": f"the judge failed: {type(exc).__name__}: {exc}", "stage": "judge"}]
    for key, raw in judged.histories.items():
        store.put(key, load_history(raw), guard.config.window_size)
    return [item.verdict if item.verdict is not None else {"line": number, **item.error_object()}
            for (number, _), item in zip(lines, judged.items)]


def now_ms() -> int:
    return int(time.time() * 1000)


def run_check(args: argparse.Namespace, stdout: IO[bytes], stderr: IO[str]) -> int:
    try:
        check_environment(os.environ)
        config = build_config(args.config, args.preset, args.ner, env=os.environ)
    except (OSError, ValueError) as exc:
        print(f"stream-guard check: bad configuration: {exc}", file=stderr)
        return 2
    try:
        source: IO[bytes] = sys.stdin.buffer if args.path == "-" else open(args.path, "rb")
    except OSError as exc:
        print(f"stream-guard check: cannot read {args.path}: {exc}", file=stderr)
        return 1
    store: HistoryStore = SQLiteHistory(args.drift_db) if args.drift_db else MemoryHistory()
    guard = Guard(config)
    budget = CpuBudget(config.event_budget_ms)
    routing: Counter[str] = Counter()
    errors = 0
    pending: list[tuple[int, bytes]] = []

    def flush() -> None:
        nonlocal errors
        for out in _judge_lines(guard, store, pending, budget) if pending else ():
            if isinstance(out, bytes):
                routing[str(orjson.loads(out).get("routing"))] += 1
                stdout.write(out + b"\n")
            else:
                errors += 1
                stdout.write(orjson.dumps(out) + b"\n")
        pending.clear()

    try:
        with source:
            for number, line in _numbered_lines(source):
                pending.append((number, line))
                if len(pending) >= BATCH_SIZE:
                    flush()
            flush()
    except OSError as exc:
        print(f"stream-guard check: read failed: {exc}", file=stderr)
        return 1
    finally:
        stdout.flush()
        store.close()
    if not args.quiet:
        summary = ", ".join(f"{k} {v}" for k, v in sorted(routing.items())) or "no events"
        print(f"stream-guard check: {sum(routing.values())} verdicts ({summary}), {errors} errors, "
              f"NER {guard.detector.ner_backend}", file=stderr)
    return 0


USAGE = """usage: stream-guard [--version] {check,worker,up,produce,tail} ...

  check    judge AnswerEvent JSONL offline, one verdict line per input line
  up       embedded broker + worker + demo producer: the whole thing, out of the box
  worker   run a streaming worker against a broker
  produce  publish AnswerEvent JSONL to the answers topic
  tail     print verdicts, alerts, dlq or metrics as they arrive"""


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv and argv[0] == "--version":
        from stream_guard import __version__

        print(f"stream-guard {__version__}")
        return 0
    if not argv:  # a command is required: say which exist, and fail like any other usage error
        print(USAGE, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "check":
        args = _check_parser().parse_args(rest)
        if args.output == "-":
            return run_check(args, sys.stdout.buffer, sys.stderr)
        with open(args.output, "wb") as out:
            return run_check(args, out, sys.stderr)
    if command in STREAMING_COMMANDS:
        from stream_guard.agents.cli import run  # the streaming side needs the `stream` extra; import only when asked

        return run(command, rest)
    print(f"stream-guard: unknown command {command!r}; try --help", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
