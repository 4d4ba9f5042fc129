"""Checks over HTTP against `stream-guard serve`, on keep-alive connections (aiohttp).

    async with GuardClient("http://127.0.0.1:8080", on_timeout="fallback") as guard:
        result = await guard.check(event, timeout=0.05)          # GuardResult: deliver result.answer
        async for line in guard.check_stream(event_without_answer, llm_chunks, timeout=0.5):
            ...                                                  # StreamedSentence..., then a GuardResult

A slow, unreachable or failing service (timeout, connection error, 5xx) gets the caller's policy (result.py); an
event that breaks the contract raises EventError with the service's field and reason (422, 413), a refused token
ConfigurationError (401, 403).
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterable, AsyncIterator, Iterable, Mapping

import aiohttp
import msgspec
import orjson
from prometheus_client import CollectorRegistry

from stream_guard.client.result import GuardResult, Policy, answer_of, event_bytes
from stream_guard.errors import ConfigurationError, InternalError
from stream_guard.wire.events import EventError
from stream_guard.wire.inline import Failure, StreamedSentence, StreamedVerdict, decode_stream_line
from stream_guard.wire.verdict import decode_verdict

JSON, NDJSON = "application/json", "application/x-ndjson"
DEFAULT_URL = "http://127.0.0.1:8080"
UNANSWERED = (500, 502, 503, 504)  # the service could not check: the policy decides
_END = object()


class GuardClient:
    """Async client of `stream-guard serve`. `timeout` (seconds) is the default of each call's."""

    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None, on_timeout: str = "deliver",
                 fallback_message: str | None = None, registry: CollectorRegistry | None = None,
                 timeout: float = 1.0, connections: int = 32) -> None:
        self.url = url.rstrip("/")
        self.policy = Policy("http", on_timeout, fallback_message, registry)
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None

    @property
    def registry(self) -> CollectorRegistry:
        return self.policy.registry

    async def start(self) -> "GuardClient":
        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers=self._headers, connector=aiohttp.TCPConnector(limit=self._connections),
                timeout=aiohttp.ClientTimeout(total=None))
        return self

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> "GuardClient":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise InternalError("GuardClient is not started: use `async with GuardClient(...)` or `await start()`")
        return self._session

    async def check(self, event: Mapping[str, Any] | bytes | Any, timeout: float | None = None) -> GuardResult:
        """The verdict on one event, or the policy's result when none came within `timeout` seconds."""
        payload = event_bytes(event)
        try:
            async with asyncio.timeout(self.timeout if timeout is None else timeout):
                async with self.session.post(f"{self.url}/v1/check", data=payload,
                                             headers={"Content-Type": JSON}) as response:
                    status, body = response.status, await response.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return self.policy.unanswered(answer_of(payload), _unreachable(exc))
        if status == 200:
            return self.policy.checked(decode_verdict(body))
        return self.policy.unanswered(answer_of(payload), _refused(status, body))

    async def check_stream(self, event: Mapping[str, Any] | bytes | Any,
                           chunks: AsyncIterable[str] | Iterable[str], *, timeout: float | None = None
                           ) -> AsyncIterator[StreamedSentence | GuardResult]:
        """Send the answer's chunks as they come and yield each sentence as the service releases it
        (StreamedSentence: show its `text`), then one GuardResult: the verdict on the whole answer, or the
        policy's result when the service did not answer within `timeout` seconds of the last chunk (then
        `unreleased` is the answer's text after the last sentence released)."""
        wait = self.timeout if timeout is None else timeout
        sent: list[str] = []
        queued: asyncio.Queue[str | None] = asyncio.Queue()
        finished = asyncio.Event()
        lines: asyncio.Queue[Any] = asyncio.Queue()

        async def pump() -> None:  # the caller's chunks, kept whatever becomes of the request
            async for chunk in _aiter(chunks):
                sent.append(chunk)
                queued.put_nowait(chunk)
            queued.put_nowait(None)

        async def body() -> AsyncIterator[bytes]:
            yield event_bytes(event) + b"\n"
            while (chunk := await queued.get()) is not None:
                yield orjson.dumps({"text": chunk}) + b"\n"
            finished.set()

        pumping = asyncio.ensure_future(pump())
        exchange = asyncio.ensure_future(self._exchange(body(), lines))
        end = 0
        try:
            while True:
                item = await _next(lines, finished, wait)
                if isinstance(item, bytes):
                    line = decode_stream_line(item)
                    if isinstance(line, StreamedSentence):
                        end = line.end
                        yield line
                        continue
                    if isinstance(line, StreamedVerdict):
                        yield self.policy.checked(line.verdict)
                        return
                    reason = _failed(line.failure)
                elif isinstance(item, tuple):
                    reason = _refused(*item)
                else:
                    reason = _unreachable(item) if isinstance(item, BaseException) else "the stream ended early"
                await pumping  # the rest of the answer, to deliver or to hold back
                answer = "".join(sent)
                yield self.policy.unanswered(answer, reason, answer[end:])
                return
        finally:
            exchange.cancel()
            pumping.cancel()

    async def _exchange(self, body: AsyncIterator[bytes], lines: asyncio.Queue[Any]) -> None:
        """The request, its response's lines into `lines`; then _END, or (status, body), or the exception."""
        try:
            async with self.session.post(f"{self.url}/v1/check/stream", data=body,
                                         headers={"Content-Type": NDJSON}) as response:
                if response.status != 200:
                    lines.put_nowait((response.status, await response.read()))
                    return
                buffer = bytearray()
                async for data in response.content.iter_any():
                    buffer += data
                    while (cut := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:cut])
                        del buffer[:cut + 1]
                        if line.strip():
                            lines.put_nowait(line)
                if buffer.strip():
                    lines.put_nowait(bytes(buffer))
            lines.put_nowait(_END)
        except Exception as exc:
            lines.put_nowait(exc)


