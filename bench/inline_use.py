"""Inline use, measured on this machine: `stream-guard serve` under a bounded open-loop load, its CPU per request
against `stream-guard check` on the same events, the added delay of a streamed sentence, and the Kafka client's
round trip through a worker on the embedded broker.

    .venv/bin/python bench/inline_use.py [--rates 50 100 150 200 250] [--seconds 20] [--streams 40]
                                         [--kafka-seconds 30] [--skip kafka]

Events: the demo's short support-desk events (stream_guard/samples/demo.jsonl, the valid ones), cycled with fresh
event ids, so questions repeat and drift histories fill as in production. Load: open loop on 127.0.0.1 over
keep-alive connections (one aiohttp session, at most --in-flight requests at once: a request that finds the bound
reached waits, and its wait counts). Latency: from the moment a request was due to its response read, so a slow
server cannot hide queueing by slowing the generator down. CPU: user + system seconds of the server and its judge
processes over each step (the generator's own, apart). Streamed sentences: answers sent a word at a time, several
streams at once; a sentence's delay runs from the send of the chunk that completed it (the same splitter the server
uses, run here on the same chunks) to its line read. Kafka: a worker (its own process, the shipped command) on
the embedded broker, events produced at a fixed rate by KafkaGuardClient, round trip from due to verdict.

Writes bench/results/inline_use.json. The machine is shared: the load average is recorded with each figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, AsyncIterator

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import (REPO, EmbeddedBroker, demo_events, GuardClient, KafkaGuardClient, SentenceBuffer,  # noqa: E402
                   StreamedSentence, check, ensure_topics, load_config, machine, percentile, process_cpu_seconds,
                   write_result)

CLI = Path(sys.executable).parent / "stream-guard"
P99_TARGET_MS = 25.0

# Multi-sentence support answers to stream (their contexts are the demo's shape): mostly grounded, some wrong.
STREAMS = [
    ({"tenant": "support", "question": "How do I get a refund for my order?",
      "context": ["Refunds are accepted within 14 days of purchase with the original receipt. Refunds go back to the "
                  "original payment method within 5 business days.",
                  "Store credit is offered after 14 days. Items must be unused and in their original packaging."]},
     "Thanks for reaching out! Refunds are accepted within 14 days of purchase with the original receipt. "
     "The refund goes back to your original payment method within 30 business days. Items must be unused and in "
     "their original packaging. Let me know if you need anything else."),
    ({"tenant": "support", "question": "How do I reset my password?",
      "context": ["To reset your password, open Settings, choose Security and click Reset password.",
                  "The reset link is emailed to you and expires after 24 hours."]},
     "Open Settings and choose Security. Then click Reset password. The reset link is emailed to you and "
     "expires after 24 hours. If it expires, request a new one."),
    ({"tenant": "billing", "question": "How much does the Pro plan cost?",
      "context": ["The Pro plan costs $120 per year, billed annually.", "Annual plans can be cancelled before renewal."]},
     "The Pro plan costs $120 per year. It is billed annually. Annual plans can be cancelled before renewal. "
     "The Pro plan also includes a free phone for every user."),
]


def events(count: int, prefix: str) -> list[bytes]:
    base = demo_events()
    return [orjson.dumps({**base[i % len(base)], "event_id": f"{prefix}-{i}"}) for i in range(count)]


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its children now alive (the server and its judge processes)."""
    total = process_cpu_seconds(pid) or 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            total += process_cpu_seconds(int(child)) or 0.0
    return total


def summary(latencies_ms: list[float]) -> dict[str, float]:
    return {f"p{q:g}_ms": round(percentile(latencies_ms, q), 2) for q in (50, 90, 99)} | {
        "max_ms": round(max(latencies_ms), 2) if latencies_ms else float("nan")}


# --- the server -----------------------------------------------------------------------------------------------


class Served:
    def __init__(self, folder: Path, processes: int | None) -> None:
        command = [str(CLI), "serve", "--port", "0", "--drift-db", str(folder / "drift.sqlite")]
        if processes:
            command += ["--processes", str(processes)]
        self.log = open(folder / "serve.log", "wb")
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            found = re.search(r"listening on http://[^:]+:(\d+)", (folder / "serve.log").read_text())
            if found and self.ready(f"http://127.0.0.1:{found.group(1)}"):
                self.url = f"http://127.0.0.1:{found.group(1)}"
                return
            if self.proc.poll() is not None:
                raise SystemExit((folder / "serve.log").read_text())
            time.sleep(0.2)
        raise SystemExit("serve did not get ready")

    @staticmethod
    def ready(url: str) -> bool:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.log.close()


