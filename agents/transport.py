"""A Faust App whose Kafka consumer long-polls for a configurable time instead of a fixed 1.5 s.

faust-streaming 0.15.3 builds its aiokafka consumer with `fetch_max_wait_ms=1500` hard-coded. A broker that
answers a fetch only when that wait ends, rather than when data arrives, then adds up to 1.5 s per hop; the
embedded tansu broker does exactly that for waits of a few hundred milliseconds and more (measured: a
1500 ms wait gives ~550-750 ms per hop on sparse traffic, 100 ms ~25-50 ms, 10-20 ms ~10-20 ms). Two hops (answers, then
the re-keyed topic) would blow any latency budget, so the wait is ours to set (`fetch_max_wait_ms`).
The cost is up to 1000/fetch_max_wait_ms empty fetches a second per idle worker (40/s at the default 25:
about 4 % of a core in the worker and 7 % in the embedded broker, measured idle; 8 % and 12 % at 10 ms);
against a real Kafka cluster, which answers as soon as data arrives, set it to 100-500.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import aiokafka
import faust
from faust.transport.drivers import aiokafka as faust_aiokafka


class _ConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> aiokafka.AIOKafkaConsumer:
        consumer = super()._create_worker_consumer(transport)
        # Read by AIOKafkaConsumer.start() when it builds its fetcher, which happens after this returns.
        consumer._fetch_max_wait_ms = int(getattr(self.app, "fetch_max_wait_ms", 1500))
        return consumer


class _Consumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _Transport(faust_aiokafka.Transport):
    Consumer = _Consumer


class GuardApp(faust.App):
    """faust.App with `fetch_max_wait_ms` applied to its consumer, and a hook for agent failures (Faust
    passes every agent its App's error handler, so an agent's own `on_error` cannot be given)."""

    fetch_max_wait_ms: int = 25
    agent_error_hook: Callable[[Any, BaseException], Awaitable[None]] | None = None

    def __init__(self, id: str, *, fetch_max_wait_ms: int = 25, **options: Any) -> None:
        self.fetch_max_wait_ms = fetch_max_wait_ms
        super().__init__(id, **options)

    async def _on_agent_error(self, agent: Any, exc: BaseException) -> None:
        await super()._on_agent_error(agent, exc)
        if self.agent_error_hook is not None:
            await self.agent_error_hook(agent, exc)

    def _new_transport(self) -> Any:
        return _Transport(self.conf.broker_consumer, self)
