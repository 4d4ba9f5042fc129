"""Structured JSON logs for the "stream_guard" logger tree.

Every record becomes one JSON object per line: time (UTC, ISO-8601), level, logger, msg, plus every
`extra=` field the caller attached (the detector attaches the full report to its flagged warning), so a
log pipeline can index findings without parsing prose.
"""

from __future__ import annotations

import logging
import sys
from datetime import datetime, timezone
from typing import IO, Any

import orjson

LOGGER_NAME = "stream_guard"

# Attributes every LogRecord has; anything else on a record came from `extra=` and is worth emitting.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        # default=str: a caller's odd extra (a Path, an enum) must never make logging itself raise.
        return orjson.dumps(payload, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


class _GuardHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler this module installed, so reconfiguring replaces it instead of stacking."""


def configure_logging(level: int = logging.WARNING, stream: IO[str] | None = None) -> logging.Handler:
    """Install the JSON formatter on the "stream_guard" logger; call once at startup (repeat calls replace).

    The logger stops propagating to the root logger so each record is written once, as JSON.
    """
    logger = logging.getLogger(LOGGER_NAME)
    for handler in [h for h in logger.handlers if isinstance(h, _GuardHandler)]:
        logger.removeHandler(handler)
    handler = _GuardHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return handler
