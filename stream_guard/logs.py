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


def json_handlers(logger: logging.Logger | None = None) -> None:
    """Give every handler of `logger` (the root logger by default) and of the "stream_guard" tree the JSON
    formatter: whatever a library logs through them comes out as JSON too."""
    root = logger or logging.getLogger()
    for handler in [*root.handlers, *logging.getLogger(LOGGER_NAME).handlers]:
        handler.setFormatter(JsonFormatter())


def use_json_logs(level: int | str = logging.INFO, stream: IO[str] | None = None) -> None:
    """The whole process logs JSON: one root handler (stdout by default) with the JSON formatter, Python's
    warnings routed through logging, and an uncaught exception logged as one JSON record, not a traceback."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stdout)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    json_handlers(root)
    logging.captureWarnings(True)

    def log_uncaught(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, exc, tb)
            return
        logging.getLogger(LOGGER_NAME).critical("uncaught exception", exc_info=(kind, exc, tb))

    sys.excepthook = log_uncaught
