"""The streaming commands of `stream-guard`: worker, up, produce, tail, replay-dlq, alerts. `stream_guard.cli`
dispatches here.

    stream-guard worker     [--broker HOST:PORT | --embedded] [--data-dir DIR] [--web-port N|--without-web]
                            [--config FILE.toml] [--ner spacy|regex] [--log-format text|json]
    stream-guard up         [--once] [--broker HOST:PORT] [--events FILE.jsonl] [--interval S] ...
    stream-guard produce    PATH [--topic T] [--broker HOST:PORT]
    stream-guard tail       verdicts|alerts|dlq|metrics|review|labels [--broker HOST:PORT] [--from-beginning]
                            [--max N] [--to-end]
    stream-guard replay-dlq [--broker HOST:PORT] [--stage S] [--field F] [--from ...] [--to ...] [--dry-run]
                            (agents/dlq.py)
    stream-guard alerts     --webhook URL [--format alertmanager|slack|json] [--broker HOST:PORT]
                            (agents/alert_forwarder.py)

A broker comes from --broker, else STREAM_GUARD_BROKER. Without one, `worker` refuses to start (a worker
that quietly ran on a private in-memory broker would look healthy while consuming nothing) unless asked
for that broker with --embedded; `up` starts the embedded broker itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from importlib import resources
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence

import orjson
from aiokafka.errors import KafkaError

from stream_guard.agents.clients import OpenEnd, Reader, partition_key, reach_broker, start_producer
from stream_guard.agents.security import client_options
from stream_guard.agents.embedded_broker import EmbeddedBroker, die_with_parent, free_port
from stream_guard.agents.topics import ensure_topics
from stream_guard.config.load import Config, command_flags, load
from stream_guard.errors import BrokerError, ConfigurationError, InputError, StreamGuardError, report
from stream_guard.wire.deadletter import view as dead_letter_view
from stream_guard.ops.display import line_for
from stream_guard.wire.events import EventError, split_events
from stream_guard.wire.labels import decode_label
from stream_guard.logs import use_json_logs
from stream_guard.config.stream import StreamSettings

STREAMS = ("verdicts", "alerts", "dlq", "metrics", "review", "labels")
log = logging.getLogger("stream_guard.agents.cli")


def _say(*parts: object) -> None:
    print(*parts, flush=True)


def _err(message: str) -> None:
    print(f"stream-guard: {message}", file=sys.stderr, flush=True)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return text if text.startswith(type(exc).__name__) else f"{type(exc).__name__}: {text}"


def _config(args: argparse.Namespace) -> Config:
    """The configuration the command's flags ask for: the file, the environment, then the flags
    (stream_guard.config.load); a bad value raises ConfigError, reported by `run` (exit 2)."""
    flags = {"broker": getattr(args, "broker", None), "data_dir": getattr(args, "data_dir", None),
             "app_id": getattr(args, "app_id", None)}
    if getattr(args, "web_port", None) is not None:
        flags["web_port"] = args.web_port
    if getattr(args, "without_web", False):
        flags["web_enabled"] = False
    if getattr(args, "log_format", None):
        flags["log_format"] = args.log_format
    return load(getattr(args, "config", None), os.environ, preset=getattr(args, "preset", None),
                detector=command_flags(getattr(args, "ner", None)), stream=flags)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", help="HOST:PORT[,HOST:PORT] (default: $STREAM_GUARD_BROKER)")
    parser.add_argument("--wait", action="store_true",
                        help="keep trying to reach the broker (default: exit 1 after connect_timeout_s, 5 s)")


def _reach(settings: StreamSettings, broker: str, args: argparse.Namespace) -> None:
    """Fail in seconds, naming the address, when the broker cannot be reached (--wait: keep trying)."""
    asyncio.run(reach_broker(broker, settings.connect_timeout_s, wait=getattr(args, "wait", False),
                             options=client_options(settings)))


def _worker_flags(parser: argparse.ArgumentParser) -> None:
    _common(parser)
    parser.add_argument("--data-dir", help="where RocksDB state lives (default: stream-guard-data)")
    web = parser.add_mutually_exclusive_group()
    web.add_argument("--web-port", type=int, help="port for /metrics, /healthz, /readyz (default 6066)")
    web.add_argument("--without-web", action="store_true", help="no web server")
    parser.add_argument("--config", help="TOML file with [detector] and [stream] tables")
    parser.add_argument("--ner", choices=("spacy", "regex", "auto"), help="entity recognizer")
    parser.add_argument("--preset", help="threshold preset (general, strict, noisy)")
    parser.add_argument("--app-id", help="consumer group and state prefix (default stream-guard)")
    parser.add_argument("--loglevel", default="info", choices=("debug", "info", "warning", "error"),
                        help="least severe log level written (default info)")
    parser.add_argument("--log-format", choices=("text", "json"),
                        help="json: every log line (ours, Faust's, aiokafka's) one JSON object (default: "
                             "$STREAM_GUARD_LOG_FORMAT, else text)")
    parser.add_argument("--name", help="worker name in metrics and dead letters (default host-pid)")
    parser.add_argument("--embedded", action="store_true",
                        help="development only: start a private in-memory broker instead of connecting to one")


# --- worker -------------------------------------------------------------------------------------------------


def cmd_worker(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="stream-guard worker", description="Run one streaming worker.")
    _worker_flags(parser)
    args = parser.parse_args(argv)
    loaded = _config(args)
    settings, config, monitoring = loaded.stream, loaded.detector, loaded.monitor
    if settings.broker and args.embedded:
        raise ConfigurationError(f"--embedded starts a private broker, but a broker is configured ({settings.broker}): "
                                 "choose one")
    if not settings.broker and not args.embedded:
        raise ConfigurationError("no broker configured: pass --broker HOST:PORT or set STREAM_GUARD_BROKER "
             "(for a private in-memory broker, for development only, pass --embedded; `stream-guard up` runs one)")
        return 2
    json_logs = settings.log_format == "json"
    if json_logs:
        use_json_logs(logging.getLevelName(args.loglevel.upper()))
    from stream_guard.agents.worker import run_worker  # imports Faust: only when a worker is wanted

    run = {"loglevel": args.loglevel, "worker": args.name, "monitoring": monitoring}
    if not args.embedded:
        _reach(settings, settings.broker or "", args)
        return run_worker(settings, config, **run)
    # The embedded broker, in memory, so the state directory must start empty too (RocksDB state and its
    # remembered changelog offsets would not match a broker that just started with nothing: Faust would stop
    # with ConsistencyError on every start).
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="stream-guard-")
    stale = Path(data_dir) / "v1" / "tables"
    say = log.warning if json_logs else _say
    if args.data_dir and stale.exists():
        say(f"clearing {stale}: table state of an earlier run, whose embedded broker (in memory) is gone")
        shutil.rmtree(stale)
    if "STREAM_GUARD_SESSION_TIMEOUT_S" not in os.environ:  # alone on a private broker: join fast
        settings = settings.with_overrides(session_timeout_s=6.0, heartbeat_interval_s=1.5)
    with EmbeddedBroker() as broker:
        say(f"embedded broker at {broker.bootstrap} (memory only, for development: gone when this worker stops)")
        say(f"state in {data_dir}")
        try:
            return run_worker(settings.with_overrides(broker=broker.bootstrap, data_dir=data_dir), config, **run)
        finally:
            if not args.data_dir:
                shutil.rmtree(data_dir, ignore_errors=True)


# --- produce ------------------------------------------------------------------------------------------------


def _require_broker(args: argparse.Namespace) -> str:
    broker: str | None = args.broker or os.environ.get("STREAM_GUARD_BROKER")
    if not broker:
        raise ConfigurationError("no broker: pass --broker HOST:PORT or set STREAM_GUARD_BROKER")
    return broker


async def produce_lines(broker: str, topic: str, lines: Sequence[bytes], *, progress: bool = True,
                        interval: float = 0.0, options: Mapping[str, Any] | None = None) -> int:
    """Send each line as-is (invalid ones too: the worker dead-letters them); returns how many were acked."""
    from tqdm import tqdm

    producer = await start_producer(broker, options=options)
    sent = 0
    try:
        with tqdm(total=len(lines), unit="ev", disable=not progress, file=sys.stderr) as bar:
            pending: list[asyncio.Future[Any]] = []
            for line in lines:
                pending.append(await producer.send(topic, line, key=partition_key(line)))
                if interval:
                    await asyncio.sleep(interval)
                if len(pending) >= 500:
                    await asyncio.gather(*pending)
                    bar.update(len(pending))
                    sent += len(pending)
                    pending.clear()
            await asyncio.gather(*pending)
            bar.update(len(pending))
            sent += len(pending)
    finally:
        await producer.stop()
    return sent


def read_events(path: str) -> tuple[str, list[bytes]]:
    """The payloads of a file of events (JSONL, a JSON array or one JSON object) and what it was read as."""
    source = sys.stdin.buffer if path == "-" else open(path, "rb")
    with source:
        return split_events(source.read())


def cmd_produce(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="stream-guard produce",
                                     description="Publish AnswerEvents: JSONL, a JSON array or one JSON object.")
    parser.add_argument("path", help="file of events (JSONL, or a JSON array, pretty-printed or not), or - for stdin")
    parser.add_argument("--topic", help="default: the answers topic (rag.answers)")
    parser.add_argument("--interval", type=float, default=0.0, help="seconds between events (default none)")
    _common(parser)
    args = parser.parse_args(argv)
    broker = _require_broker(args)
    settings = _config(args).stream
    topic = args.topic or settings.topics.answers
    try:
        kind, lines = read_events(args.path)
    except OSError as exc:
        raise InputError(f"cannot read {args.path}: {exc}") from None
    _say(f"read {len(lines)} events from {args.path} ({kind})")
    _reach(settings, broker, args)
    try:
        sent = asyncio.run(produce_lines(broker, topic, lines, interval=args.interval,
                                         options=client_options(settings)))
    except (KafkaError, OSError) as exc:
        raise BrokerError(f"cannot publish to {topic} at {broker}: {_describe(exc)}") from None
    _say(f"sent {sent} events to {topic}")
    return 0


# --- tail ---------------------------------------------------------------------------------------------------


async def _until_end(reader: Reader) -> AsyncIterator[Any]:
    """The records the topic had when we started, then stop: the listed end offsets, confirmed by what the reads
    see (clients.OpenEnd; a broker may list a short end)."""
    assert reader.consumer is not None
    consumer = reader.consumer
    started_ms = int(time.time() * 1000)
    ends = {tp: OpenEnd(end, started_ms) for tp, end in (await consumer.end_offsets(list(consumer.assignment()))).items()}
    active = set(ends)
    while active:
        batches = await consumer.getmany(*active, timeout_ms=500)
        for tp in sorted(active):
            keep, ended = ends[tp].take(batches.get(tp, []), await consumer.position(tp))
            for record in keep:
                yield record
            if ended:
                active.discard(tp)
                consumer.pause(tp)


def record_view(kind: str, record: Any) -> Any:
    """What `tail` and `up` show of a record: its JSON value; for a dead letter, its error headers with the
    original key, value and headers (stream_guard.wire.deadletter.view)."""
    if kind == "dlq":
        return dead_letter_view(record.key, record.value, [(n, v or b"") for n, v in record.headers or ()])
    return orjson.loads(record.value)


async def _tail(broker: str, topic: str, kind: str, from_beginning: bool, limit: int | None, pretty: bool,
                options: Mapping[str, Any] | None = None, to_end: bool = False) -> int:
    reader = await Reader(broker, [topic], from_beginning=from_beginning, options=options).start()
    count = 0
    try:
        async for record in (_until_end(reader) if to_end else reader.records()):
            if kind == "labels" and not pretty:
                try:  # a dump for `backtest --labels`: only grades that pass validation (the rest were dead-lettered)
                    decode_label(record.value or b"")
                except EventError:
                    continue
            try:
                value = record_view(kind, record)
                text = line_for(kind, value) if pretty else orjson.dumps(value).decode()
            except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError):
                text = (record.value or b"").decode("utf-8", "replace")
            _say(text)
            count += 1
            if limit is not None and count >= limit:
                break
    finally:
        await reader.stop()
    return count


def cmd_tail(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="stream-guard tail", description="Print a guard topic as it arrives.")
    parser.add_argument("stream", choices=STREAMS, help="which guard topic to print")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the topic's first record (default: only what arrives from now on)")
    parser.add_argument("--max", type=int, help="stop after N records")
    parser.add_argument("--to-end", action="store_true", help="stop at the end the topic had when tail started")
    parser.add_argument("--format", choices=("json", "pretty"), default="json",
                        help="json: one record per line (default); pretty: one readable line each")
    _common(parser)
    args = parser.parse_args(argv)
    broker = _require_broker(args)
    settings = _config(args).stream
    topic = getattr(settings.topics, args.stream)
    _reach(settings, broker, args)
    try:
        asyncio.run(_tail(broker, topic, args.stream, args.from_beginning, args.max, args.format == "pretty",
                          client_options(settings), args.to_end))
    except KeyboardInterrupt:
        pass
    except (KafkaError, TimeoutError, OSError) as exc:
        raise BrokerError(f"cannot read {topic} from {broker}: {_describe(exc)}") from None
    return 0


# --- up -----------------------------------------------------------------------------------------------------


def demo_events_path() -> Path:
    return Path(str((resources.files("stream_guard") / "samples" / "demo.jsonl")))


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return bool(orjson.loads(response.read()).get("ready"))
    except (OSError, ValueError):
        return False


def _worker_command(args: argparse.Namespace, broker: str, data_dir: str, web_port: int) -> list[str]:
    cmd = [sys.executable, "-m", "stream_guard.agents", "worker", "--broker", broker, "--data-dir", data_dir,
           "--web-port", str(web_port), "--loglevel", "warning", "--name", "up-worker"]
    for flag in ("config", "ner", "preset", "app_id"):
        value = getattr(args, flag, None)
        if value:
            cmd += [f"--{flag.replace('_', '-')}", value]
    return cmd


def _fast_join_env() -> dict[str, str]:
    """A lone demo worker: a short session timeout, because joining a group waits for part of it (half, on
    the embedded broker) and nobody else is in the group to wait for. Explicit settings still win."""
    env = dict(os.environ)
    env.setdefault("STREAM_GUARD_SESSION_TIMEOUT_S", "6")
    env.setdefault("STREAM_GUARD_HEARTBEAT_INTERVAL_S", "1.5")
    return env


def _stop_process(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # the worker leaves its group and flushes state
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


async def _show(settings: StreamSettings, lines: list[bytes], args: argparse.Namespace,
                proc: subprocess.Popen[bytes]) -> int:
    """Replay the events and print what comes back; with --once, return when every event is accounted for
    (a verdict or a dead letter) and trailing alerts had a moment to arrive."""
    topics = settings.topics
    await ensure_topics(settings)
    names = {topics.verdicts: "verdicts", topics.alerts: "alerts", topics.dlq: "dlq"}
    reader = await Reader(settings.broker or "", list(names), options=client_options(settings)).start()
    counts = {"verdicts": 0, "alerts": 0, "dlq": 0}
    loop = asyncio.get_running_loop()
    producing = asyncio.create_task(
        produce_lines(settings.broker or "", topics.answers, lines, progress=False, interval=args.interval,
                      options=client_options(settings)))
    _say(f"replaying {len(lines)} events\n")
    done_at: float | None = None
    give_up_at: float | None = None
    try:
        while proc.poll() is None:
            if producing.done() and give_up_at is None:
                producing.result()
                give_up_at = loop.time() + args.drain_timeout
            if done_at is None and counts["verdicts"] + counts["dlq"] >= len(lines):
                done_at = loop.time()
                if not args.once:
                    _say(f"\ndemo done: {counts['verdicts']} verdicts, {counts['alerts']} alerts, "
                         f"{counts['dlq']} dead letters. Still running: `stream-guard produce FILE --broker "
                         f"{settings.broker}` from another shell sends more. Ctrl-C to stop.\n")
            if args.once and done_at is not None and loop.time() - done_at > 1.0:
                break
            if args.once and give_up_at is not None and done_at is None and loop.time() > give_up_at:
                _err("timed out waiting for every event's verdict")
                break
            for record in await reader.poll(0.25):
                kind = names.get(record.topic, "verdicts")
                counts[kind] += 1
                with contextlib.suppress(orjson.JSONDecodeError, ValueError, TypeError, AttributeError):
                    _say(line_for(kind, record_view(kind, record)))
        else:
            _err(f"the worker exited with code {proc.returncode}; see its log")
            return 1
    finally:
        producing.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await producing
        await reader.stop()
    _say(f"\n{counts['verdicts']} verdicts, {counts['alerts']} alerts, {counts['dlq']} dead letters")
    return 0 if done_at is not None else 1


def cmd_up(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="stream-guard up",
        description="Embedded broker + a worker + a demo producer, printing every verdict and alert.")
    parser.add_argument("--once", action="store_true", help="exit after the demo instead of running on")
    parser.add_argument("--events", help="JSONL to replay (default: the bundled demo events)")
    parser.add_argument("--interval", type=float, default=0.3, help="seconds between demo events")
    parser.add_argument("--drain-timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help="worker state (default: a temporary directory)")
    parser.add_argument("--web-port", type=int, help="worker web port (default: a free one)")
    parser.add_argument("--config", help="TOML file with [detector] and [stream] tables")
    parser.add_argument("--ner", choices=("spacy", "regex", "auto"), help="entity recognizer (default auto)")
    parser.add_argument("--preset", help="threshold preset (general, strict, noisy)")
    parser.add_argument("--app-id", help="consumer group and state prefix (default stream-guard)")
    _common(parser)
    args = parser.parse_args(argv)
    try:
        _, lines = read_events(args.events or str(demo_events_path()))
    except OSError as exc:
        raise ConfigurationError(str(exc)) from None
    loaded = _config(args)  # a bad value is refused here, with the key, not by the worker it would start
    settings = loaded.stream
    # The dashboard needs a token to sign in with: without one configured, make one for this run only.
    token = None
    env = _fast_join_env()
    if loaded.monitor.enabled and not loaded.monitor.operator_token_hashes:
        from stream_guard.ops.monitoring.tokens import hash_token, new_token

        token = new_token()
        env["STREAM_GUARD_MONITOR_OPERATOR_TOKEN_SHA256"] = hash_token(token)
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="stream-guard-up-")
    web_port = args.web_port or free_port()
    with contextlib.ExitStack() as stack:
        if not settings.broker:
            broker = stack.enter_context(EmbeddedBroker())
            settings = settings.with_overrides(broker=broker.bootstrap)
            _say(f"embedded broker at {broker.bootstrap}")
        else:
            _reach(settings, settings.broker, args)
        if not args.data_dir:
            stack.callback(shutil.rmtree, data_dir, True)
        log_path = Path(data_dir) / "worker.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = stack.enter_context(open(log_path, "ab"))
        proc = subprocess.Popen(_worker_command(args, settings.broker or "", data_dir, web_port),
                                stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, preexec_fn=die_with_parent)
        stack.callback(_stop_process, proc)
        _say(f"worker pid {proc.pid}, log {log_path}, metrics http://127.0.0.1:{web_port}/metrics")
        started = time.monotonic()
        while not _ready(web_port):
            if proc.poll() is not None:
                _err(f"the worker exited with code {proc.returncode}; last lines of {log_path}:")
                sys.stderr.write(log_path.read_text(errors="replace")[-3000:])
                return 1
            time.sleep(0.3)
        _say(f"worker ready in {time.monotonic() - started:.1f}s")
        if loaded.monitor.enabled:
            _say(f"dashboard http://127.0.0.1:{web_port}/monitor"
                 + (f" (sign in with {token}: a token made for this run; deploy/OPERATIONS.md says how to keep one)"
                    if token else " (sign in with your operator token)"))
        try:
            return asyncio.run(_show(settings, lines, args, proc))
        except KeyboardInterrupt:
            _say("\nstopping...")
            return 0
    return 0  # pragma: no cover


def cmd_replay_dlq(argv: Sequence[str]) -> int:
    from stream_guard.agents.dlq import cmd_replay_dlq as replay

    return replay(argv)


def cmd_alerts(argv: Sequence[str]) -> int:
    from stream_guard.agents.alert_forwarder import cmd_alerts as forward

    return forward(argv)


COMMANDS = {"worker": cmd_worker, "up": cmd_up, "produce": cmd_produce, "tail": cmd_tail,
            "replay-dlq": cmd_replay_dlq, "alerts": cmd_alerts}


def run(command: str, argv: list[str]) -> int:
    handler = COMMANDS.get(command)
    if handler is None:
        _err(f"unknown command {command!r}; one of {', '.join(COMMANDS)}")
        return 2
    previous = signal.signal(signal.SIGTERM, _terminated)  # a worker's Faust installs its own once it runs
    try:
        return handler(list(argv))
    except StreamGuardError as exc:
        return report(exc, "stream-guard")
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except Terminated:
        _err("terminated")
        return 143
    finally:
        signal.signal(signal.SIGTERM, previous)


class Terminated(BaseException):
    """SIGTERM while a command starts or runs outside Faust: end as Ctrl-C does, without a traceback."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated()
