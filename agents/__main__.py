"""`python -m stream_guard.agents COMMAND ...`: the streaming commands without going through `stream-guard`."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    # numpy's BLAS on one thread unless the operator chose, before anything imports numpy, as the `stream-guard`
    # program holds it (stream_guard/cli `hold_blas_to_one_thread`, a layer this edge may not import): the
    # worker's judges inherit it through the pool's fork server. Without it, a worker started so had its judges
    # set and lift a one-thread limit around every NER call, and OpenBLAS's second thread spun after each.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from stream_guard.agents.cli import run

    if len(sys.argv) < 2:
        print("usage: python -m stream_guard.agents {worker,up,produce,tail} ...", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(run(sys.argv[1], sys.argv[2:]))
