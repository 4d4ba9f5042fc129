"""The BLAS thread count the program's processes start with (stream_guard/blas.py)."""

from __future__ import annotations

from stream_guard import blas


def test_one_thread_unless_the_operator_chose() -> None:
    environ: dict[str, str] = {}
    blas.hold_to_one_thread(environ)
    assert environ == {"OPENBLAS_NUM_THREADS": "1"}
    chosen = {"OPENBLAS_NUM_THREADS": "4"}
    blas.hold_to_one_thread(chosen)
    assert chosen == {"OPENBLAS_NUM_THREADS": "4"}
