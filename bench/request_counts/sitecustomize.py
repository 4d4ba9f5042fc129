"""Bench instrument, loaded only when this directory is on PYTHONPATH and BENCH_REQUEST_COUNTS names a directory
(bench/cpu_profile.py --worker --request-counts): every Kafka request an aiokafka client of this process sends is
counted by its kind, and each fetch's listed partitions (by topic) with it; the counts are written to
BENCH_REQUEST_COUNTS/<pid>.json twice a second, so that the benchmark reads them at the same moments as it reads
CPU. A count of requests does not depend on the machine's load the way CPU seconds do, which is why it is here:
it says whether a setting changed the work (requests per event) before the noisy CPU figures say by how much.
Counting costs CPU itself, so a run that counts is not a run whose CPU figures count."""

from __future__ import annotations

import os

_OUT = os.environ.get("BENCH_REQUEST_COUNTS")


def _install(out: str) -> None:
    import atexit
    import collections
    import json
    import threading

    import aiokafka.conn

    counts: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()  # the consumer thread and the event loop both send
    send = aiokafka.conn.AIOKafkaConnection.send

    def counted(self, request, expect_response=True):  # type: ignore[no-untyped-def]
        kind = type(request).__name__
        with lock:
            counts[kind] += 1
            if kind == "FetchRequest":
                for topic, partitions in request.topics:
                    counts[f"fetch partitions {topic}"] += len(partitions)
        return send(self, request, expect_response)

    aiokafka.conn.AIOKafkaConnection.send = counted
    path = os.path.join(out, f"{os.getpid()}.json")

    def write() -> None:
        with lock:
            text = json.dumps(dict(counts))
        with open(path + ".tmp", "w") as fh:
            fh.write(text)
        os.replace(path + ".tmp", path)

    def every_half_second() -> None:
        while True:
            write()
            threading.Event().wait(0.5)

    threading.Thread(target=every_half_second, daemon=True, name="request-counts").start()
    atexit.register(write)


if _OUT:
    _install(_OUT)
