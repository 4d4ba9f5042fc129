"""Reading request bodies within their limits: a body over its limit is refused (413) as soon as that is known,
from its Content-Length before any of it is read, or while it arrives, never after reading it whole; a streamed
body is read line by line, each line within its own limit."""

from __future__ import annotations

from typing import Any

from aiohttp import StreamReader

from stream_guard.wire.inline import Failure


class Refused(Exception):
    """A request answered with an error: its status and the Failure that says why."""

    def __init__(self, status: int, failure: Failure, headers: dict[str, str] | None = None) -> None:
        super().__init__(failure.error)
        self.status, self.failure, self.headers = status, failure, headers or {}


def refusal(status: int, field: str, reason: str, stage: str = "request", **more: Any) -> Refused:
    return Refused(status, Failure(error=f"{field}: {reason}", field=field, reason=reason, stage=stage),  # type: ignore[arg-type]
                   **more)


def too_large(limit: int, size: int | None = None) -> Refused:
    """The message decode_event gives an event over `limits.max_event_bytes`, as 413."""
    said = f"payload is {size} bytes" if size is not None else "payload is"
    return refusal(413, "$", f"{said}, over the limit of {limit}" if size is not None else
                   f"{said} over the limit of {limit} bytes")


async def read_body(content: StreamReader, length: int | None, limit: int) -> bytes:
    """The whole body, or Refused(413) once it is known to be over `limit` bytes."""
    if length is not None and length > limit:
        raise too_large(limit, length)
    parts: list[bytes] = []
    size = 0
    async for data in content.iter_any():
        size += len(data)
        if size > limit:
            raise too_large(limit)
        parts.append(data)
    return b"".join(parts)


class Lines:
    """The lines of a body that arrives over time (newline-delimited; the last may lack its newline)."""

    def __init__(self, content: StreamReader) -> None:
        self.content = content
        self.buffer = bytearray()
        self.ended = False

    async def next(self, limit: int) -> bytes | None:
        """The next line without its newline; None at the end of the body. Refused(413) when a line runs past
        `limit` bytes."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                if end > limit:
                    raise too_large(limit)
                line = bytes(self.buffer[:end])
                del self.buffer[:end + 1]
                return line.rstrip(b"\r")
            if len(self.buffer) > limit:
                raise too_large(limit)
            if self.ended:
                if not self.buffer:
                    return None
                line = bytes(self.buffer)
                self.buffer.clear()
                return line.rstrip(b"\r")
            data = await self.content.readany()
            if not data:
                self.ended = True
            self.buffer += data
