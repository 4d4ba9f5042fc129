"""Every use stream-guard makes of Faust's private API, in one module, for the one faust-streaming release it was
written against (SUPPORTED_FAUST, checked when this module is imported: any other release stops with exit 2,
naming both). tests/agents/test_faust_adapter.py asserts that each private name and signature used here still
exists, so an upgrade fails there rather than misbehaving in production. Overridden here, and why:

- the consumer's fetch wait, its commits and the end offsets it believes (below);
- every request of the consumer's and the producer's aiokafka client, observed for the broker link
  (`observe_requests`, agents/broker_link.py);
- the shutdown: bounded by a deadline whatever the broker does, from the worker's own SIGTERM and SIGINT
  handlers on (`GuardWorker`, below);
- acknowledgements: on the service's input topics only the service acknowledges (`releasing()`);
- flow control: the judge's queue is not cleared when flow resumes (`keep_queued_on_resume`, below);
- pausing a table's changelog partitions pauses their fetching too (`_Consumer.pause_partitions`, below);
- the web server: none of Faust's built-in views, and security headers on every response (`GuardApp._new_web`);
- agent failures reach the service (`GuardApp.agent_error_hook`);
- the current event, which routes table reads and writes (`acting_for`);
- a table's per-partition RocksDB databases, for pruning and for pages that have no event (`partition_dbs`,
  `visible_items`);
- the RocksDB store: one memory budget for all of a worker's tables (`SharedMemoryStore`, below).

RocksDB memory. Faust opens one RocksDB database per table and partition, each with its own block cache and its
own memtables: a worker's RocksDB memory then grows with tables x partitions (six tables on four partitions:
24 caches of `rocksdb_block_cache_bytes` and 24 x `rocksdb_max_write_buffers` memtables), and under steady
writes it climbs for many minutes while each memtable and cache fills (issue 17: 5 MiB/min at 40 events/s,
bench/memory_soak.py). Here every database of a process opened through this store shares one LRU block cache
(`rocksdb_block_cache_bytes`) and one write-buffer manager (`rocksdb_memtable_bytes`: RocksDB flushes a
memtable once all of them together pass it), so a worker's RocksDB memory has one bound whatever it holds.

Fetch wait.
faust-streaming 0.15.3 builds its aiokafka consumer with `fetch_max_wait_ms=1500` hard-coded. A broker that
answers a fetch only when that wait ends, rather than when data arrives, then adds up to 1.5 s per hop; the
embedded tansu broker does exactly that for waits of a few hundred milliseconds and more (measured: a
1500 ms wait gives ~550-750 ms per hop on sparse traffic, 100 ms ~25-50 ms, 10-20 ms ~10-20 ms). Two hops (answers, then
the re-keyed topic) would blow any latency budget, so the wait is ours to set (`fetch_max_wait_ms`).
The cost is up to 1000/fetch_max_wait_ms empty fetches a second per idle worker (40/s at the default 25:
about 4 % of a core in the worker and 7 % in the embedded broker, measured idle; 8 % and 12 % at 10 ms);
against a real Kafka cluster, which answers as soon as data arrives, set it to 100-500.

Commits (faust-streaming 0.15.3). A Stream acknowledges a message it *skips* without handing it to the agent:
one taken off its channel while flow is suspended (a rebalance or shutdown under way) or from an older
consumer generation (streams.py, `__aiter__`: "We want to ack the filtered out message otherwise the lag
would increase"). The offset is then committed although the message was never judged, and the next worker
starts past it. And Consumer._new_offset treats the committed offset as the last one processed where Kafka
means the next one to read (`min(acked) - committed > 1`), so an unacknowledged message right at the committed
offset does not stop a commit either. So on the service's input topics only the service acknowledges
(`releasing()`), in order per partition (agents/app.py), and Faust's own acknowledgements are refused.

End offsets. The embedded broker (tansu) answers ListOffsets(latest) with a stale end offset after produce
requests that span several partitions, and it stays stale (measured: 1553 listed while records up to 1580
were acknowledged and readable), while its fetch responses carry the true high watermark. Faust's table
recovery reads its changelogs only up to the listed end (the newest state writes are not restored) and, on a
restart over the same data directory, stops with ConsistencyError ("persisted offset ... higher than
highwater"). `highwaters()` here fetches from the listed end, takes the fetch response's high watermark when
it is higher, and logs that it did.

Queued input kept on resume. Faust (mode's FlowControlEvent.resume) empties every stream's queue whenever flow
resumes, which is right after a revocation (what is queued belongs to the old assignment) but not after a table
restore: then Faust resumes flow and starts the fetcher to read the changelogs, resumes the input partitions, and
seeks them back to their committed offsets while the fetcher still runs. What the fetcher delivers in that
window reaches the judge's queue and moves Faust's read offset on; the seek resets the read offset only once all
partitions are sought, and a delivery still in flight then moves it on again, so the copies fetched again after
the seek are dropped as already read; and the resume that follows empties the queue. The events left in the
queue are then never judged by that worker (tests/agents/test_scaling.py, a worker killed mid-stream: about 3 %
of runs under load timed out so; in one, the copies of 79 events of one partition were dropped), and, never
acknowledged, they stop its commits until the next restart. So the
judge's queue is kept on resume: everything delivered to it is judged (at least once: a copy fetched again after
the seek is judged again), a message of an older generation is still skipped by the stream (its acknowledgement
refused, above), and a revocation, which clears the queues explicitly, still empties it.

Paused changelogs are not fetched. Faust's pause_partitions only stops handing a partition's records to the app:
its aiokafka fetcher goes on listing every assigned partition in every fetch request. A table's changelog
partitions are paused whenever they are not being restored or followed as a standby, which in a running worker
is almost always, so each fetch listed them all (with monitoring on, 13 of 40 partitions per fetch on the
benchmark, bench/request_counts), and a changelog partition that our own table writes reach was fetched until
records came back, which aiokafka then held unread for good and, in the 100 ms after they came, held back every
fetch from that broker (its prefetch backoff). So pausing or resuming a changelog partition does the same in
aiokafka, on the consumer thread (its partition states belong to that thread's loop). Input partitions are left
to Faust as before (their fetching around a restore is what `keep_queued_on_resume` and the seek rely on).

Shutdown. On SIGTERM Faust stops fetching, waits for every message taken to be acknowledged ("Wait for
streams..."), flushes its producer ("Flush producer buffer..."), closes the tables and stops the clients. With
the broker gone, the first two wait for sends that cannot complete: the producer retries until its request
timeout (Faust's default: 20 minutes). So the app gets a deadline when the signal comes (`begin_shutdown`):
waiting for streams and flushing stop there (what was not acknowledged stays uncommitted, and is redelivered to
the next worker), the tables are closed as usual, and a watchdog ends the process at the deadline itself if
anything else still waits on the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from typing import Any, Awaitable, Callable, Iterable, Iterator, Mapping

from stream_guard.errors import ConfigurationError

# The release every override below was written and tested against.
SUPPORTED_FAUST = ("0.15.3",)


class UnsupportedFaust(ConfigurationError):
    """The installed faust-streaming is not the release this module was written against."""


def check_faust_version(installed: str | None = None) -> str:
    """The installed faust-streaming release, if it is a supported one; UnsupportedFaust (exit 2) otherwise."""
    try:
        installed = installed or metadata.version("faust-streaming")
    except metadata.PackageNotFoundError:
        raise UnsupportedFaust("faust-streaming is not installed: the streaming commands need the `stream` extra "
                               "(pip install 'stream-guard[stream]')") from None
    if installed not in SUPPORTED_FAUST:
        raise UnsupportedFaust(f"faust-streaming {installed} is installed, but this stream-guard supports faust-streaming "
                               f"{', '.join(SUPPORTED_FAUST)} only (stream_guard/agents/faust_adapter.py overrides its "
                               f"internals): pip install 'faust-streaming=={SUPPORTED_FAUST[-1]}'")
    return installed


check_faust_version()  # before anything below touches Faust's internals

import aiokafka  # noqa: E402
import faust  # noqa: E402
from aiokafka import TopicPartition  # noqa: E402
from aiokafka.errors import KafkaError  # noqa: E402
import rocksdict  # noqa: E402
from faust.stores import STORES  # noqa: E402
from faust.stores.rocksdb import RocksDBOptions, Store as RocksDBStore  # noqa: E402
from faust.transport.drivers import aiokafka as faust_aiokafka  # noqa: E402
from faust.types import TP  # noqa: E402
from faust.web import drivers as web_drivers  # noqa: E402
from mode.utils.queues import FlowControlEvent  # noqa: E402

from stream_guard.agents.broker_link import BrokerLink  # noqa: E402
from stream_guard.config.stream import StreamSettings  # noqa: E402
from stream_guard.logs import json_handlers  # noqa: E402

log = logging.getLogger(__name__)
# Of the shutdown deadline, kept for what comes after the waits: closing the tables and the clients, and mode's
# own teardown of the event loop (about two seconds of sleeps).
TEARDOWN_S = 3.0


def observe_requests(client: Any, link: BrokerLink | None) -> None:
    """Report every request of an aiokafka client (AIOKafkaClient.send, private) to the broker link: an answer,
    or a connection failure (the exceptions `send` documents: not ready, connection lost, timed out)."""
    if link is None:
        return
    send = client.send

    async def observed(*args: Any, **kwargs: Any) -> Any:
        try:
            response = await send(*args, **kwargs)
        except (KafkaError, OSError, asyncio.TimeoutError) as exc:
            link.failed(exc)
            raise
        link.answered()
        return response

    client.send = observed


async def seek_to_committed_or_start(consumer: aiokafka.AIOKafkaConsumer,
                                     changelogs: Iterable[str] = ()) -> dict[TopicPartition, int | None]:
    """Seek every assigned partition to its committed offset, and an input partition with none to its start.

    aiokafka seeks only partitions whose committed offset is above 0 and leaves the others where the fetcher is.
    Faust seeks while its fetcher may already have run (a restore at start, a rebalance): records fetched in that
    window and dropped (their partition not yet active) have moved the position on, and a partition the group
    never committed would then be read from past them, and the first commit after would make the loss final.
    The group reads from the earliest offset (`consumer_auto_offset_reset`), so a partition with no commit
    starts where a new group would: at its start. At worst that re-reads what was judged and not yet committed
    (at-least-once). Tables' changelog partitions are never committed (their recovery seeks them itself): left
    where they are, as before."""
    committed = await consumer.seek_to_committed()
    skip = frozenset(changelogs)
    uncommitted = [tp for tp, offset in committed.items() if not offset and tp.topic not in skip]
    if uncommitted:
        await consumer.seek_to_beginning(*uncommitted)
    return committed


class _ConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> aiokafka.AIOKafkaConsumer:
        consumer = super()._create_worker_consumer(transport)
        # Read by AIOKafkaConsumer.start() when it builds its fetcher, which happens after this returns.
        consumer._fetch_max_wait_ms = int(getattr(self.app, "fetch_max_wait_ms", 1500))
        observe_requests(consumer._client, getattr(self.app, "broker_link", None))
        return consumer

    async def seek_to_committed(self) -> Mapping[TP, int]:
        changelogs = frozenset(self.app.tables.changelog_topics)
        return await self.call_thread(seek_to_committed_or_start, self._ensure_consumer(), changelogs)

    async def on_thread_stop(self) -> None:
        """aiokafka's Fetcher.close (0.14) cancels a fetch that waits to retry and then awaits it, which raises
        CancelledError out of the consumer's stop: the thread then never reports itself stopped, and the worker
        waits for it forever. That only happens when the broker is gone: close the client, carry on."""
        try:
            await super().on_thread_stop()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the thread itself is being cancelled
            log.info("the consumer stopped while a fetch waited to retry (no broker): closing its connections")
            if self._consumer is not None:
                await self._consumer._client.close()

    async def _commit(self, offsets: Mapping[TP, int]) -> bool:
        """Faust's commit, timed for the worker's metrics (its Monitor times every commit round instead,
        including rounds with nothing to commit)."""
        started = time.monotonic()
        ok = False
        try:
            ok = bool(await super()._commit(offsets))
            return ok
        finally:
            observer = getattr(self.app, "commit_observer", None)
            if observer is not None:
                observer(time.monotonic() - started, ok)

    async def _highwaters(self, partitions: list[TP]) -> Mapping[TP, int]:
        listed = dict(await super()._highwaters(partitions))
        try:
            fetched = await self._fetched_highwaters(partitions, listed)
        except Exception as exc:  # the listed ones are all we have: as Faust would have done
            log.warning("could not check the broker's end offsets by fetching: %r", exc)
            return listed
        for tp, true_end in fetched.items():
            if true_end > (listed.get(tp) or 0):
                log.warning("the broker gave end offset %s for %s[%d], but a fetch shows records up to offset %d: "
                            "using end offset %d (the broker's end offsets go stale after produce requests that "
                            "span partitions)", listed.get(tp), tp.topic, tp.partition, true_end - 1, true_end)
                listed[tp] = true_end
        return listed

    async def _fetched_highwaters(self, partitions: Iterable[TP], listed: Mapping[TP, int]) -> dict[TP, int]:
        """The high watermark of each partition as a fetch response gives it: a throwaway consumer (no group)
        fetches once from the listed end, which costs at most one record batch per partition."""
        tps = [TopicPartition(tp.topic, tp.partition) for tp in partitions]
        if not tps:
            return {}
        conf = self.app.conf
        transport = self.transport
        probe = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=faust_aiokafka.server_list(transport.url, transport.default_port),
            client_id=f"{conf.broker_client_id}-end-offsets", enable_auto_commit=False,
            # Not 0: the embedded broker then answers no fetch at all (measured).
            request_timeout_ms=int(conf.broker_request_timeout * 1000.0),
            fetch_max_wait_ms=int(getattr(self.app, "fetch_max_wait_ms", 25)),
            max_partition_fetch_bytes=1024, isolation_level="read_uncommitted",
            **faust_aiokafka.credentials_to_aiokafka_auth(conf.broker_credentials, conf.ssl_context),
        )
        await probe.start()
        try:
            probe.assign(tps)
            for tp in tps:
                probe.seek(tp, max(0, int(listed.get(TP(tp.topic, tp.partition)) or 0)))
            out: dict[TP, int] = {}
            for _ in range(10):  # a response per partition usually comes with the first fetch
                await probe.getmany(*tps, timeout_ms=500, max_records=1)
                for tp in tps:
                    highwater = probe.highwater(tp)
                    if highwater is not None:
                        out[TP(tp.topic, tp.partition)] = int(highwater)
                if len(out) == len(tps):
                    break
            return out
        finally:
            await probe.stop()


def set_fetching(consumer: aiokafka.AIOKafkaConsumer, tps: Iterable[TopicPartition], fetch: bool) -> None:
    """Resume (fetch) or pause the fetching of those of `tps` still assigned to `consumer`."""
    assigned = consumer.assignment()
    mine = [tp for tp in tps if tp in assigned]
    if mine:
        (consumer.resume if fetch else consumer.pause)(*mine)


class _Consumer(faust_aiokafka.Consumer):
    _releasing: bool = False
    refused_acks: int = 0

    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    def pause_partitions(self, tps: Iterable[TP]) -> None:
        tpset = set(tps)
        super().pause_partitions(tpset)
        self._fetch_changelogs(tpset, fetch=False)

    def resume_partitions(self, tps: Iterable[TP]) -> None:
        tpset = set(tps)
        super().resume_partitions(tpset)
        self._fetch_changelogs(tpset, fetch=True)

    def _fetch_changelogs(self, tps: set[TP], fetch: bool) -> None:
        """Pause or resume the fetching of the changelog partitions among `tps` (see the module docstring), in
        the order asked, on the consumer thread; a partition no longer assigned by then is left alone."""
        changelogs = self.app.tables.changelog_topics
        wanted = [TopicPartition(tp.topic, tp.partition) for tp in tps if tp.topic in changelogs]
        thread = self._thread
        consumer = thread._consumer
        loop = thread.thread_loop
        if not wanted or consumer is None or loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the thread's loop closed meanwhile: nothing left to fetch
            loop.call_soon_threadsafe(set_fetching, consumer, wanted, fetch)

    @contextlib.contextmanager
    def releasing(self) -> Iterator[None]:
        """Acknowledgements made inside this block are the service's own: they count."""
        self._releasing = True
        try:
            yield
        finally:
            self._releasing = False

    async def wait_empty(self) -> None:
        """Faust's wait for every message taken to be acknowledged, until the shutdown deadline at most."""
        remaining = shutdown_remaining(self.app)
        if remaining is None:
            return await super().wait_empty()
        if not self._unacked_messages:
            return None
        try:
            await asyncio.wait_for(super().wait_empty(), remaining)
        except asyncio.TimeoutError:
            log.warning("shutdown: %d input message(s) taken and not yet acknowledged (their sends wait for a broker "
                        "that does not answer) stay uncommitted, for the next worker", len(self._unacked_messages))
        return None

    def ack(self, message: Any) -> bool:
        if not self._releasing and message.topic in getattr(self.app, "guarded_topics", ()):
            # Faust acknowledging a message it skipped (see the module docstring): it stays unacknowledged,
            # so it is neither committed nor lost; the next fetch from the committed offset brings it again.
            self.refused_acks += 1
            if self.refused_acks & (self.refused_acks - 1) == 0:  # 1st, 2nd, 4th, 8th...: a trail, not a flood
                log.info("refused Faust's acknowledgement of %s[%d]@%d, a message it skipped without handing it "
                         "to the service (%d so far); it stays uncommitted", message.topic, message.partition,
                         message.offset, self.refused_acks)
            return False
        return bool(super().ack(message))


