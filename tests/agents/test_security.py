"""Broker security settings reach Faust and the aiokafka clients intact (no TLS or SASL broker runs here)."""

from __future__ import annotations

import asyncio
import os
import ssl

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from stream_guard.agents.app import faust_options
from stream_guard.agents.security import client_options, credentials
from stream_guard.config.load import load

CA = ssl.get_default_verify_paths().openssl_cafile


def sasl_ssl_settings():
    return load(env={"STREAM_GUARD_SECURITY_PROTOCOL": "SASL_SSL", "STREAM_GUARD_SASL_MECHANISM":
                     "SCRAM-SHA-512", "STREAM_GUARD_SASL_USERNAME": "guard",
                     "STREAM_GUARD_SASL_PASSWORD": "s3cret", "STREAM_GUARD_BROKER": "kafka:9093"}).stream


def test_plaintext_is_the_default_and_adds_nothing() -> None:
    settings = load(stream={"broker": "127.0.0.1:9092"}).stream
    assert credentials(settings) is None
    assert client_options(settings) == {"security_protocol": "PLAINTEXT"}
    assert faust_options(settings)["broker_credentials"] is None


def test_sasl_over_tls_reaches_the_clients_and_the_worker_alike() -> None:
    settings = sasl_ssl_settings()
    options = client_options(settings)
    assert options["security_protocol"] == "SASL_SSL"
    assert (options["sasl_mechanism"], options["sasl_plain_username"], options["sasl_plain_password"]) == (
        "SCRAM-SHA-512", "guard", "s3cret")
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert faust_options(settings)["broker_credentials"].mechanism.value == "SCRAM-SHA-512"
    assert "s3cret" not in repr(settings)

    async def build() -> None:  # the real clients accept these options (they validate them on creation)
        AIOKafkaProducer(bootstrap_servers="kafka:9093", **options)
        AIOKafkaConsumer(bootstrap_servers="kafka:9093", **options)
        AIOKafkaAdminClient(bootstrap_servers="kafka:9093", **options)

    asyncio.run(build())


def test_sasl_without_tls_has_no_ssl_context() -> None:
    settings = load(stream={"security_protocol": "SASL_PLAINTEXT", "sasl_username": "u",
                            "sasl_password": "p"}).stream
    options = client_options(settings)
    assert options["security_protocol"] == "SASL_PLAINTEXT" and options["ssl_context"] is None


@pytest.mark.skipif(not CA or not os.path.exists(CA), reason="no CA bundle on this machine")
def test_tls_uses_the_given_ca_bundle() -> None:
    settings = load(stream={"security_protocol": "SSL", "ssl_cafile": CA}).stream
    options = client_options(settings)
    assert options["security_protocol"] == "SSL"
    assert options["ssl_context"].cert_store_stats()["x509_ca"] > 0


@pytest.mark.parametrize("overrides, named", [
    ({"security_protocol": "SASL_SSL", "sasl_username": "u"}, "sasl_password"),
    ({"security_protocol": "SASL_SSL", "sasl_username": "u", "sasl_password": "p", "sasl_mechanism": "GSSAPI"},
     "sasl_mechanism"),
    ({"security_protocol": "TLS"}, "security_protocol"),
    ({"ssl_keyfile": __file__}, "ssl_certfile"),  # an existing file: only the missing certificate is wrong
])
def test_incomplete_security_settings_are_refused_by_name(overrides: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        load(stream=overrides)
