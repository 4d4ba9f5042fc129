"""`stream-guard check`: judge AnswerEvent JSONL offline, one verdict JSON line per input line, in order."""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections import Counter
from pathlib import Path
from typing import IO, Iterable, Iterator, Sequence

import orjson

from stream_guard.config.detector import PRESETS
from stream_guard.config.load import build_config
from stream_guard.collector import collect_less_often
from stream_guard.engine.judging import Judged
from stream_guard.engine.pool import Pool, count_lines, jobs_for, parse_jobs
from stream_guard.errors import InputError, StreamGuardError, report
from stream_guard.wire.events import split_events, unknown_field_reason

# Failed lines listed on stderr after the summary; every one is in the output too.
FIRST_ERRORS_SHOWN = 5


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stream-guard check",
        description="Judge AnswerEvents offline (JSONL; or a JSON array, or one pretty-printed event, as `produce` "
                    "reads them): one verdict JSON line per event, in order.",
    )
    parser.add_argument("path", nargs="?", default="-", help="file of AnswerEvents (JSONL, a JSON array or one JSON object), or - for stdin")
    parser.add_argument("--config", help="TOML file with a [detector] table")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="threshold preset (seed domain table)")
    parser.add_argument("--ner", choices=("spacy", "regex", "auto"), help="entity recognizer (default auto)")
    parser.add_argument("--drift-db", help="SQLite file that keeps drift history across runs")
    parser.add_argument("--output", "-o", default="-", help="where to write verdicts (default stdout)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    parser.add_argument("--jobs", "-j", type=parse_jobs, default=None,
                        help="judge in N processes (default: one per core, at most one per 1,000 events of a file); "
                             "output order and drift are unchanged")
    return parser


def _numbered_lines(stream: Iterable[bytes], start: int = 1) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=start):
        if line.strip():
            yield number, line.rstrip(b"\r\n")  # what `produce` sends: the line without its ending


def _numbered_payloads(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The events of the input, numbered: JSONL line by line, as it streams. A file whose first non-blank line
    opens a JSON array or object without being one whole value is read as `produce` reads it (a JSON array,
    pretty-printed or not, or one pretty-printed event, such as the README's contract example): its events are
    numbered 1, 2, ... in the array; a file that is neither is still read as JSONL, line numbers intact."""
    head: list[bytes] = []
    for line in stream:
        head.append(line)
        if line.strip():
            break
    first = head[-1].strip() if head else b""
    if first[:1] in (b"[", b"{") and not _whole_json(first):
        raw = b"".join(head) + stream.read()
        kind, payloads = split_events(raw)
        if kind != "JSONL":
            yield from enumerate(payloads, start=1)
            return
        yield from _numbered_lines(io.BytesIO(raw))  # split as the stream is: at \n only, never at a lone \r
        return
    yield from _numbered_lines(head)
    yield from _numbered_lines(stream, start=len(head) + 1)


def _whole_json(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _check_output(number: int, judged: Judged) -> bytes:
    """One output line: the verdict as judged, or what stopped it, with the line it was on."""
    if judged.verdict is not None:
        return judged.verdict
    return orjson.dumps({"line": number, **judged.error_object()})


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    if args.output == "-":
        return run_check(args, sys.stdout.buffer, sys.stderr)
    with open(args.output, "wb") as out:
        return run_check(args, out, sys.stderr)


def run_check(args: argparse.Namespace, stdout: IO[bytes], stderr: IO[str]) -> int:
    try:
        return _check(args, stdout, stderr)
    except StreamGuardError as exc:
        return report(exc, "stream-guard check", stderr)


def _check(args: argparse.Namespace, stdout: IO[bytes], stderr: IO[str]) -> int:
    config = build_config(args.config, args.preset, args.ner, env=os.environ)
    try:
        source: IO[bytes] = sys.stdin.buffer if args.path == "-" else open(args.path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read {args.path}: {exc}") from None
    routing: Counter[str] = Counter()
    errors: list[str] = []
    # stray key -> (events that carried it, the first line it was on)
    unknown: dict[str, list[int]] = {}
    # Only a regular file can be read twice (a pipe or /dev/stdin would be used up by counting).
    jobs = args.jobs or jobs_for(count_lines(args.path) if args.path != "-" and Path(args.path).is_file() else None)
    judges = Pool(config, jobs=jobs, drift_db=args.drift_db)
    collect_less_often()  # this process judges (--jobs 1) or reorders a whole file: stream_guard/collector.py
    try:
        with source:
            for number, judged in judges.judge(_numbered_payloads(source)):
                if judged.ok:
                    routing[str(judged.routing)] += 1
                else:
                    errors.append(f"{args.path}:{number}: {judged.error_object()['error']}")
                for name in judged.unknown_fields:
                    unknown.setdefault(name, [0, number])[0] += 1
                stdout.write(_check_output(number, judged) + b"\n")
        ner = judges.ner_backend
    except OSError as exc:
        raise InputError(f"read failed: {exc}") from None
    finally:
        stdout.flush()
        judges.close()
    for name, (count, first) in unknown.items():  # judged without the key: say so even with --quiet
        print(f"stream-guard check: warning: {args.path}:{first}: {name}: {unknown_field_reason(name)} "
              f"({count} event(s) judged without it)", file=stderr)
    if not args.quiet:
        summary = ", ".join(f"{k} {v}" for k, v in sorted(routing.items())) or "no events"
        print(f"stream-guard check: {sum(routing.values())} verdicts ({summary}), {len(errors)} errors, "
              f"NER {ner}, {judges.jobs} process(es)", file=stderr)
    if errors:  # the failed lines are in the output as error objects; a caller's script must not miss them
        print(f"stream-guard check: {len(errors)} line(s) failed; the first:", file=stderr)
        for line in errors[:FIRST_ERRORS_SHOWN]:
            print(f"  {line}", file=stderr)
        return InputError.exit_code
    return 0
