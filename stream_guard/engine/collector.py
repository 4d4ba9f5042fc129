"""The cyclic garbage collector in a process that judges many events, while it judges and as it exits.

A judge keeps a large, long-lived heap: its modules and spaCy's model, and the per-process caches of text work
(chunk analyses, sentences, claims, stems: text/short_text_cache.py and the lru caches beside it), which fill
to over a hundred thousand container objects over a few hundred RAGTruth events. With CPython's default
thresholds (700, 10, 10) a young collection runs every 700 net allocations and a full one, which walks that
whole heap, every time the long-lived part grows by a quarter: judging 571 RAGTruth events in one process
spent 0.35 s of its 3.9 s in the collector (0.26 s of it in three full collections of a growing heap), CPU
that callgrind's count over the first 40 events does not show, as the heap is still small there.

Judging creates few reference cycles (the verdicts, analyses and caches are trees of frozen values), so
collecting young objects less often frees nearly nothing later than it would have been freed; what is alive
once a judge has warmed up lives as long as the process, so it can leave the collector's walks for good.
"""

from __future__ import annotations

import gc

# Net allocations between young collections (CPython's default is 700). With ten thousand, the same 571 events
# spent 0.12 s in the collector, and no full collection ran; young objects are mostly freed by their reference
# counts before a collection sees them, so a larger young generation holds little more memory.
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


def spare_the_exit() -> None:
    """Called when a command is done and its process is about to exit: the interpreter's exit runs full
    collections while it tears the modules down, each a walk over the whole heap, which after a long run is
    the caches above and spaCy's model. Frozen, they are not walked (their memory is still freed, by reference
    counts). `check` on 571 RAGTruth events spent about 0.6 s of CPU exiting, 0.05 s with this: a walk of a
    large heap misses the CPU's caches on nearly every object, so it costs far more time than its instructions
    (callgrind: 0.18 G instructions of 6.9 G over 100 events) suggest. What this gives up: a finaliser of an
    object left in a reference cycle no longer runs at exit; every file and database a command opens is closed
    before it returns (the output in a `with`, the drift store by `Pool.close`), and atexit handlers still run."""
    gc.freeze()
