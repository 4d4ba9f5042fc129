"""The OpenAPI 3.1 document of `stream-guard serve` (GET /openapi.json): the paths are written here, every body
shape comes from the msgspec Structs that define it on the wire (the event contract and the verdict, as
schemas/*.schema.json publish them; the inline shapes of wire/inline.py), so there is one definition of each."""

from __future__ import annotations

from typing import Any

import stream_guard
from stream_guard.config.load import Config
from stream_guard.wire.inline import DriftHistory, Failure, StreamChunk, StreamLine
from stream_guard.wire.schemas import by_name, components

REF = "#/components/schemas/{name}"
JSON, NDJSON = "application/json", "application/x-ndjson"


def document(config: Config) -> dict[str, Any]:
    serve, limits = config.serve, config.detector.limits
    (event, verdict, failure, line, chunk, history), schemas = components(
        [by_name("answer-event").shape, by_name("verdict").shape, Failure, StreamLine, StreamChunk, DriftHistory],
        REF)

    def body(schema: dict[str, Any], description: str, media: str = JSON) -> dict[str, Any]:
        return {"description": description, "content": {media: {"schema": schema}}}

    errors = {
        "401": body(failure, "A valid bearer token is required (tokens are configured)."),
        "403": body(failure, "The token may not act for this tenant."),
        "413": body(failure, "The body is over its limit (refused before it was read whole)."),
        "503": body(failure, "Starting, or shutting down: try again (Retry-After)."),
    }
    judged = {
        "422": body(failure, "The event breaks the contract: the field and the reason, as the dead-letter topic "
                             "and `stream-guard check` say them (stage decode)."),
        "500": body(failure, "The guard failed on this event (stage judge)."),
        "504": body(failure, "The event ran past its CPU budget (stage timeout)."),
    }
    secured = [{"bearer": []}, {}]
    return {
        "openapi": "3.1.0",
        "info": {"title": "stream-guard", "version": stream_guard.__version__,
                 "description": "Check a RAG answer against its retrieved context before it is delivered: the "
                                "verdict says what to deliver (routing, delivered_answer) and why."},
        "paths": {
            "/v1/check": {"post": {
                "summary": "Judge one event",
                "description": "The verdict `stream-guard check` writes for the same event, with the question's drift "
                               f"history kept by the service. At most {limits.max_event_bytes} bytes.",
                "security": secured,
                "requestBody": {"required": True, "content": {JSON: {"schema": event}}},
                "responses": {"200": body(verdict, "The verdict."), **judged, **errors}}},
            "/v1/check/batch": {"post": {
                "summary": "Judge several events",
                "description": f"Up to {serve.max_batch_events} events ({serve.max_batch_bytes} bytes); one item per "
                               "event, in order: its verdict, or its Failure (with `index`).",
                "security": secured,
                "requestBody": {"required": True, "content": {JSON: {"schema": {
                    "type": "array", "items": event, "maxItems": serve.max_batch_events}}}},
                "responses": {"200": body({"type": "array", "items": {"anyOf": [verdict, failure]}},
                                          "One item per event, in order."),
                              "422": body(failure, "The body is not a JSON array of at most "
                                                   f"{serve.max_batch_events} items."), **errors}}},
            "/v1/check/stream": {"post": {
                "summary": "Check an answer as it is generated, sentence by sentence",
                "description": "Newline-delimited JSON, sent as it is generated (chunked): first the event without "
                               "its `answer`, then one StreamChunk per piece of the answer. The response streams one "
                               "line per sentence as soon as it is complete and checked (released, repaired or "
                               "withheld), then the whole answer's verdict (drift and the overall score can still "
                               "turn it to fallback). Lines follow the StreamLine shape, tagged by `type`.",
                "security": secured,
                "requestBody": {"required": True, "content": {NDJSON: {"schema": {"anyOf": [event, chunk]}}}},
                "responses": {"200": body(line, "One StreamLine per line.", NDJSON),
                              "422": body(failure, "The first line breaks the event contract."), **errors}}},
            "/v1/tenants/{tenant}/drift": {"get": {
                "summary": "The drift history of a tenant's question",
                "security": secured,
                "parameters": [
                    {"name": "tenant", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "question", "in": "query", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": body(history, "Fingerprints of the last delivered answers, oldest first."),
                              "422": body(failure, "No question given."), **errors}}},
            "/healthz": {"get": {"summary": "Alive (503 when a judge process is stuck)",
                                 "responses": {"200": {"description": "ok"}, "503": {"description": "stuck"}}}},
            "/readyz": {"get": {"summary": "Ready for checks (503 while starting or shutting down)",
                                "responses": {"200": {"description": "ready"}, "503": {"description": "not ready"}}}},
            "/metrics": {"get": {"summary": "Prometheus metrics",
                                 "responses": {"200": {"description": "text/plain; version=0.0.4"}}}},
            "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI"}}}},
        },
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                                      "description": "The tenant's dashboard token ([monitor])."}}},
    }
