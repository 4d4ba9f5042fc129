"""The collector in a judging process: young collections less often, the warm heap left out."""

from __future__ import annotations

import gc
from typing import Iterator

import pytest

from stream_guard.engine.collector import YOUNG_THRESHOLD, collect_less_often, settle_warm_heap


@pytest.fixture(autouse=True)
def restored_collector() -> Iterator[None]:
    """Each test changes this process's collector: put it back as it was."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_young_collections_run_less_often_and_the_older_thresholds_stay() -> None:
    gc.set_threshold(700, 7, 9)
    collect_less_often()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 7, 9)


@pytest.mark.parametrize("young", [0, YOUNG_THRESHOLD * 2])
def test_a_switched_off_or_larger_young_threshold_is_kept(young: int) -> None:
    gc.set_threshold(young, 10, 10)
    collect_less_often()
    assert gc.get_threshold() == (young, 10, 10)


def test_the_warm_heap_is_left_out_of_later_collections() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    kept = [[]]  # a container: the collector tracks it
    settle_warm_heap()
    assert gc.get_freeze_count() >= 1 and not any(o is kept for o in gc.get_objects())
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD

