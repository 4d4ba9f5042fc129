"""Memory soak: the worker's RSS over a long run at a steady rate (issue 17 item 6, "flat memory").

Starts the embedded broker and the shipped `stream-guard worker` (its own process, its judge processes under it),
produces demo-shaped events (stream_guard/samples/demo.jsonl, fresh event ids, --tenants x --questions distinct
tenant/question pairs cycling) at --rate per second for --minutes, reads the verdicts back as they come, and samples
the resident set size of the worker and each judge process every --sample-seconds (from /proc). Reports, per
process, the least-squares RSS slope in MiB per minute over the second half of the run (the first half holds
start-up, model loading and caches filling to their bounds).

Every event is accounted for by its id. After the produce ends, the verdicts are read until all are in, or until
none has come for --idle-seconds of polls (a worker that is behind keeps producing them), or --drain-seconds
have passed. Then the answers, re-keyed, verdicts and dead-letter topics are each read from their beginning
until idle polls (never to the broker's listed end offset alone: the embedded broker under-reports it), and the
run reports the verdicts read before the produce ended and after it (late), the events dead-lettered, the
duplicate records, and the events with neither a verdict nor a dead letter: lost once the drain stopped on idle
polls (with the last topic each was seen on), unknown if verdicts were still arriving when it ran out of time.

--tracemalloc runs the worker (and its judges) under tracemalloc with a bench-only `sitecustomize` (on the
worker's PYTHONPATH, nowhere in the package) that dumps a snapshot every --sample-seconds; at the end the script
prints the allocation sites that grew most between the snapshot at half time and the last one, per process. It
slows the worker and inflates RSS, so its slopes are not the figure; run it short, to find what grows.

--census counts Python's blocks and objects by type in the worker, and records glibc's own figures (mallinfo2:
bytes in use against bytes freed but kept, which tells a leak from fragmentation) and RocksDB's memory properties
summed over the worker's table partitions. --memray AFTER,FOR traces the worker's allocations with native stacks
from minute AFTER for FOR minutes (`pip install memray` in the venv: not a dependency) and prints what that
window allocated and never freed, by site. The census's `gc.get_objects()` runs in a thread of the worker and can
catch a tuple still being built by `tuple(generator)` in another (Python 3.11; CPython gh-107137): the worker then
sees a rare `SystemError: ... tupleobject.c: bad argument to internal function` that is the hook's, not its own.

    .venv/bin/python bench/memory_soak.py [--rate 100] [--minutes 15] [--tenants 500] [--questions 50]
    .venv/bin/python bench/memory_soak.py --rate 100 --minutes 4 --tracemalloc
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import (REPO, STREAM_WORKER_ENV, EmbeddedBroker, Reader, demo_events, die_with_parent,  # noqa: E402
                   ensure_topics, free_port, load_config, machine, partition_key, start_producer, store_run)

MIB = 1024 * 1024
# Loaded by the worker and its spawned judges only when this directory is on their PYTHONPATH (--tracemalloc or
# --census), never by the package: every SOAK_EVERY_S seconds, a tracemalloc snapshot (when tracing) or a census
# (Python's allocated blocks, and the gc-tracked objects counted by type: cheap enough not to slow the worker).
SITECUSTOMIZE = """
import collections, ctypes, gc, json, os, sys, threading, time, tracemalloc

class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

def _malloc():
    # glibc's own figures (all arenas): in use vs free-but-kept tells a leak from fragmentation.
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    m = fn()
    return {"in_use": m.uordblks + m.hblkhd, "free_kept": m.fordblks, "arena": m.arena, "mmapped": m.hblkhd}

_ROCKSDB = ("rocksdb.cur-size-all-mem-tables", "rocksdb.block-cache-usage", "rocksdb.estimate-table-readers-mem",
            "rocksdb.block-cache-pinned-usage")