async def _next(lines: asyncio.Queue[Any], finished: asyncio.Event, timeout: float) -> Any:
    """The next item of the exchange: waited for without limit while chunks are still being sent, then for at
    most `timeout` seconds (a TimeoutError is returned, as the exchange returns its exceptions)."""
    get = asyncio.ensure_future(lines.get())
    try:
        if not finished.is_set():
            done_sending = asyncio.ensure_future(finished.wait())
            await asyncio.wait({get, done_sending}, return_when=asyncio.FIRST_COMPLETED)
            done_sending.cancel()
            if get.done():
                return get.result()
        try:
            return await asyncio.wait_for(asyncio.shield(get), timeout)
        except TimeoutError as exc:
            return exc
    finally:
        get.cancel()


async def _aiter(chunks: AsyncIterable[str] | Iterable[str]) -> AsyncIterator[str]:
    """Any iterator of chunks as an async one; a blocking one (an LLM client's stream) is read in a thread, so
    the event loop never waits on it."""
    if isinstance(chunks, AsyncIterable):
        async for chunk in chunks:
            yield chunk
    elif isinstance(chunks, (list, tuple)):
        for chunk in chunks:
            yield chunk
    else:
        iterator = iter(chunks)
        done = object()
        while (chunk := await asyncio.to_thread(next, iterator, done)) is not done:
            yield chunk  # type: ignore[misc]


def _unreachable(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer from the service in time"
    return f"the service could not be reached: {type(exc).__name__}: {exc}"


def _failed(failure: Failure) -> str:
    """A Failure the service answered with: raised when the event is at fault, else the policy's reason."""
    if failure.stage == "decode":
        raise EventError(failure.field, failure.reason)
    return f"the service could not check it ({failure.stage}): {failure.error}"


def _refused(status: int, body: bytes) -> str:
    """A status other than 200: an event at fault or a refused token raise; the rest is the policy's reason."""
    try:
        failure: Failure | None = msgspec.json.decode(body, type=Failure)
    except (msgspec.DecodeError, msgspec.ValidationError):
        failure = None
    said = failure.error if failure is not None else body[:200].decode("utf-8", "replace")
    if status in (413, 422) and failure is not None:
        raise EventError(failure.field, failure.reason)
    if status in (401, 403):
        raise ConfigurationError(f"the service refused the token ({status}): {said}")
    if status in UNANSWERED:
        return f"the service answered {status}: {said}"
    raise InternalError(f"the service answered {status}: {said}")
