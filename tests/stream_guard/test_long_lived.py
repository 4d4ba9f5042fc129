"""built_to_last: no automatic collection within, thresholds restored, everything tracked frozen on success only;
each case in a fresh interpreter (freezing is for the whole process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

COUNTED = """
import gc
from stream_guard.long_lived import built_to_last
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
