"""`stream-guard alerts` against a real broker and a real webhook that fails, goes away and comes back: every
alert arrives (at least once, in order), offsets are committed only for what was delivered or dead-lettered, and
what the webhook refuses or never takes goes to the dead-letter topic with why."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import orjson
import pytest
from aiohttp import web
from aiokafka import AIOKafkaConsumer, TopicPartition

from stream_guard.agents.clients import read_all, start_producer
from stream_guard.agents.embedded_broker import die_with_parent, free_port
from stream_guard.agents.topics import ensure_topics, key_partition
from stream_guard.wire.alert import Alert, alert_id
from stream_guard.wire.deadletter import read_error
from stream_guard.wire.headers import alert_headers

from streamkit import REPO, Names

pytestmark = [pytest.mark.broker, pytest.mark.timeout(240)]


@dataclass
class Webhook:
    """A real HTTP receiver on a fixed port, in a thread of its own. mode: ok (200), fail (503), down (not
    listening). Whatever the mode, an alert whose summary says "refuse" gets 400 and one that says "never" 500."""

    port: int = field(default_factory=free_port)
    mode: str = "fail"
    received: list[Any] = field(default_factory=list)
    tries: int = 0

    def __post_init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.runner: web.AppRunner | None = None
        self.up()

    async def _answer(self, request: web.Request) -> web.Response:
        self.tries += 1
        body = await request.json()
        summary = body[0]["annotations"]["summary"]
        if "refuse" in summary:
            return web.Response(status=400, text="bad alert")
        if "never" in summary or self.mode == "fail":
            return web.Response(status=503, text="busy")
        self.received.append(body)
        return web.Response(status=200)

    def up(self) -> None:
        async def start() -> None:
            app = web.Application()
            app.router.add_post("/api/v2/alerts", self._answer)
            self.runner = web.AppRunner(app)
            await self.runner.setup()
            await web.TCPSite(self.runner, "127.0.0.1", self.port, reuse_address=True).start()
        asyncio.run_coroutine_threadsafe(start(), self.loop).result()

    def down(self) -> None:
        assert self.runner is not None
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v2/alerts"


def alert(number: int, summary: str) -> Alert:
    return Alert(alert_id=alert_id("test", number), kind="rate_shift", severity="high", tenant="acme",
                 question_hash="q1", event_id=f"ev-{number}", summary=summary, created_at_ms=1_700_000_000_000,
                 evidence={"value": 0.2, "baseline": 0.1, "examples": [f"ev-{number}"]})


ALERTS = [alert(1, "one"), alert(2, "please refuse this"), alert(3, "three"), alert(4, "never delivered"),
          alert(5, "five"), alert(6, "six")]


async def _publish(names: Names) -> None:
    producer = await start_producer(names.broker)
    try:
        for item in ALERTS:  # one key: one partition, one order
            await producer.send_and_wait(names.topics.alerts, item.to_json(), key=b"q1", headers=alert_headers(item))
    finally:
        await producer.stop()


async def _committed(names: Names, group: str) -> dict[int, int | None]:
    consumer = AIOKafkaConsumer(bootstrap_servers=names.broker, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        parts = consumer.partitions_for_topic(names.topics.alerts) or set()
        if not parts:
            await consumer.topics()
            parts = consumer.partitions_for_topic(names.topics.alerts) or set()
        return {p: await consumer.committed(TopicPartition(names.topics.alerts, p)) for p in sorted(parts)}
    finally:
        await consumer.stop()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    if hook.runner is not None:
        asyncio.run_coroutine_threadsafe(hook.runner.cleanup(), hook.loop).result()
    hook.loop.call_soon_threadsafe(hook.loop.stop)


def test_alerts_survive_a_webhook_that_fails_and_comes_back(kafka_bootstrap: str, webhook: Webhook,
                                                           tmp_path: Any) -> None:
    names = Names(kafka_bootstrap)
    asyncio.run(ensure_topics(names.settings()))
    group, dead = f"{names.prefix}-alerts", f"{names.prefix}.alerts-dlq"
    env = {**os.environ, **names.env(), "STREAM_GUARD_SESSION_TIMEOUT_S": "6", "STREAM_GUARD_HEARTBEAT_INTERVAL_S": "1",
           "STREAM_GUARD_ALERTS_MAX_ATTEMPTS": "15", "STREAM_GUARD_ALERTS_BACKOFF_INITIAL_S": "0.1",
           "STREAM_GUARD_ALERTS_BACKOFF_MAX_S": "0.3", "STREAM_GUARD_ALERTS_DEAD_LETTER_TOPIC": dead}
    asyncio.run(_publish(names))
    log = open(tmp_path / "alerts.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "stream_guard", "alerts", "--webhook", webhook.url, "--format",
                             "alertmanager", "--broker", names.broker, "--group", group, "--dashboard-url",
                             "https://guard.example.com"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=die_with_parent)
    try:
        deadline = time.monotonic() + 60
        while webhook.tries < 3:  # failing (503) for a while, then gone, then back
            assert time.monotonic() < deadline and proc.poll() is None, (tmp_path / "alerts.log").read_text()
            time.sleep(0.1)
        webhook.down()
        time.sleep(1.0)
        assert not webhook.received and not any(asyncio.run(_committed(names, group)).values())
        webhook.mode = "ok"
        webhook.up()
        while len(webhook.received) < 4:
            assert time.monotonic() < deadline and proc.poll() is None, (tmp_path / "alerts.log").read_text()
            time.sleep(0.1)
        dead_letters = asyncio.run(read_all(names.broker, [dead], until=2, timeout=30))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        log.close()
    summaries = [body[0]["annotations"]["summary"] for body in webhook.received]
    assert summaries == ["one", "three", "five", "six"]
    first = webhook.received[0][0]
    assert first["labels"]["tenant"] == "acme" and first["annotations"]["value"] == "0.2"
    assert first["annotations"]["dashboard"] == "https://guard.example.com/monitor/t/acme"
    errors = [read_error([(n, v or b"") for n, v in record.headers or ()]) for record in dead_letters]
    assert [(e.stage, e.event_id) for e in errors if e] == [("webhook", "ev-2"), ("webhook", "ev-4")]
    assert errors[0] and errors[0].reason.startswith("the webhook refused it: 400")
    assert errors[1] and errors[1].reason.startswith("not delivered after 15 tries: 503")
    assert [orjson.loads(record.value)["summary"] for record in dead_letters] == ["please refuse this",
                                                                                 "never delivered"]
    assert asyncio.run(_committed(names, group))[key_partition(b"q1", 2)] == len(ALERTS)
    assert b"4 delivered" in (tmp_path / "alerts.log").read_bytes()
