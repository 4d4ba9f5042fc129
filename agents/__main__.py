"""`python -m stream_guard.agents COMMAND ...`: the streaming commands without going through `stream-guard`."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    from stream_guard import blas

    blas.hold_to_one_thread(os.environ)  # before anything imports numpy, as `stream-guard` does (cli.entry)
    from stream_guard.agents.cli import run

    if len(sys.argv) < 2:
        print("usage: python -m stream_guard.agents {worker,up,produce,tail} ...", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(run(sys.argv[1], sys.argv[2:]))
