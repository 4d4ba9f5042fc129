"""Objects that live as long as the process, built without the cyclic garbage collector looking at them.

Importing spaCy and loading its model creates about a hundred thousand objects that are kept until the process
ends (modules, classes, functions, the vocabulary, the weights' holders). Python's collector runs every 700 new
objects, and a collection looks at every object allocated since the last one and, less often, at all of them:
while spaCy loads it ran about 500 times and took about 0.14 s of a 0.8 s start-up, and every later full
collection of the process looked at all those objects again, to find none of them garbage.

`built_to_last` pauses the automatic collections while such objects are built and then moves every object the
collector tracks into its permanent generation (`gc.freeze`), where no collection looks at it again; forked
children (the pool's judges) share those pages instead of copying them when a collection would have touched
them. What it gives up: cyclic garbage that existed when it froze (a few thousand objects while spaCy loads) is
never freed. Reference counting frees everything else as before; nothing is collected differently afterwards."""

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
