"""What a judge process executes per event when fed one event per call (the streaming worker at a low rate),
against `check --jobs 1` judging the same events in batches (issue 16).

    .venv/bin/python bench/judge_calls.py FILE [--ner spacy] [--skip 32] [--count 48] [--instructions]
        [--idle-ms 0]

Four runs, each in a fresh process, on the same events: `check` (Pool(config, jobs=1).judge, what `check
--jobs 1` runs) in batches of 16 and of 1, and the judge process's own loop (engine/pool.py `_child_main`,
unchanged) fed the pickled requests `JudgeProcess.send` writes, with histories carried between calls as the
worker's table carries them, in batches of 16 and of 1. The pipe is replaced by a queue in the same process,
so what is counted is the judge's work per call (unpickling, judging, histories as bytes, the CPU budget's
timer, pickling the answer), not the pipe's system calls nor the scheduler's wake-ups. The first `--skip`
events of FILE are judged uncounted (so caches are as warm as in a long run), the next `--count` are counted.

Counted natively: CPU seconds per event (time.process_time over the counted events). With `--instructions`,
under callgrind: instructions per event, counted only between `sys.getallocatedblocks()`, called as the
counted events start (`--zero-before`), and `sys.getswitchinterval()`, called as they end (`--dump-before`),
so start-up, warm-up and shut-down are never counted. Each run sets PYTHONHASHSEED=0 and an event budget of
60 s (under callgrind every event would otherwise time out), and both sides score latency as replays do
(REPLAY_QUALITY_LATENCY_MS: the worker measures it, and callgrind's slowness would move routings).

`--idle-ms N`: the judge sleeps N ms before each counted call, as a judge fed 50 events/s waits between
events: same instructions, and CPU seconds show what coming back to cold caches costs (natively only).
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = (("check", 16), ("check", 1), ("judge", 16), ("judge", 1))
BUDGET_ENV = {"STREAM_GUARD_EVENT_BUDGET_MS": "60000", "PYTHONHASHSEED": "0"}


def _events(path: str, skip: int, count: int) -> list[bytes]:
    lines = [line.strip() for line in Path(path).read_bytes().splitlines() if line.strip()]
    if len(lines) < skip + count:
        raise SystemExit(f"{path} has {len(lines)} events, fewer than --skip {skip} + --count {count}")
    return lines[: skip + count]


def _counted_start() -> float:
    sys.getallocatedblocks()  # callgrind --zero-before=_Py_GetAllocatedBlocks
    return time.process_time()


def _counted_end(started: float) -> float:
    cpu = time.process_time() - started
    sys.getswitchinterval()  # callgrind --dump-before=sys_getswitchinterval
    return cpu


class _Requests:
    """The judge process's end of its pipe: each call's request pickled as JudgeProcess.send pickles it, when
    the judge asks for it, and each answer unpickled as the parent does, its histories kept for later calls."""

    def __init__(self, batches: list[list[bytes]], first_counted: int, idle_s: float) -> None:
        self.batches, self.first_counted, self.idle_s = batches, first_counted, idle_s
        self.table: dict[str, bytes | None] = {}
        self.next = self.answers = 0
        self.started = self.cpu = 0.0

    def recv_bytes(self) -> bytes:
        from stream_guard.engine.pool import shard_key

        if self.next == len(self.batches):
            self.cpu = _counted_end(self.started)
            raise EOFError  # the judge's loop returns, as when the parent closes the pipe
        if self.next == self.first_counted:
            self.started = _counted_start()
        elif self.next > self.first_counted and self.idle_s:
            time.sleep(self.idle_s)
        payloads = self.batches[self.next]
        self.next += 1
        keys = [shard_key(p) for p in payloads]
        histories = {key: self.table.get(key) for key in keys if key}
        return pickle.dumps((payloads, histories, int(time.time() * 1000), keys, None),
                            protocol=pickle.HIGHEST_PROTOCOL)

    def send_bytes(self, data: bytes) -> None:
        self.answers += 1
        if self.answers > 1:  # the first says ready
            self.table.update(pickle.loads(data).histories)


def _batches(events: list[bytes], size: int) -> list[list[bytes]]:
    return [events[i:i + size] for i in range(0, len(events), size)]


def run_one(mode: str, batch: int, path: str, ner: str, skip: int, count: int, idle_ms: float) -> float:
    """CPU seconds per counted event of one run in this process."""
    from stream_guard.collector import collect_less_often
    from stream_guard.config.load import build_config
    from stream_guard.engine import pool

    events = _events(path, skip, count)
    config = build_config(None, None, ner, env=os.environ)
    if mode == "judge":
        requests = _Requests(_batches(events[:skip], batch) + _batches(events[skip:], batch),
                             len(_batches(events[:skip], batch)), idle_ms / 1000.0)
        pool._child_main(requests, pool.Options(config, pool.REPLAY_QUALITY_LATENCY_MS))  # type: ignore[arg-type]
        return requests.cpu / count
    judges = pool.Pool(config, jobs=1, batch_size=batch)
    collect_less_often()  # as `check` does
    started = [0.0]

    def numbered() -> Any:
        for number, line in enumerate(events):
            if number == skip:  # the skipped events' last batch has been judged by now (skip: a multiple of batch)
                started[0] = _counted_start()
            yield number, line

    for _ in judges.judge(numbered()):
        pass
    cpu = _counted_end(started[0])
    judges.close()
    return cpu / count


def _child(args: argparse.Namespace, mode: str, batch: int, out: Path | None) -> list[str]:
    command = [sys.executable, __file__, args.file, "--ner", args.ner, "--skip", str(args.skip), "--count",
               str(args.count), "--idle-ms", str(args.idle_ms), "--one", mode, str(batch)]
    if out is None:
        return command
    return ["valgrind", "--tool=callgrind", "--zero-before=_Py_GetAllocatedBlocks",
            "--dump-before=sys_getswitchinterval", f"--callgrind-out-file={out}", *command]


def _instructions(out: Path) -> int:
    """The counted instructions: the dump taken as the counted events ended (callgrind's FILE.1)."""
    for line in Path(f"{out}.1").read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise SystemExit(f"no summary in {out}.1")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="events, one JSON object a line (e.g. ragtruth_dev.jsonl)")
    parser.add_argument("--ner", default="spacy")
    parser.add_argument("--skip", type=int, default=32, help="events judged first, uncounted (a multiple of 16)")
    parser.add_argument("--count", type=int, default=48, help="events counted (a multiple of 16)")
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind")
    parser.add_argument("--idle-ms", type=float, default=0.0, help="the judge sleeps this long before each call")
    parser.add_argument("--one", nargs=2, metavar=("MODE", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.skip % 16 or args.count % 16:
        parser.error("--skip and --count must be multiples of 16 (whole batches on every side)")
    if args.one:
        per_event = run_one(args.one[0], int(args.one[1]), args.file, args.ner, args.skip, args.count, args.idle_ms)
        print(f"{per_event * 1000:.3f}")
        return 0
    env = {**os.environ, **BUDGET_ENV}
    with tempfile.TemporaryDirectory() as tmp:
        for mode, batch in RUNS:
            out = Path(tmp) / f"cg-{mode}-{batch}" if args.instructions else None
            done = subprocess.run(_child(args, mode, batch, out), env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                return done.returncode
            figure = (f"{_instructions(out) / args.count / 1e6:.2f} M instructions" if out is not None
                      else f"{float(done.stdout.split()[-1]):.3f} ms CPU")
            print(f"{mode} in batches of {batch}: {figure} per event", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
