"""Streaming throughput and end-to-end latency through a real broker, beside `stream-guard check` offline.

In one run, on the same events (RAGTruth dev by default, repeated with fresh event ids to --events):

- offline: `stream-guard check FILE --ner X` wall time, and with its start-up (imports, spaCy load; measured
  on a one-line file) taken out, since the workers below are started and warmed up before timing. Run
  again right before each streaming run, which is compared with that one: the machine's speed drifts;
- streaming, one worker and two: produce all events as fast as the producer goes, time from the first send
  to the last verdict read back; end-to-end per event = verdict's broker timestamp - event's timestamp;
- paced: spaCy NER, one worker, events sent at --rate per second for --paced-seconds; end-to-end p50/p99,
  on the dataset events and on short support-desk events (the demo's shape).

Everything shares the machine: broker, workers, this producer and reader. On 2 cores that is the point
and the limit: a second worker competes with the broker and the producer for the same two cores. So each
streaming run also reports the CPU it took per event, by role, and the rate the machine's cores could
sustain at that cost (`cpu_ceiling_eps`): a second worker cannot go past it.

    .venv/bin/python bench/stream_throughput.py [--events 2000] [--rate 200] [--paced-seconds 15] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import REPO, add_data_option, data_path, machine, percentile, process_cpu_seconds, write_result  # noqa: E402
from _data import STREAM_PARTITIONS as PARTITIONS, STREAM_WORKER_ENV as WORKER_ENV  # noqa: E402

from stream_guard.agents.clients import Reader, partition_key, start_producer  # noqa: E402
from stream_guard.agents.embedded_broker import EmbeddedBroker, die_with_parent, free_port  # noqa: E402
from stream_guard.agents.topics import ensure_topics  # noqa: E402
from stream_guard.config.load import load  # noqa: E402

SHORT_EVENTS = [
    ("What is the refund window?", ["Refunds are accepted within 14 days of purchase with the original receipt."],
     "You can return any item within 30 days of purchase for a full refund."),
    ("How do I reset my password?", ["To reset your password, open Settings, choose Security and click Reset "
                                     "password.", "A reset link is emailed and expires after 24 hours."],
     "Open Settings, choose Security and click Reset password. The link expires after 24 hours."),
    ("How much does the Pro plan cost?", ["The Pro plan costs $120 per year, billed annually."],
     "The Pro plan costs $10 per month, billed monthly."),
    ("Who leads the platform team?", ["The platform team is led by Dana Whitfield in the Berlin office."],
     "The platform team is led by Dana Whitfield, who works from the Berlin office."),
]


# --- events ------------------------------------------------------------------------------------------------


def dataset_lines(name: str, n: int) -> list[bytes]:
    path = data_path(name)
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    out = []
    for i in range(n):
        row = rows[i % len(rows)]
        out.append(orjson.dumps({"event_id": f"ev-{i}", "tenant": "bench", "question": row.get("question") or "",
                                 "context": row["context"], "answer": row["answer"]}))
    return out


def short_lines(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        question, context, answer = SHORT_EVENTS[i % len(SHORT_EVENTS)]
        out.append(orjson.dumps({"event_id": f"ev-{i}", "tenant": f"t{i % 7}", "question": question,
                                 "context": context, "answer": answer}))
    return out


# --- offline ---------------------------------------------------------------------------------------------------


def _check_seconds(path: Path, ner: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "stream_guard.cli", "check", str(path), "--ner", ner, "-o", os.devnull,
                    "-q"], cwd=REPO, check=True)
    return time.perf_counter() - started


def offline_startup(one_line: Path, ner: str) -> float:
    """`check` on a one-line file: imports and model load, which the warmed-up workers do not pay."""
    return min(_check_seconds(one_line, ner), _check_seconds(one_line, ner))


def offline(path: Path, ner: str, n: int, startup: float) -> dict[str, float]:
    wall = _check_seconds(path, ner)
    return {"events": n, "wall_s": round(wall, 3), "startup_s": round(startup, 3),
            "eps_wall": round(n / wall, 1), "eps": round(n / max(1e-6, wall - startup), 1)}


# --- streaming -------------------------------------------------------------------------------------------------


@dataclass
class Cluster:
    broker: str
    ner: str
    workers: int
    tmp: Path
    executor: str = "process"

    def __post_init__(self) -> None:
        self.prefix = f"b{uuid.uuid4().hex[:6]}"
        self.env = {**os.environ, **WORKER_ENV, "STREAM_GUARD_APP_ID": f"{self.prefix}-guard",
                    "STREAM_GUARD_EXECUTOR": self.executor,
                    **{f"STREAM_GUARD_TOPIC_{t.upper()}": f"{self.prefix}.{t}"
                       for t in ("answers", "verdicts", "alerts", "dlq", "metrics")}}
        self.settings = load(env=self.env, stream={"broker": self.broker}).stream
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ports: list[int] = []

    def start(self) -> None:
        asyncio.run(ensure_topics(self.settings))
        for i in range(self.workers):
            port = free_port()
            log = open(self.tmp / f"{self.prefix}-{i}.log", "wb")
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "stream_guard.agents", "worker", "--broker", self.broker, "--data-dir",
                 str(self.tmp / f"{self.prefix}-data-{i}"), "--web-port", str(port), "--ner", self.ner,
                 "--loglevel", "warning", "--name", f"bench-{i}"],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent))
            self.ports.append(port)
        self._wait_split()

    def _owned(self, port: int) -> set[int]:
        import re
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return set()
        topic = f'topic="{self.settings.by_question_topic}"'
        # Labels in either order: prometheus_client writes them sorted by name.
        return {int(labels.split('partition="')[1].split('"')[0])
                for labels in re.findall(r"stream_guard_consumer_lag\{([^}]*)\}", text)
                if topic in labels.split(",") and 'partition="' in labels}

    def _wait_split(self, timeout: float = 120.0) -> None:
        """Ready when every partition is owned by exactly one worker (after any rebalance)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"worker exited {proc.returncode}; logs in {self.tmp}")
            owned = [self._owned(p) for p in self.ports]
            if all(owned) and sum(len(o) for o in owned) == PARTITIONS and set().union(*owned) == set(
                    range(PARTITIONS)):
                return
            time.sleep(0.5)
        raise RuntimeError("workers did not settle on the partitions")

    def stop(self) -> None:
        started = time.monotonic()
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                print(f"  worker {proc.pid} ignored SIGTERM for 60 s; killed (logs in {self.tmp})", flush=True)
                proc.kill()
        print(f"  workers stopped in {time.monotonic() - started:.1f}s", flush=True)


