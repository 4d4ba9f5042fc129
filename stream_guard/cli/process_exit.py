"""Ending the `stream-guard` process once a command has returned, without tearing its heap down.

When a Python process exits the normal way, the interpreter waits for its threads, runs the exit handlers, flushes
the standard streams and then takes every module apart and frees every object one by one. After a run that loaded
spaCy that last part is a fifth of the process's CPU (about 0.2 s of a 1 s `check` on one event: the model's
weights and vocabulary, numpy, thinc, pydantic's schemas), and nobody reads the memory it frees: the process ends.
So the program does what the interpreter does up to that point, in the same order, and then ends the process.

Only for the process's own program (`entry` in stream_guard.cli): a caller of `main` in its own process keeps its
interpreter. Whatever the normal exit would still do, a thread that is not a daemon or a stream that cannot be
flushed (a closed pipe), the normal exit does: the interpreter then reports it as it always has."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_process(code: int) -> NoReturn:
    """End the process with exit status `code` after what a normal exit does before its teardown: wait for the
    threads that are not daemons, run the exit handlers (the regex cache's save, multiprocessing's and logging's
    clean-up), flush stdout and stderr."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the normal exit reports it and sets its status
        raise SystemExit(code) from None
    os._exit(code)
