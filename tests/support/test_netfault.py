"""The relay that the broker-loss tests cut: a cut must end every connection at once, including one whose
request went through and whose answer is still awaited (a Kafka client's produce request in flight). A
connection that silently outlived the cut made the worker wait out its producer timeout and stop: the broker-loss
test failed on about half of its runs."""

from __future__ import annotations

import socket
import threading
from typing import Iterator

import pytest
from netfault import Relay

from stream_guard.agents.embedded_broker import LOOPBACK

# Only a bound on a hang: a reset arrives at once; the connection the old relay left open never ends.
HANG_S = 10.0


class Server:
    """Accepts connections and reads one request on each, never answering until told to."""

    def __init__(self) -> None:
        self.listener = socket.create_server((LOOPBACK, 0))
        self.requests: list[bytes] = []
        self.received = threading.Semaphore(0)
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            self.requests.append(conn.recv(100))
            self.received.release()

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def server() -> Iterator[Server]:
    server = Server()
    yield server
    server.close()


def request(relay: Relay, server: Server, payload: bytes) -> socket.socket:
    """A connection through the relay whose request has reached the server, unanswered."""
    client = socket.create_connection((LOOPBACK, relay.port), timeout=HANG_S)
    client.sendall(payload)
    assert server.received.acquire(timeout=HANG_S), "the request never reached the server"
    return client


def ends(client: socket.socket) -> bool:
    """The connection ends (closed or reset: a Kafka client takes both as the broker gone) rather than stays
    open and silent (a TimeoutError after HANG_S)."""
    try:
        return client.recv(100) == b""
    except ConnectionResetError:
        return True
    finally:
        client.close()


def test_a_cut_ends_a_connection_that_awaits_its_answer(server: Server) -> None:
    relay = Relay(server.port).start()
    try:
        client = request(relay, server, b"produce")
        relay.cut()
        assert ends(client)
    finally:
        relay.stop()


def test_a_connection_the_server_closes_ends_for_its_client_too(server: Server) -> None:
    """The pump of the direction that ended closes both sockets, while the other direction's pump is blocked
    reading one of them: a close alone left that socket, and so the client's connection, open. (A cut raced
    with this: when one pump ended first, the cut found its sockets closed already and could not wake the
    other pump, and the worker's connection outlived the cut.)"""
    relay = Relay(server.port).start()
    try:
        client = request(relay, server, b"fetch")
        server.connections[0].close()
        assert ends(client)
    finally:
        relay.stop()


def test_a_cut_refuses_new_connections_and_a_restore_relays_again(server: Server) -> None:
    relay = Relay(server.port).start()
    try:
        relay.cut()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((LOOPBACK, relay.port), timeout=HANG_S)
        relay.restore()
        client = request(relay, server, b"after")
        client.close()
        assert server.requests == [b"after"]
    finally:
        relay.stop()