class _Producer(faust_aiokafka.Producer):
    def _new_producer(self, transactional_id: str | None = None) -> aiokafka.AIOKafkaProducer:
        producer = super()._new_producer(transactional_id)
        observe_requests(producer.client, getattr(self.app, "broker_link", None))
        return producer

    async def on_stop(self) -> None:
        """aiokafka's stop delivers what is buffered first, retrying until the request timeout: until the
        shutdown deadline at most (what is left was never acknowledged, so nothing counts it as sent)."""
        remaining = shutdown_remaining(self.app)
        if remaining is None:
            return await super().on_stop()
        try:
            await asyncio.wait_for(super().on_stop(), remaining)
        except asyncio.TimeoutError:
            # Faust's buffer of table changelog writes would fail its own flush next ("Producer not Running"):
            # those writes are lost with the broker; their inputs were never committed, so they are made again.
            dropped = self.buffer.pending.qsize()
            self.buffer.pending = asyncio.Queue()
            log.warning("shutdown: the producer stopped with messages the broker never acknowledged (%d table "
                        "changelog write(s) dropped; their inputs stay uncommitted)", dropped)


class _Transport(faust_aiokafka.Transport):
    Consumer = _Consumer
    Producer = _Producer


class _FlowControl(FlowControlEvent):
    """Faust's flow control, except that a resume leaves the queues in `kept` as they are (see the module
    docstring); an explicit `clear()` (a revocation) still empties every queue."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kept: weakref.WeakSet[Any] = weakref.WeakSet()

    def resume(self) -> None:
        self._suspend.clear()
        self._resume.set()
        for queue in self._queues:
            if queue not in self.kept:
                queue.clear()


def keep_queued_on_resume(app: faust.App, stream: faust.StreamT) -> None:
    """Messages queued for `stream` survive a resume of flow (see the module docstring)."""
    app.flow_control.kept.add(stream.channel.queue)


class GuardApp(faust.App):
    """faust.App with `fetch_max_wait_ms` applied to its consumer, and a hook for agent failures (Faust
    passes every agent its App's error handler, so an agent's own `on_error` cannot be given)."""

    fetch_max_wait_ms: int = 25
    agent_error_hook: Callable[[Any, BaseException], Awaitable[None]] | None = None
    # Input topics whose messages only the service itself acknowledges (see _Consumer.ack).
    guarded_topics: frozenset[str] = frozenset()
    # Called after every offset commit with (seconds it took, whether it succeeded).
    commit_observer: Callable[[float, bool], None] | None = None
    # What every request of the clients reports to (agents/broker_link.py).
    broker_link: BrokerLink | None = None
    # Monotonic time by which the waits of a shutdown give up (see the module docstring); None while running.
    shutdown_deadline: float | None = None

    def __init__(self, id: str, *, fetch_max_wait_ms: int = 25, **options: Any) -> None:
        self.fetch_max_wait_ms = fetch_max_wait_ms
        super().__init__(id, **options)

    async def _on_agent_error(self, agent: Any, exc: BaseException) -> None:
        await super()._on_agent_error(agent, exc)
        if self.agent_error_hook is not None:
            await self.agent_error_hook(agent, exc)

    def _new_transport(self) -> Any:
        return _Transport(self.conf.broker_consumer, self)

    @functools.cached_property
    def flow_control(self) -> _FlowControl:  # type: ignore[override]
        return _FlowControl(loop=self.loop)

    def begin_shutdown(self, timeout_s: float) -> None:
        """A shutdown has begun and must end within `timeout_s`: the waits give up TEARDOWN_S before then, and a
        watchdog thread ends the process at the deadline if it is still there (a last resort: RocksDB keeps its
        write-ahead log, and nothing unacknowledged was committed)."""
        if self.shutdown_deadline is not None:
            return
        started = time.monotonic()
        self.shutdown_deadline = started + max(0.0, timeout_s - TEARDOWN_S)

        def watchdog() -> None:
            time.sleep(timeout_s)
            log.critical("shutdown took longer than %g s (something still waits on the broker): exiting now", timeout_s)
            logging.shutdown()
            os._exit(1)

        threading.Thread(target=watchdog, name="stream-guard-shutdown-deadline", daemon=True).start()

    async def _producer_flush(self, logger: Any) -> None:
        remaining = shutdown_remaining(self)
        if remaining is None:
            return await super()._producer_flush(logger)
        try:
            await asyncio.wait_for(super()._producer_flush(logger), remaining)
        except asyncio.TimeoutError:
            log.warning("shutdown: Faust's producer buffer was not flushed (the broker does not answer)")

    def _new_web(self) -> Any:
        """Faust's web driver without any built-in view: /table/<name>/<key> would serve any tenant's stored
        state, and /router/, /table/, /stats/, /graph/ and / describe tables, partitions and workers. Only the
        pages this service adds (app.page) are served."""
        base = web_drivers.by_url(self.conf.web)
        web = type("GuardWeb", (base,), {
            "default_blueprints": [], "production_blueprints": [], "debug_blueprints": [],
            "optional_blueprints": [],
        })(self)
        # Every response, /metrics, /healthz and aiohttp's own error pages included (aiohttp's Application,
        # private to Faust's driver, is the one place that sees them all).
        web.web_app.on_response_prepare.append(_security_headers)
        return web


class GuardWorker(faust.Worker):
    """faust.Worker whose SIGTERM and SIGINT (mode's private handlers) start the bounded shutdown, and whose log
    set-up keeps JSON lines JSON."""

    json_logs = False
    shutdown_timeout_s = 20.0

    def _on_sigterm(self) -> None:
        self.app.begin_shutdown(self.shutdown_timeout_s)  # bounded, whatever the broker does
        super()._on_sigterm()

    def _on_sigint(self) -> None:
        self.app.begin_shutdown(self.shutdown_timeout_s)
        super()._on_sigint()

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        # Faust's terminal spinner sets the root logger to DEBUG so that it can spin on every record: every
        # aiokafka debug call then builds a LogRecord only for the handler to drop it (~5 % of a busy
        # worker's CPU, measured). Without the spinner the root logger keeps the level asked for.
        self.spinner = None
        if self.json_logs:  # mode has just installed its own (coloured) handler on the root logger
            json_handlers(logger)


# What every response carries (the dashboard's pages set their own, stricter, on top: agents/monitor.py).
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "Cache-Control": "no-store",
}


async def _security_headers(request: Any, response: Any) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


def shutdown_remaining(app: Any) -> float | None:
    """Seconds the waits of a shutdown in progress have left; None when no shutdown is under way, 0 when the broker
    link is lost (nothing a wait is for can happen without a broker)."""
    deadline = getattr(app, "shutdown_deadline", None)
    if deadline is None:
        return None
    link = getattr(app, "broker_link", None)
    if link is not None and link.state() == "lost":
        return 0.0
    return max(0.0, deadline - time.monotonic())


def raw_schema() -> faust.Schema:
    """Bytes in, bytes out. A fresh Schema per topic: Faust updates a Schema in place when a table or topic
    is built from it (a table would turn a shared one's key serializer into json)."""
    return faust.Schema(key_serializer="raw", value_serializer="raw")


@contextlib.contextmanager
def acting_for(event: faust.EventT) -> Iterator[None]:
    """Make `event` Faust's current event while touching tables.

    Faust routes every table read and write (the RocksDB partition file and the changelog partition) by
    the *current event's* partition. Our batches are judged outside the stream's own iteration, where
    there is no current event (or the wrong one), so we set it explicitly, per key, and restore it after. This
    is the private ContextVar behind `faust.current_event()`.
    """
    token = faust.streams._current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        faust.streams._current_event.reset(token)


@dataclass(frozen=True)
class RocksDBMemory:
    """The RocksDB memory every table partition of a process shares: one LRU block cache and one write-buffer
    manager (RocksDB flushes the memtable being written once all memtables together pass its limit)."""

    cache: Any  # rocksdict.Cache
    write_buffers: Any  # rocksdict.WriteBufferManager
    block_cache_bytes: int  # the cache's capacity (rocksdict's Cache can set it, not read it back)

    def usage(self) -> dict[str, int]:
        """Bytes in use now: cached blocks, and memtables (counted as the arena memory they hold)."""
        return {"block_cache": self.cache.get_usage(), "memtables": self.write_buffers.get_usage()}

    def limits(self) -> dict[str, int]:
        """The budgets `usage()` is held to, by the same names."""
        return {"block_cache": self.block_cache_bytes, "memtables": self.write_buffers.get_buffer_size()}


@lru_cache(maxsize=None)
def rocksdb_memory(block_cache_bytes: int, memtable_bytes: int) -> RocksDBMemory:
    """One budget per process and setting (a worker has one), shared by every database opened with it."""
    return RocksDBMemory(rocksdict.Cache(block_cache_bytes), rocksdict.WriteBufferManager(memtable_bytes, False),
                         block_cache_bytes)


class _SharedMemoryOptions(RocksDBOptions):
    """Faust's rocksdict options (faust/stores/rocksdb.py `as_options`), with the shared cache and write-buffer
    manager in place of a new block cache per database."""

    def __init__(self, memory: RocksDBMemory, **options: Any) -> None:
        super().__init__(**options)
        self.memory = memory

    def as_options(self) -> Any:
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_max_open_files(self.max_open_files)
        options.set_write_buffer_size(self.write_buffer_size)
        options.set_target_file_size_base(self.target_file_size_base)
        options.set_max_write_buffer_number(self.max_write_buffer_number)
        options.set_write_buffer_manager(self.memory.write_buffers)
        table = rocksdict.BlockBasedOptions()
        table.set_bloom_filter(self.bloom_filter_size, block_based=True)
        table.set_block_cache(self.memory.cache)
        table.set_index_type(rocksdict.BlockBasedIndexType.binary_search())
        options.set_block_based_table_factory(table)
        return options


class SharedMemoryStore(RocksDBStore):
    """Faust's RocksDB store (rocksdict driver) whose databases share the RocksDBMemory in their options."""

    def __init__(self, url: Any, app: Any, table: Any, *, options: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> None:
        options = dict(options or {})
        memory = options.pop("memory")
        super().__init__(url, app, table, options=options, **kwargs)
        self.rocksdb_options = _SharedMemoryOptions(memory, **self.options, use_rocksdict=True)


# The app's `store` URL scheme for SharedMemoryStore (Faust looks stores up by scheme).
STORE_SCHEME = "guard-rocksdb"
STORES.aliases.setdefault(STORE_SCHEME, f"{__name__}:SharedMemoryStore")


def rocksdb_options(settings: StreamSettings) -> dict[str, Any]:
    """A table's options for SharedMemoryStore. Faust's defaults (2 GiB block cache, 64 MiB write buffers x3)
    are sized for a dedicated server per partition; a fingerprint history is a few KiB per question. A fresh
    dict per table: Faust's store pops keys from the mapping it is given."""
    return {
        "driver": "rocksdict",
        "memory": rocksdb_memory(settings.rocksdb_block_cache_bytes, settings.rocksdb_memtable_bytes),
        "write_buffer_size": settings.rocksdb_write_buffer_bytes,
        "max_write_buffer_number": settings.rocksdb_max_write_buffers,
        "target_file_size_base": 8 * settings.rocksdb_write_buffer_bytes,
        "max_open_files": settings.rocksdb_max_open_files,
    }


def partition_dbs(table: faust.Table) -> dict[int, Any]:
    """A table's RocksDB databases by partition (the store keeps one per partition, in `_dbs`): for reads and
    deletes that have no stream event to route them (pruning, dashboard pages)."""
    return dict(getattr(table.data, "_dbs", {}))


def visible_items(table: faust.Table, db: Any) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) of one partition's database, as the store lists them (a RocksDB iterator reads a
    snapshot, so deleting behind it is safe)."""
    items: Iterator[tuple[bytes, bytes]] = table.data._visible_items(db)
    return items