async def open_loop(guard: GuardClient, payloads: list[bytes], rate: float, in_flight: int) -> list[float]:
    """Send `payloads` at `rate` per second whatever the answers; latency of each from when it was due."""
    bound = asyncio.Semaphore(in_flight)
    latencies: list[float] = []
    failures = 0

    async def one(payload: bytes, due: float) -> None:
        nonlocal failures
        async with bound:
            result = await guard.check(payload, timeout=30)
        latencies.append((time.perf_counter() - due) * 1000.0)
        failures += result.outcome != "checked"

    start = time.perf_counter() + 0.05
    tasks = []
    for i, payload in enumerate(payloads):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(payload, due)))
    await asyncio.gather(*tasks)
    if failures:
        raise SystemExit(f"{failures} request(s) got no verdict at {rate}/s")
    return latencies


async def http_steps(served: Served, rates: list[float], seconds: float, in_flight: int) -> list[dict[str, Any]]:
    out = []
    async with GuardClient(served.url, connections=in_flight) as guard:
        await open_loop(guard, events(300, "warm"), 100.0, in_flight)
        for rate in rates:
            payloads = events(int(rate * seconds), f"r{rate:g}")
            cpu0, own0, load0 = tree_cpu(served.proc.pid), time.process_time(), loadavg()
            started = time.perf_counter()
            latencies = await open_loop(guard, payloads, rate, in_flight)
            wall = time.perf_counter() - started
            step = {"rate": rate, "requests": len(payloads), "achieved_rps": round(len(payloads) / wall, 1),
                    **summary(latencies),
                    "server_cpu_ms_per_request": round((tree_cpu(served.proc.pid) - cpu0) / len(payloads) * 1000, 3),
                    "loadgen_cpu_ms_per_request": round((time.process_time() - own0) / len(payloads) * 1000, 3),
                    "loadavg_before": load0, "loadavg_after": loadavg()}
            print(step, flush=True)
            out.append(step)
    return out


# --- streamed answers ---------------------------------------------------------------------------------------------


async def stream_delays(served: Served, count: int, concurrent: int, word_s: float) -> dict[str, Any]:
    delays: list[float] = []
    statuses: dict[str, int] = {}
    bound = asyncio.Semaphore(concurrent)

    async def one(number: int) -> None:
        header, answer = STREAMS[number % len(STREAMS)]
        words = answer.split(" ")
        chunks = [(" " if i else "") + word for i, word in enumerate(words)]
        completing: dict[int, int] = {}  # sentence index -> the chunk that completed it
        buffer = SentenceBuffer()
        for k, chunk in enumerate(chunks):
            for piece in buffer.feed(chunk):
                completing[piece.index] = k
        for piece in buffer.finish():
            completing[piece.index] = len(chunks)  # completed by the end of the body
        sent_at: dict[int, float] = {}

        async def generate() -> AsyncIterator[str]:
            for k, chunk in enumerate(chunks):
                await asyncio.sleep(word_s)
                sent_at[k] = time.perf_counter()
                yield chunk
            sent_at[len(chunks)] = time.perf_counter()

        async with bound:
            async for line in guard.check_stream({**header, "event_id": f"stream-{number}"}, generate(), timeout=30):
                if isinstance(line, StreamedSentence):
                    delays.append((time.perf_counter() - sent_at[completing[line.index]]) * 1000.0)
                    statuses[line.status] = statuses.get(line.status, 0) + 1
                elif line.outcome != "checked":
                    raise SystemExit(f"stream {number}: {line.reason}")

    load0 = loadavg()
    async with GuardClient(served.url) as guard:
        await asyncio.gather(*(one(n) for n in range(count)))
    return {"streams": count, "concurrent": concurrent, "word_interval_ms": word_s * 1000, "sentences": len(delays),
            "statuses": statuses, **summary(delays), "loadavg_before": load0, "loadavg_after": loadavg()}


