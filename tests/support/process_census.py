"""A census of where the test run spends its processes and CPU (opt-in: SG_TEST_CENSUS=<file>; not a
STREAM_GUARD_ name, which the workers would refuse as an unknown setting).

Each test appends one JSON line: its node id, wall seconds, its own CPU seconds, its children's CPU seconds
(children count once reaped, so a module's workers stopped in teardown land on its last test) and the
processes it started, by kind (worker, broker, cli, other). `python tests/support/process_census.py FILE`
sums them per file. Off by default: nothing is patched unless the variable is set."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import time
from typing import Any

import orjson

_started: collections.Counter[str] = collections.Counter()


def kind(args: Any) -> str:
    argv = [str(a) for a in (args if isinstance(args, (list, tuple)) else [args])]
    text = " ".join(argv)
    if "tansu" in os.path.basename(argv[0]):
        return "broker"
    if " worker" in text and ("stream_guard.agents" in text or argv[1:2] == ["-c"]):
        return "worker"
    if argv[0] == sys.executable or "stream_guard" in text:
        return "cli"
    return "other"


def install() -> None:
    original = subprocess.Popen.__init__

    def counted(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        _started[kind(args)] += 1
        original(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = counted  # type: ignore[method-assign]


def record(path: str, nodeid: str, wall: float, before: os.times_result, after: os.times_result) -> None:
    line = {"test": nodeid, "wall": round(wall, 3),
            "cpu": round(after.user - before.user + after.system - before.system, 3),
            "children": round(after.children_user - before.children_user
                              + after.children_system - before.children_system, 3),
            **_started}
    _started.clear()
    with open(path, "ab") as out:
        out.write(orjson.dumps(line) + b"\n")


def summary(path: str) -> None:
    files: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for raw in open(path, "rb"):
        line = orjson.loads(raw)
        counter = files[line.pop("test").split("::")[0]]
        counter["tests"] += 1
        for key, value in line.items():
            counter[key] += value
    total: collections.Counter[str] = collections.Counter()
    rows = sorted(files.items(), key=lambda kv: -(kv[1]["cpu"] + kv[1]["children"]))
    print(f"{'file':58} {'tests':>5} {'wall':>7} {'cpu':>7} {'child':>7} {'worker':>6} {'broker':>6} {'cli':>4}")
    for name, c in rows:
        total.update(c)
        print(f"{name[-58:]:58} {c['tests']:5} {c['wall']:7.1f} {c['cpu']:7.1f} {c['children']:7.1f} "
              f"{c['worker']:6} {c['broker']:6} {c['cli']:4}")
    print(f"{'total':58} {total['tests']:5} {total['wall']:7.1f} {total['cpu']:7.1f} {total['children']:7.1f} "
          f"{total['worker']:6} {total['broker']:6} {total['cli']:4}")


if __name__ == "__main__":
    summary(sys.argv[1])
