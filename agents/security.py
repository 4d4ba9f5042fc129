"""Broker security settings as Faust credentials and as aiokafka client options: one source for the worker
and for the command-line clients (produce, tail, up, topic creation), so that they never disagree."""

from __future__ import annotations

import ssl
from typing import Any, Mapping

import faust
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from faust.types.auth import CredentialsT

from stream_guard.config.stream import StreamSettings


def ssl_context(settings: StreamSettings) -> ssl.SSLContext | None:
    if settings.security_protocol not in ("SSL", "SASL_SSL"):
        return None
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=settings.ssl_cafile or None)
    if settings.ssl_certfile:
        context.load_cert_chain(settings.ssl_certfile, settings.ssl_keyfile or None)
    return context


def credentials(settings: StreamSettings) -> CredentialsT | None:
    """What Faust's `broker_credentials` takes; None for PLAINTEXT."""
    protocol = settings.security_protocol
    if protocol == "PLAINTEXT":
        return None
    if protocol == "SSL":
        return faust.SSLCredentials(ssl_context(settings))
    return faust.SASLCredentials(username=settings.sasl_username, password=settings.sasl_password,
                                 ssl_context=ssl_context(settings), mechanism=settings.sasl_mechanism)


def client_options(settings: StreamSettings) -> Mapping[str, Any]:
    """Keyword arguments for AIOKafkaProducer, AIOKafkaConsumer and AIOKafkaAdminClient, made by Faust's own
    conversion so the command-line clients connect exactly as the worker does."""
    return dict(credentials_to_aiokafka_auth(credentials(settings)))