def _rocksdb(objects):
    # RocksDB's own memory figures, summed over every table partition a Faust store holds open (each partition
    # has its own block cache, so the cache figure sums too).
    # A shared cache reports the same usage through each database: its figures come once, from the budget.
    totals, dbs, shared = dict.fromkeys(_ROCKSDB, 0), 0, {}
    for o in objects:
        if any(c.__module__ == "faust.stores.rocksdb" and c.__name__ == "Store" for c in type(o).__mro__):
            memory = getattr(o.rocksdb_options, "memory", None)
            if memory is not None:
                shared[id(memory)] = memory.usage()
            for db in list(getattr(o, "_dbs", {}).values()):
                dbs += 1
                for name in _ROCKSDB:
                    try:
                        totals[name] += int(db.property_int_value(name) or 0)
                    except Exception:
                        pass
    figures = {"dbs": dbs, **{k.split(".", 1)[1]: v for k, v in totals.items()}}
    for usage in shared.values():
        figures.update({f"shared {k}": figures.get(f"shared {k}", 0) + v for k, v in usage.items()})
        figures.pop("block-cache-usage", None)
        figures.pop("block-cache-pinned-usage", None)
    return figures

def _rss():
    # The kernel's split of the resident set: anonymous (heaps, arenas, RocksDB's memory) against file-backed
    # (mapped libraries and files) and shared memory; growth malloc does not show lands in one of these.
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("RssAnon:", "RssFile:", "RssShmem:")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out

def _census():
    objects = gc.get_objects()
    counts = collections.Counter(type(o).__qualname__ for o in objects)
    return {"t": time.time(), "blocks": sys.getallocatedblocks(), "objects": sum(counts.values()),
            "malloc": _malloc(), "rss": _rss(), "rocksdb": _rocksdb(objects), "threads": threading.active_count(),
            "types": dict(counts.most_common(200))}

def _watch(folder, every):
    n = 0
    while True:
        time.sleep(every)
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(os.path.join(folder, f"{os.getpid()}-{n:04d}.snap"))
        else:
            with open(os.path.join(folder, f"{os.getpid()}.census"), "a") as fh:
                fh.write(json.dumps(_census()) + "\\n")
        n += 1

def _memray(path, after, duration):
    # The worker's allocations made in [after, after + duration] s and not freed by its end, with native stacks.
    import memray
    time.sleep(after)
    with memray.Tracker(path, native_traces=True):
        time.sleep(duration)

def _is_worker():
    with open("/proc/self/cmdline", "rb") as fh:
        cmd = fh.read()
    return b"worker" in cmd and b"multiprocessing" not in cmd

if os.environ.get("SOAK_SNAPSHOT_DIR"):
    threading.Thread(target=_watch, args=(os.environ["SOAK_SNAPSHOT_DIR"], float(os.environ["SOAK_EVERY_S"])),
                     daemon=True, name="soak-watch").start()
if os.environ.get("SOAK_MEMRAY") and _is_worker():
    path, after, duration = os.environ["SOAK_MEMRAY"].split(",")
    threading.Thread(target=_memray, args=(path, float(after), float(duration)), daemon=True,
                     name="soak-memray").start()
