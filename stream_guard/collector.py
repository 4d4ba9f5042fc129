"""The cyclic garbage collector's policy in a long-lived process: what it should never look at, and how often
it looks at the rest. One module for both, since both are the same trade (collector work against memory held).

**Objects that live as long as the process**, built without the collector looking at them.

Importing spaCy and loading its model creates about a hundred thousand objects that are kept until the process
ends (modules, classes, functions, the vocabulary, the weights' holders). Python's collector runs every 700 new
objects, and a collection looks at every object allocated since the last one and, less often, at all of them:
while spaCy loads it ran about 500 times and took about 0.14 s of a 0.8 s start-up, and every later full
collection of the process looked at all those objects again, to find none of them garbage.

`built_to_last` pauses the automatic collections while such objects are built and then moves every object the
collector tracks into its permanent generation (`gc.freeze`), where no collection looks at it again; forked
children (the pool's judges) share those pages instead of copying them when a collection would have touched
them. What it gives up: cyclic garbage that existed when it froze (a few thousand objects while spaCy loads) is
never freed. Reference counting frees everything else as before; nothing is collected differently afterwards.

**A process that judges many events.**

A judge keeps a long-lived heap that grows while it judges: the per-process caches of text work (chunk
analyses, sentences, claims, stems: text/short_text_cache.py and the lru caches beside it) fill to tens of
thousands of container objects over a few hundred RAGTruth events. (spaCy's modules and model are frozen as they
load: `built_to_last` above.) With CPython's default thresholds (700, 10, 10) a young collection runs every
700 net allocations and a full one, which walks the whole unfrozen heap, each time its long-lived part grows by a
quarter: `check --jobs 1` on 571 RAGTruth events spent 0.18-0.19 s in the collector (two full collections),
0.09-0.12 s with the thresholds below (none), gc.callbacks timing in process.

Judging creates few reference cycles (the verdicts, analyses and caches are trees of frozen values), so
collecting young objects less often frees nearly nothing later than it would have been freed; what is alive
once a judge has warmed up lives as long as the process, so it can leave the collector's walks for good.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def built_to_last() -> Iterator[None]:
    """Within: no automatic collection (the thresholds are restored on leaving). When the block succeeds, every
    object tracked then is frozen (`gc.freeze`); when it raises, nothing is."""
    thresholds = gc.get_threshold()
    gc.set_threshold(0, *thresholds[1:])  # a first threshold of 0 turns the automatic collections off
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
    gc.freeze()


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

