"""The thread count of numpy's BLAS in the program's own processes.

Its only work here is spaCy's NER model multiplying the matrices of a few answer windows, which one thread does.
A library caller's pipeline is held to one thread per call (text/ner.py `_PipelineLock`), and each time that limit
was lifted OpenBLAS's second thread woke and spun: 2.9% of a RAGTruth `check` run's CPU samples were in its thread
and about as many again in locks (perf, cpu-clock). So every process the program starts (`stream-guard ...`,
`python -m stream_guard.agents ...`; `check -j`'s children and the worker's judges inherit the environment) runs
it on one thread from the start, and the per-call limit is then skipped. OpenBLAS reads the variable when numpy is
imported: call this before anything imports numpy. An operator's own value is kept."""

from __future__ import annotations

from typing import MutableMapping


def hold_to_one_thread(environ: MutableMapping[str, str]) -> None:
    environ.setdefault("OPENBLAS_NUM_THREADS", "1")
