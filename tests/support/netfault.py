"""A TCP relay in front of a broker that can drop every connection and refuse new ones, then come back: the
broker gone, as its clients see it, without losing what the (in-memory) broker holds.

Start the broker advertising the relay's port (EmbeddedBroker(advertised_port=...)), so that the clients'
connections to the partition leaders go through the relay too.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Iterator

from stream_guard.agents.embedded_broker import LOOPBACK, EmbeddedBroker, free_port


@dataclass
class Relay:
    target_port: int
    port: int = field(default_factory=free_port)
    host: str = LOOPBACK
    _listener: socket.socket | None = None
    _sockets: set[socket.socket] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "Relay":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def cut(self) -> None:
        """Refuse new connections and end every open one (closed, then reset)."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for sock in sockets:
            _reset(sock)

    def restore(self) -> None:
        self.start()

    def stop(self) -> None:
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection((self.host, self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                cut = self._listener is not listener  # cut while this connection was being set up
                if not cut:
                    self._sockets |= {client, upstream}
            if cut:
                _reset(client)
                _reset(upstream)
                return
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            # The other direction's thread is blocked on these sockets: _reset wakes it, a close would not.
            _reset(source)
            _reset(sink)
            with self._lock:
                self._sockets -= {source, sink}


def _reset(sock: socket.socket) -> None:
    """End a connection now, as its peer sees it. close() alone does not: a pump thread blocked in recv() or
    sendall() on the socket holds it open (Linux closes a socket only once no system call is using it), so a
    connection that waits for an answer (a request forwarded, its response not yet back) would stay open and
    silent. shutdown() wakes that thread; the socket then closes with SO_LINGER 0, which sends a reset.
    Every close goes through here, the pumps' own too: the first close of a socket (a cut, or the pump of the
    other direction ending) is the only one that can still shut it down."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@contextlib.contextmanager
def broker_behind_relay() -> Iterator[tuple[EmbeddedBroker, Relay]]:
    """An embedded broker of its own whose clients all go through a relay (bootstrap: `relay.address`)."""
    port = free_port()
    with EmbeddedBroker(advertised_port=port) as broker:
        relay = Relay(broker.port or 0, port).start()
        try:
            yield broker, relay
        finally:
            relay.stop()
