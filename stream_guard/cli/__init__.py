"""The `stream-guard` command line: `check`, `backtest`, `calibrate` and `serve` here, the streaming commands in
stream_guard.agents.cli (imported only when one is asked for: they need the `stream` extra). Every command ends
on a StreamGuardError the same way (stream_guard.errors.report: its message, its exit code)."""

from __future__ import annotations

import os
import sys
from typing import MutableMapping, NoReturn, Sequence

from stream_guard.errors import StreamGuardError, report

STREAMING_COMMANDS = ("worker", "up", "produce", "tail", "replay-dlq", "alerts")
OFFLINE_COMMANDS = ("check", "backtest", "calibrate", "serve")  # each the module stream_guard.cli.<command>


USAGE = """usage: stream-guard [--version] {check,backtest,calibrate,serve,worker,up,produce,tail,replay-dlq,alerts} ...

  check    judge AnswerEvent JSONL offline, one verdict line per input line
  backtest replay a file or a topic with a candidate configuration: report vs live verdicts and labels
  calibrate choose flag_threshold (and refit the score model) from labelled answers; writes a [detector] TOML
  serve    check answers over HTTP before they are delivered (one, a batch, or sentence by sentence as generated)
  up       embedded broker + worker + demo producer: the whole thing, out of the box
  worker   run a streaming worker against a broker (--embedded: a private in-memory one, for development)
  produce  publish AnswerEvent JSONL to the answers topic
  tail     print verdicts, alerts, dlq or metrics as they arrive
  replay-dlq re-submit dead letters (after a fix) to the answers topic
  alerts   forward the alerts topic to a webhook (Alertmanager, Slack or JSON), at least once"""


def entry() -> NoReturn:
    """The `stream-guard` program (its console script, `python -m stream_guard` and `python -m stream_guard.cli`):
    `main` on the process's arguments. An offline command's modules are imported as objects that last as long as
    the process (stream_guard/collector.py: no garbage collection looks at them), the fixed patterns they and
    the libraries they import compile coming from the regex cache (text/regex_cache.py) and their dataclasses'
    methods and forward references from the generated code's (text/generated_code.py), and after it the process ends
    without tearing its heap down (cli/process_exit.py: about a fifth of a short run's CPU once spaCy is loaded).
    The streaming commands start and exit the normal way: their libraries' clean-up (Faust's, aiokafka's) is
    theirs to run."""
    hold_blas_to_one_thread(os.environ)
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command not in OFFLINE_COMMANDS:
        raise SystemExit(main())
    import importlib

    from stream_guard.cli.process_exit import exit_process
    from stream_guard.collector import built_to_last
    from stream_guard.text import generated_code, regex_cache

    with built_to_last(), regex_cache.routing_re_compile(), generated_code.compiled_once():
        importlib.import_module(f"stream_guard.cli.{command}")
    exit_process(main())


def hold_blas_to_one_thread(environ: MutableMapping[str, str]) -> None:
    """Every process of the program (and each child: `check -j`, the worker's judges, inherit the environment)
    runs numpy's BLAS on one thread, unless the operator chose a number. Its only work here is spaCy's NER
    model multiplying the matrices of a few answer windows, which one thread does; a library caller's pipeline
    is held to one thread per call instead (text/ner.py `_PipelineLock`), and each time that limit is lifted
    OpenBLAS's second thread wakes and spins: 2.9% of a RAGTruth `check` run's CPU samples in its thread and
    about as much again in locks (perf, cpu-clock), 5% of the run's CPU seconds. Read by OpenBLAS when numpy
    is imported, so set before anything imports it."""
    environ.setdefault("OPENBLAS_NUM_THREADS", "1")


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
    if command in STREAMING_COMMANDS:
        from stream_guard.agents.cli import run  # the streaming side needs the `stream` extra; import only when asked

        return run(command, rest)  # which reports its own errors: it is an entry point too
    if command == "check":
        from stream_guard.cli.check import main as run_command
    elif command == "backtest":
        from stream_guard.cli.backtest import main as run_command
    elif command == "calibrate":
        from stream_guard.cli.calibrate import main as run_command
    elif command == "serve":
        from stream_guard.cli.serve import main as run_command
    else:
        print(f"stream-guard: unknown command {command!r}; try --help", file=sys.stderr)
        return 2
    try:
        return run_command(rest)
    except StreamGuardError as exc:
        return report(exc, f"stream-guard {command}")
