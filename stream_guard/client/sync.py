"""The clients for code without an event loop: each runs its async client on an event loop of its own, in a
daemon thread, so a Flask view or a script calls `check` like any function.

    with SyncGuardClient("http://127.0.0.1:8080", on_timeout="fallback") as guard:
        result = guard.check(event, timeout=0.05)
        for line in guard.check_stream(event_without_answer, llm_chunks):   # any iterator of chunks
            ...
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, AsyncIterator, Coroutine, Iterable, Iterator, Mapping, TypeVar

from prometheus_client import CollectorRegistry

from stream_guard.client.http import DEFAULT_URL, GuardClient
from stream_guard.client.kafka import KafkaGuardClient
from stream_guard.client.result import GuardResult
from stream_guard.wire.inline import StreamedSentence

T = TypeVar("T")


class _Loop:
    """An event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="stream-guard-client", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def iterate(self, iterator: AsyncIterator[T]) -> Iterator[T]:
        try:
            while True:
                try:
                    yield self.run(iterator.__anext__())  # type: ignore[arg-type]
                except StopAsyncIteration:
                    return
        finally:
            self.run(iterator.aclose())  # type: ignore[attr-defined]

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
        self.loop.close()


class _Sync:
    """An async client run on a loop of its own: what both sync clients share."""

    def __init__(self, client: GuardClient | KafkaGuardClient) -> None:
        self._loop = _Loop()
        self._client = client
        try:
            self._loop.run(client.start())
        except BaseException:
            self._loop.close()
            raise

    @property
    def registry(self) -> CollectorRegistry:
        return self._client.registry

    def check(self, event: Mapping[str, Any] | bytes | Any, timeout: float | None = None) -> GuardResult:
        return self._loop.run(self._client.check(event, timeout))

    def close(self) -> None:
        self._loop.run(self._client.close())
        self._loop.close()

    def __enter__(self) -> "_Sync":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncGuardClient(_Sync):
    """GuardClient (client/http.py) for synchronous code; the same arguments."""

    _client: GuardClient

    def __init__(self, url: str = DEFAULT_URL, **options: Any) -> None:
        super().__init__(GuardClient(url, **options))

    def check_stream(self, event: Mapping[str, Any] | bytes | Any, chunks: Iterable[str], *,
                     timeout: float | None = None) -> Iterator[StreamedSentence | GuardResult]:
        return self._loop.iterate(self._client.check_stream(event, chunks, timeout=timeout))


class SyncKafkaGuardClient(_Sync):
    """KafkaGuardClient (client/kafka.py) for synchronous code; the same arguments."""

    def __init__(self, broker: str, **options: Any) -> None:
        super().__init__(KafkaGuardClient(broker, **options))
