"""A real `stream-guard serve` for the tests: started as the command a user runs, on a free port, stopped by
SIGTERM. Its requests go over real HTTP (aiohttp's client, or stream_guard.client)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from processes import terminate

from stream_guard.engine.pool import die_with_parent

REPO = Path(__file__).resolve().parents[2]
_LISTENING = re.compile(r"listening on http://[^:]+:(\d+)")


@dataclass
class Server:
    log_path: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> "Server":
        cmd = [sys.executable, "-m", "stream_guard", "serve", "--port", "0", *self.args]
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **self.env}, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}:\n{self.log()}")
            if not self.port and (found := _LISTENING.search(self.log())):
                self.port = int(found.group(1))
            if self.port and self.get("/readyz")[0] == 200:
                return self
            time.sleep(0.2)
        raise AssertionError(f"serve not ready in {timeout}s:\n{self.log()}")

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, _body(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _body(exc.read())
        except OSError:
            return 0, None

    def children(self) -> list[int]:
        """The judge processes' ids: forked by the pool's fork server (a child of the service), or spawned
        children; never multiprocessing's resource tracker or the fork server itself."""
        assert self.proc is not None
        out: list[int] = []
        for pid in _children(self.proc.pid):
            with contextlib.suppress(OSError):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"spawn_main" in cmdline:
                    out.append(pid)
                elif b"forkserver" in cmdline:
                    out += _children(pid)
        return out

    def stop(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        try:
            return terminate(self.proc, timeout, "serve", self.log)
        finally:
            self._log.close()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def _body(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            out += [int(child) for child in (task / "children").read_text().split()]
    return out
