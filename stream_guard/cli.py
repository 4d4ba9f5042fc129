"""`stream-guard` command line. `check` is pure and offline; the streaming commands live in agents/."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import IO, Iterator, Sequence

import orjson

from stream_guard.config import PRESETS, DetectorConfig, build_config
from stream_guard.events import AnswerEvent, EventError, parse_event
from stream_guard.history import HistoryStore, MemoryHistory, SQLiteHistory
from stream_guard.pipeline import EventFailure, Guard
from stream_guard.text import question_hash

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
            yield number, line


def _parse_line(number: int, line: bytes, config: DetectorConfig) -> AnswerEvent | dict[str, object]:
    try:
        return parse_event(orjson.loads(line), config.limits)
    except orjson.JSONDecodeError as exc:
        return {"line": number, "error": f"not valid JSON: {exc}"}
    except EventError as exc:
        return {"line": number, "error": str(exc), "field": exc.field, "reason": exc.reason}


def _judge(guard: Guard, store: HistoryStore, events: Sequence[AnswerEvent]) -> list[dict[str, object]]:
    keys = {question_hash(e.tenant, e.question) for e in events}
    histories = {key: store.get(key) for key in keys}
    results, updated = guard.evaluate_batch(events, histories)
    window = guard.config.window_size
    for key, items in updated.items():
        store.put(key, items, window)
    return [
        {"event_id": r.event_id, "error": r.error} if isinstance(r, EventFailure) else r.to_dict() for r in results
    ]


def run_check(args: argparse.Namespace, stdout: IO[bytes], stderr: IO[str]) -> int:
    try:
        config = build_config(args.config, args.preset, args.ner)
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
    routing: Counter[str] = Counter()
    errors = 0
    pending: list[tuple[int, AnswerEvent | dict[str, object]]] = []

    def flush() -> None:
        nonlocal errors
        events = [item for _, item in pending if isinstance(item, AnswerEvent)]
        judged = iter(_judge(guard, store, events)) if events else iter(())
        for _, item in pending:
            out = next(judged) if isinstance(item, AnswerEvent) else item
            if "error" in out:
                errors += 1
            else:
                routing[str(out["routing"])] += 1
            stdout.write(orjson.dumps(out) + b"\n")
        pending.clear()

    try:
        with source:
            for number, line in _numbered_lines(source):
                pending.append((number, _parse_line(number, line, config)))
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
