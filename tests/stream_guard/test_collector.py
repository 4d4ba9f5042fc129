"""The collector's policy (stream_guard/collector.py). built_to_last: no automatic collection within, thresholds
restored, everything tracked frozen on success only; each case in a fresh interpreter (freezing is for the whole
process). In a judging process: young collections less often, the warm heap left out (in this process, restored
after each test)."""

from __future__ import annotations

import gc
import subprocess
import sys
from typing import Iterator

import pytest

from stream_guard.collector import YOUNG_THRESHOLD, collect_less_often, settle_warm_heap

COUNTED = """
import gc
from stream_guard.collector import built_to_last
collections = []
gc.callbacks.append(lambda phase, info: collections.append(info["generation"]) if phase == "start" else None)
before = gc.get_threshold()
{body}
print(len(collections), gc.get_threshold() == before, gc.get_freeze_count() > 0)
"""


def counted(body: str) -> str:
    return subprocess.run([sys.executable, "-c", COUNTED.format(body=body)], capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_objects_built_within_are_never_collected_for_and_are_frozen_after() -> None:
    built = "with built_to_last():\n    kept = [[i] for i in range(100_000)]"
    assert counted(built) == "0 True True"
    assert counted("kept = [[i] for i in range(100_000)]").split()[0] != "0"  # outside: collections run


def test_a_block_that_raises_freezes_nothing_and_restores_the_thresholds() -> None:
    failed = ("try:\n    with built_to_last():\n        raise OSError\nexcept OSError:\n    pass")
    assert counted(failed) == "0 True False"


def test_loading_the_spacy_model_freezes_what_it_built() -> None:
    pytest.importorskip("spacy")
    from stream_guard.text import ner

    try:
        model = ner.resolve_model(ner.AUTO_MODEL)
    except ImportError:
        pytest.skip("no spaCy English model installed")
    code = ("import gc\nfrom stream_guard.text import ner\n"
            f"ner._load_spacy({model!r})\nprint(gc.get_freeze_count() > 50_000, gc.get_threshold()[0])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert done.stdout.split() == ["True", "700"]


@pytest.fixture
def restored_collector() -> Iterator[None]:
    """Each test changes this process's collector: put it back as it was."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_young_collections_run_less_often_and_the_older_thresholds_stay(restored_collector: None) -> None:
    gc.set_threshold(700, 7, 9)
    collect_less_often()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 7, 9)


@pytest.mark.parametrize("young", [0, YOUNG_THRESHOLD * 2])
def test_a_switched_off_or_larger_young_threshold_is_kept(young: int, restored_collector: None) -> None:
    gc.set_threshold(young, 10, 10)
    collect_less_often()
    assert gc.get_threshold() == (young, 10, 10)


def test_the_warm_heap_is_left_out_of_later_collections(restored_collector: None) -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    kept = [[]]  # a container: the collector tracks it
    settle_warm_heap()
    assert gc.get_freeze_count() >= 1 and not any(o is kept for o in gc.get_objects())
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD

