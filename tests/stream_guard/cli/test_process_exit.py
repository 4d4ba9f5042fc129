"""exit_process: what a normal exit does before its teardown (threads, exit handlers, flushed streams), then the
process ends; each case in a fresh interpreter, its stdout a file (block-buffered, as a redirected run's is)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Writes "torn down" to the file argv[1] names when the interpreter frees module globals (the teardown skipped).
WITNESS = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)

class Witness:
    def __del__(self, write=os.write, fd=fd):
        write(fd, b"torn down")

witness = Witness()
"""


def run(tmp_path: Path, body: str) -> tuple[int, str, str]:
    witness, out = tmp_path / "witness", tmp_path / "out"
    with out.open("w") as stdout:
        done = subprocess.run([sys.executable, "-c", WITNESS + body, str(witness)], stdout=stdout,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    return done.returncode, out.read_text(), witness.read_text() if witness.exists() else ""


def test_a_normal_exit_tears_down_what_exit_process_does_not(tmp_path: Path) -> None:
    assert run(tmp_path, "print('done')")[2] == "torn down"  # the witness works: the normal exit frees it


def test_exit_process_flushes_runs_exit_handlers_keeps_the_status_and_skips_the_teardown(tmp_path: Path) -> None:
    body = ("import atexit\n"
            "from stream_guard.cli.process_exit import exit_process\n"
            "atexit.register(print, 'handler ran')\n"
            "print('x' * 100)\n"
            "exit_process(3)\n")
    code, out, witness = run(tmp_path, body)
    assert (code, out, witness) == (3, "x" * 100 + "\nhandler ran\n", "")


def test_exit_process_waits_for_a_thread_that_is_not_a_daemon(tmp_path: Path) -> None:
    body = ("import threading, time\n"
            "from stream_guard.cli.process_exit import exit_process\n"
            "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n"
            "exit_process(0)\n")
    assert run(tmp_path, body)[:2] == (0, "thread done\n")


def test_the_program_ends_a_check_without_teardown_and_with_its_verdicts(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text('{"event_id": "e1", "tenant": "t", "question": "When?", "context": ["On Monday."], '
                      '"answer": "On Monday."}\n')
    body = (f"sys.argv = ['stream-guard', 'check', {str(events)!r}, '--ner', 'regex', '-q']\n"
            "from stream_guard.cli import entry\n"
            "entry()\n")
    code, out, witness = run(tmp_path, body)
    assert (code, witness) == (0, "")
    assert '"event_id":"e1"' in out.replace(" ", "")
