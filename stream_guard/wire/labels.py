"""Labels: a person's (or a dataset's) judgement of one delivered answer, joined to verdicts by event_id.

One record per line or message: `{"event_id": "...", "label": 0|1, "grader": "...", "note": "..."}` with
1 = hallucinated, 0 = faithful. Graders send them on the labels topic (the weekly review loop); backtests and
calibration read them from a JSONL file. Validated like events: every error names the field and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import orjson

from stream_guard.wire.events import EventError

MAX_GRADER_CHARS = 128
MAX_NOTE_CHARS = 4_000
MAX_LABEL_BYTES = 64 * 1024


@dataclass(frozen=True)
class Label:
    event_id: str
    label: int  # 1 = hallucinated, 0 = faithful
    grader: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event_id": self.event_id, "label": self.label}
        if self.grader is not None:
            out["grader"] = self.grader
        if self.note is not None:
            out["note"] = self.note
        return out


def _optional_text(obj: Mapping[str, Any], key: str, limit: int) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise EventError(key, f"must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise EventError(key, f"is {len(value)} characters, over the limit of {limit}")
    return value


def parse_label(obj: Any) -> Label:
    if not isinstance(obj, Mapping):
        raise EventError("$", f"a label must be a JSON object, got {type(obj).__name__}")
    event_id = obj.get("event_id")
    if event_id is None:
        raise EventError("event_id", "is required")
    if isinstance(event_id, bool) or not isinstance(event_id, (str, int)) or not str(event_id).strip():
        raise EventError("event_id", "must be a non-empty string")
    value = obj.get("label")
    if value is None:
        raise EventError("label", "is required")
    if isinstance(value, bool) or value not in (0, 1):
        raise EventError("label", f"must be 0 (faithful) or 1 (hallucinated), got {value!r}")
    return Label(str(event_id).strip(), int(value), _optional_text(obj, "grader", MAX_GRADER_CHARS),
                 _optional_text(obj, "note", MAX_NOTE_CHARS))


def decode_label(raw: bytes | str) -> Label:
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > MAX_LABEL_BYTES:
        raise EventError("$", f"payload is {size} bytes, over the limit of {MAX_LABEL_BYTES}")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise EventError("$", f"payload is not valid JSON: {exc}") from None
    return parse_label(obj)


def read_labels(path: str | Path) -> Iterator[tuple[int, Label | EventError]]:
    """(line number, label or the error that line has), blank lines skipped."""
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    yield number, decode_label(line)
                except EventError as exc:
                    yield number, exc


def load_labels(path: str | Path) -> dict[str, Label]:
    """event_id -> label; a later line for the same event wins (a re-grade). Raises on the first bad line."""
    out: dict[str, Label] = {}
    for number, item in read_labels(path):
        if isinstance(item, EventError):
            raise ValueError(f"{path}:{number}: {item}")
        out[item.event_id] = item
    return out
