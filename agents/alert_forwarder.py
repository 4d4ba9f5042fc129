"""`stream-guard alerts --webhook URL [--format alertmanager|slack|json]`: the alerts topic, forwarded to a webhook.

At least once: a consumer in the group `[alerts] group_id` reads the alerts topic, one alert at a time per
partition and in order, POSTs it (formatted by stream_guard/ops/webhooks.py) and commits its offset only once the
webhook answered 2xx, or once the alert is on the dead-letter topic. A crash or a stop re-delivers what was not
committed; the receiver de-duplicates by `alert_id` (Alertmanager by its labels, which carry it).

Failures: a connection error, a timeout, 408, 429 or 5xx is retried after a wait that starts at
`backoff_initial_s` and doubles up to `backoff_max_s` (a Retry-After the webhook sends is honoured within that
cap), up to `max_attempts` tries; a refusal (any other 4xx) is not retried. An alert that is refused, or never
taken, goes to `[alerts] dead_letter_topic` as the original record plus `sg-dlt-*` headers (stage webhook, the
last status or error as reason), the same shape as the guard's own dead letters (`replay-dlq --topic` can send
them back to the alerts topic once the webhook is fixed). So a webhook that is down for minutes delays alerts
and loses none; one that stays down past the tries dead-letters them rather than holding the partition forever.

SIGTERM or SIGINT: the alert in hand is finished (a retry wait is cut short and the alert left uncommitted, for
the next run), the group is left, and the command exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import aiohttp
import orjson
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError

from stream_guard.agents.clients import start_producer
from stream_guard.agents.security import client_options
from stream_guard.agents.topics import TopicSpec, ensure_topics, producer_max_request_size
from stream_guard.config.alerts import FORMATS, AlertSettings
from stream_guard.config.load import load
from stream_guard.config.stream import StreamSettings
from stream_guard.errors import BrokerError, ConfigurationError
from stream_guard.ops import webhooks
from stream_guard.wire.deadletter import Source, dead_letter_headers, error_headers
from stream_guard.wire.headers import EVENT_ID

log = logging.getLogger(__name__)
RETRIED_STATUSES = frozenset({408, 429})


class _Stopped(Exception):
    """A stop came while an alert waited to be tried again: leave it uncommitted."""


@dataclass
class Counts:
    delivered: int = 0
    retried: int = 0
    dead_lettered: int = 0


@dataclass
class Forwarder:
    settings: AlertSettings
    stream: StreamSettings
    worker: str = "alerts-forwarder"
    counts: Counts = field(default_factory=Counts)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        """Forward until `stop` is set."""
        s, broker = self.stream, self.stream.broker or ""
        await ensure_topics(s, specs=[TopicSpec(self.settings.dead_letter_topic, s.output_partitions,
                                                s.replication_factor, producer_max_request_size(s))])
        consumer = AIOKafkaConsumer(
            s.topics.alerts, bootstrap_servers=broker, group_id=self.settings.group_id, enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=int(s.session_timeout_s * 1000),
            heartbeat_interval_ms=int(s.heartbeat_interval_s * 1000), max_partition_fetch_bytes=s.max_message_bytes,
            **client_options(s))
        producer = await start_producer(broker, producer_max_request_size(s), options=client_options(s))
        headers = {"Content-Type": "application/json"}
        if self.settings.header:
            name, _, value = self.settings.header.partition(":")
            headers[name.strip()] = value.strip()
        try:
            await consumer.start()
            async with aiohttp.ClientSession(headers=headers,
                                             timeout=aiohttp.ClientTimeout(total=self.settings.timeout_s)) as http:
                while not self.stop.is_set():
                    batches = await consumer.getmany(timeout_ms=500)
                    for tp, records in batches.items():
                        for record in records:
                            if self.stop.is_set():
                                break  # the rest stays uncommitted, for the next run
                            await self._forward(record, http, producer)
                            await consumer.commit({tp: record.offset + 1})
        except _Stopped:
            pass
        finally:
            with contextlib.suppress(Exception):
                await consumer.stop()
            await producer.stop()

    async def _forward(self, record: Any, http: aiohttp.ClientSession, producer: Any) -> None:
        try:
            body = webhooks.body(record.value or b"", self.settings.format, self.settings.dashboard_url)
        except ValueError as exc:  # orjson's decode error is one too
            await self._dead_letter(record, producer, f"not an alert record: {exc}")
            return
        wait = self.settings.backoff_initial_s
        for attempt in range(1, self.settings.max_attempts + 1):
            status, said, retry_after = await self._post(http, body)
            if status is not None and 200 <= status < 300:
                self.counts.delivered += 1
                return
            if status is not None and status < 500 and status not in RETRIED_STATUSES:
                await self._dead_letter(record, producer, f"the webhook refused it: {status} {said}".strip())
                return
            if attempt == self.settings.max_attempts:
                break
            self.counts.retried += 1
            delay = min(max(wait, retry_after or 0.0), self.settings.backoff_max_s)
            log.warning("alert %s at %s[%d]@%d not delivered (%s); try %d of %d in %.1f s", _alert_id(record),
                        record.topic, record.partition, record.offset, said, attempt + 1, self.settings.max_attempts,
                        delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), delay)
                raise _Stopped()
            wait = min(wait * 2, self.settings.backoff_max_s)
        await self._dead_letter(record, producer, f"not delivered after {self.settings.max_attempts} tries: {said}")

    async def _post(self, http: aiohttp.ClientSession, body: bytes) -> tuple[int | None, str, float | None]:
        """(status, what the webhook said or the error, Retry-After seconds); status None when it never answered."""
        try:
            async with http.post(self.settings.webhook, data=body) as response:
                text = (await response.text(errors="replace"))[:300].strip()
                return response.status, f"{response.status} {text}".strip(), _seconds(response.headers.get("Retry-After"))
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return None, f"{type(exc).__name__}: {exc}".strip(), None

    async def _dead_letter(self, record: Any, producer: Any, reason: str) -> None:
        log.error("alert %s at %s[%d]@%d dead-lettered: %s", _alert_id(record), record.topic, record.partition,
                  record.offset, reason)
        error = error_headers(stage="webhook", error_field="$", reason=reason,
                              source=Source(record.topic, record.partition, record.offset, record.timestamp,
                                            record.key), failed_at_ms=int(time.time() * 1000), worker=self.worker,
                              event_id=_event_id(record))
        original = [(name, value or b"") for name, value in record.headers or ()]
        await producer.send_and_wait(self.settings.dead_letter_topic, record.value, key=record.key,
                                     headers=dead_letter_headers(original, error))
        self.counts.dead_lettered += 1


def _alert_id(record: Any) -> str | None:
    """The alert's id, for the log: its record is read only for that (and may not be an alert at all)."""
    try:
        found = orjson.loads(record.value or b"").get("alert_id")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return str(found) if found is not None else None