async def _send_stamped(settings: Any, lines: list[bytes], rate: float | None) -> dict[str, Any]:
    """Send `lines` (as fast as possible, or at `rate`/s) and read every verdict back.

    produced_at is set right before each send, so end-to-end = verdict's broker timestamp (the worker's
    send time) - produced_at: the pipeline's time, not how long an event waited in this script."""
    objs = [orjson.loads(line) for line in lines]
    broker = settings.broker
    reader = await Reader(broker, [settings.topics.verdicts]).start()
    producer = await start_producer(broker)
    wanted = {o["event_id"] for o in objs}
    e2e: list[float] = []
    seen: set[str] = set()
    duplicates = 0

    async def send() -> None:
        started = time.perf_counter()
        pending = []
        for i, obj in enumerate(objs):
            if rate:
                delay = started + i / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            obj["produced_at"] = int(time.time() * 1000)
            line = orjson.dumps(obj)
            pending.append(await producer.send(settings.topics.answers, line, key=partition_key(line)))
            if len(pending) >= 200:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)

    t0 = time.perf_counter()
    sending = asyncio.create_task(send())
    last = t0
    deadline = t0 + 900
    while not wanted <= seen and time.perf_counter() < deadline:
        for record in await reader.poll(0.2):
            verdict = orjson.loads(record.value)
            if verdict["event_id"] not in wanted:  # a late warm-up verdict
                continue
            if verdict["event_id"] in seen:
                duplicates += 1
                continue
            seen.add(verdict["event_id"])
            e2e.append(record.timestamp - verdict["produced_at_ms"])
            last = time.perf_counter()
    await sending
    await producer.stop()
    await reader.stop()
    elapsed = last - t0
    return {
        "events": len(objs), "verdicts": len(seen), "duplicates": duplicates, "seconds": round(elapsed, 3),
        "eps": round(len(seen) / elapsed, 1) if elapsed else None, "rate": rate,
        "e2e_p50_ms": round(percentile(e2e, 50), 1), "e2e_p99_ms": round(percentile(e2e, 99), 1),
        "e2e_max_ms": round(max(e2e), 1) if e2e else None,
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc); 0 once it is gone."""
    return process_cpu_seconds(pid) or 0.0


def child_pids(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def descendant_pids(pid: int) -> list[int]:
    """Children, their children, ...: a worker's judge process is a child of the pool's fork server."""
    found, todo = [], child_pids(pid)
    while todo:
        found.append(child := todo.pop())
        todo += child_pids(child)
    return found


def main_thread_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process's main thread so far (its /proc task of the same id); 0 once gone.
    In a worker that is the asyncio event loop; the rest of the process is mostly Faust's consumer thread, which
    runs aiokafka's fetcher (the two are about equal, w22), so the split says which side a change moved."""
    return process_cpu_seconds(pid, thread=pid) or 0.0


