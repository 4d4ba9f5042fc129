"""A wrong broker address fails in seconds, naming it, with exit 1 and no traceback; `--wait` keeps trying until
the broker comes, or until Ctrl-C or SIGTERM, which end the command cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from streamkit import REPO

from stream_guard.agents.clients import reach_broker
from stream_guard.agents.embedded_broker import EmbeddedBroker, free_port
from stream_guard.cli import main

pytestmark = pytest.mark.timeout(120)

COMMANDS = [
    ["worker", "--without-web"],
    ["produce", str(REPO / "README.md")],
    ["tail", "verdicts"],
    ["backtest", "--topic", "rag.answers", "--out", "unused"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_an_unreachable_broker_is_reported_in_seconds_with_its_address(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    monkeypatch.setenv("STREAM_GUARD_CONNECT_TIMEOUT_S", "2")
    monkeypatch.chdir(tmp_path)
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    assert main([*command, "--broker", address]) == 1
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert f"cannot reach the broker at {address} (tried for 2 s" in err, err
    assert "refused the connection (nothing listens there)" in err and "--wait" in err
    assert took < 6, took  # the probe's two seconds, and the last attempt


def test_wait_keeps_trying_until_the_broker_comes() -> None:
    port = free_port()
    reached: list[float] = []
    started = time.monotonic()
    # The broker is started from this thread: it dies with the thread that started it (die_with_parent).
    waiter = threading.Thread(target=lambda: (asyncio.run(reach_broker(f"127.0.0.1:{port}", 0.5, wait=True)),
                                              reached.append(time.monotonic() - started)))
    waiter.start()
    time.sleep(1.5)
    assert waiter.is_alive() and not reached  # still trying, well past its 0.5 s
    with EmbeddedBroker(port=port):
        waiter.join(15)
    assert reached and reached[0] >= 1.5


@pytest.mark.parametrize(("sent", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                    (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_or_sigterm_while_waiting_ends_the_command_without_a_traceback(
    sent: signal.Signals, code: int, said: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_GUARD_")}
    proc = subprocess.Popen([sys.executable, "-m", "stream_guard.agents", "worker", "--without-web", "--wait",
                             "--broker", f"127.0.0.1:{free_port()}"], cwd=REPO, env=env, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Signal only once the command says it is waiting (a fixed sleep raced the imports on a loaded machine).
    lines: list[str] = []
    waiting = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "still waiting for the broker" in line:
                waiting.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert waiting.wait(60), "".join(lines)
    assert proc.poll() is None, "".join(lines)
    proc.send_signal(sent)
    proc.wait(timeout=20)
    reader.join(timeout=5)
    err = "".join(lines)
    assert proc.returncode == code, err
    assert err.strip().endswith(f"stream-guard: {said}") and "Traceback" not in err, err
