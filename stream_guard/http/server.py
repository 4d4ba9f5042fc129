"""Run `stream-guard serve`: the judge processes, the drift store, the HTTP server, and a graceful stop.

Start: the server listens at once (/healthz answers, /readyz says "starting", checks get 503 with Retry-After)
while the judge processes load their models; then it is ready. SIGTERM or SIGINT: /readyz turns 503, new
requests are refused (503, connection closed), the listening socket closes, requests in flight are answered
(for up to `[serve] shutdown_grace_s`; a streamed answer keeps receiving its chunks), then the judge processes
and the drift store are closed.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from typing import Callable

from aiohttp import web

from stream_guard.config.load import Config
from stream_guard.engine.dispatch import Dispatcher
from stream_guard.engine.history import HistoryTable
from stream_guard.engine.pool import Pool, default_jobs
from stream_guard.errors import ConfigurationError
from stream_guard.http.app import Service

log = logging.getLogger(__name__)


def _say(text: str) -> None:
    print(f"stream-guard serve: {text}", file=sys.stderr, flush=True)


def run(config: Config, announce: Callable[[str], None] = _say) -> int:
    """Serve until SIGTERM or SIGINT; the exit code."""
    logging.basicConfig(level=logging.WARNING, format="[%(asctime)s] [%(levelname)s] %(name)s: %(message)s")
    return asyncio.run(serve(config, announce))


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before any judge process is started: a port in use fails at once."""
    try:
        return socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET,
                                    backlog=1024)
    except OSError as exc:
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


async def serve(config: Config, announce: Callable[[str], None] = _say) -> int:
    settings = config.serve
    sock = listen(settings.host, settings.port)
    processes = settings.processes or default_jobs()
    # The decisions replays make (check, backtest): the quality score's latency part fixed, so an event gets the
    # verdict `stream-guard check` gives it whatever the load on this machine.
    pool = Pool(config.detector, processes=processes, batch_size=settings.batch_max)
    histories = HistoryTable(settings.drift_db)
    try:
        service = Service(config, Dispatcher(pool, histories, batch_max=settings.batch_max))
        runner = web.AppRunner(service.app, handle_signals=False, access_log=None,
                               shutdown_timeout=settings.shutdown_grace_s)
        await runner.setup()
        site = web.SockSite(runner, sock)
        await site.start()
        port = sock.getsockname()[1]
        announce(f"listening on http://{settings.host}:{port} (drift history in {settings.drift_db}; "
                 f"{'bearer tokens required' if service.tokens.required else 'no tokens configured: open'})")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        stopping = asyncio.ensure_future(stop.wait())
        loading = asyncio.ensure_future(loop.run_in_executor(None, pool.wait_ready))
        await asyncio.wait({stopping, loading}, return_when=asyncio.FIRST_COMPLETED)
        if loading.done():
            loading.result()  # a judge that could not start ends the command here
            service.ready = True
            announce(f"ready: {pool.processes} judge process(es), NER {pool.ner_backend}")
        await stopping
        service.draining = True
        announce(f"stopping: answering the requests in flight (up to {settings.shutdown_grace_s:g} s)")
        # Not listening any more, but every open connection still read: aiohttp's own shutdown stops reading
        # them, which would starve a streamed answer whose chunks are still coming.
        await site.stop()
        try:
            await asyncio.wait_for(service.finished(), settings.shutdown_grace_s)
        except TimeoutError:
            announce(f"{service.active} request(s) still open after {settings.shutdown_grace_s:g} s: closing them")
        await runner.cleanup()
        await service.dispatcher.drain()
        announce("stopped")
        return 0
    finally:
        pool.close()
        histories.close()
        sock.close()
