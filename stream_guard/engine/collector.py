"""The cyclic garbage collector in a process that judges many events.

A judge keeps a long-lived heap that grows while it judges: the per-process caches of text work (chunk
analyses, sentences, claims, stems: text/short_text_cache.py and the lru caches beside it) fill to tens of
thousands of container objects over a few hundred RAGTruth events. (spaCy's modules and model are frozen as they
load: stream_guard/long_lived.py.) With CPython's default thresholds (700, 10, 10) a young collection runs every
700 net allocations and a full one, which walks the whole unfrozen heap, each time its long-lived part grows by a
quarter: `check --jobs 1` on 571 RAGTruth events spent 0.18-0.19 s in the collector (two full collections),
0.09-0.12 s with the thresholds below (none), gc.callbacks timing in process.

Judging creates few reference cycles (the verdicts, analyses and caches are trees of frozen values), so
collecting young objects less often frees nearly nothing later than it would have been freed; what is alive
once a judge has warmed up lives as long as the process, so it can leave the collector's walks for good.
"""

from __future__ import annotations

import gc

# Net allocations between young collections (CPython's default is 700): with ten thousand no full collection ran
# over those 571 events; young objects are mostly freed by their reference counts before a collection sees them,
# so a larger young generation holds little more memory.
YOUNG_THRESHOLD = 10_000


def collect_less_often() -> None:
    """Young collections every YOUNG_THRESHOLD allocations; the older generations' thresholds unchanged. Only
    ever raises it: a process (or a test) that asked for a larger one keeps it."""
    young, *older = gc.get_threshold()
    if young and young < YOUNG_THRESHOLD:  # 0: collection is switched off; leave it so
        gc.set_threshold(YOUNG_THRESHOLD, *older)


def settle_warm_heap() -> None:
    """Called once a judge process has warmed up (imports, model, first event): what is alive now is kept out of
    every later collection (`gc.freeze`), and young collections run less often. Its garbage of the warm-up, if
    any reference cycle is left of it, stays allocated: a bounded, one-time cost."""
    gc.freeze()
    collect_less_often()

