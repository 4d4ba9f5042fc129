"""Where the tests find labelled events, relative to the repository (never an absolute path).

`STREAM_GUARD_DATA`, else `../shared/data` beside the repository (a worktree sits beside main: the data sits
beside both). A test that only needs some labelled events takes the shipped sample when the data is not there,
so it runs from a fresh clone too.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("STREAM_GUARD_DATA", REPO.parent / "shared" / "data"))
SAMPLE = REPO / "stream_guard" / "samples" / "labelled.jsonl"


def labelled(name: str) -> Path:
    """The labelled file `name` (e.g. "ragtruth_dev"), or the shipped sample when it is not here."""
    path = DATA / f"{name}.jsonl"
    return path if path.exists() else SAMPLE