def cpu_by_role(cluster: Cluster, broker_pid: int | None) -> dict[str, float]:
    """CPU seconds so far of everything on the machine that takes part: the broker, the workers' event-loop
    processes (and, within them, the event loop's own thread against the others), their judge processes (with
    the pool's fork server), and this script (producer and verdict reader)."""
    roles = {"broker": cpu_seconds(broker_pid) if broker_pid else 0.0, "workers": 0.0, "worker loops": 0.0,
             "worker other threads": 0.0, "judges": 0.0, "load generator": cpu_seconds(os.getpid())}
    for proc in cluster.procs:
        whole, loop = cpu_seconds(proc.pid), main_thread_cpu_seconds(proc.pid)
        roles["workers"] += whole
        roles["worker loops"] += loop
        roles["worker other threads"] += max(0.0, whole - loop)
        roles["judges"] += sum(cpu_seconds(child) for child in descendant_pids(proc.pid))
    return roles


def streaming(broker: str, tmp: Path, ner: str, workers: int, lines: list[bytes], rate: float | None,
              warmup: list[bytes], executor: str, broker_pid: int | None = None) -> dict[str, Any]:
    cluster = Cluster(broker, ner, workers, tmp, executor)
    cluster.start()
    try:
        asyncio.run(_send_stamped(cluster.settings, warmup, None))  # first batches load caches and models
        before = cpu_by_role(cluster, broker_pid)
        result = asyncio.run(_send_stamped(cluster.settings, lines, rate))
        after = cpu_by_role(cluster, broker_pid)
    finally:
        cluster.stop()
    per_event = {role: round((after[role] - before[role]) * 1000 / len(lines), 2) for role in before}
    per_event["total"] = round(sum(per_event.values()), 2)
    result.update(workers=workers, ner=ner, executor=executor, cpu_ms_per_event=per_event,
                  # What the machine's cores could sustain at this CPU cost per event, all of them busy.
                  cpu_ceiling_eps=round(1000 * (os.cpu_count() or 1) / per_event["total"], 1)
                  if per_event["total"] else None)
    return result


# --- report ----------------------------------------------------------------------------------------------------


def scaling_ratios(results: dict[str, Any], ners: list[str], executors: list[str], rounds: int
                   ) -> dict[str, float]:
    """Medians over rounds. 1w / offline against the offline run just before it; 2w / 1w both raw and with
    each side divided by its own offline reference (which takes the machine's speed drift out)."""
    ratios: dict[str, float] = {}
    for ner in ners:
        for executor in executors:
            one, two, two_norm = [], [], []
            for round_ in range(1, rounds + 1):
                one_w = results.get(f"stream {ner} 1w {executor} round {round_}")
                two_w = results.get(f"stream {ner} 2w {executor} round {round_}")
                if one_w:
                    one.append(one_w["vs_offline"])
                if one_w and two_w:
                    two.append(two_w["eps"] / one_w["eps"])
                    two_norm.append(two_w["vs_offline"] / one_w["vs_offline"])
            if one:
                ratios[f"{ner} {executor} stream 1w / offline"] = round(statistics.median(one), 2)
            if two:
                ratios[f"{ner} {executor} stream 2w / 1w"] = round(statistics.median(two), 2)
                ratios[f"{ner} {executor} stream 2w / 1w, speed-normalised"] = round(statistics.median(two_norm), 2)
    return ratios