"""


# --- events -----------------------------------------------------------------------------------------------------


def event(rows: list[dict[str, Any]], i: int, tenants: int, questions: int, run: str) -> dict[str, Any]:
    """The i-th event: a demo row under one of `tenants` tenants and `questions` question variants per tenant,
    cycling, so per-tenant and per-question structures see every pair many times over a run."""
    row = rows[i % len(rows)]
    tenant, variant = i % tenants, (i // tenants) % questions
    return {**row, "event_id": f"{run}-{i}", "tenant": f"tenant-{tenant:04d}",
            "question": f"{row['question']} (case {variant})", "produced_at": int(time.time() * 1000)}


# --- processes ---------------------------------------------------------------------------------------------------


def rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for task in tasks:
        try:
            out += [int(p) for p in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return out


def process_name(pid: int, worker: int) -> str:
    if pid == worker:
        return "worker"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"child {pid}"
    if "resource_tracker" in cmd:
        return f"resource tracker {pid}"
    return f"judge {pid}" if "multiprocessing" in cmd else f"child {pid}"


def slope_mib_per_min(samples: list[tuple[float, int]]) -> float | None:
    """Least-squares slope of RSS against time, in MiB per minute."""
    if len(samples) < 3:
        return None
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    if not var:
        return None
    cov = sum((t - mt) * (r - mr) for t, r in samples)
    return round(cov / var * 60 / MIB, 3)


def start_worker(broker: str, tmp: Path, env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    command = shutil.which("stream-guard", path=str(Path(sys.executable).parent)) or "stream-guard"
    log = open(tmp / "worker.log", "wb")
    return subprocess.Popen(
        [command, "worker", "--broker", broker, "--data-dir", str(tmp / "data"), "--web-port", str(port),
         "--ner", "spacy", "--loglevel", "warning", "--name", "soak"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)


def wait_ready(proc: subprocess.Popen[bytes], port: int, tmp: Path, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"worker exited {proc.returncode}; log in {tmp / 'worker.log'}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"worker not ready after {timeout:.0f} s; log in {tmp / 'worker.log'}")


# --- the run -----------------------------------------------------------------------------------------------------


def event_id_of(value: bytes | None) -> str | None:
    """The event id a record of the answers, re-keyed, verdicts or dead-letter topic carries (each holds the event
    or its verdict as JSON with an `event_id`); None for anything else."""
    try:
        found = orjson.loads(value or b"").get("event_id")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return found if isinstance(found, str) else None


async def ids_on(broker: str, topic: str, idle_polls: int = 3) -> collections.Counter[str]:
    """Every event id on a topic, read from its beginning, with how many records carry each. The end is where
    `idle_polls` polls of a second in a row bring nothing (the worker is idle by then): never the broker's
    listed end offset, which the embedded broker under-reports after multi-record batches."""
    reader = await Reader(broker, [topic], from_beginning=True).start()
    found: collections.Counter[str] = collections.Counter()
    idle = 0
    try:
        while idle < idle_polls:
            records = await reader.poll(1.0)
            idle = 0 if records else idle + 1
            found.update(i for i in map(event_id_of, (r.value for r in records)) if i is not None)
    finally:
        await reader.stop()
    return found


async def account(settings: Any, wanted: set[str], read_live: dict[str, float], produce_s: float,
                  drain: dict[str, Any]) -> dict[str, Any]:
    """Where every event sent went, by event id, read back from each topic it passes through: on the answers topic
    (the broker took it), re-keyed by question (only events sent to another partition than their question's
    state's: the soak keys each event by its question, so normally none), a verdict, a dead letter. An event
    with neither a verdict nor a dead letter once the drain stopped on idle polls is lost, and the stage where it
    was last seen says where; while verdicts were still arriving when the drain ran out of time, it is unknown."""
    topics = {"answers": settings.topics.answers, "rekeyed": settings.by_question_topic,
              "verdicts": settings.topics.verdicts, "dead_letters": settings.topics.dlq}
    on = {name: await ids_on(settings.broker, topic) for name, topic in topics.items()}
    settled = drain["ended_because"] != "drain limit reached while verdicts still arrived"
    missing = wanted - set(on["verdicts"]) - set(on["dead_letters"])
    late = [t for i, t in read_live.items() if t > produce_s]
    return {
        "sent": len(wanted),
        "on_answers_topic": len(wanted & set(on["answers"])),
        "rekeyed": len(wanted & set(on["rekeyed"])),
        "verdicts_on_topic": len(wanted & set(on["verdicts"])),
        "dead_lettered": len(wanted & set(on["dead_letters"])),
        "read_live": len(read_live),
        "read_live_before_produce_end": len(read_live) - len(late),
        "read_live_late": len(late),
        "last_verdict_after_produce_end_s": round(max(late) - produce_s, 1) if late else None,
        "lost" if settled else "unknown": len(missing),
        "missing_by_last_stage": dict(collections.Counter(
            "re-keyed, no verdict" if i in on["rekeyed"] else "on the answers topic, no verdict" if i in on["answers"]
            else "not on the answers topic" for i in missing)),
        "missing_examples": sorted(missing)[:5],
        "duplicate_verdict_records": sum(n - 1 for i, n in on["verdicts"].items() if i in wanted and n > 1),
        "duplicate_answers_records": sum(n - 1 for i, n in on["answers"].items() if i in wanted and n > 1),
        "drain": drain,
    }


async def soak(settings: Any, worker: int, args: argparse.Namespace, run: str) -> dict[str, Any]:
    rows = demo_events()
    total = int(args.rate * args.minutes * 60)
    reader = await Reader(settings.broker, [settings.topics.verdicts]).start()
    producer = await start_producer(settings.broker)
    wanted = {f"{run}-{i}" for i in range(total)}
    read_live: dict[str, float] = {}  # event id -> seconds from the start to its verdict's first reading
    duplicates = 0
    samples: dict[str, list[tuple[float, int]]] = {}
    started = time.perf_counter()

    async def send() -> float:
        pending = []
        for i in range(total):
            delay = started + i / args.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            line = orjson.dumps(event(rows, i, args.tenants, args.questions, run))
            pending.append(await producer.send(settings.topics.answers, line, key=partition_key(line)))
            if len(pending) >= 200:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
        return time.perf_counter() - started  # every event acknowledged by the broker

    async def sample() -> None:
        while True:
            now = time.perf_counter() - started
            for pid in [worker, *children(worker)]:
                rss = rss_bytes(pid)
                if rss is not None:
                    samples.setdefault(process_name(pid, worker), []).append((now, rss))
            print(f"  {now / 60:5.1f} min  sent≈{min(total, int(now * args.rate))}  verdicts {len(read_live)}  "
                  + "  ".join(f"{k} {v[-1][1] / MIB:.1f}" for k, v in samples.items()), flush=True)
            await asyncio.sleep(args.sample_seconds)

    sending = asyncio.create_task(send())
    sampling = asyncio.create_task(sample())
    # Read until every verdict is in, or, once the produce has ended, until the count has not risen for
    # --idle-seconds of polls (then what is missing is lost, not late), or --drain-seconds have passed since the
    # produce ended (then what is missing is unknown).
    last_rise = 0.0
    drain: dict[str, Any] = {}
    while True:
        for record in await reader.poll(0.5):
            event_id = event_id_of(record.value)
            if event_id not in wanted:
                continue
            if event_id in read_live:
                duplicates += 1
            else:
                read_live[event_id] = last_rise = time.perf_counter() - started
        if not sending.done():
            continue
        now, produce_s = time.perf_counter() - started, sending.result()
        if len(read_live) == total:
            drain["ended_because"] = "every verdict read"
        elif now - max(last_rise, produce_s) >= args.idle_seconds:
            drain["ended_because"] = f"no new verdict for {args.idle_seconds:g} s of polls"
        elif now - produce_s >= args.drain_seconds:
            drain["ended_because"] = "drain limit reached while verdicts still arrived"
        else:
            continue
        drain.update(produce_s=round(produce_s, 1), drain_s=round(now - produce_s, 1))
        break
    sampling.cancel()
    await producer.stop()
    await reader.stop()
    accounting = await account(settings, wanted, read_live, produce_s, drain)
    accounting["duplicate_verdicts_read_live"] = duplicates
    half = args.minutes * 30
    per_process = {}
    for name, series in samples.items():
        second = [(t, r) for t, r in series if half <= t <= args.minutes * 60]
        per_process[name] = {
            "rss_start_mib": round(series[0][1] / MIB, 1), "rss_half_mib": round(second[0][1] / MIB, 1) if second
            else None, "rss_end_mib": round(series[-1][1] / MIB, 1),
            "slope_second_half_mib_per_min": slope_mib_per_min(second), "samples": len(series)}
    return {"events": total, "verdicts": accounting["verdicts_on_topic"],
            "lost": accounting.get("lost", 0), "unknown": accounting.get("unknown", 0),
            "duplicates": accounting["duplicate_verdict_records"], "accounting": accounting,
            "processes": per_process,
            "rss_series_mib": {k: [(round(t, 1), round(r / MIB, 2)) for t, r in v] for k, v in samples.items()}}


def tracemalloc_report(folder: Path, top: int = 15) -> dict[str, list[str]]:
    """Per process: the allocation sites that grew most between the snapshot at half time and the last."""
    import tracemalloc

    by_pid: dict[str, list[Path]] = {}
    for snap in sorted(folder.glob("*.snap")):
        by_pid.setdefault(snap.name.split("-")[0], []).append(snap)
    report = {}
    for pid, snaps in by_pid.items():
        if len(snaps) < 2:
            continue
        first = tracemalloc.Snapshot.load(str(snaps[len(snaps) // 2]))
        last = tracemalloc.Snapshot.load(str(snaps[-1]))
        keep = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib*")]
        stats = last.filter_traces(keep).compare_to(first.filter_traces(keep), "traceback")
        lines = []
        for stat in stats[:top]:
            frames = [f"{f.filename.replace(str(REPO) + '/', '')}:{f.lineno}" for f in stat.traceback[-6:]]
            lines.append(f"{stat.size_diff / 1024:+.0f} KiB ({stat.count_diff:+d} blocks) " + " <- ".join(
                reversed(frames)))
        report[pid] = lines
    return report


def memray_report(path: Path, top: int = 20) -> list[str]:
    """What the traced window allocated and never freed, by allocation site (native and Python frames)."""
    from memray import FileReader

    if not path.exists():
        return [f"no trace at {path}"]
    reader = FileReader(str(path))
    sites: dict[str, list[int]] = {}
    for record in reader.get_leaked_allocation_records(merge_threads=True):
        try:
            stack = record.hybrid_stack_trace(max_stacks=12)
        except NotImplementedError:
            stack = record.stack_trace(max_stacks=12)
        key = " <- ".join(f"{fn} ({Path(file).name}:{line})" for fn, file, line in stack)
        site = sites.setdefault(key, [0, 0])
        site[0] += record.size
        site[1] += record.n_allocations
    ranked = sorted(sites.items(), key=lambda item: -item[1][0])
    total = sum(size for size, _ in sites.values())
    return [f"total {total / MIB:.1f} MiB at {len(sites)} sites"] + [
        f"{size / MIB:.2f} MiB ({count} blocks) {key}" for key, (size, count) in ranked[:top]]


def census_report(folder: Path, half_at: float) -> dict[str, dict[str, Any]]:
    """Per process: Python's allocated blocks and gc-tracked objects at half time and at the end, and the object
    types that grew most in between; growth of RSS that Python's blocks do not show is native (RocksDB, the
    allocator, extension buffers)."""
    report = {}
    for path in sorted(folder.glob("*.census")):
        rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
        if len(rows) < 2:
            continue
        first = next((r for r in rows if r["t"] >= half_at), rows[len(rows) // 2])
        last = rows[-1]
        grown = sorted(((last["types"].get(k, 0) - first["types"].get(k, 0), k) for k in last["types"]), reverse=True)
        minutes = (last["t"] - first["t"]) / 60 or 1
        blocks, objects = last["blocks"] - first["blocks"], last["objects"] - first["objects"]
        report[path.stem] = {
            "summary": f"blocks {first['blocks']} -> {last['blocks']} ({blocks / minutes:+.0f}/min), gc objects "
                       f"{first['objects']} -> {last['objects']} ({objects / minutes:+.0f}/min) over {minutes:.1f} min",
            "types_grown": [f"{k}: {first['types'].get(k, 0)} -> {last['types'][k]}" for d, k in grown[:12] if d > 0],
            "malloc_mib": [{"min": round((r["t"] - rows[0]["t"]) / 60, 1),
                            **{k: round(v / MIB, 1) for k, v in r["malloc"].items()}, "threads": r.get("threads"),
                            **{k: round(v / MIB, 1) for k, v in (r.get("rss") or {}).items()},
                            **{f"rocksdb {k}": (v if k == "dbs" else round(v / MIB, 1))
                               for k, v in (r.get("rocksdb") or {}).items()}}
                           for r in rows if r.get("malloc")]}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=100.0, help="events per second (default 100)")
    parser.add_argument("--minutes", type=float, default=15.0, help="how long to produce (default 15)")
    parser.add_argument("--tenants", type=int, default=500)
    parser.add_argument("--questions", type=int, default=50, help="question variants per tenant")
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--drain-seconds", type=float, default=1800.0,
                        help="after the produce, read verdicts at most this long (default 1800)")
    parser.add_argument("--idle-seconds", type=float, default=120.0,
                        help="after the produce, stop once no new verdict came for this long (default 120): what is "
                             "missing then is lost")
    parser.add_argument("--tracemalloc", action="store_true", help="find what grows (slows the worker)")
    parser.add_argument("--census", action="store_true",
                        help="count Python's blocks and objects by type in the worker every 6 samples (cheap)")
    parser.add_argument("--memray", metavar="AFTER,FOR",
                        help="trace the worker's allocations (native stacks, memray from PyPI, not a dependency) from "
                             "minute AFTER for FOR minutes; report what was allocated then and never freed")
    parser.add_argument("--label", help="store the run under this label in bench/results/memory_soak.json")
    args = parser.parse_args()

    scratch = REPO / "stream-guard-data"  # git-ignored; /tmp is shared and may be swept under us
    scratch.mkdir(exist_ok=True)
    run = f"soak{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory(prefix="soak-", dir=scratch) as tmp_name, EmbeddedBroker() as embedded:
        tmp = Path(tmp_name)
        env = {**os.environ, **STREAM_WORKER_ENV, "STREAM_GUARD_APP_ID": f"{run}-guard",
               **{f"STREAM_GUARD_TOPIC_{t.upper()}": f"{run}.{t}"
                  for t in ("answers", "verdicts", "alerts", "dlq", "metrics")}}
        if args.memray:
            after, duration = (float(x) * 60 for x in args.memray.split(","))
            memray_file = scratch / f"{run}.memray"
            env["SOAK_MEMRAY"] = f"{memray_file},{after},{duration}"
        if args.tracemalloc or args.census or args.memray:
            hook, snaps = tmp / "hook", tmp / "snapshots"
            hook.mkdir()
            snaps.mkdir()
            (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
            env.update(SOAK_SNAPSHOT_DIR=str(snaps), SOAK_EVERY_S=str(args.sample_seconds * 6),
                       PYTHONPATH=os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")])))
            if args.tracemalloc:
                env["PYTHONTRACEMALLOC"] = "8"
        settings = load_config(env=env, stream={"broker": embedded.bootstrap}).stream
        asyncio.run(ensure_topics(settings))
        port = free_port()
        load_before = os.getloadavg()
        proc = start_worker(embedded.bootstrap, tmp, env, port)
        try:
            wait_ready(proc, port, tmp)
            soak_started = time.time()
            result = asyncio.run(soak(settings, proc.pid, args, run))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        load_after = os.getloadavg()
        traced = tracemalloc_report(tmp / "snapshots") if args.tracemalloc else None
        census = census_report(tmp / "snapshots", soak_started + args.minutes * 30) if args.census else None

    command = "bench/memory_soak.py " + " ".join(sys.argv[1:])
    out = {"machine": machine(), "command": command, "rate": args.rate, "minutes": args.minutes,
           "tenants": args.tenants, "questions": args.questions, "tracemalloc": args.tracemalloc,
           "environment": {k: v for k, v in os.environ.items() if k.startswith(("STREAM_GUARD_", "MALLOC_"))},
           "load_average_before": load_before, "load_average_after": load_after, **result}
    a = result["accounting"]
    print(f"\n{command}: {result['verdicts']} of {result['events']} verdicts, {result['lost']} lost, "
          f"{result['unknown']} unknown, {result['duplicates']} duplicate verdict records; load average "
          f"{load_before[0]:.1f} -> {load_after[0]:.1f}")
    print(f"  sent {a['sent']}: on the answers topic {a['on_answers_topic']}, re-keyed {a['rekeyed']}, verdicts "
          f"{a['verdicts_on_topic']}, dead-lettered {a['dead_lettered']}; read live {a['read_live']} "
          f"({a['read_live_late']} after the produce ended, the last {a['last_verdict_after_produce_end_s']} s after)"
          f"; drain: {a['drain']}; missing by last stage: {a['missing_by_last_stage']}")
    for name, figures in result["processes"].items():
        print(f"  {name}: RSS {figures['rss_start_mib']} -> {figures['rss_half_mib']} -> {figures['rss_end_mib']} "
              f"MiB; second-half slope {figures['slope_second_half_mib_per_min']} MiB/min")
    if traced:
        out["tracemalloc_growth"] = traced
        for pid, lines in traced.items():
            print(f"\ngrowth in process {pid} (half time -> end):")
            for line in lines:
                print("  " + line)
    if args.memray:
        out["memray_unfreed"] = memray_report(memray_file)
        print(f"\nallocated by the worker while traced and never freed ({memray_file}):")
        for line in out["memray_unfreed"]:
            print("  " + line)
    if census:
        out["census"] = census
        for pid, figures in census.items():
            print(f"\ncensus of process {pid} (half time -> end): {figures['summary']}")
            for line in figures["types_grown"]:
                print("  " + line)
            for row in figures["malloc_mib"]:
                print("  malloc (MiB) " + "  ".join(f"{k} {v}" for k, v in row.items()))
    if args.label:
        print(f"\nwrote {store_run('memory_soak', args.label, out)}")
    return 0 if result["lost"] == 0 and result["unknown"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
