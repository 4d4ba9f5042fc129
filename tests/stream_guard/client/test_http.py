"""The HTTP client against a real `stream-guard serve`, a port nobody listens on, and a server that takes the
request and never answers: the verdict when there is one, the caller's policy when there is none."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from prometheus_client import CollectorRegistry
from serving import Server

from stream_guard.client import GuardClient, GuardResult, SyncGuardClient
from stream_guard.config.detector import DEFAULT_FALLBACK_MESSAGE
from stream_guard.wire.events import EventError
from stream_guard.wire.inline import StreamedSentence

pytestmark = pytest.mark.slow

EVENT = {"event_id": "c1", "tenant": "client", "question": "What is the refund window?",
         "context": ["Refunds are accepted within 14 days of purchase."],
         "answer": "You can return any item within 30 days of purchase."}
HEADER = {k: v for k, v in EVENT.items() if k != "answer"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("client") / "serve.log",
                     ["--ner", "regex", "--processes", "1", "--drift-db", ":memory:"]).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def silent() -> Iterator[str]:
    """A server that accepts connections, reads what it is sent and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            threading.Thread(target=lambda c=conn: _drain(c), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    for conn in held:
        conn.close()


def _drain(conn: socket.socket) -> None:
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def counts(registry: CollectorRegistry) -> dict[str, float]:
    return {s.labels["outcome"]: s.value for m in registry.collect() for s in m.samples
            if s.name == "stream_guard_client_checks_total"}


def test_the_verdict_decides_when_there_is_one(server: Server) -> None:
    with SyncGuardClient(server.url) as guard:
        result = guard.check(EVENT, timeout=30)
        assert result.outcome == "checked" and result.verdict is not None
        assert result.verdict.routing == "healed_accept" and result.answer == result.verdict.delivered_answer
        assert "14 days" in result.answer
        with pytest.raises(EventError) as raised:
            guard.check({"event_id": "x"}, timeout=30)
        assert (raised.value.field, raised.value.reason) == ("answer", "is required")
        assert counts(guard.registry) == {"checked": 1.0}


@pytest.mark.parametrize("policy", ["deliver", "fallback"])
def test_no_answer_in_time_or_no_service_gets_the_policy(silent: str, policy: str) -> None:
    registry = CollectorRegistry()
    for url in (silent, closed_port()):
        with SyncGuardClient(url, on_timeout=policy, registry=registry) as guard:
            result = guard.check(EVENT, timeout=0.3)
        expected = ("unchecked", EVENT["answer"]) if policy == "deliver" else ("fallback", DEFAULT_FALLBACK_MESSAGE)
        assert (result.outcome, result.answer, result.verdict) == (*expected, None)
        assert result.reason and ("in time" in result.reason or "could not be reached" in result.reason)
    assert counts(registry) == {expected[0]: 2.0}


def test_a_streamed_answer_the_service_never_answers_is_delivered_or_held_back(silent: str) -> None:
    async def go(policy: str) -> list[Any]:
        async with GuardClient(silent, on_timeout=policy) as guard:
            return [line async for line in guard.check_stream(HEADER, ["You can return ", "any item. ", "Bye."],
                                                              timeout=0.3)]
    (opened,) = asyncio.run(go("deliver"))
    assert isinstance(opened, GuardResult) and opened.outcome == "unchecked"
    assert opened.answer == opened.unreleased == "You can return any item. Bye."
    (closed,) = asyncio.run(go("fallback"))
    assert closed.outcome == "fallback" and closed.answer == DEFAULT_FALLBACK_MESSAGE


def test_a_streamed_answer_from_a_blocking_iterator(server: Server) -> None:
    def chunks() -> Iterator[str]:  # as a synchronous LLM client streams
        yield from ["You can return any item ", "within 30 days of purchase. ", "Refunds are accepted ",
                    "within 14 days of purchase."]

    with SyncGuardClient(server.url) as guard:
        lines = list(guard.check_stream(HEADER, chunks(), timeout=30))
    sentences = [line for line in lines if isinstance(line, StreamedSentence)]
    assert sentences[0].status in ("repaired", "withheld") and "30 days" not in sentences[0].text
    assert sentences[1].status == "released" and sentences[1].end == len("".join(chunks()))
    assert isinstance(lines[-1], GuardResult) and lines[-1].outcome == "checked"