def table(results: dict[str, Any]) -> str:
    rows = [("run", "events/s", "e2e p50 ms", "e2e p99 ms", "dups",
             "cpu ms/event: broker+workers+judges+load=total", "cpu ceiling ev/s")]
    for name, r in results.items():
        if name.startswith("offline"):
            rows.append((name, f"{r['eps']} ({r['eps_wall']} wall)", "-", "-", "-", "-", "-"))
        elif "cpu_ms_per_event" in r:
            cpu = r["cpu_ms_per_event"]
            split = "+".join(str(cpu[k]) for k in ("broker", "workers", "judges", "load generator"))
            rows.append((name, str(r["eps"]), str(r["e2e_p50_ms"]), str(r["e2e_p99_ms"]), str(r["duplicates"]),
                         f"{split}={cpu['total']}", str(r["cpu_ceiling_eps"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="ragtruth_dev")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--paced-seconds", type=float, default=15.0, help="0 skips the paced runs")
    parser.add_argument("--ner", nargs="+", default=["regex", "spacy"])
    parser.add_argument("--executor", nargs="+", default=["process"], choices=["process"],
                        help="where workers run the checks (the thread executor was removed)")
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--broker", help="an existing broker (default: the embedded one)")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the throughput runs; ratios are medians")
    add_data_option(parser)
    args = parser.parse_args()

    lines = dataset_lines(args.dataset, args.events)
    warmup = [line.replace(b'"ev-', b'"warm-') for line in lines[:100]]
    paced_n = int(args.rate * args.paced_seconds)
    results: dict[str, Any] = {}
    scratch = REPO / "stream-guard-data"  # git-ignored; /tmp is shared and may be swept under us
    scratch.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-", dir=scratch) as tmp_name, EmbeddedBroker() as embedded:
        tmp = Path(tmp_name)
        broker = args.broker or embedded.bootstrap
        broker_pid = None if args.broker else embedded.pid
        path, one = tmp / "events.jsonl", tmp / "one.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        one.write_bytes(lines[0] + b"\n")
        startup = {ner: offline_startup(one, ner) for ner in args.ner}
        for round_ in range(1, args.rounds + 1):
            for ner in args.ner:
                for executor in args.executor:
                    for workers in args.workers:
                        # The offline reference right before each streaming run: this machine's CPU speed
                        # drifts by up to a third over minutes (the same `check` took 15.7-20.7 s).
                        off = offline(path, ner, len(lines), startup[ner])
                        key = f"stream {ner} {workers}w {executor} round {round_}"
                        results[f"offline check {ner} before {key}"] = off
                        run = streaming(broker, tmp, ner, workers, lines, None, warmup, executor, broker_pid)
                        run.update(round=round_, offline_eps=off["eps"], vs_offline=round(run["eps"] / off["eps"], 3))
                        results[key] = run
                        print(f"{key}: {run}", flush=True)
        paced_sets = {"dataset": dataset_lines(args.dataset, paced_n), "short": short_lines(paced_n)} if paced_n else {}
        for label, paced_lines in paced_sets.items():
            for executor in args.executor:
                key = f"paced {args.rate:g}/s spacy 1w {executor} {label}"
                results[key] = streaming(broker, tmp, "spacy", 1, paced_lines, args.rate,
                                         [line.replace(b'"ev-', b'"warm-') for line in paced_lines[:100]], executor,
                                         broker_pid)
                print(f"{key}: {results[key]}", flush=True)

    ratios = scaling_ratios(results, args.ner, args.executor, args.rounds)
    print()
    print(table(results))
    print()
    for name, value in ratios.items():
        print(f"{name}: {value}")
    out = write_result("stream_throughput", {
        "machine": machine(), "dataset": args.dataset, "events": args.events, "partitions": PARTITIONS,
        "rounds": args.rounds,
        "broker": "given" if args.broker else "embedded tansu (memory)", "results": results, "ratios": ratios,
        "targets": {"stream/offline": ">= 0.8", "2w/1w": ">= 1.6", "paced spacy p99 ms": "< 50"},
    })
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
