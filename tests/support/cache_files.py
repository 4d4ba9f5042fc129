"""A cache file of a test's own, for the modules that keep one per process (text/regex_cache.py,
text/generated_code.py): each test starts from an empty directory and leaves the process's file as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from stream_guard.text.cache_file import CacheFile


def own_cache_file(module: ModuleType, prefix: str, tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point `module`'s cache file at an empty directory under `tmp_path`; yield the cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    file = CacheFile(module.cache_file, module.MAX_ENTRIES, prefix=prefix)
    monkeypatch.setattr(module, "_FILE", file)  # the process's own is back afterwards
    yield tmp_path / "stream-guard"
    file.reset()  # nothing of this test's is written at exit
