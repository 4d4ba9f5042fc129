"""The server's life: judge processes that die are replaced, and SIGTERM lets the requests in flight finish."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any, AsyncIterator

import aiohttp
import orjson
import pytest
from in_process import stream_guard
from serving import Server

from stream_guard.client import GuardClient
from stream_guard.wire.inline import StreamedSentence

pytestmark = pytest.mark.slow

EVENT = {"event_id": "e", "tenant": "life", "question": "What is the refund window?",
         "context": ["Refunds are accepted within 14 days of purchase. Keep the receipt."],
         "answer": "You can get a refund within 14 days of purchase."}


def events(prefix: str, count: int) -> bytes:
    return orjson.dumps([{**EVENT, "event_id": f"{prefix}-{i}", "question": f"What is the refund window {i}?"}
                         for i in range(count)])


async def _post(url: str, body: bytes) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session:
        async with session.post(url, data=body) as response:
            return response.status, orjson.loads(await response.read())


async def _killed_during(server: Server, pids: list[int]) -> tuple[int, Any]:
    """A batch of 40 events (over one process's batch: both take part), both processes killed once it is sent."""
    request = asyncio.ensure_future(_post(f"{server.url}/v1/check/batch", events("k", 40)))
    await asyncio.sleep(0.005)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return await request


def test_killed_judge_processes_are_replaced_and_the_request_answered(tmp_path: Path) -> None:
    server = Server(tmp_path / "serve.log", ["--ner", "regex", "--processes", "2", "--drift-db", ":memory:"]).start()
    try:
        before = server.children()
        assert len(before) == 2
        os.kill(before[0], signal.SIGKILL)  # idle: replaced as soon as it is gone, before a request needs it
        deadline = time.monotonic() + 60
        while len(after := server.children()) != 2 or before[0] in after:
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.1)
        # Killed while its request waits: the batch is judged again, one event at a time, on a fresh process.
        status, items = asyncio.run(_killed_during(server, after))
        assert status == 200 and [item["event_id"] for item in items] == [f"k-{i}" for i in range(40)]
        assert {item.get("routing", item.get("stage")) for item in items} <= {"accept", "judge"}
        _, metrics = server.get("/metrics")
        assert "stream_guard_judge_replaced_total" in metrics and "stream_guard_judge_replaced_total 1.0" not in metrics
        assert asyncio.run(_post(f"{server.url}/v1/check", orjson.dumps(EVENT)))[0] == 200
        assert len(server.children()) == 2
    finally:
        assert server.stop() == 0


def test_sigterm_answers_the_requests_in_flight_and_refuses_new_ones(tmp_path: Path) -> None:
    """A streamed answer is half sent when SIGTERM comes: it gets its remaining sentences and its verdict; the
    server stops listening at once and exits 0 when the stream is done."""
    server = Server(tmp_path / "serve.log", ["--ner", "regex", "--processes", "1", "--drift-db", ":memory:"]).start()
    header = {k: v for k, v in EVENT.items() if k != "answer"}
    lines: list[Any] = []
    first_seen = asyncio.Event()
    told = asyncio.Event()

    async def generate() -> AsyncIterator[str]:
        yield "You can get a refund within 14 days of purchase. "
        yield "Keep"
        yield " the receipt. "
        await first_seen.wait()
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        await told.wait()
        yield "Thanks for asking!"

    async def refused() -> bool:
        for _ in range(100):  # the listening socket closes a moment after the signal
            try:
                async with aiohttp.ClientSession() as session:
                    async with session.get(f"{server.url}/readyz") as response:
                        if response.status == 503:
                            return True
            except aiohttp.ClientConnectionError:
                return True
            await asyncio.sleep(0.05)
        return False

    async def go() -> bool:
        async with GuardClient(server.url) as guard:
            watching: asyncio.Task[bool] | None = None
            async for line in guard.check_stream(header, generate(), timeout=30):
                lines.append(line)
                if isinstance(line, StreamedSentence) and line.index == 0:
                    first_seen.set()
                    watching = asyncio.ensure_future(refused())
                    told.set() if await asyncio.shield(watching) else None
            assert watching is not None
            return watching.result()

    try:
        assert asyncio.run(go())
        assert [getattr(line, "status", None) for line in lines[:3]] == ["released"] * 3, (lines, server.log())
        assert lines[-1].outcome == "checked" and lines[-1].verdict.event_id == "e"
        assert server.proc is not None and server.proc.wait(timeout=60) == 0  # on its own, once the stream ended
    finally:
        assert server.stop(timeout=60) == 0
    assert "stopping: answering the requests in flight" in server.log() and "stopped" in server.log()


def test_a_port_in_use_is_refused_before_any_judge_process_starts(capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command's entry function in this process (the real `serve` processes are tests/support/serving.py's)."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = stream_guard(capsys, "serve", "--port", str(port), "--ner", "regex")
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
