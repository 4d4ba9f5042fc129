"""The routes of `stream-guard serve`: decode nothing that the judge decodes, call the core, answer.

    POST /v1/check                  one AnswerEvent -> its verdict (the JSON `stream-guard check` writes for it)
    POST /v1/check/batch            a JSON array of events -> one verdict or Failure per event, in order
    POST /v1/check/stream           the event without its answer, then the answer's chunks (NDJSON) -> a line
                                    per sentence as it completes and is checked, then the verdict
    GET  /v1/tenants/{t}/drift      ?question=...: what drift history remembers of a tenant's question
    GET  /healthz /readyz /metrics /openapi.json

Events are decoded in the judge processes by the decoder `check` and the worker use (engine/judging.py), so a
bad event gets the same field and reason here (422) as in their output and dead letters. The parent reads of a
body only its tenant and question (engine/pool.py `address`): whom the token may act for, and which question's
history it joins. Status of an event that got no verdict: decode 422, judge 500, timeout 504.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any, Awaitable, Callable

import msgspec
import orjson
from aiohttp import web

from stream_guard.config.load import Config
from stream_guard.engine.dispatch import Dispatcher
from stream_guard.engine.incremental import Piece, SentenceBuffer, check_sentences, open_stream, stream_payload
from stream_guard.engine.judging import Judged
from stream_guard.engine.pool import CallFailed, json_object
from stream_guard.http.auth import Tokens
from stream_guard.http.bodies import Lines, Refused, read_body, refusal
from stream_guard.http.metrics import CONTENT_TYPE, ServeMetrics
from stream_guard.http.openapi import document
from stream_guard.text.questions import address, normalize_question, question_hash
from stream_guard.wire.inline import WITHHELD, DriftHistory, Failure, StreamChunk, StreamedSentence, StreamFailure

log = logging.getLogger(__name__)

JSON, NDJSON = "application/json", "application/x-ndjson"
STATUS = {"decode": 422, "judge": 500, "timeout": 504}
_encode = msgspec.json.Encoder().encode
_events = msgspec.json.Decoder(list[msgspec.Raw])
_chunk = msgspec.json.Decoder(StreamChunk)
# The verdict line of a stream (wire/inline.py StreamedVerdict), put together around the verdict's bytes as the
# judge wrote them rather than decoded into a Verdict and encoded again.
_VERDICT_LINE = b'{"type":"verdict","verdict":'

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def failure_of(judged: Judged, index: int | None = None) -> Failure:
    return msgspec.convert({**judged.error_object(), "index": index}, Failure)


def _json(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, content_type=JSON, headers=headers)


class Service:
    """The application and what its handlers share: the configuration, the dispatcher, tokens, metrics, state."""

    def __init__(self, config: Config, dispatcher: Dispatcher) -> None:
        self.config, self.serve, self.limits = config, config.serve, config.detector.limits
        self.dispatcher = dispatcher
        self.pool = dispatcher.pool
        self.tokens = Tokens(config.monitor)
        self.metrics = ServeMetrics(dispatcher)
        self.openapi = orjson.dumps(document(config))
        self.ready = False  # the judge processes have loaded their models
        self.draining = False  # SIGTERM: requests in flight finish, new ones are refused
        self.active = 0  # requests being answered
        self._idle = asyncio.Event()
        self._idle.set()
        self.app = web.Application(middlewares=[self._around])
        self.app.add_routes([
            web.post("/v1/check", self.check),
            web.post("/v1/check/batch", self.check_batch),
            web.post("/v1/check/stream", self.check_stream),
            web.get("/v1/tenants/{tenant}/drift", self.drift),
            web.get("/healthz", self.healthz),
            web.get("/readyz", self.readyz),
            web.get("/metrics", self.metrics_page),
            web.get("/openapi.json", self.openapi_page),
        ])

    # --- around every request ---------------------------------------------------------------------------------

    @web.middleware
    async def _around(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "unmatched"
        started = time.perf_counter()
        self.metrics.in_flight.inc()
        self.active += 1
        self._idle.clear()
        status = 500
        try:
            try:
                if route.startswith("/v1/"):
                    self._admit()
                response = await handler(request)
            except CallFailed as failed:  # a judge process could not take a call (it died, or ran too long)
                refused = refusal(STATUS.get(failed.stage, 500), "$", failed.reason, failed.stage)
                response = _json(_encode(refused.failure), refused.status)
            except Refused as refused:
                response = _json(_encode(refused.failure), refused.status, refused.headers)
                if refused.status in (413, 503):
                    response.force_close()  # its body was not read (413), or this instance is going away (503)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        finally:
            self.active -= 1
            if not self.active:
                self._idle.set()
            self.metrics.in_flight.dec()
            self.metrics.requests.labels(route, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - started)

    async def finished(self) -> None:
        """Until no request is being answered."""
        await self._idle.wait()

    def _admit(self) -> None:
        if self.draining:
            raise refusal(503, "$", "this instance is shutting down; send the request again",
                          headers={"Retry-After": "1"})
        if not self.ready:
            raise refusal(503, "$", "starting: the judge processes are loading their models",
                          headers={"Retry-After": "2"})

    def _verdict_response(self, judged: Judged) -> web.Response:
        self._count(judged)
        if judged.verdict is not None:
            return _json(judged.verdict)
        return _json(_encode(failure_of(judged)), STATUS.get(judged.error_stage or "judge", 500))

    def _count(self, judged: Judged) -> None:
        self.metrics.verdicts.labels(judged.routing if judged.ok else "failed").inc()

    # --- checks -------------------------------------------------------------------------------------------------

    async def check(self, request: web.Request) -> web.StreamResponse:
        principal = self.tokens.principal(request.headers)
        body = await read_body(request.content, request.content_length, self.limits.max_event_bytes)
        tenant, key = address(json_object(body))
        Tokens.allow(principal, tenant)
        (judged,) = await self.dispatcher.judge([body], [key])
        return self._verdict_response(judged)

    async def check_batch(self, request: web.Request) -> web.StreamResponse:
        principal = self.tokens.principal(request.headers)
        body = await read_body(request.content, request.content_length, self.serve.max_batch_bytes)
        try:
            payloads = [bytes(raw) for raw in _events.decode(body)]
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise refusal(422, "$", f"the body must be a JSON array of events: {exc}", stage="decode") from None
        if len(payloads) > self.serve.max_batch_events:
            raise refusal(422, "$", f"has {len(payloads)} events, over the limit of {self.serve.max_batch_events}",
                          stage="decode")
        addresses = [address(json_object(payload)) for payload in payloads]
        for tenant, _ in addresses:
            Tokens.allow(principal, tenant)
        judged = await self.dispatcher.judge(payloads, [key for _, key in addresses])
        items = []
        for index, item in enumerate(judged):
            self._count(item)
            items.append(item.verdict if item.verdict is not None else _encode(failure_of(item, index)))
        return _json(b"[" + b",".join(items) + b"]")

    async def check_stream(self, request: web.Request) -> web.StreamResponse:
        principal = self.tokens.principal(request.headers)
        lines = Lines(request.content)
        header = await lines.next(self.limits.max_event_bytes)
        if header is None or not header.strip():
            raise refusal(422, "$", "the body is empty: send the event without its answer, then its chunks",
                          stage="decode")
        tenant, key = address(json_object(header))
        Tokens.allow(principal, tenant)
        stream = uuid.uuid4().hex
        problem, slot = await self.dispatcher.run(open_stream, stream, header)
        if problem is not None:
            raise refusal(422, problem["field"], problem["reason"], stage="decode")
        response = web.StreamResponse(headers={"Content-Type": NDJSON, "Cache-Control": "no-cache"})
        await response.prepare(request)
        relay = _Relay(self, response, stream, header, slot)
        try:
            failure = await relay.run(lines)
            if failure is None:
                (judged,) = await self.dispatcher.judge([stream_payload(header, relay.buffer.answer)], [key])
                self._count(judged)
                if judged.verdict is not None:
                    await response.write(_VERDICT_LINE + judged.verdict + b"}\n")
                else:
                    failure = failure_of(judged)
            if failure is not None:
                await response.write(_encode(StreamFailure(failure)) + b"\n")
            await response.write_eof()
        except ConnectionResetError:  # the caller went away mid-stream: nothing left to tell it
            log.info("a streamed answer's caller disconnected after %d chunk(s)", relay.chunks)
        return response

    # --- drift history --------------------------------------------------------------------------------------------

    async def drift(self, request: web.Request) -> web.StreamResponse:
        principal = self.tokens.principal(request.headers)
        tenant = request.match_info["tenant"].strip() or "default"
        Tokens.allow(principal, tenant)
        question = request.query.get("question", "")
        if not normalize_question(question):
            raise refusal(422, "question", "is required: the question's text, as the events carry it")
        key = question_hash(tenant, question)
        history = DriftHistory(tenant=tenant, question=question, question_hash=key,
                               window_size=self.config.detector.window_size,
                               fingerprints=[dict(item) for item in self.dispatcher.histories.get(key)])
        return _json(_encode(history))

    # --- operations ---------------------------------------------------------------------------------------------

    async def healthz(self, request: web.Request) -> web.StreamResponse:
        stuck = self.pool.stuck()
        body: dict[str, Any] = {"status": "stuck" if stuck else "ok", "judge": {
            "processes": self.pool.processes, "busy": self.dispatcher.busy, "waiting": self.dispatcher.waiting,
            "replaced": self.pool.replaced}}
        if stuck:
            body["reason"] = stuck
        return _json(orjson.dumps(body), 503 if stuck else 200)

    async def readyz(self, request: web.Request) -> web.StreamResponse:
        stuck = self.pool.stuck()
        ready = self.ready and not self.draining and stuck is None
        body: dict[str, Any] = {"ready": ready, "starting": not self.ready, "draining": self.draining}
        if stuck:
            body["reason"] = stuck
        return _json(orjson.dumps(body), 200 if ready else 503)

    async def metrics_page(self, request: web.Request) -> web.StreamResponse:
        return web.Response(body=self.metrics.text(), headers={"Content-Type": CONTENT_TYPE})

    async def openapi_page(self, request: web.Request) -> web.StreamResponse:
        return _json(self.openapi)


class _Relay:
    """One streamed answer: chunks read as they arrive (timestamped, by a task of their own, so a sentence's delay
    counts from when the chunk that completed it came in, even while an earlier sentence is being checked),
    sentences checked as they complete and written out in order."""

    def __init__(self, service: Service, response: web.StreamResponse, stream: str, header: bytes,
                 slot: int) -> None:
        self.service, self.response, self.stream, self.header, self.slot = service, response, stream, header, slot
        self.buffer = SentenceBuffer()
        self.chunks = 0

    async def run(self, lines: Lines) -> Failure | None:
        """Relay every sentence; a Failure when the chunks broke off or broke the contract."""
        arrived: asyncio.Queue[tuple[float, bytes | None | Refused | TimeoutError]] = asyncio.Queue()
        reader = asyncio.ensure_future(self._read(lines, arrived))
        try:
            while True:
                items = [await arrived.get()]
                while not arrived.empty():
                    items.append(arrived.get_nowait())
                pieces: list[tuple[Piece, float]] = []
                ended = False
                for at, item in items:
                    if item is None:
                        pieces += [(piece, at) for piece in self.buffer.finish()]
                        ended = True
                        break
                    failure = self._feed(item, at, pieces)
                    if failure is not None:
                        await self._relay(pieces)
                        return failure
                await self._relay(pieces)
                if ended:
                    return None
        finally:
            reader.cancel()

    async def _read(self, lines: Lines, arrived: asyncio.Queue[Any]) -> None:
        timeout = self.service.serve.stream_chunk_timeout_s
        limit = self.service.limits.max_event_bytes
        while True:
            try:
                line = await asyncio.wait_for(lines.next(limit), timeout)
            except (Refused, TimeoutError) as exc:
                arrived.put_nowait((time.perf_counter(), exc))
                return
            arrived.put_nowait((time.perf_counter(), line))
            if line is None:
                return

    def _feed(self, item: bytes | Refused | TimeoutError, at: float, pieces: list[tuple[Piece, float]]
              ) -> Failure | None:
        if isinstance(item, Refused):
            return item.failure
        if isinstance(item, TimeoutError):
            timeout = self.service.serve.stream_chunk_timeout_s
            return refusal(408, "$", f"no chunk for {timeout:g} s: the stream was ended").failure
        if not item.strip():
            return None
        self.chunks += 1
        try:
            text = _chunk.decode(item).text
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return refusal(422, f"chunks[{self.chunks - 1}]", f'must be {{"text": "..."}}: {exc}', "decode").failure
        limit = self.service.limits.max_answer_chars
        if self.buffer.size + len(text) > limit:
            return refusal(422, "answer", f"is {self.buffer.size + len(text)} characters, over the limit of {limit}",
                           "decode").failure
        pieces += [(piece, at) for piece in self.buffer.feed(text)]
        return None

    async def _relay(self, pieces: list[tuple[Piece, float]]) -> None:
        if not pieces:
            return
        metrics = self.service.metrics
        try:
            results, self.slot = await self.service.dispatcher.run(check_sentences, self.stream, self.header,
                                                                   [piece for piece, _ in pieces], prefer=self.slot)
        except CallFailed as exc:  # fail closed: what could not be checked is not shown; the verdict still comes
            results = [StreamedSentence(index=piece.index, status=WITHHELD, text="", end=piece.end, original=piece.sentence,
                                        reason=f"the sentence could not be checked ({exc.stage}: {exc.reason})")
                       for piece, _ in pieces]
        for (_, at), result in zip(pieces, results):
            await self.response.write(_encode(result) + b"\n")
            metrics.sentence_delay.observe(time.perf_counter() - at)
            metrics.sentences.labels(result.status).inc()