def server_delay_histogram(served: Served) -> dict[str, float]:
    """The server's own view (stream_guard_streamed_sentence_delay_seconds): share of sentences within each bound."""
    with urllib.request.urlopen(served.url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    buckets = {float(m.group(1)): float(m.group(2)) for m in re.finditer(
        r'stream_guard_streamed_sentence_delay_seconds_bucket\{le="([^"]+)"\} (\S+)', text)}
    total = buckets.get(float("inf"), 0.0)
    return {f"within_{bound * 1000:g}_ms": round(count / total, 4) for bound, count in sorted(buckets.items())
            if total and bound in (0.002, 0.004, 0.006, 0.01, 0.02)}


# --- check, for the per-event cost -------------------------------------------------------------------------------


def check_cpu(folder: Path, count: int) -> dict[str, Any]:
    """CPU per event of `stream-guard check -j 1` on the same events: a run of `count` less a run of one."""
    many, one = folder / "many.jsonl", folder / "one.jsonl"
    lines = events(count, "check")
    many.write_bytes(b"\n".join(lines) + b"\n")
    one.write_bytes(lines[0] + b"\n")
    full = check(many, folder / "many.out", extra=["-j", "1"])
    single = check(one, folder / "one.out", extra=["-j", "1"])
    return {"events": count, "cpu_ms_per_event": round((full["cpu_s"] - single["cpu_s"]) / (count - 1) * 1000, 3),
            "start_up_cpu_s": round(single["cpu_s"], 2), "loadavg": loadavg()}


# --- Kafka ----------------------------------------------------------------------------------------------------


async def kafka_round_trip(broker: str, folder: Path, rate: float, seconds: float) -> dict[str, Any]:
    settings = load_config(env={}, stream={"broker": broker}).stream
    await ensure_topics(settings)
    log = open(folder / "worker.log", "wb")
    web = _free_port()
    env = {**os.environ, "STREAM_GUARD_SESSION_TIMEOUT_S": "6", "STREAM_GUARD_HEARTBEAT_INTERVAL_S": "1.5"}
    worker = subprocess.Popen([str(CLI), "worker", "--broker", broker, "--data-dir", str(folder / "data"),
                               "--web-port", str(web), "--loglevel", "warning"], stdout=log, stderr=subprocess.STDOUT,
                              env=env)
    try:
        deadline = time.monotonic() + 180
        while not Served.ready(f"http://127.0.0.1:{web}"):  # the worker's /readyz: 200 once it is ready
            if worker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit((folder / "worker.log").read_text()[-3000:])
            await asyncio.sleep(0.3)
        async with KafkaGuardClient(broker, topics=settings.topics) as guard:
            for payload in events(50, "kwarm"):
                await guard.check(payload, timeout=30)
            payloads = events(int(rate * seconds), "kafka")
            latencies: list[float] = []
            outcomes: dict[str, int] = {}

            async def one(payload: bytes, due: float) -> None:
                result = await guard.check(payload, timeout=30)
                latencies.append((time.perf_counter() - due) * 1000.0)
                outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1

            load0 = loadavg()
            start, tasks = time.perf_counter() + 0.05, []
            for i, payload in enumerate(payloads):
                due = start + i / rate
                if (delay := due - time.perf_counter()) > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.ensure_future(one(payload, due)))
            await asyncio.gather(*tasks)
        return {"rate": rate, "events": len(payloads), "outcomes": outcomes, **summary(latencies),
                "loadavg_before": load0, "loadavg_after": loadavg()}
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        log.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=float, nargs="+", default=[50, 100, 150, 200, 250])
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per rate")
    parser.add_argument("--in-flight", type=int, default=64, help="most requests at once")
    parser.add_argument("--processes", type=int, help="judge processes (default: serve's, one per core)")
    parser.add_argument("--streams", type=int, default=40)
    parser.add_argument("--concurrent-streams", type=int, default=4)
    parser.add_argument("--word-ms", type=float, default=30.0, help="interval between a stream's words")
    parser.add_argument("--check-events", type=int, default=1400)
    parser.add_argument("--kafka-rate", type=float, default=50.0)
    parser.add_argument("--kafka-seconds", type=float, default=30.0)
    parser.add_argument("--skip", nargs="*", default=[], choices=["http", "streams", "check", "kafka"])
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": machine(), "cores": len(os.sched_getaffinity(0))}
    with tempfile.TemporaryDirectory(prefix="inline-use-") as tmp:
        folder = Path(tmp)
        if not {"http", "streams"} <= set(args.skip):
            served = Served(folder, args.processes)
            try:
                if "http" not in args.skip:
                    steps = asyncio.run(http_steps(served, args.rates, args.seconds, args.in_flight))
                    within = [s["rate"] for s in steps if s["p99_ms"] < P99_TARGET_MS
                              and s["achieved_rps"] >= 0.98 * s["rate"]]
                    result["http"] = {"steps": steps, "highest_rate_p99_under_25_ms": max(within, default=None)}
                if "streams" not in args.skip:
                    result["streams"] = asyncio.run(stream_delays(served, args.streams, args.concurrent_streams,
                                                                  args.word_ms / 1000.0))
                    result["streams"]["server_side"] = server_delay_histogram(served)
                    print(result["streams"], flush=True)
            finally:
                served.stop()
        if "check" not in args.skip:
            result["check"] = check_cpu(folder, args.check_events)
            print(result["check"], flush=True)
        if "kafka" not in args.skip:
            with EmbeddedBroker() as broker:
                result["kafka"] = asyncio.run(kafka_round_trip(broker.bootstrap, folder, args.kafka_rate,
                                                               args.kafka_seconds))
            print(result["kafka"], flush=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["loadgen_cpu_s"] = round(usage.ru_utime + usage.ru_stime, 2)
    print("wrote", write_result("inline_use", result))


if __name__ == "__main__":
    main()