def _event_id(record: Any) -> str | None:
    """The event an alert is about (its sg-event-id header), for its dead letter."""
    for name, value in record.headers or ():
        if name == EVENT_ID and value:
            return str(value.decode("utf-8", "replace"))
    return None


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the backoff decides


# --- the command --------------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stream-guard alerts",
                                     description="Forward the alerts topic to a webhook, at least once.")
    parser.add_argument("--webhook", metavar="URL", help="the webhook's URL ([alerts] webhook)")
    # `--from`/`--to` name a range in every command; `--to URL` keeps working for scripts that use it, with a warning.
    parser.add_argument("--to", dest="old_to", metavar="URL", help="deprecated: --webhook")
    parser.add_argument("--format", choices=FORMATS, help="alertmanager, slack or json (default: [alerts] format, json)")
    parser.add_argument("--dashboard-url", help="where the dashboard is reached; alerts link to the tenant's page")
    parser.add_argument("--group", help="consumer group (default stream-guard-alerts)")
    parser.add_argument("--config", help="TOML file with [alerts] and [stream] tables")
    parser.add_argument("--broker", help="HOST:PORT[,HOST:PORT] (default: $STREAM_GUARD_BROKER)")
    return parser


def cmd_alerts(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    if args.old_to:
        print("stream-guard alerts: --to is deprecated, use --webhook", file=sys.stderr)
    config = load(args.config, os.environ, stream={"broker": args.broker},
                  alerts={"webhook": args.webhook or args.old_to, "format": args.format, "dashboard_url": args.dashboard_url,
                          "group_id": args.group})
    if not config.alerts.webhook:
        raise ConfigurationError("no webhook: pass --webhook URL (or set [alerts] webhook)")
    if not config.stream.broker:
        raise ConfigurationError("no broker: pass --broker HOST:PORT or set STREAM_GUARD_BROKER")
    forwarder = Forwarder(config.alerts, config.stream)
    try:
        asyncio.run(_run(forwarder))
    except (KafkaError, ConnectionError, OSError) as exc:
        raise BrokerError(f"cannot forward {config.stream.topics.alerts} from {config.stream.broker}: "
                          f"{type(exc).__name__}: {exc}") from None
    c = forwarder.counts
    print(f"stream-guard alerts: {c.delivered} delivered, {c.retried} retries, {c.dead_lettered} dead-lettered "
          f"to {config.alerts.dead_letter_topic}", flush=True)
    return 0


async def _run(forwarder: Forwarder) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, forwarder.stop.set)
    print(f"stream-guard alerts: forwarding {forwarder.stream.topics.alerts} to {forwarder.settings.webhook} "
          f"({forwarder.settings.format})", flush=True)
    await forwarder.run()
